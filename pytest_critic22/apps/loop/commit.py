"""A loop run in progress and a round's commit point: the round's record, memory, log,
ledger event and receipt are written, and ``REVIEW_STATE.json`` last, so a round
interrupted before it is redone on resume, never half-counted."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pytest_critic22.apps.loop import journal, state
from pytest_critic22.apps.loop.model import RoundRecord
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.execution.statedir import write_file

__all__ = ["Run", "agent_id", "commit_round", "ledger_of", "now", "write_state"]


@dataclass
class Run:
    opts: LoopOptions
    stage: Path
    run_id: str
    base: str
    out: TextIO
    stdin: TextIO
    records: list[RoundRecord] = field(default_factory=list)
    saved: state.LoopState | None = None  # what REVIEW_STATE.json holds of this run
    warned: set[str] = field(default_factory=set)  # sandbox warnings already shown

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def round_dir(self, number: int) -> Path:
        return self.stage / "runs" / self.run_id / f"round-{number}"


def now() -> str:
    return state.iso_z(state.utc_now())


def ledger_of(run: Run) -> Any:
    from pytest_critic22.execution.ledger import Ledger

    return Ledger(run.stage.parent / "ledger.jsonl", run.run_id)


def commit_round(run: Run, record: RoundRecord, following: str) -> None:
    """Write the round: its record, memory, log, ledger event, receipt; the state last."""
    folder = run.round_dir(record.round)
    write_file(folder / "record.json", json.dumps(record.to_dict(), indent=2))
    if record.status == "continue":
        write_file(folder / "next.diff", following)
    previous = run.records[-1] if run.records else None
    journal.append_memory(run.stage, record, previous)
    journal.append_round(run.stage, record)
    ledger = ledger_of(run)
    ledger.append(
        "loop-round",
        {
            "round": record.round,
            "verdict": record.verdict,
            "score": record.score,
            "counts": record.counts(),
            "status": record.status,
            "trace_id": record.trace_id,
            "review_independence": record.review_independence,
        },
    )
    if record.positive:
        state.AcquittalLog(run.stage / state.ACQUITTAL_LOG).append(
            state.Receipt(
                run_id=run.run_id,
                round=record.round,
                backend=record.critic_source,
                effort=record.difficulty,
                verdict=record.verdict,
                score=record.score,
                trace_id=record.trace_id,
                timestamp=now(),
            )
        )
    if record.status != "continue":
        ledger.append("loop-stop", {"round": record.round, "status": record.status})
    write_state(run, record, final=record.status not in ("continue", "blocked"))


def write_state(run: Run, record: RoundRecord, *, final: bool) -> None:
    """The round's commit point. A BLOCKED round is not counted: the state stays in
    progress at the round before it, so running the loop again redoes it."""
    blocked = record.status == "blocked"
    saved = state.LoopState(
        run_id=run.run_id,
        round=record.round - 1 if blocked else record.round,
        agent_id=agent_id(run.opts),
        status="completed" if final else "in_progress",
        last_score=record.score,
        last_verdict=record.verdict,
        pending_experiments=(),
        timestamp=now(),
    )
    state.write_state(run.stage, saved)
    run.saved = saved


def agent_id(opts: LoopOptions) -> str:
    if opts.findings_dir is not None:
        return f"replay:{opts.findings_dir}"
    return f"model:{opts.model}"
