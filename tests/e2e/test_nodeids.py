"""Node ids are parsed, not split on spaces, and checked as data before pytest sees them.

The end-to-end tier: whole pytest runs. The rest, and the whole story: tests/unit/test_nodeids.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_critic22.execution.git import git, init_repo
from tests.unit.test_nodeids import SPACED

FMT = "def units(value, unit):\n    return f'{value:.2f} {unit}'\n"


TEST_FMT = (
    "import pytest\n\nfrom fmt import units\n\n\n"
    "@pytest.mark.parametrize(('args', 'expected'), [((1, 'Hz'), '1.00 Hz')],"
    " ids=[\"[1, 'Hz']-1.00 Hz\"])\n"
    "def test_units(args, expected):\n    assert units(*args) == expected\n"
)


@pytest.mark.e2e
def test_spaced_node_ids_run_in_counterfactual_and_trace(pytester: pytest.Pytester) -> None:
    repo = pytester.path
    (repo / "fmt.py").write_text(FMT)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_fmt.py").write_text(TEST_FMT)
    init_repo(repo)
    with open(repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write("runpytest-current\nstdout\nstderr\n")
    (repo / "fmt.py").write_text(FMT.replace(".2f", ".1f"))
    patch = repo.parent / "p.diff"
    patch.write_text(git(["diff"], repo).stdout)
    git(["checkout", "--", "fmt.py"], repo)
    claim = {"location": "e1", "severity": "blocking", "evidence": "e1", "confidence": 0.5}
    findings = repo.parent / "f.json"
    findings.write_text(
        json.dumps(
            [
                {
                    **claim,
                    "claim": "units lose a digit",
                    "falsification": f"counterfactual: {SPACED}",
                },
                {**claim, "claim": "still", "falsification": f"trace: {SPACED} repeat=2"},
            ]
        )
    )
    report = repo.parent / "r.json"
    result = pytester.runpytest_subprocess(
        f"--critic22={patch}",
        f"--critic22-findings={findings}",
        f"--critic22-report={report}",
        "--critic22-only",
        "--critic22-preservation=off",
        "--critic22-reruns=2",
    )
    outcomes = {f["id"]: f["outcome"]["status"] for f in json.loads(report.read_text())["findings"]}
    assert outcomes == {"F1": "verified", "F2": "verified"}
    assert result.ret == 1
