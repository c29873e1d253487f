"""The in-child tracer (real pytest subprocesses) and the pure trace diff."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.verification.tracediff import (
    Divergence,
    first_divergence,
    pick_passing,
    read_events,
    read_trace,
)


def ev(kind: str, name: str, t: int = 0, line: int = 1, file: str = "m.py") -> dict[str, Any]:
    return {"e": kind, "f": name, "file": file, "line": line, "t": t}


def story(n: int) -> list[dict[str, Any]]:
    return [ev("call" if i % 2 == 0 else "return", f"f{i // 2}") for i in range(n)]


def test_identical_runs_have_no_divergence_even_when_line_numbers_differ() -> None:
    shifted = [{**e, "line": e["line"] + 40} for e in story(10)]
    assert first_divergence(story(10), shifted) is None
    assert first_divergence([], []) is None


def test_runs_that_differ_at_k_diverge_at_k_with_the_five_events_before_it() -> None:
    failing = story(12)
    passing = story(12)
    failing[7] = ev("return", "f3", t=1)
    found = first_divergence(failing, passing)
    assert found == Divergence(7, failing[7], passing[7], tuple(failing[2:7]))


def test_a_divergence_near_the_start_shows_only_the_events_there_are() -> None:
    failing, passing = story(6), story(6)
    passing[2] = ev("call", "other")
    found = first_divergence(failing, passing)
    assert found is not None
    assert found.index == 2
    assert found.context == tuple(failing[:2])


def test_a_thread_index_alone_makes_a_difference() -> None:
    failing, passing = story(4), story(4)
    failing[3] = {**failing[3], "t": 1}
    found = first_divergence(failing, passing)
    assert found is not None and found.index == 3


def test_when_one_run_is_a_prefix_of_the_other_the_shorter_side_is_none() -> None:
    short, long = story(4), story(6)
    ended = first_divergence(short, long)
    assert ended == Divergence(4, None, long[4], tuple(short[:4]))
    overran = first_divergence(long, short)
    assert overran == Divergence(4, long[4], None, tuple(short[:4]))


def test_a_divergence_describes_itself_in_a_line_or_two() -> None:
    found = Divergence(
        41,
        ev("return", "Counter.add", t=1),
        ev("call", "Counter.add", t=0),
        (ev("call", "Counter.add", t=1), ev("call", "Counter.add", t=0)),
    )
    assert found.describe() == (
        "event 41: failing run: return Counter.add (t1)"
        " where a passing run had: call Counter.add (t0)\n"
        "  after: call Counter.add (t1), call Counter.add (t0)"
    )
    assert Divergence(0, None, ev("call", "g"), ()).describe() == (
        "event 0: the failing run ended where a passing run had: call g (t0)"
    )
    same_name = Divergence(3, ev("call", "g", file="a.py"), ev("call", "g", file="b.py"), ())
    assert "call g (a.py, t0)" in same_name.describe()
    assert "call g (b.py, t0)" in same_name.describe()


def test_the_passing_run_that_stays_with_the_failing_one_longest_is_picked() -> None:
    failing = story(10)
    early, late = story(10), story(10)
    early[2] = ev("call", "x")
    late[8] = ev("call", "x")
    pairing = pick_passing([(early, False), (failing, True), (late, False)])
    assert pairing is not None
    assert (pairing.failing_run, pairing.passing_run) == (1, 2)
    assert pairing.divergence is not None and pairing.divergence.index == 8
    assert pick_passing([(failing, True)]) is None
    assert pick_passing([(failing, False)]) is None
    same = pick_passing([(failing, True), (story(10), False)])
    assert same is not None and same.divergence is None


def test_reading_a_trace_drops_a_torn_last_line_and_reports_no_outcome(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = [json.dumps(e) for e in story(3)]
    path.write_text("\n".join(lines) + '\n{"e": "call", "f": "Coun')
    events, failed = read_events(path)
    assert events == story(3)
    assert failed is None


def test_reading_a_finished_trace_separates_the_outcome_from_the_events(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    outcome = {"e": "outcome", "failed": True, "tests": {"t::x": "failed"}, "truncated": False}
    path.write_text("\n".join(json.dumps(e) for e in [*story(2), outcome]) + "\n")
    assert read_events(path) == (story(2), True)
    assert read_trace(path).tests == {"t::x": "failed"}


def test_a_corrupt_line_in_the_middle_of_a_trace_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(ev("call", "f")) + "\nnot json\n" + json.dumps(ev("return", "f")))
    with pytest.raises(ValueError, match=":2: not a JSON line"):
        read_events(path)
