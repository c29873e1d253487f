"""The SARIF 2.1.0 report.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_formats_sarif.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_formats_sarif import patched_def_line
from tests.unit.test_formats_sarif import (
    region,
    results_of,
    schema_errors,
    spec_problems,
)


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_the_sarif_of_a_real_review_keeps_the_specs_rules(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    from tests.runs import case_args, make_sample

    make_sample(pytester, "textstats")
    out = tmp_path / "review.sarif"
    args = case_args("textstats", "median-drops-guard")
    result = pytester.runpytest_subprocess(*args, f"--critic22-sarif={out}", "--critic22-reruns=1")
    assert result.ret == 1
    document = json.loads(out.read_text(encoding="utf-8"))
    assert schema_errors(document) == [] and spec_problems(document) == []
    pairs = {fid: (r["kind"], r["level"]) for fid, r in results_of(document).items()}
    assert pairs == {
        "F1": ("fail", "error"),
        "F2": ("fail", "error"),
        "F4": ("fail", "note"),
        "F5": ("fail", "note"),
        "preserve[tests/test_stats.py]": ("fail", "error"),
    }
    regression = results_of(document)["preserve[tests/test_stats.py]"]
    line = patched_def_line(
        tmp_path, "textstats", "median-drops-guard", "tests/test_stats.py", "test_mean_empty"
    )
    assert region(regression)[:2] == ("tests/test_stats.py", line)
