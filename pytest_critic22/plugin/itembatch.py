"""The generated items of a run, executed together: the first one to run runs them all.

When a process (the controller, or an xdist worker) runs its first generated item, it claims
every selected generated item that nobody has claimed yet (a lock file each, held until its
result is written) and executes their procedures at once through a :class:`Batcher`: runs
on the same tree merge into one child pytest, different trees run side by side. Results are
written to the run's scratch folder; an item whose procedure another process is executing
waits for that lock and reads the result, and runs its procedure itself if the other process
died first (the kernel releases a dead process's locks). Deselected items (``-k``, ``--lf``)
are never claimed: peers are the session's selected items.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.verification.procedures import FindingResult

if TYPE_CHECKING:
    from pytest_critic22.execution.batching import Batcher, RunChild, RunForked

__all__ = ["ItemBatch", "ResultStore"]

Work = Callable[[], FindingResult]


class ResultStore:
    """Results of a run's generated items, shared by every process of the run."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, name: str, suffix: str) -> Path:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return self.folder / f"{digest}{suffix}"

    def read(self, name: str) -> FindingResult | None:
        try:
            record = json.loads(self._path(name, ".json").read_text(encoding="utf-8"))
            return FindingResult.from_record(record)
        except (OSError, ValueError):
            return None

    def write(self, name: str, result: FindingResult) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self._path(name, ".json")
        partial = final.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(result.to_record()), encoding="utf-8")
        os.replace(partial, final)  # a reader sees all of it or nothing

    def claim(self, name: str, *, wait: bool) -> int | None:
        """A held lock on ``name`` (its fd), or None when another process holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path(name, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError:
            os.close(fd)
            return None
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def release(fd: int) -> None:
        with contextlib.suppress(OSError):
            os.close(fd)


class ItemBatch:
    """One process's share of the run's generated items."""

    def __init__(
        self,
        folder: Path,
        run_child: RunChild,
        parallel: int,
        run_forked: RunForked | None = None,
    ) -> None:
        self.store = ResultStore(folder)
        self._run_child = run_child
        self._run_forked = run_forked
        self._parallel = parallel
        self._done: dict[str, FindingResult] = {}
        self._failed: dict[str, BaseException] = {}
        self.batcher: Batcher | None = None  # while a batch runs: what the procedures use

    def result(self, name: str, peers: Mapping[str, Work]) -> FindingResult:
        """The result of item ``name``, executing it with every unclaimed peer if needed."""
        if name in self._failed:
            raise self._failed.pop(name)
        known = self._done.get(name) or self.store.read(name)
        if known is not None:
            return known
        with self._claimed(name, peers) as mine:
            if name not in mine:  # executed by another process meanwhile
                known = self.store.read(name)
                if known is not None:
                    return known
                raise RuntimeError(f"critic22: no result for {name}")  # pragma: no cover
            self._execute({n: peers[n] for n in mine})
        if name in self._failed:
            raise self._failed.pop(name)
        return self._done[name]

    @contextlib.contextmanager
    def _claimed(self, name: str, peers: Mapping[str, Work]) -> Iterator[list[str]]:
        fds: dict[str, int] = {}
        try:
            for other in peers:
                if other in self._done or other in self._failed:
                    continue
                fd = self.store.claim(other, wait=False)
                if fd is not None:
                    if self.store.read(other) is None:
                        fds[other] = fd
                    else:
                        self.store.release(fd)
            if name not in fds:
                # Its owner is executing it. Wait holding nothing: the owner may be waiting
                # for an item this process claimed (two processes that claimed at once).
                for held in fds.values():
                    self.store.release(held)
                fds = {}
                fd = self.store.claim(name, wait=True)
                assert fd is not None
                if self.store.read(name) is None:  # its owner died before writing it
                    fds[name] = fd
                else:
                    self.store.release(fd)
            yield list(fds)
        finally:
            for fd in fds.values():
                self.store.release(fd)

    def _execute(self, works: Mapping[str, Work]) -> None:
        from pytest_critic22.execution.batching import Batcher

        names = list(works)
        batcher = Batcher(self._run_child, self._parallel, self._run_forked)
        self.batcher = batcher
        try:
            jobs = batcher.execute([works[n] for n in names])
        finally:
            self.batcher = None
        for name, job in zip(names, jobs, strict=True):
            if job.error is not None:
                self._failed[name] = job.error
            elif job.value is not None:
                self._done[name] = job.value
                self.store.write(name, job.value)
