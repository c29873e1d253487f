"""One child pytest per tree for every finding that needs it: requests merged by quiescence.

The procedures of a run's items execute side by side, each in a thread of its own, written
as if alone (``run_tests(ctx, tree, nodeids)``). A :class:`Batcher` holds every request to
run tests until no procedure is still working (each is either waiting for a run or done),
then runs the waiting requests grouped by tree — one child pytest per group, groups of
different trees side by side up to the CPU slots — and hands each request the part of the
child's report that is its own, mapped back by node id. Cost grows with the number of
distinct trees, not with the number of findings.

A group never mixes the critic's generated tests with the project's own (preservation,
obligations, an acceptance test): a generated module could register hooks that change other
tests' outcomes in its process, and the validator's own runs must not be open to that. A
request whose part of a merged run is not clean — a collection error, an error in setup, no
test at all — and every request of a merged run that ended without per-test outcomes (a
timeout, a crash, a usage error) is run again alone, so what decides it is exactly what a
run of its own says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generic, TypeVar

from pytest_critic22.child.protocol import GENERATED_PREFIX
from pytest_critic22.execution.junit import Case
from pytest_critic22.model.results import RunResult, RunStatus

__all__ = ["Batcher", "Cancelled", "RunForked", "RunRequest", "Speculation", "split"]

T = TypeVar("T")
# The fewest sessions worth a fork-server of their own when a tree's are cut side by side: a
# server's start (bubblewrap, Python, pytest's imports, its configuration) costs several.
_MIN_SESSIONS = 8


class Cancelled(Exception):
    """The batch was interrupted: a procedure waiting for a run stops here."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    tree: Path
    nodeids: tuple[str, ...]
    attempts: int = 1  # in-process confirmation of a failing test (1: none)
    confirm: int = 1  # a fork-server's runs for it: the first, then fresh forks while failing

    @property
    def generated(self) -> bool:
        return any(_file_of(n).startswith(GENERATED_PREFIX) for n in self.nodeids)

    @property
    def group_key(self) -> tuple[str, int, tuple[str, ...]]:
        """Requests with one key share a child. The critic's generated modules never share
        one with anything: a module's import-time side effects (a patched global, an
        environment variable, a registered hook) would reach the other tests in its process
        and could turn another finding's verdict, or a preservation test's, either way."""
        return (str(self.tree), self.attempts, self.nodeids if self.generated else ())


# Runs a child: (tree, node ids, attempts, requests merged) -> (the run, its cases). A merged
# run (2 or more requests) continues past collection errors (--continue-on-collection-errors):
# one module's error must not hide the others' outcomes.
RunChild = Callable[[Path, Sequence[str], int, int], tuple[RunResult, list[Case]]]

# Runs each generated request as sessions of its own in one child (a fork-server:
# pytest_critic22.execution.forkserver), confirming per its ``confirm``; None for a request that a
# child of its own must decide. Its third argument: whether that child may be the tree's booted one.
RunForked = Callable[[Path, Sequence[RunRequest], bool], list[tuple[RunResult, list[Case]] | None]]


@dataclass(slots=True, eq=False)
class _Slot:
    request: RunRequest
    result: RunResult | None = None
    waiting: bool = False  # a procedure waits for this result (it is not working)
    dropped: bool = False  # a speculative run nobody will read: not started if not yet


@dataclass(slots=True)
class _Job(Generic[T]):
    work: Callable[[], T]
    value: T | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass(frozen=True, slots=True)
class Speculation:
    """A run started (or queued) for a procedure before it asked for it."""

    slot: _Slot


@dataclass(slots=True)
class Stats:
    requests: int = 0
    children: int = 0  # merged runs started
    alone: int = 0  # requests run again alone
    speculative: int = 0  # runs started beside a procedure's own, before it asked for them
    wasted: int = 0  # speculative runs started and then not wanted
    groups: list[int] = field(default_factory=list)  # requests per merged run


class Batcher:
    """Runs a set of procedures in threads and merges their test runs by tree."""

    def __init__(
        self, run_child: RunChild, parallel: int, run_forked: RunForked | None = None
    ) -> None:
        self._run_child = run_child
        self._run_forked = run_forked
        self._parallel = max(1, parallel)
        self._cond = threading.Condition()
        self._active = 0  # procedures working (not waiting for a run, not done)
        self._pending: list[_Slot] = []
        self._spare: list[_Slot] = []  # speculative requests not started yet
        self._cancelled = False
        self.stats = Stats()

    # -- called by a procedure (in its thread) ---------------------------------------------
    def run(self, request: RunRequest) -> RunResult:
        slot = _Slot(request)
        with self._cond:
            if self._cancelled:
                raise Cancelled
            self._pending.append(slot)
            self.stats.requests += 1
            return self._await(slot)

    def speculate(self, request: RunRequest) -> Speculation:
        """Run this request beside the procedure's next one when that round of runs leaves one
        of this batcher's ``parallel`` slots free; the procedure claims its result later
        (:meth:`claim`) or drops it (:meth:`drop`). If no slot is free when the round starts,
        it runs only once claimed, as an ordinary request. (Under xdist each worker has a
        batcher of its own: a speculative run may then queue for a machine-wide CPU slot.)"""
        slot = _Slot(request)
        with self._cond:
            if self._cancelled:
                raise Cancelled
            self._spare.append(slot)
        return Speculation(slot)

    def claim(self, speculation: Speculation) -> RunResult:
        """The speculative run's result: at once if it ran, else when it has."""
        slot = speculation.slot
        with self._cond:
            if self._cancelled:
                raise Cancelled
            self.stats.requests += 1
            if slot in self._spare:  # never started: an ordinary request now
                self._spare.remove(slot)
                self._pending.append(slot)
            return self._await(slot)

    def drop(self, speculation: Speculation) -> None:
        """The procedure will not read it: not started if it has not been."""
        slot = speculation.slot
        with self._cond:
            slot.dropped = True
            if slot in self._spare:
                self._spare.remove(slot)
            elif slot.result is not None:  # it ran already (else: counted when it ends)
                self.stats.wasted += 1

    def _await(self, slot: _Slot) -> RunResult:
        """(Lock held.) Wait, not working, until the slot's run is done."""
        if slot.result is None:
            slot.waiting = True
            self._active -= 1
            self._cond.notify_all()
            while slot.result is None and not self._cancelled:
                self._cond.wait()
        if slot.result is None:
            raise Cancelled
        return slot.result

    # -- called by the executor ------------------------------------------------------------
    def execute(self, works: Sequence[Callable[[], T]]) -> list[_Job[T]]:
        """Run every work in a thread of its own until all are done; runs merged by tree."""
        from pytest_critic22.execution.processes import allow_children

        allow_children()
        jobs = [_Job(work) for work in works]
        threads = [
            threading.Thread(target=self._job, args=(job,), name=f"critic22-{i}", daemon=True)
            for i, job in enumerate(jobs)
        ]
        with self._cond:
            self._active += len(jobs)
        pool = ThreadPoolExecutor(self._parallel, thread_name_prefix="critic22-run")
        try:
            for thread in threads:
                thread.start()
            with self._cond:
                while True:
                    if self._active == 0 and self._pending:
                        forked = self._run_forked is not None
                        groups = self._round(forked)
                        for group in groups:
                            pool.submit(self._dispatch, group, _alone(group, groups))
                    elif all(job.done for job in jobs):
                        break
                    self._cond.wait()
        except BaseException:  # Ctrl-C: no procedure waits for ever, no child outlives us
            self.cancel()
            raise
        finally:
            pool.shutdown(wait=not self._cancelled, cancel_futures=True)
            for thread in threads:
                if thread.ident is not None:  # started (a failed start must not hide why)
                    thread.join(timeout=None if not self._cancelled else 5)
        return jobs

    def cancel(self) -> None:
        from pytest_critic22.execution.processes import kill_live_children

        with self._cond:
            self._cancelled = True
            self._cond.notify_all()
        kill_live_children()

    def _job(self, job: _Job[T]) -> None:
        try:
            job.value = job.work()
        except BaseException as exc:  # handed to the item that owns it
            job.error = exc
        finally:
            with self._cond:
                job.done = True
                self._active -= 1
                self._cond.notify_all()

    def _round(self, forked: bool) -> list[list[_Slot]]:
        """(Lock held.) The pending requests' groups, and speculative ones beside them.

        A slot the pending groups leave free goes first to another tree's speculative runs
        worth a fork-server of their own (at least ``_MIN_SESSIONS`` sessions, or a child's
        run), before a tree's fork-server sessions are cut in two: each tree's runs then
        take its booted server (one group per tree), where a cut starts a server per group
        and, the groups' results coming back apart, the speculated tree's runs in smaller
        rounds. Then the pending trees are cut, each in at most its share of the slots left,
        and smaller speculative groups take only slots no cut used. With more slots than
        trees, a speculated tree is cut in at most its share too."""
        whole = len(_grouped(self._pending, forked, 1))
        free = self._parallel - whole
        spare: list[list[_Slot]] = []
        if free > 0 and self._spare:
            trees = len(_grouped(self._spare, forked, 1))
            share = max(1, self._parallel // (whole + min(trees, free)))
            spare = self._take_spare(free, forked, share, worth_a_server=True)
        cut = max(1, (self._parallel - len(spare)) // max(1, whole))
        groups = _grouped(self._pending, forked, cut)
        self._pending = []
        left = self._parallel - len(groups) - len(spare)
        if left > 0 and self._spare:
            spare += self._take_spare(left, forked, 1)
        return groups + spare

    def _take_spare(
        self, free: int, forked: bool, share: int, worth_a_server: bool = False
    ) -> list[list[_Slot]]:
        """(Lock held.) Speculative groups for ``free`` CPU slots, a tree's cut in at most
        ``share``; with ``worth_a_server``, only groups of at least ``_MIN_SESSIONS``
        fork-server sessions (or a child's run)."""
        if free <= 0 or not self._spare:
            return []
        taken = [
            group
            for group in _grouped(self._spare, forked, share)
            if not worth_a_server
            or not (forked and group[0].request.generated)
            or len(group) >= _MIN_SESSIONS
        ][:free]
        started = {id(slot) for group in taken for slot in group}
        self._spare = [slot for slot in self._spare if id(slot) not in started]
        self.stats.speculative += len(started)
        return taken

    def _dispatch(self, group: list[_Slot], alone: bool) -> None:
        with self._cond:  # a speculative run dropped while it queued is not started
            group = [slot for slot in group if not slot.dropped]
        if not group:
            return
        try:
            results = self._run_group([slot.request for slot in group], alone)
        except BaseException as exc:  # a bug here must not leave a procedure waiting
            reason = f"the run could not be started: {type(exc).__name__}: {exc}"
            results = [RunResult("error", reason, None, 0.0) for _ in group]
        with self._cond:
            for slot, result in zip(group, results, strict=True):
                slot.result = result
                if slot.waiting:  # its procedure works again
                    slot.waiting = False
                    self._active += 1
                elif slot.dropped:
                    self.stats.wasted += 1
            self._cond.notify_all()

    def _run_group(self, requests: list[RunRequest], alone: bool) -> list[RunResult]:
        if self._cancelled:
            return [RunResult("error", "interrupted", None, 0.0) for _ in requests]
        first = requests[0]
        if first.generated and self._run_forked is not None:
            return self._run_sessions(requests, self._run_forked, alone)
        nodeids = list(dict.fromkeys(n for r in requests for n in r.nodeids))
        merged, cases = self._run_child(first.tree, nodeids, first.attempts, len(requests))
        with self._cond:
            self.stats.children += 1
            self.stats.groups.append(len(requests))
        if len(requests) == 1 and tuple(nodeids) == first.nodeids:
            return [merged]
        parts = split(merged, cases, requests)
        results = []
        for request, part in zip(requests, parts, strict=True):
            if part is None and not self._cancelled:
                with self._cond:
                    self.stats.alone += 1
                part, _ = self._run_child(request.tree, list(request.nodeids), request.attempts, 1)
            results.append(part or RunResult("error", "interrupted", None, 0.0))
        return results

    def _run_sessions(
        self, requests: list[RunRequest], forked: RunForked, alone: bool
    ) -> list[RunResult]:
        """Generated requests: sessions of their own in one fork-server child (a booted one
        only when ``alone``); a request it could not decide runs in a child of its own."""
        parts = forked(requests[0].tree, requests, alone)
        with self._cond:
            self.stats.children += 1
            self.stats.groups.append(len(requests))
        results: list[RunResult] = []
        for request, part in zip(requests, parts, strict=True):
            if part is None and not self._cancelled:
                with self._cond:
                    self.stats.alone += 1
                part = self._run_child(request.tree, list(request.nodeids), request.attempts, 1)
            if part is None:
                results.append(RunResult("error", "interrupted", None, 0.0))
            else:
                results.append(
                    replace(part[0], merged=len(requests)) if len(requests) > 1 else part[0]
                )
        return results


def _alone(group: list[_Slot], groups: list[list[_Slot]]) -> bool:
    """Whether the group is its tree's only fork-server group this round (runs of the
    project's tests use none): only then may it take the tree's booted fork-server
    (forkrun.prestart). Of two groups side by side, one started early finishes early, and its
    tree's next runs then come in more, smaller rounds."""
    tree = group[0].request.tree
    same = [g for g in groups if g[0].request.tree == tree and g[0].request.generated]
    return len(same) == 1


def _grouped(slots: list[_Slot], forked: bool, parallel: int) -> list[list[_Slot]]:
    """Slots by group key. With a fork-server, the generated requests of a tree share its
    children (their sessions stay apart), cut in up to ``parallel`` groups side by side, each
    of at least ``_MIN_SESSIONS``: a fork-server's start costs about as much as a few of its
    sessions, and a slot a short group leaves free can start another tree's speculative runs."""
    groups: dict[tuple[str, int, tuple[str, ...]], list[_Slot]] = {}
    for slot in slots:
        request = slot.request
        shared = forked and request.generated
        key = (str(request.tree), -1, ("<forked>",)) if shared else request.group_key
        groups.setdefault(key, []).append(slot)
    chunks: list[list[_Slot]] = []
    for key, group in groups.items():
        if key[1] == -1 and len(group) > 1:
            count = min(max(1, parallel), max(1, len(group) // _MIN_SESSIONS))
            chunks += [group[i::count] for i in range(count)]
        else:
            chunks.append(group)
    return chunks


def split(
    merged: RunResult, cases: Sequence[Case], requests: Sequence[RunRequest]
) -> list[RunResult | None]:
    """Each request's part of a merged run, as a run of its own would report it; None where
    only a run of its own can say (see the module's docstring)."""
    if merged.exit_code is None or merged.exit_code not in (0, 1) or not cases:
        return [None for _ in requests]
    if any(not case.nodeid for case in cases):  # a collection error: whose, exactly?
        owners = [_owner_of_unnamed(case, requests) for case in cases if not case.nodeid]
        if any(owner is None for owner in owners):
            return [None for _ in requests]
    parts: list[RunResult | None] = []
    for request in requests:
        own = [case for case in cases if case.nodeid and _selects(request.nodeids, case.nodeid)]
        unnamed = [c for c in cases if not c.nodeid and _owner_of_unnamed(c, [request])]
        if unnamed or not own or any(c.status == "error" for c in own):
            parts.append(None)
            continue
        tests = {c.key: c.status for c in own}
        statuses = {c.status for c in own}  # two cases of one name: both count
        status: RunStatus = "failed" if "failed" in statuses else "passed"
        text = "\n\n".join(f"{c.nodeid}: {c.text}" for c in own if c.text and c.status == "failed")
        parts.append(
            replace(
                merged,
                status=status,
                reason="",
                exit_code=1 if status == "failed" else 0,
                tests=tests,
                output=text[-4000:],
                merged=len(requests),
                attempts={c.key: c.attempts for c in own if c.attempts[:1] == ("failed",)},
            )
        )
    return parts


def _selects(nodeids: Sequence[str], nodeid: str) -> bool:
    for selected in nodeids:
        if nodeid == selected or nodeid.startswith((selected + "::", selected + "[")):
            return True
    return False


def _owner_of_unnamed(case: Case, requests: Sequence[RunRequest]) -> RunRequest | None:
    """The request whose module a collection error names (``tests.critic22_f1``)."""
    name = case.key.split("::", 1)[-1]
    for request in requests:
        for nodeid in request.nodeids:
            if name == nodeid.split("::")[0].removesuffix(".py").replace("/", "."):
                return request
    return None


def _file_of(nodeid: str) -> str:
    return nodeid.split("::")[0].rsplit("/", 1)[-1]
