"""A counterfactual that is not a working program falls back to the base.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_counterfactual_fallback.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_critic22.execution.git import git
from pytest_critic22.model.patch import parse_patch
from tests.helpers import pytester_repo

pytestmark = pytest.mark.usefixtures("no_model_client")


PADDING = "".join(f"\n\ndef _pad_{i}():\n    return {i}\n" for i in range(4))


BASE = (
    f'"""A tiny calculator."""\n\n\ndef _scale(x):\n    return x * 2\n{PADDING}\n\n'
    f'def double(x):\n    return _scale(x)\n{PADDING}\n\ndef label():\n    return "calc"\n'
)


# e1 renames the helper (and triples by mistake), e2 follows the rename, e3 changes a label:
# the patch without e1 calls a name only e1 defines.
PATCHED = (
    BASE.replace("def _scale(x):\n    return x * 2", "def _times(x):\n    return x * 3")
    .replace("return _scale(x)", "return _times(x)")
    .replace('return "calc"', 'return "Calc"')
)


PROJECT_TEST = "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


DOUBLES = "test:\nfrom calc import double\n\ndef test_doubles():\n    assert double(2) == 4\n"


LABELS = (
    "test:\nfrom calc import double, label\n\n"
    "def test_label_and_double():\n    assert label() + str(double(2)) == 'calc4'\n"
)


def _finding(location: str, claim: str, falsification: str) -> dict[str, object]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": location,
        "falsification": falsification,
        "confidence": 0.5,
    }


@pytest.mark.e2e
def test_a_without_tree_that_cannot_run_is_replaced_by_the_base_and_both_failing_trees_are_shown(
    pytester: pytest.Pytester,
) -> None:
    repo = pytester_repo(pytester.path, {"calc.py": BASE, "tests/test_calc.py": PROJECT_TEST})
    (repo / "calc.py").write_text(PATCHED)
    patch = repo.parent / "p.diff"
    patch.write_text(git(["diff"], repo).stdout)
    git(["checkout", "--", "calc.py"], repo)
    assert [e.edit_id for e in parse_patch(patch.read_text()).edits] == ["e1", "e2", "e3"]
    findings = repo.parent / "f.json"
    project = "tests/test_calc.py::test_double"
    findings.write_text(
        json.dumps(
            [
                _finding("e1", "double() triples", DOUBLES),
                _finding("e3", "the label and double are both off", LABELS),
                _finding("e1", "the project's test breaks", f"counterfactual: {project}"),
                _finding("e1", "replays break", f"trace: {project} repeat=2"),
                _finding("e3", "the label breaks replays", f"trace: {project} repeat=1"),
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
    document = json.loads(report.read_text())
    by_id = {f["id"]: f for f in document["findings"]}
    statuses = {fid: f["outcome"]["status"] for fid, f in by_id.items()}
    assert statuses == {
        "F1": "verified",
        "F2": "inconclusive",
        "F3": "verified",
        "F4": "verified",
        "F5": "inconclusive",
    }, result.stdout.str()
    note = "without-e1 is not a working program (NameError at calc.py:25)"
    note += "; compared against the base"
    for fid in ("F1", "F3", "F4"):
        found = by_id[fid]
        assert found["outcome"]["reason"].endswith(f"; {note}"), found["outcome"]
        assert found["counterfactual"] == "base"
        fallback = found["logs"]["counterfactual_fallback"]
        assert (fallback["tree"], fallback["error"], fallback["where"]) == (
            "without-e1",
            "NameError",
            "calc.py:25",
        )
        assert fallback["message"] == "name '_times' is not defined"
    assert by_id["F1"]["outcome"]["reason"].startswith(
        "fails on patched (2/2 runs) and passes on the base tree"
    )
    assert "NameError" in by_id["F1"]["logs"]["counterfactual_fallback"]["run"]["output"]
    assert by_id["F1"]["logs"]["counterfactual"]["status"] == "passed"
    # F2's trees both run: it fails on both, and the reason shows each tree's failure.
    both = by_id["F2"]["outcome"]["reason"]
    assert both.startswith("fails on both the patched and the without-e3 tree"), both
    assert "patched: AssertionError: assert 'Calc6' == 'calc4'" in both
    assert "without-e3: AssertionError: assert 'calc6' == 'calc4'" in both
    assert "counterfactual_fallback" not in by_id["F2"]["logs"]
    replays = by_id["F5"]["outcome"]["reason"]
    assert replays.startswith("fails on the without-e3 tree too (1 of 1 replays)"), replays
    assert replays.endswith(
        "(patched: AssertionError: assert 6 == 4; without-e3: AssertionError: assert 6 == 4)"
    )
    # The terminal says both: the note for the verified findings, the lines for F2.
    out = result.stdout.str()
    assert f"decided by: fails on patched (2/2 runs) and passes on the base tree; {note}" in out
    assert "without-e3: AssertionError: assert 'calc6' == 'calc4'" in out
    assert document["disposition"]["verdict"] == "reject"
