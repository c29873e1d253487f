"""The SARIF 2.1.0 report.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_formats_sarif.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir
from pytest_critic22.execution.git import git
from pytest_critic22.pipeline.review import (
    preservation_id,
)
from pytest_critic22.report.formats import sarif
from tests.unit.test_formats_sarif import (
    REJECT,
    RUN,
    drops_results,
    drops_review,
    region,
    result,
    results_of,
    sample_sources,
)


def patched_def_line(tmp_path: Path, sample: str, case: str, path: str, test: str) -> int:
    """The line of ``def TEST(`` in ``path`` of the sample's repository with the case's patch
    applied by git: what a preservation regression's location must say."""
    tree = tmp_path / "patched"
    shutil.copytree(SAMPLES_DIR / sample / "repo", tree)
    git(["apply", str(case_dir(sample, case) / "patch.diff")], tree)
    lines = (tree / path).read_text(encoding="utf-8").splitlines()
    (line_no,) = [n for n, line in enumerate(lines, 1) if line.startswith(f"def {test}(")]
    return line_no


def test_a_preservation_regression_is_located_at_its_failing_tests_def(tmp_path: Path) -> None:
    # Issue 43: it was line 1 of the test file, whatever test failed.
    group = "tests/test_stats.py"
    results = drops_results()
    sources = sample_sources("textstats")
    document = sarif.sarif_document(drops_review(), results, REJECT, RUN, sources=sources)
    entry = results_of(document)[preservation_id(group)]
    assert entry["ruleId"] == "preservation"
    line = patched_def_line(tmp_path, "textstats", "median-drops-guard", group, "test_mean_empty")
    width = len("def test_mean_empty():")
    assert region(entry) == ("tests/test_stats.py", line, 1, line, width + 1)
    # the base's files unread (no session's repository): the file's first line
    found = results_of(sarif.sarif_document(drops_review(), results, REJECT, RUN))
    assert region(found[preservation_id(group)]) == ("tests/test_stats.py", 1, 1, 1, 1)
    assert entry["message"]["text"] == (
        "the patch breaks existing tests in tests/test_stats.py "
        "(preserve[tests/test_stats.py] verified: test_mean_empty regresses)"
    )
    results[preservation_id(group)] = result(preservation_id(group), "inconclusive", "flaky")
    found = results_of(sarif.sarif_document(drops_review(), results, REJECT, RUN))
    assert found[preservation_id(group)]["level"] == "warning"
    results[preservation_id(group)] = result(preservation_id(group), "refuted")
    assert preservation_id(group) not in results_of(
        sarif.sarif_document(drops_review(), results, REJECT, RUN)
    )
