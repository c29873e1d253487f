"""The worker pool of ``critic22 ab``: every unit's record, from the cache or run in parallel.

Ctrl-C (or SIGTERM) stops the driver and its workers; the units finished by then stay cached.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import IO, Any

from pytest_critic22.apps.ab.runs import Unit, _worker_init, cached_record, run_unit


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
        )

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
    jobs: int,
    fresh: bool,
    progress: Progress,
    runner: Callable[[Unit], dict[str, Any]] = run_unit,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every unit's record: from the cache unless ``fresh``, else run (in a pool of ``jobs``).

    Raises KeyboardInterrupt when interrupted; the units finished by then stay cached.
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
    try:
        previous: Any = signal.signal(signal.SIGTERM, _to_interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        previous = None
    try:
        if jobs <= 1:
            for unit in todo:
                record = runner(unit)
                record["cached"] = False
                records[(unit.case.id, unit.kind)] = record
                progress.advance(unit, cached=False)
            return records
        _run_pool(todo, jobs, runner, records, progress)
        return records
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_pool(
    todo: Sequence[Unit],
    jobs: int,
    runner: Callable[[Unit], dict[str, Any]],
    records: dict[tuple[str, str], dict[str, Any]],
    progress: Progress,
) -> None:
    # spawn: no fork of a process that may hold threads (a test's server, the executor's own)
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_init)
    pending: dict[Future[dict[str, Any]], Unit] = {}
    try:
        pending = {pool.submit(runner, unit): unit for unit in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                unit = pending.pop(future)
                record = future.result()
                record["cached"] = False
                records[(unit.case.id, unit.kind)] = record
                progress.advance(unit, cached=False)
    except BaseException:
        for future in pending:
            future.cancel()
        workers = getattr(pool, "_processes", None) or {}
        for pid in list(workers):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
