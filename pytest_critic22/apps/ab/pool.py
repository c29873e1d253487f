"""The runs of ``critic22 ab``: every unit's record, from the cache or run on an engine
(:mod:`pytest_critic22.apps.cluster`: this process, a process pool, or a Dask cluster).

Ctrl-C (or SIGTERM) stops the driver and its workers; the units finished by then stay cached.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from pytest_critic22.apps.ab.runs import CACHE_SCHEMA, Unit, cached_record, run_unit
from pytest_critic22.apps.cluster import Engine, Failed, Shipping, relocate
from pytest_critic22.execution.statedir import write_json


def _to_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class Progress:
    """``cases done/total, runs done/total (cached), elapsed`` on one line of stderr."""

    def __init__(self, units: Sequence[Unit], stream: IO[str] | None) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.left: dict[str, int] = {}
        for unit in units:
            self.left[unit.case.id] = self.left.get(unit.case.id, 0) + 1
        self.cases = len(self.left)
        self.runs = len(units)
        self.done = 0
        self.cached = 0
        self.tty = bool(stream is not None and stream.isatty())
        self.engine: Engine | None = None

    def advance(self, unit: Unit, *, cached: bool) -> None:
        self.done += 1
        self.cached += int(cached)
        self.left[unit.case.id] -= 1
        if not cached or self.tty:
            self.show()

    @property
    def cases_done(self) -> int:
        return sum(1 for n in self.left.values() if n == 0)

    def line(self) -> str:
        seconds = int(time.monotonic() - self.start)
        return (
            f"critic22 ab: cases {self.cases_done}/{self.cases} done, runs {self.done}/"
            f"{self.runs} ({self.cached} from the cache), {seconds // 60:02d}:{seconds % 60:02d} "
            "elapsed"
        ) + (f"; {status}" if self.engine is not None and (status := self.engine.status()) else "")

    def show(self) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def execute(
    units: Sequence[Unit],
    *,
    engine: Engine,
    fresh: bool,
    progress: Progress,
    runner: Callable[[Unit], dict[str, Any]] = run_unit,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every unit's record: from the cache unless ``fresh``, else run on ``engine``.

    This process writes the cache (a worker's disk need not be this one's). A unit the engine
    lost (its worker died past the retries) is an error record: the case is excluded, never a
    verdict. Raises KeyboardInterrupt when interrupted; the units finished by then stay cached.
    """
    records: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[Unit] = []
    for unit in units:
        record = None if fresh else cached_record(unit)
        if record is None:
            todo.append(unit)
        else:
            record["cached"] = True
            records[(unit.case.id, unit.kind)] = record
            progress.advance(unit, cached=True)
    if progress.cached and not progress.tty:
        progress.show()
    if not todo:
        return records
    progress.engine = engine
    try:
        previous: Any = signal.signal(signal.SIGTERM, _to_interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        previous = None
    try:
        for index, outcome in engine.map_unordered(runner, todo, shipping=SHIPPING):
            unit = todo[index]
            record = lost_record(unit, outcome.reason) if isinstance(outcome, Failed) else outcome
            if not record.get("error"):
                write_json(unit.cache_file, record)
            record["cached"] = False
            records[(unit.case.id, unit.kind)] = record
            progress.advance(unit, cached=False)
        return records
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def lost_record(unit: Unit, reason: str) -> dict[str, Any]:
    """The record of a unit the engine lost: an infrastructure error, never cached."""
    return {
        "error": f"infrastructure: {reason}",
        "schema": CACHE_SCHEMA,
        "key": unit.key,
        "case": unit.case.id,
        "kind": unit.kind,
        "critic": None,
        "elapsed": 0.0,
    }


def _repos(unit: Unit) -> list[Path]:
    """The repositories on this disk the unit needs: a git case's (the bundled samples come
    from package data, which every worker has)."""
    return [unit.case.repo] if (unit.case.repo / ".git").exists() else []


def _files(unit: Unit) -> list[Path]:
    """The other files the unit reads: the case's packet files and the critic's answer."""
    case = unit.case
    files = [case.patch, case.spec, case.root_cause, case.base_patch]
    if isinstance(case.obligations, Path):
        files.append(case.obligations)
    if unit.critic is not None and unit.kind in ("critic", "unblinded"):
        files.append(unit.critic.recording(case, unblinded=unit.kind == "unblinded"))
    return [f for f in files if f is not None and f.is_file()]


def _localize(unit: Unit, copies: Mapping[Path, Path]) -> Unit:
    def at(path: Path | None) -> Path | None:
        return None if path is None else relocate(path, copies)

    case = unit.case
    obligations = case.obligations
    case = replace(
        case,
        repo=relocate(case.repo, copies),
        patch=relocate(case.patch, copies),
        spec=at(case.spec),
        root_cause=at(case.root_cause),
        base_patch=at(case.base_patch),
        obligations=relocate(obligations, copies) if isinstance(obligations, Path) else obligations,
    )
    critic = unit.critic
    if critic is not None and critic.folder is not None:
        # the folder the critic's shipped answer landed in (names kept), else where it was
        landed = [copy.parent for source, copy in copies.items() if source.parent == critic.folder]
        critic = replace(critic, folder=landed[0] if landed else relocate(critic.folder, copies))
    return replace(unit, case=case, critic=critic)


SHIPPING: Shipping[Unit] = Shipping(_repos, _localize, _files)
