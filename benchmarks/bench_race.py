"""The race sample: how often does `trace:` verify the race the patch introduces, and does
it ever "verify" it against a patch that keeps the lock?

    python benchmarks/bench_race.py [--runs 100] [--jobs 1]

Each run is a whole plugin run (`pytest --critic22 ... --critic22-only`) on a fresh copy of
sample_repos/counterkit: once with the patch that removes the lock (the race), once with a
harmless patch to the same function's file (a comment), both with the same recorded
`trace:` finding (20 replays per tree). Prints both counts; no thresholds (speed and
rates are measured, not asserted). A plugin run takes about a minute on two cores, so the
default 100 runs per arm take hours; pass --runs for a shorter sample.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.apps.samples import case_dir, materialize
from pytest_critic22.execution.git import git

CASE = case_dir("counterkit", "lock-removed")


def harmless_patch(repo: Path) -> str:
    path = repo / "counterkit" / "counter.py"
    original = path.read_text()
    path.write_text(original.replace('"""A counter shared', '"""A (documented) counter shared'))
    diff = git(["diff", "--no-ext-diff"], repo).stdout
    path.write_text(original)
    return diff


def one_run(arm: str, index: int) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        repo = materialize("counterkit", Path(tmp) / "counterkit")
        patch = CASE / "patch.diff"
        if arm == "harmless":
            patch = Path(tmp) / "harmless.diff"
            patch.write_text(harmless_patch(repo))
        findings = json.loads((CASE / "findings.json").read_text())[:1]
        (Path(tmp) / "f.json").write_text(json.dumps(findings))
        report = Path(tmp) / "r.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                f"--critic22={patch}",
                f"--critic22-findings={Path(tmp) / 'f.json'}",
                "--critic22-only",
                "--critic22-preservation=off",
                f"--critic22-report={report}",
                "-q",
            ],
            cwd=repo,
            capture_output=True,
            check=False,
        )
        document = json.loads(report.read_text())
        status = document["findings"][0]["outcome"]["status"]
        print(f"  {arm} run {index + 1}: {status}", file=sys.stderr, flush=True)
        return bool(status == "verified")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    start = time.perf_counter()
    counts = {}
    for arm in ("race", "harmless"):
        with ThreadPoolExecutor(args.jobs) as pool:
            counts[arm] = sum(pool.map(lambda i, a=arm: one_run(a, i), range(args.runs)))
    elapsed = time.perf_counter() - start
    print(f"trace: replays of tests/test_counter.py::test_concurrent_increments, {args.runs} runs")
    print(f"  lock removed (the race):      verified in {counts['race']} of {args.runs} runs")
    print(f"  harmless patch (lock kept):   verified in {counts['harmless']} of {args.runs} runs")
    print(f"  wall time {elapsed:.0f} s ({elapsed / (2 * args.runs):.1f} s per plugin run)")


if __name__ == "__main__":
    main()
