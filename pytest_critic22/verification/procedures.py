"""What every procedure kind shares (I/O): the execution context, the typed result, writing
the critic's test into a tree and running pytest there.

Each kind's own procedure lives in :mod:`pytest_critic22.kinds`; the decision itself is
:func:`pytest_critic22.verification.decide.decide`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_critic22.child.protocol import GENERATED_PREFIX
from pytest_critic22.execution.child_files import read_tree_file
from pytest_critic22.execution.junit import Case
from pytest_critic22.execution.progress import step
from pytest_critic22.execution.runner import cpu_slot, default_sandbox, detect_pythonpath, run_cases
from pytest_critic22.execution.sandbox import Sandbox
from pytest_critic22.execution.trees import TreeSet, Variant, write_in_tree
from pytest_critic22.model.nodeids import as_pytest_args, check_in_tree, find_nodeids, is_nodeid
from pytest_critic22.model.patch import WHOLE_PATCH, ParsedPatch
from pytest_critic22.model.procedure import NodeIds, Procedure, TestData, TraceData
from pytest_critic22.model.results import Outcome, RunResult
from pytest_critic22.verification.decide import (
    Crash,
    broken_program,
    confirmation_runs,
    import_failure,
)

if TYPE_CHECKING:
    from pytest_critic22.execution.batching import Batcher, RunRequest, Speculation
    from pytest_critic22.model.procedure import FindingLike, NotExecutable

__all__ = [
    "ExecutionContext",
    "Fallback",
    "FindingResult",
    "ProcedureKind",
    "acceptance_test_of",
    "counterfactual_variant",
    "drop_speculated",
    "environment_problem",
    "fallback_to_base",
    "junit_key",
    "located_edits",
    "obligation_tests",
    "prepare_args",
    "read_source",
    "run_child",
    "run_confirmed",
    "run_sessions",
    "run_speculated",
    "run_tests",
    "scrubbed",
    "speculate",
    "speculates",
]


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    patch: ParsedPatch
    trees: TreeSet
    timeout: float
    reruns: int
    slots: int
    slot_dir: Path
    pythonpath: tuple[str, ...] = ()
    acceptance: str | None = None  # the failing test named by the diagnosed root cause
    obligation_tests: tuple[str, ...] = ()  # obligations that are test node ids
    harness: tuple[str, ...] = ()  # the patch's files that change the test harness
    sandbox: Sandbox | None = None  # None: the default (bubblewrap when it works here)
    # Where the critic's test is written, relative to the tree: the project's test folder,
    # so its conftest.py chain, fixtures, markers and helper imports apply as to its own.
    test_dir: str = ""
    scratch: Path | None = None  # the run's temporary folders, removed with its trees
    checks: Any = None  # the run's CheckRegistry (static: checks)
    # Where the kinds say each step (see pytest_critic22.execution.progress); None: silent.
    progress: Callable[[str], None] | None = None
    rerun_mode: str = "inprocess"  # how a failure is confirmed: inprocess | fresh-last | process
    # Merges this procedure's runs with its peers' by tree (pytest_critic22.execution.batching);
    # None: every run is a child of its own.
    batch: Batcher | None = None

    def say(self, text: str) -> None:
        """One step of the procedure (``patched run 2/3``): OUR words and counters only,
        never a child's output nor the critic's text."""
        step(self.progress, text)


@dataclass(frozen=True, slots=True)
class FindingResult:
    """One generated item's result: a finding's (``F1``) or a preservation group's."""

    finding_id: str
    outcome: Outcome
    counterfactual: str  # which tree: "base", "without-e2", "repair-…"
    logs: dict[str, Any] = field(default_factory=dict)
    kind: str = ""  # the procedure kind that produced it

    def to_record(self) -> dict[str, Any]:
        """The result as JSON-able data: what crosses the xdist boundary and the ledger."""
        return {
            "id": self.finding_id,
            "kind": self.kind,
            "outcome": self.outcome.kind,
            "reason": self.outcome.reason,
            "environment": self.outcome.environment,
            "counterfactual": self.counterfactual,
            "logs": self.logs,
        }

    @classmethod
    def from_record(cls, record: object) -> FindingResult:
        """The inverse of :meth:`to_record`, checked: a record is data from another process
        (an xdist worker), so a malformed one is a ``ValueError``, never half a result."""
        if not isinstance(record, dict):
            raise ValueError(f"a result record is an object, not {type(record).__name__}")
        outcome = record.get("outcome")
        if outcome not in ("verified", "refuted", "inconclusive"):
            raise ValueError(f"unknown outcome {outcome!r}")
        texts = {k: record.get(k, "") for k in ("id", "reason", "counterfactual", "kind")}
        if not all(isinstance(v, str) for v in texts.values()) or not texts["id"]:
            raise ValueError("a result record's id, reason, counterfactual and kind are text")
        logs = record.get("logs") or {}
        if not isinstance(logs, dict):
            raise ValueError("a result record's logs are an object")
        return cls(
            finding_id=texts["id"],
            outcome=Outcome(outcome, texts["reason"], bool(record.get("environment"))),
            counterfactual=texts["counterfactual"],
            logs=logs,
            kind=texts["kind"],
        )


def acceptance_test_of(root_cause: str) -> str | None:
    """The first test node id the diagnosed root cause names, if any."""
    found = find_nodeids(root_cause or "")
    return found[0] if found else None


def obligation_tests(obligations: Sequence[str]) -> tuple[str, ...]:
    return tuple(o.strip() for o in obligations if "::" in o and is_nodeid(o.strip()))


def counterfactual_variant(
    finding: FindingLike, procedure: Procedure, patch: ParsedPatch
) -> Variant:
    """The tree the procedure's claim is judged against: the critic's repair when its test
    carries one, else the patch without the located edit (the base for ``whole-patch``)."""
    if isinstance(procedure.data, TestData) and procedure.data.repair:
        return Variant.repaired(patch, procedure.data.repair)
    if finding.location == WHOLE_PATCH:
        return Variant.base()
    return Variant.without(patch, (finding.location,))


@dataclass(frozen=True, slots=True)
class Fallback:
    """The base stands in for a counterfactual tree that is not a working program."""

    tree: str  # the tree that cannot run: "without-e3"
    crash: Crash  # what it died of, where (relative to the tree)
    variant: Variant = field(default_factory=Variant.base)

    @property
    def note(self) -> str:
        """What the outcome's reason says about it, on the terminal and in the report."""
        return (
            f"{self.tree} is not a working program ({self.crash.error} at "
            f"{self.crash.where}); compared against the base"
        )

    def record(self, run: Mapping[str, Any]) -> dict[str, Any]:
        """The report's ``logs.counterfactual_fallback``: the tree given up, why, its run."""
        return {
            "tree": self.tree,
            "instead": self.variant.name,
            "error": self.crash.error,
            "message": self.crash.message,
            "where": self.crash.where,
            "reason": self.note,
            "run": dict(run),
        }


def fallback_to_base(
    variant: Variant,
    run: RunResult,
    tree: Path,
    patched: RunResult,
    patched_tree: Path,
    own: Sequence[str],
) -> Fallback | None:
    """The base instead of ``variant`` when ``run`` on it shows that the patch without the
    located edit cannot run the project's own code (a name another edit deleted, an import
    another edit renamed: :func:`pytest_critic22.verification.decide.broken_program`), so that tree
    says nothing about the edit; None when it can, or when the counterfactual is not a
    ``without-…`` tree (the base already, or the critic's repair: the critic's to get right).

    ``own`` are the procedure's test files (relative to the trees): an error raised there is
    the test's. When the patched tree dies of the same error, the removed edit is not what
    broke the program: the counterfactual stands and the finding fails on both."""
    if not variant.name.startswith("without-") or run.status == "passed":
        return None
    # A tree's folder as a child's output may name it: as given, and resolved (bwrap binds it).
    crash = broken_program(run.output, (str(tree), os.path.realpath(tree)), own)
    on_patched = broken_program(
        patched.output, (str(patched_tree), os.path.realpath(patched_tree)), own
    )
    if crash is None or crash.same(on_patched):
        return None
    return Fallback(variant.name, crash)


def environment_problem(run: RunResult, tree: Path, status: str) -> str:
    """Why ``run`` could not say anything because of the tree rather than the claim: the
    project's own code cannot be imported there (a generated ``_version.py``, an untracked
    module, a dependency that is not installed). "" when the failure is the test's own (a
    critic's test importing a module that exists nowhere is the critic's guess, not ours)."""
    if status != "error":
        return ""
    found = import_failure(run.output)
    if found is None:
        return ""
    module, importer = found
    root = os.path.realpath(tree)
    if importer.startswith(root + os.sep):
        importer = importer[len(root) + 1 :]
    if Path(importer).name.startswith(GENERATED_PREFIX) or importer.startswith("/"):
        return ""  # imported by the critic's test itself, or by an installed library
    hint = (
        "an untracked or generated file? ini critic22_copy copies files into every tree, "
        "critic22_tree_setup runs a command in each new tree"
    )
    where = f" (imported by {importer})" if importer else ""
    return f"the tree cannot import {module}{where}: {hint}"


def prepare_args(
    finding_id: str, procedure: Procedure, tree: Path, test_dir: str = ""
) -> list[str]:
    """The pytest arguments for this procedure in this tree: a payload that is a test
    (:class:`TestData`: ``test:``, the loop's ``scar``) is written there and run; one that
    names tests (``nodeids``) runs them.

    The test is written beside the project's tests rather than in a folder of its own: a
    subfolder would change what pytest's import modes put on ``sys.path`` (``from helpers
    import …`` beside the tests) and which package the module belongs to.
    """
    data = procedure.data
    if isinstance(data, TestData):
        # Never Path.write_text: a child that ran in this shared tree before may have planted
        # a link where the file goes, and the controller runs outside every sandbox.
        relative = PurePosixPath(test_dir or ".") / f"{GENERATED_PREFIX}{finding_id.lower()}.py"
        relative = PurePosixPath(*[p for p in relative.parts if p != "."])
        write_in_tree(tree, relative, data.source)
        return [relative.as_posix()]
    return list(data.nodeids) if isinstance(data, NodeIds | TraceData) else []


def run_tests(ctx: ExecutionContext, tree: Path, nodeids: Sequence[str]) -> RunResult:
    """Run these tests in ``tree``; node ids are checked data, never options or outside paths."""
    return _run(ctx, tree, nodeids, 1)


def speculates(ctx: ExecutionContext) -> bool:
    """Whether :func:`speculate` can start a run early: a batch to run it in, more than one
    CPU slot (with one, an early run only delays the procedure's own), and a sandbox that
    gives each child its own network and /tmp (under rlimits a test and its twin on the
    other tree, side by side, could take the same port or lock file)."""
    if ctx.batch is None or ctx.slots <= 1:
        return False
    return (ctx.sandbox or default_sandbox()).isolated


def speculate(ctx: ExecutionContext, tree: Path, nodeids: Sequence[str]) -> Speculation | None:
    """Start the run of these tests beside the procedure's next run, before it knows it
    needs it (a counterfactual while the patched tree's run decides whether it is needed):
    on a CPU slot that round of runs leaves free, else only once claimed. A run is a
    deterministic execution of its own tree, so when it starts changes nothing it says.
    None: it cannot (the procedure runs it when it needs it)."""
    if ctx.batch is None or not speculates(ctx):
        return None
    if any(check_in_tree(nodeid, tree) for nodeid in nodeids):
        return None  # refused when it is asked for, as any run
    from pytest_critic22.execution.batching import RunRequest

    return ctx.batch.speculate(RunRequest(tree, tuple(nodeids)))


def run_speculated(ctx: ExecutionContext, speculation: Speculation) -> RunResult:
    """The speculative run's result (:func:`speculate`): at once if it ran, else when it has."""
    assert ctx.batch is not None
    return ctx.batch.claim(speculation)


def drop_speculated(ctx: ExecutionContext, speculation: Speculation | None) -> None:
    """A speculative run the procedure will not read: not started if it has not been."""
    if speculation is not None and ctx.batch is not None:
        ctx.batch.drop(speculation)


def run_confirmed(
    ctx: ExecutionContext, tree: Path, nodeids: Sequence[str], label: str = "patched run"
) -> list[RunResult]:
    """Run these tests; when they fail, confirm the failure ``ctx.reruns`` times in all.

    ``--critic22-rerun-mode``:

    - ``inprocess`` (the default): a failing test is executed again in the same process
      with fresh function fixtures, ``reruns`` attempts in all: one that stops failing is
      flaky at the price of one run.
    - ``fresh-last``: the same, but the last of the ``reruns`` runs is a fresh process,
      since state a failed attempt left in the process (module globals, caches, wider
      fixtures) can make the next attempt fail too. For the critic's tests under a
      fork-server (:mod:`pytest_critic22.execution.forkserver`) that process is a fresh fork (the
      first run's ``then``); otherwise it is a fresh child.
    - ``process``: a fresh child for every run.

    A run a child did not complete in process (a timeout, a crash) is confirmed by fresh
    children. Either way one run per attempt is returned, and a test that fails once and
    passes once is a flaky result (:func:`pytest_critic22.verification.decide.confirm_failure`).
    """
    times = max(1, ctx.reruns)
    runs: list[RunResult] = []
    if ctx.rerun_mode != "process" and times > 1:
        # attempts in the first session; fresh-last leaves the last to a fresh process
        inside = times if ctx.rerun_mode == "inprocess" else max(1, times - 1)
        ctx.say(f"{label} (a failure is confirmed {times}x)")
        # a fork-server's sessions: the first (with its attempts), then fresh forks
        first = _run(ctx, tree, nodeids, inside, confirm=times - inside + 1)
        if inside > 1:
            failing = [name for name, status in first.tests.items() if status == "failed"]
            complete = all(
                len(first.attempts.get(name, ())) == inside
                or first.attempts.get(name, ("failed",))[-1] != "failed"
                for name in failing
            )
            runs = confirmation_runs(first, inside) if complete else [first]
        else:
            runs = [first]
        for again in first.then:  # a fork-server's confirmations: each a fresh process
            if runs[-1].status != "failed" or len(runs) >= times:
                break
            runs.append(again)
        if runs[-1].status != "failed":
            return runs
    for attempt in range(len(runs), times):
        ctx.say(f"{label} {attempt + 1}/{times}")
        run = run_tests(ctx, tree, nodeids)
        runs.append(run)
        if run.status != "failed":
            break
    return runs


def _run(
    ctx: ExecutionContext,
    tree: Path,
    nodeids: Sequence[str],
    attempts: int,
    confirm: int = 1,
) -> RunResult:
    for nodeid in nodeids:
        problem = check_in_tree(nodeid, tree)
        if problem:
            return RunResult("error", f"refused to run: {problem}", None, 0.0)
    if ctx.batch is not None:
        from pytest_critic22.execution.batching import RunRequest

        return ctx.batch.run(RunRequest(tree, tuple(nodeids), attempts, confirm))
    return run_child(ctx, tree, nodeids, attempts)[0]


def run_child(
    ctx: ExecutionContext,
    tree: Path,
    nodeids: Sequence[str],
    attempts: int,
    merged: int = 1,
) -> tuple[RunResult, list[Case]]:
    """One child pytest for these (checked) node ids, holding one of the CPU slots. A run
    of ``merged`` > 1 requests goes on past a module that fails to import; its time limit is
    one test command per request and attempt."""
    with cpu_slot(ctx.slot_dir, ctx.slots):
        return run_cases(
            tree,
            as_pytest_args(nodeids),
            # one test command per attempt, per request merged in
            timeout=ctx.timeout * max(1, attempts) * max(1, merged),
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            scratch=ctx.scratch,
            attempts=attempts,
            attempt_timeout=ctx.timeout,
            extra_args=["--continue-on-collection-errors"] if merged > 1 else [],
            # a merged run that errors is split and its unclean parts run alone instead
            retry_whole=merged <= 1,
        )


def run_sessions(
    ctx: ExecutionContext, tree: Path, requests: Sequence[RunRequest], booted: bool
) -> list[tuple[RunResult, list[Case]] | None]:
    """Each request's (checked) node ids as sessions of their own in one fork-server child
    holding one CPU slot (:mod:`pytest_critic22.execution.forkserver`; ``booted``: it may be one
    booted for the tree before its runs were known)."""
    from pytest_critic22.execution.forkserver import ForkRequest, run_forked

    with cpu_slot(ctx.slot_dir, ctx.slots):
        return run_forked(
            tree,
            [
                ForkRequest(tuple(as_pytest_args(r.nodeids)), r.confirm, r.attempts)
                for r in requests
            ],
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            booted=booted,
        )


def junit_key(nodeid: str) -> str:
    """How the JUnit report names a test: ``tests/t.py::C::f`` -> ``tests.t.C::f``."""
    parts = nodeid.split("::")
    module = parts[0][:-3].replace("/", ".") if parts[0].endswith(".py") else parts[0]
    classname = ".".join([module, *parts[1:-1]])
    return f"{classname}::{parts[-1]}" if len(parts) > 1 else classname


def located_edits(finding: FindingLike, patch: ParsedPatch) -> list[Any]:
    if finding.location == WHOLE_PATCH:
        return list(patch.edits)
    return [patch.edit(finding.location)]


def read_source(tree: Path, path: str | None) -> str | None:
    if not path:
        return None
    try:
        return read_tree_file(tree, path).decode("utf-8", "surrogateescape")
    except OSError:
        return None


def scrubbed(result: FindingResult) -> FindingResult:
    """The result with credentials masked in its reason and logs: a child's output (and a
    trace it wrote itself) flows into reasons that reach the terminal, not only the files."""
    import json

    from pytest_critic22.model.scrub import scrub

    outcome = replace(result.outcome, reason=scrub(result.outcome.reason, os.environ))
    logs = json.loads(scrub(json.dumps(result.logs), os.environ))
    return replace(result, outcome=outcome, logs=logs)


@dataclass(frozen=True, slots=True)
class Scope:
    """What a kind may look at to decide whether a procedure can run on this patch."""

    patch: ParsedPatch
    trees: TreeSet
    checks: Any = None  # the run's CheckRegistry (static: checks)


@runtime_checkable
class ProcedureKind(Protocol):
    """One kind of falsification procedure.

    ``name`` is its grammar prefix (lowercase letters, digits and ``-``). ``grammar`` is the
    text the critic's prompt shows for it (indented like the built-ins'); an empty grammar
    means the kind is not offered to the critic (``preservation``: the validator's own).
    """

    name: str
    grammar: str

    def parse(self, rest: str) -> Procedure | NotExecutable:
        """The text after ``name:`` -> a procedure of this kind, or why it is not one."""
        ...

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        """Why this procedure cannot run on this patch (the finding is downgraded), or None."""
        ...

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        """Run it on the trees; the outcome decides (never the critic's confidence)."""
        ...
