"""``critic22 mine`` on a generated history.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/integration/test_mine.py.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from tests.integration.test_mine import (
    history,  # noqa: F401  (a fixture)
    mined,  # noqa: F401  (a fixture)
    run_cli,
)


@pytest.fixture(scope="module")
def scored(mined: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``critic22 ab`` on the mined population (every case held out) with the ground-truth
    critic's answers replayed."""
    out = mined["out"]
    document = dict(mined["population"])
    document["held_out"] = {**document["held_out"], "tuning": []}
    (out / "all.json").write_text(json.dumps(document))
    work = tmp_path_factory.mktemp("ab")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code, err = run_cli(
            "ab", str(out / "all.json"), "--critic", f"replay:{out / 'oracle'}", "--jobs", "1",
            "--critic22-reruns", "1",  # not about confirming a failure: one run is enough
            "--cache", str(work / "cache"), "--json", str(work / "ab.json"),
        )  # fmt: skip
    truth = {
        json.loads(p.read_text())["case"]: json.loads(p.read_text())
        for p in (work / "cache").rglob("ground-truth-*.json")
    }
    report = json.loads((work / "ab.json").read_text())
    return {
        "code": code,
        "stderr": err,
        "stdout": stdout.getvalue(),
        "truth": truth,
        "report": report,
    }


def test_mined_cases_pass_ground_truth_validation(scored: dict[str, Any]) -> None:
    """Existing tests pass on both candidates; the hidden tests fail on the defective one
    and pass on the good one (and fail on the base: they are the fix's)."""
    truth = scored["truth"]
    assert len(truth) == 2, scored["stderr"]
    for case_id, record in truth.items():
        label = case_id.rsplit(".", 1)[1]
        assert record["existing"] == "passed", record
        assert record["base"] == "failed", record
        assert record["patched"] == ("passed" if label == "good" else "failed"), record


def test_the_ground_truth_critic_replayed_verifies_every_defect_and_rejects_no_good_patch(
    scored: dict[str, Any],
) -> None:
    assert scored["code"] == 0, scored["stderr"]
    assert "held-out: 2 of 2 cases" in scored["stdout"]
    assert "critic replay:" in scored["stdout"]
    b = scored["report"]["arms"]["b"]
    assert (b["recall"]["k"], b["recall"]["n"]) == (1, 1)
    assert (b["false_rejection"]["k"], b["false_rejection"]["n"]) == (0, 1)
    a = scored["report"]["arms"]["a"]
    assert a["recall"]["k"] == 0  # the old tests pass the twin: the validator alone sees nothing
    assert "label check" not in scored["stdout"]
