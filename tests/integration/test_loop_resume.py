"""Resuming the loop from what earlier invocations left on disk: a lower --max-rounds, a
kill between a round's receipt and its state, a legacy state without run_id."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.driver import run_loop
from pytest_critic22.apps.loop.model import RoundRecord
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize

CASE = SAMPLES_DIR / "textstats" / "loops" / "repair-then-acquit"


RUN = "run_20261130_0123abcd"


def _seed(repo: Path, rounds: list[RoundRecord], state_round: int) -> Path:
    """What a killed loop leaves: round folders with records, and its state."""
    stage = repo / state.STAGE
    for record in rounds:
        folder = stage / "runs" / RUN / f"round-{record.round}"
        folder.mkdir(parents=True)
        (folder / "candidate.diff").write_text((CASE / "patch.diff").read_text())
        record = RoundRecord.from_dict(
            {**record.to_dict(), "candidate": str(folder / "candidate.diff")}
        )
        (folder / "record.json").write_text(json.dumps(record.to_dict()))
        if record.status == "continue":
            (folder / "next.diff").write_text((CASE / "patch.diff").read_text())
    saved = state.LoopState(
        RUN, state_round, "replay", "in_progress", 2, "not ready", (), state.iso_z(state.utc_now())
    )
    state.write_state(stage, saved)
    return stage


def _record(number: int, status: str, score: int = 2, verdict: str = "not ready") -> RoundRecord:
    return RoundRecord(
        run_id=RUN,
        round=number,
        max_rounds=4,
        verdict=verdict,
        score=score,
        positive=status == "acquitted",
        status=status,
        extra={"base": "HEAD"},
        trace_id=f"trace_{RUN}_r{number:02d}",
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return materialize("textstats", tmp_path / "repo")


def test_resuming_with_a_lower_max_rounds_ends_the_run(repo: Path) -> None:
    stage = _seed(repo, [_record(1, "continue"), _record(2, "continue")], 2)
    out = io.StringIO()
    opts = LoopOptions(repo, CASE / "patch.diff", findings_dir=CASE, max_rounds=2)
    result = run_loop(opts, out=out)
    assert "Recovered from interruption. Resuming at Round 3." in out.getvalue()
    assert result.run_id == RUN and result.status == "max-rounds"
    saved = json.loads((stage / state.STATE_FILE).read_text())
    assert saved["status"] == "completed"
    assert not (repo / ".critic22" / "traces").exists()  # no review ran


def test_a_round_killed_after_its_receipt_is_not_redone(repo: Path) -> None:
    stage = _seed(repo, [_record(1, "continue"), _record(2, "acquitted", 10, "ready")], 1)
    log = state.AcquittalLog(stage / state.ACQUITTAL_LOG)
    receipt = state.Receipt(
        RUN, 2, "replay", "medium", "ready", 10, f"trace_{RUN}_r02", "2026-11-30T00:00:00Z"
    )
    assert log.append(receipt)
    import pytest_critic22

    result = pytest_critic22.loop(
        CASE / "patch.diff", repo=repo, findings_dir=CASE, out=io.StringIO()
    )
    assert isinstance(result, pytest_critic22.LoopResult)
    assert result.status == "acquitted" and result.rounds[-1].round == 2
    assert len(log.for_run(RUN)) == 1
    assert json.loads((stage / state.STATE_FILE).read_text())["status"] == "completed"
    assert not (repo / ".critic22" / "traces").exists()
