"""REVIEW_STATE.json, the start rules and the append-only acquittal log (fixed clocks only)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.loop.state import (
    ACQUITTAL_LOG,
    RUN_ID,
    STAGE,
    STATE_FILE,
    AcquittalLog,
    LoopState,
    Receipt,
    StateError,
    decide_start,
    iso_z,
    new_loop_id,
    parse_time,
    read_state,
    start,
    write_state,
)

NOW = datetime(2026, 11, 30, 14, 22, 0, tzinfo=timezone.utc)
OLD_ID = "run_20261129_0badc0de"


def _ids(*tokens: str) -> Callable[[], str]:
    """A make_id that hands out predictable ids, one per call."""
    it: Iterator[str] = iter(tokens)
    return lambda: new_loop_id(NOW, next(it))


def _state(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "run_id": OLD_ID,
        "round": 2,
        "agent_id": "agent-1",
        "status": "in_progress",
        "last_score": 5.0,
        "last_verdict": "not ready",
        "pending_experiments": ["screen_1"],
        "timestamp": iso_z(NOW - timedelta(hours=1)),
    }
    data.update(over)
    return data


def _receipt(run_id: str, round_: int = 1, **over: Any) -> Receipt:
    fields: dict[str, Any] = {
        "run_id": run_id,
        "round": round_,
        "backend": "codex",
        "effort": "xhigh",
        "verdict": "ready",
        "score": 7.5,
        "trace_id": f"trace_{round_}",
        "timestamp": iso_z(NOW),
    }
    fields.update(over)
    return Receipt(**fields)


@pytest.fixture
def stage(tmp_path: Path) -> Path:
    return tmp_path / STAGE


def test_run_ids_have_the_seed_form() -> None:
    assert new_loop_id(NOW, "a1b2c3d4") == "run_20261130_a1b2c3d4"
    made = new_loop_id(NOW)
    assert RUN_ID.match(made) and made != new_loop_id(NOW)
    assert not RUN_ID.match("run_20261130_A1B2C3D4") and not RUN_ID.match(OLD_ID + "x")
    with pytest.raises(ValueError, match="8 lowercase hex"):
        new_loop_id(NOW, "xyz")


def test_times_are_written_with_z_and_read_in_every_form() -> None:
    assert iso_z(NOW.replace(microsecond=123456)) == "2026-11-30T14:22:00Z"
    assert iso_z(datetime(2026, 11, 30, 15, 22, tzinfo=timezone(timedelta(hours=1)))) == (
        "2026-11-30T14:22:00Z"
    )
    for text in ("2026-11-30T14:22:00Z", "2026-11-30T14:22:00+00:00", "2026-11-30T14:22:00"):
        assert parse_time(text) == NOW
    for bad in ("", "yesterday", None, 5, "2026-13-40T00:00:00Z"):
        assert parse_time(bad) is None


def test_loop_state_round_trips_with_exactly_the_seed_keys() -> None:
    state = LoopState.from_dict(_state())
    assert state.to_dict() == _state()
    assert list(state.to_dict()) == [
        "run_id",
        "round",
        "agent_id",
        "status",
        "last_score",
        "last_verdict",
        "pending_experiments",
        "timestamp",
    ]
    with pytest.raises(StateError, match="round"):
        LoopState.from_dict(_state(round=-1))


def test_no_state_is_a_fresh_start_at_round_one(stage: Path) -> None:
    begun = start(stage, NOW, _ids("00000001"))
    assert (begun.run_id, begun.round, begun.resumed, begun.discarded) == (
        "run_20261130_00000001",
        1,
        False,
        False,
    )
    assert begun.messages == ()


def test_a_completed_run_starts_fresh_with_a_new_run_id() -> None:
    begun = decide_start(_state(status="completed"), NOW, _ids("00000002"))
    assert begun.run_id == "run_20261130_00000002" != OLD_ID
    assert begun.round == 1 and not begun.resumed and not begun.discarded
    assert begun.messages == (
        f"Previous run {OLD_ID} completed; starting fresh run run_20261130_00000002.",
    )


def test_in_progress_within_24_hours_resumes_at_the_next_round(stage: Path) -> None:
    write_state(stage, LoopState.from_dict(_state(timestamp=iso_z(NOW - timedelta(hours=23)))))
    begun = start(stage, NOW, _ids("00000003"))
    assert (begun.run_id, begun.round, begun.resumed) == (OLD_ID, 3, True)
    assert begun.messages == ("Recovered from interruption. Resuming at Round 3.",)
    assert begun.state is not None and begun.state.agent_id == "agent-1"
    assert (stage / STATE_FILE).exists()


def test_in_progress_older_than_24_hours_is_discarded_and_deleted(stage: Path) -> None:
    write_state(stage, LoopState.from_dict(_state(timestamp=iso_z(NOW - timedelta(hours=25)))))
    begun = start(stage, NOW, _ids("00000004"))
    assert (begun.run_id, begun.round, begun.resumed, begun.discarded) == (
        "run_20261130_00000004",
        1,
        False,
        True,
    )
    assert "stale" in begun.messages[0] and OLD_ID in begun.messages[0]
    assert not (stage / STATE_FILE).exists()


@pytest.mark.parametrize("timestamp", [None, "", "not a time"])
def test_a_missing_or_unreadable_timestamp_is_stale(timestamp: str | None) -> None:
    data = _state(timestamp=timestamp)
    if timestamp is None:
        del data["timestamp"]
    begun = decide_start(data, NOW, _ids("00000005"))
    assert begun.discarded and not begun.resumed and begun.round == 1


def test_an_unknown_status_starts_fresh_and_says_why() -> None:
    begun = decide_start(_state(status="paused"), NOW, _ids("00000006"))
    assert not begun.resumed and begun.round == 1 and not begun.discarded
    assert "'paused'" in begun.messages[0]


@pytest.mark.parametrize("round_", [-1, "2", 1.5, True, None])
def test_a_bad_round_fails_closed(round_: object) -> None:
    with pytest.raises(StateError, match="round"):
        decide_start(_state(round=round_), NOW, _ids("00000007"))


def test_round_zero_resumes_at_round_one() -> None:
    assert decide_start(_state(round=0), NOW, _ids("00000008")).round == 1


def test_legacy_state_without_run_id_gets_one_and_resumes(stage: Path) -> None:
    """Seed receipt test 3 (the legacy file at the repository root, too)."""
    legacy = _state(round=3)
    del legacy["run_id"]
    root = stage.parent.parent
    root.mkdir(parents=True, exist_ok=True)
    (root / STATE_FILE).write_text(json.dumps(legacy), encoding="utf-8")
    begun = start(stage, NOW, _ids("0000000a"))
    assert (begun.run_id, begun.round, begun.resumed) == ("run_20261130_0000000a", 4, True)
    assert begun.messages == (
        "No run_id in legacy state file; assigned run_20261130_0000000a for this resume.",
        "Recovered from interruption. Resuming at Round 4.",
    )
    assert begun.state is not None and begun.state.run_id == begun.run_id


@pytest.mark.parametrize("run_id", ["", "run-1", 42])
def test_an_invalid_run_id_is_replaced_like_a_missing_one(run_id: object) -> None:
    begun = decide_start(_state(run_id=run_id), NOW, _ids("0000000b"))
    assert begun.resumed and begun.run_id == "run_20261130_0000000b"
    assert begun.messages[0].startswith("No run_id in legacy state file; assigned run_2026")


def test_the_stage_file_wins_over_the_legacy_one(stage: Path) -> None:
    write_state(stage, LoopState.from_dict(_state()))
    (stage.parent.parent / STATE_FILE).write_text(json.dumps(_state(status="completed")))
    assert start(stage, NOW, _ids("0000000c")).resumed


def test_a_stale_legacy_file_is_the_one_deleted(stage: Path) -> None:
    legacy = stage.parent.parent / STATE_FILE
    legacy.write_text(json.dumps(_state(timestamp="2020-01-01T00:00:00Z")))
    assert start(stage, NOW, _ids("0000000d")).discarded and not legacy.exists()


def test_write_is_atomic_and_leaves_no_temporary_file(stage: Path) -> None:
    first = LoopState.from_dict(_state())
    path = write_state(stage, first)
    assert path == stage / STATE_FILE
    second = LoopState.from_dict(_state(round=3, status="completed"))
    write_state(stage, second)
    assert sorted(p.name for p in stage.iterdir()) == [STATE_FILE]
    assert read_state(stage) == second.to_dict()
    assert (stage.parent / ".gitignore").exists()


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe"])
def test_an_unreadable_state_is_an_error_naming_the_file(stage: Path, content: bytes) -> None:
    stage.mkdir(parents=True)
    (stage / STATE_FILE).write_bytes(content)
    with pytest.raises(StateError) as info:
        start(stage, NOW, _ids("0000000e"))
    message = str(info.value)
    assert str(stage / STATE_FILE) in message and "\n" not in message
    assert (stage / STATE_FILE).read_bytes() == content  # never silently replaced


def test_read_state_is_none_without_a_file(stage: Path) -> None:
    assert read_state(stage) is None


def test_a_fresh_positive_run_writes_one_receipt_with_its_run_id(stage: Path) -> None:
    """Seed receipt test 1."""
    begun = start(stage, NOW, _ids("00000011"))
    log = AcquittalLog(stage / ACQUITTAL_LOG)
    assert log.append(_receipt(begun.run_id, 2))
    (line,) = (stage / ACQUITTAL_LOG).read_text().splitlines()
    assert json.loads(line)["run_id"] == begun.run_id
    assert log.acquitted(begun.run_id)


def test_a_completed_runs_receipt_does_not_count_for_a_new_run(stage: Path) -> None:
    """Seed receipt test 2."""
    log = AcquittalLog(stage / ACQUITTAL_LOG)
    log.append(_receipt(OLD_ID, 3))
    before = (stage / ACQUITTAL_LOG).read_bytes()
    write_state(stage, LoopState.from_dict(_state(round=3, status="completed")))
    begun = start(stage, NOW, _ids("00000012"))
    assert begun.run_id != OLD_ID and not begun.resumed
    assert log.for_run(begun.run_id) == [] and not log.acquitted(begun.run_id)
    assert (stage / ACQUITTAL_LOG).read_bytes() == before
    assert [r.run_id for r in log.receipts()] == [OLD_ID]


def test_two_runs_leave_two_lines_and_the_file_only_grows(stage: Path) -> None:
    """Seed receipt test 4."""
    path = stage / ACQUITTAL_LOG
    log = AcquittalLog(path)
    first_id, second_id = _ids("00000013", "00000014")(), new_loop_id(NOW, "00000015")
    log.append(_receipt(first_id, 2))
    first = path.read_bytes()
    log.append(_receipt(second_id, 1))
    data = path.read_bytes()
    assert data.startswith(first) and len(data) > len(first)
    assert len(data.splitlines()) == 2
    assert [r.run_id for r in log.receipts()] == [first_id, second_id]
    assert [r.run_id for r in log.for_run(second_id)] == [second_id]


def test_the_receipt_line_is_compact_in_the_seed_order() -> None:
    line = _receipt("run_20260713_a1b2c3d4", 3, trace_id="trace_20260713_run03").to_json_line()
    assert line == (
        '{"run_id":"run_20260713_a1b2c3d4","round":3,"backend":"codex","effort":"xhigh",'
        '"verdict":"ready","score":7.5,"trace_id":"trace_20260713_run03",'
        '"timestamp":"2026-11-30T14:22:00Z"}\n'
    )
    assert Receipt.from_dict(json.loads(line)) == _receipt(
        "run_20260713_a1b2c3d4", 3, trace_id="trace_20260713_run03"
    )


def test_append_is_idempotent_per_run_and_round(stage: Path) -> None:
    path = stage / ACQUITTAL_LOG
    log = AcquittalLog(path)
    assert log.append(_receipt(OLD_ID, 2))
    once = path.read_bytes()
    assert not log.append(_receipt(OLD_ID, 2, score=9))
    assert path.read_bytes() == once
    assert log.append(_receipt(OLD_ID, 3))
    assert len(log.for_run(OLD_ID)) == 2


def test_a_torn_last_line_is_kept_and_the_next_receipt_stands_alone(stage: Path) -> None:
    path = stage / ACQUITTAL_LOG
    log = AcquittalLog(path)
    log.append(_receipt(OLD_ID, 1))
    torn = _receipt(OLD_ID, 2).to_json_line().encode()[:30]
    with open(path, "ab") as fh:  # a crash mid-write
        fh.write(torn)
    before = path.read_bytes()
    assert [r.round for r in log.receipts()] == [1]
    assert log.append(_receipt(OLD_ID, 2))
    data = path.read_bytes()
    assert data.startswith(before)
    assert data.splitlines()[1] == torn  # kept as it was, never repaired
    assert [r.round for r in log.receipts()] == [1, 2]


def test_foreign_lines_are_skipped(stage: Path) -> None:
    path = stage / ACQUITTAL_LOG
    stage.mkdir(parents=True)
    path.write_bytes(b'[1]\n{"run_id": "x"}\n\xff\n{"round": true}\n\n')
    assert AcquittalLog(path).receipts() == []
    assert AcquittalLog(stage / "missing.jsonl").receipts() == []


def test_only_positive_verdicts_are_receipts(stage: Path) -> None:
    log = AcquittalLog(stage / ACQUITTAL_LOG)
    for bad in (_receipt(OLD_ID, verdict="not ready"), _receipt(OLD_ID, score=5.5)):
        with pytest.raises(ValueError, match="positive"):
            log.append(bad)
    assert not (stage / ACQUITTAL_LOG).exists()
    assert log.append(_receipt(OLD_ID, verdict="almost", score=6))


def test_the_log_is_opened_for_appending_only(stage: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real_open = os.open

    def spy(path: Any, flags: int, mode: int = 0o777) -> int:
        seen.append(flags)
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", spy)
    AcquittalLog(stage / ACQUITTAL_LOG).append(_receipt(OLD_ID))
    assert seen and all(f & os.O_APPEND and not f & os.O_TRUNC for f in seen)
