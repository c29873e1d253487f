from __future__ import annotations

from pathlib import Path

from pytest_critic22.execution.ledger import SCHEMA_VERSION, Ledger, read_events


def test_events_carry_schema_run_time_and_payload(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / ".critic22" / "ledger.jsonl", "r1")
    ledger.append("run-start", {"patch": "p.diff"})
    (event,) = read_events(ledger.path)
    assert event["schema"] == SCHEMA_VERSION and event["run"] == "r1"
    assert event["event"] == "run-start" and event["payload"] == {"patch": "p.diff"}
    assert event["time"].endswith("+00:00")
    assert (tmp_path / ".critic22" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_the_ledger_only_ever_grows(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    Ledger(path, "a").append("one")
    first = path.read_bytes()
    Ledger(path, "b").append("two")
    assert path.read_bytes().startswith(first)
    assert [e["event"] for e in read_events(path)] == ["one", "two"]
    assert [e["event"] for e in read_events(path, "b")] == ["two"]
