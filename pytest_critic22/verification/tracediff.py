"""Where a failing replay's trace first parts from a passing one. Pure; standard library only.

The traces are the JSONL files ``pytest_critic22.child.tracer`` writes. Two events are the same
when their kind, function, file and thread index agree: line numbers differ between the
patched and the counterfactual tree, and timing is what a race makes vary anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONTEXT",
    "KEY",
    "Divergence",
    "Pairing",
    "Trace",
    "first_divergence",
    "pick_passing",
    "read_events",
    "read_trace",
]

#: The fields two events are compared on.
KEY = ("e", "f", "file", "t")
#: How many agreeing events a divergence shows before the point where the runs part.
CONTEXT = 5

Event = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Divergence:
    index: int  # position of the first differing event
    failing: dict[str, Any] | None  # the failing run's event there (None: it ended first)
    passing: dict[str, Any] | None  # the passing run's event there (None: it ended first)
    context: tuple[dict[str, Any], ...]  # up to CONTEXT events before index, common to both

    def describe(self) -> str:
        # Same name, other file: without the file both sides would read alike.
        files = (self.failing or {}).get("file"), (self.passing or {}).get("file")
        with_file = None not in files and files[0] != files[1]
        if self.failing is None:
            head = f"event {self.index}: the failing run ended"
        else:
            head = f"event {self.index}: failing run: {_show(self.failing, with_file)}"
        if self.passing is None:
            head += " where a passing run had already ended"
        else:
            head += f" where a passing run had: {_show(self.passing, with_file)}"
        if not self.context:
            return head
        return head + "\n  after: " + ", ".join(_show(e) for e in self.context)


@dataclass(frozen=True, slots=True)
class Pairing:
    failing_run: int  # index into the runs given to pick_passing
    passing_run: int
    divergence: Divergence | None  # None: the traces agree; the cause is outside the traced files


@dataclass(frozen=True, slots=True)
class Trace:
    events: tuple[dict[str, Any], ...]
    failed: bool | None  # None: no outcome line (the run did not finish)
    truncated: bool = False  # the tracer hit its cap and dropped later events
    tests: Mapping[str, str] = field(default_factory=dict)  # node id -> passed|failed|skipped


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Parse a tracer file; a torn last line (the child was killed mid-write) is dropped."""
    from pytest_critic22.execution.child_files import read_child_file

    data = read_child_file(path)  # the child wrote it: no link, no FIFO, bounded
    if data is None:
        raise OSError(f"{os.fspath(path)}: not a regular file the tracer wrote")
    lines = data.decode("utf-8", "replace").split("\n")
    events: list[dict[str, Any]] = []
    outcome: dict[str, Any] | None = None
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == last:
                break
            raise ValueError(f"{os.fspath(path)}:{number + 1}: not a JSON line") from None
        if not isinstance(record, dict):
            raise ValueError(f"{os.fspath(path)}:{number + 1}: not a JSON object")
        if record.get("e") == "outcome":
            outcome = record
        else:
            events.append(record)
    if outcome is None:
        return Trace(tuple(events), None)
    tests = outcome.get("tests")
    return Trace(
        tuple(events),
        bool(outcome.get("failed")),
        bool(outcome.get("truncated")),
        {str(k): str(v) for k, v in tests.items()} if isinstance(tests, dict) else {},
    )


def read_events(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], bool | None]:
    """The events (without the outcome line) and whether the run failed (None: unknown)."""
    trace = read_trace(path)
    return list(trace.events), trace.failed


def first_divergence(failing: Sequence[Event], passing: Sequence[Event]) -> Divergence | None:
    """The first event where the two runs differ; None when they tell the same story."""
    index = _common_prefix(failing, passing)
    if index == len(failing) == len(passing):
        return None
    return Divergence(
        index,
        dict(failing[index]) if index < len(failing) else None,
        dict(passing[index]) if index < len(passing) else None,
        tuple(dict(e) for e in failing[max(0, index - CONTEXT) : index]),
    )


def pick_passing(runs: Sequence[tuple[Sequence[Event], bool]]) -> Pairing | None:
    """Pair the first failing run with the passing run that stays with it the longest.

    The later two runs part, the less of the trace is shared noise and the closer the
    divergence is to what made the difference. None unless there is a run of each kind.
    """
    failing_run = next((i for i, (_, failed) in enumerate(runs) if failed), None)
    if failing_run is None:
        return None
    failing = runs[failing_run][0]
    best: tuple[int, int] | None = None  # (shared prefix, passing run)
    for i, (events, failed) in enumerate(runs):
        if failed:
            continue
        shared = _common_prefix(failing, events)
        if shared == len(failing) == len(events):
            return Pairing(failing_run, i, None)
        if best is None or shared > best[0]:
            best = (shared, i)
    if best is None:
        return None
    return Pairing(failing_run, best[1], first_divergence(failing, runs[best[1]][0]))


def _key(event: Event) -> tuple[Any, ...]:
    return tuple(event.get(k) for k in KEY)


def _common_prefix(a: Sequence[Event], b: Sequence[Event]) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):  # lengths differ: a prefix
        if _key(x) != _key(y):
            return index
    return min(len(a), len(b))


def _show(event: Mapping[str, Any], with_file: bool = False) -> str:
    where = [str(event.get("file"))] if with_file else []
    if event.get("t") is not None:
        where.append(f"t{event['t']}")
    suffix = f" ({', '.join(where)})" if where else ""
    return f"{event.get('e', '?')} {event.get('f', '?')}{suffix}"
