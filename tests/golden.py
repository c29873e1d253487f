"""The samples' JSON reports, normalised: what must not change when the code is restructured.

Timings, paths, run ids, commit hashes and the per-run details of CPU-bound races vary
from run to run; everything else (verdicts, outcomes, reasons, routes, the packet digest,
impact evidence, what each tree's runs reported per test) is compared exactly.
``python -m tests.golden SAMPLE CASE REPORT`` re-records a golden file.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent / "data" / "reports"

_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")
# /tmp, and the temporary folder TMPDIR names, where the tests' repositories live
_TMP_ROOTS = sorted({"/tmp", tempfile.gettempdir().rstrip("/")}, key=len, reverse=True)
_TMP = re.compile(r"(?:/private)?(?:" + "|".join(map(re.escape, _TMP_ROOTS)) + r")/[^\s'\"\]\)]*")
_VOLATILE = {"run_id", "ledger", "base", "seconds", "traces", "patch", "file"}
_RACY = ("runs", "failing_seeds", "divergence")
# How a run was executed (merged with other findings' into one child; a confirmation
# attempt inside the first run's child): mechanics, not what the run reported.
_MECHANICS = {"merged", "attempt"}


def golden_path(sample: str, case: str) -> Path:
    return GOLDEN / f"{sample}-{case}.json"


def normalize(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _VOLATILE or k in _MECHANICS:
                continue
            if k == "output":  # a child's console output: its test outcomes are in "tests"
                continue
            if value.get("procedure") == "trace" and k in _RACY:
                continue
            out[k] = normalize(v, k)
        return out
    if isinstance(value, list):
        return [normalize(v, key) for v in value]
    if isinstance(value, str):
        text = _TMP.sub("<tmp>", value)
        text = _SECONDS.sub("<t>s", text)
        if key == "reason" and "replays on patched" in text:
            # How often a race shows, and where its trace diverges, is the machine's.
            return re.sub(r"\d+", "<n>", text.split("; event ")[0])
        return text
    return value


def difference(got: Any, want: Any) -> str:
    """A unified diff of two normalised reports, for an assertion message."""
    import difflib

    a = json.dumps(want, indent=1, sort_keys=True).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(a, b, "golden", "this run", lineterm="", n=2))


def main(argv: list[str]) -> int:
    sample, case, report = argv
    document = normalize(json.loads(Path(report).read_text()))
    GOLDEN.mkdir(parents=True, exist_ok=True)
    golden_path(sample, case).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
