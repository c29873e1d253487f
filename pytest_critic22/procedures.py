"""Executing a routed finding's procedure on the trees (I/O), and deciding its outcome.

The decision itself is :func:`pytest_critic22.verify.decide`; this module only builds
the trees, writes the critic's test into them, and runs pytest there.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_critic22.diffparse import WHOLE_PATCH, ParsedPatch
from pytest_critic22.falsify import Procedure
from pytest_critic22.finding import ReviewFinding
from pytest_critic22.nodeids import (
    GENERATED_PREFIX,
    as_pytest_args,
    check_in_tree,
    find_nodeids,
    is_nodeid,
)
from pytest_critic22.runner import cpu_slot, detect_pythonpath, run_pytest
from pytest_critic22.sandbox import Sandbox
from pytest_critic22.trees import TreeError, TreeSet, Variant, write_in_tree
from pytest_critic22.verify import Outcome, RunResult, confirm_failure, decide, import_failure

__all__ = ["ExecutionContext", "FindingResult", "acceptance_test_of", "execute"]


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
    sandbox: Sandbox | None = None  # None: the default (bubblewrap when it works here)
    # Where the critic's test is written, relative to the tree: the project's test folder,
    # so its conftest.py chain, fixtures, markers and helper imports apply as to its own.
    test_dir: str = ""
    scratch: Path | None = None  # the run's temporary folders, removed with its trees


@dataclass(frozen=True, slots=True)
class FindingResult:
    finding_id: str
    outcome: Outcome
    counterfactual: str  # which tree: "base", "without-e2", "repair-…"
    logs: dict[str, Any] = field(default_factory=dict)


def acceptance_test_of(root_cause: str) -> str | None:
    """The first test node id the diagnosed root cause names, if any."""
    found = find_nodeids(root_cause or "")
    return found[0] if found else None


def obligation_tests(obligations: Sequence[str]) -> tuple[str, ...]:
    return tuple(o.strip() for o in obligations if "::" in o and is_nodeid(o.strip()))


def counterfactual_variant(
    finding: ReviewFinding, procedure: Procedure, patch: ParsedPatch
) -> Variant:
    if procedure.kind == "test" and procedure.repair:
        return Variant.repaired(patch, procedure.repair)
    if finding.location == WHOLE_PATCH:
        return Variant.base()
    return Variant.without(patch, (finding.location,))


def execute(
    finding_id: str, finding: ReviewFinding, procedure: Procedure, ctx: ExecutionContext
) -> FindingResult:
    """Run the procedure on ``patched`` and on its counterfactual; return the outcome."""
    variant = counterfactual_variant(finding, procedure, ctx.patch)
    logs: dict[str, Any] = {"procedure": procedure.kind, "counterfactual_tree": variant.name}
    if procedure.repair_given:
        logs["repair_given"] = procedure.repair_given
        logs["repair_applied"] = procedure.repair
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch))
    except TreeError as exc:
        outcome = Outcome(
            "inconclusive", f"the patched tree cannot be built: {exc}", environment=True
        )
        return FindingResult(finding_id, outcome, variant.name, logs)

    try:
        args = _prepare(finding_id, procedure, patched, ctx.test_dir)
    except TreeError as exc:
        return FindingResult(
            finding_id, Outcome("inconclusive", f"cannot write the test: {exc}"), variant.name, logs
        )
    patched_runs: list[RunResult] = []
    for attempt in range(max(1, ctx.reruns)):
        run = _run(ctx, patched, args)
        patched_runs.append(run)
        if run.status != "failed" or attempt + 1 >= ctx.reruns:
            break
    logs["patched"] = [r.to_dict() for r in patched_runs]
    early = confirm_failure(patched_runs)
    if early is not None:
        blind = environment_problem(patched_runs[0], patched, patched_runs[0].status)
        if blind:
            early = Outcome("inconclusive", f"on the patched tree: {blind}", environment=True)
        return FindingResult(finding_id, early, variant.name, logs)

    try:
        tree = ctx.trees.get(variant)
    except TreeError as exc:
        logs["counterfactual_error"] = str(exc)
        outcome = decide(
            patched_runs, None, counterfactual_name=variant.name, counterfactual_error=str(exc)
        )
        if not procedure.repair:  # a repair that does not apply is the critic's, not ours
            outcome = replace(outcome, environment=True)
        return FindingResult(finding_id, outcome, variant.name, logs)
    try:
        counter = _run(ctx, tree, _prepare(finding_id, procedure, tree, ctx.test_dir))
    except TreeError as exc:
        outcome = Outcome("inconclusive", f"cannot write the test: {exc}")
        return FindingResult(finding_id, outcome, variant.name, logs)
    logs["counterfactual"] = counter.to_dict()
    acceptance = None
    if ctx.acceptance and counter.status == "passed":
        acceptance = _run(ctx, tree, [ctx.acceptance])
        logs["acceptance"] = acceptance.to_dict()
    obligations = None
    if procedure.repair and ctx.obligation_tests and counter.status == "passed":
        obligations = _run(ctx, tree, list(ctx.obligation_tests))
        logs["obligations"] = obligations.to_dict()
        obligations = _blame_repair(ctx, obligations, patched, logs)
    outcome = decide(
        patched_runs,
        counter,
        counterfactual_name=variant.name,
        acceptance=acceptance,
        obligations=obligations,
    )
    blind = environment_problem(counter, tree, counter.status)
    if outcome.kind == "inconclusive" and blind:
        outcome = Outcome("inconclusive", f"on the {variant.name} tree: {blind}", environment=True)
    return FindingResult(finding_id, outcome, variant.name, logs)


def _blame_repair(
    ctx: ExecutionContext, on_repair: RunResult, patched: Path, logs: dict[str, Any]
) -> RunResult | None:
    """The obligations' run on the repair tree, if the repair is to blame for a failure in
    it; None when every obligation that fails there fails on the patched tree too
    (pre-existing: a missing fixture, an uninstalled plugin), which is not the repair's."""
    if on_repair.status == "passed":
        return None
    on_patched = _run(ctx, patched, list(ctx.obligation_tests))
    logs["obligations_on_patched"] = on_patched.to_dict()
    if on_repair.status == "error" and not on_repair.tests:
        return None if on_patched.status == "error" else on_repair
    bad = {"failed", "error"}
    blamed = [
        name
        for name, status in on_repair.tests.items()
        if status in bad
        and (on_patched.tests or on_patched.status != "error")
        and on_patched.tests.get(name) not in bad
    ]
    logs["obligations_pre_existing"] = [
        name for name, status in on_repair.tests.items() if status in bad and name not in blamed
    ]
    if not blamed:
        return None
    logs["obligations_broken"] = blamed
    return on_repair


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


def _prepare(finding_id: str, procedure: Procedure, tree: Path, test_dir: str = "") -> list[str]:
    """The pytest arguments for this procedure in this tree (writing the critic's test).

    The test is written beside the project's tests rather than in a folder of its own: a
    subfolder would change what pytest's import modes put on ``sys.path`` (``from helpers
    import …`` beside the tests) and which package the module belongs to.
    """
    if procedure.kind == "test":
        # Never Path.write_text: a child that ran in this shared tree before may have planted
        # a link where the file goes, and the controller runs outside every sandbox.
        relative = PurePosixPath(test_dir or ".") / f"{GENERATED_PREFIX}{finding_id.lower()}.py"
        relative = PurePosixPath(*[p for p in relative.parts if p != "."])
        write_in_tree(tree, relative, procedure.source)
        return [relative.as_posix()]
    return list(procedure.nodeids)


def _run(ctx: ExecutionContext, tree: Path, nodeids: Sequence[str]) -> RunResult:
    """Run these tests in ``tree``; node ids are checked data, never options or outside paths."""
    for nodeid in nodeids:
        problem = check_in_tree(nodeid, tree)
        if problem:
            return RunResult("error", f"refused to run: {problem}", None, 0.0)
    with cpu_slot(ctx.slot_dir, ctx.slots):
        return run_pytest(
            tree,
            as_pytest_args(nodeids),
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            scratch=ctx.scratch,
        )


def junit_key(nodeid: str) -> str:
    """How the JUnit report names a test: ``tests/t.py::C::f`` -> ``tests.t.C::f``."""
    parts = nodeid.split("::")
    module = parts[0][:-3].replace("/", ".") if parts[0].endswith(".py") else parts[0]
    classname = ".".join([module, *parts[1:-1]])
    return f"{classname}::{parts[-1]}" if len(parts) > 1 else classname


def execute_preservation(
    group_id: str, tests: Sequence[str], ctx: ExecutionContext
) -> FindingResult:
    """Existing tests that reach the touched symbols: patched tree, base as counterfactual.

    A test that passes on the base and fails (consistently) on the patched tree is a
    verified regression; one that fails on the base too is pre-existing, not the patch's.
    """
    logs: dict[str, Any] = {"procedure": "preservation", "tests": list(tests)}
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch))
        base = ctx.trees.get(Variant.base())
    except TreeError as exc:
        outcome = Outcome("inconclusive", str(exc), environment=True)
        return FindingResult(group_id, outcome, "base", logs)
    first = _run(ctx, patched, list(tests))
    logs["patched"] = [first.to_dict()]
    if first.status == "passed":
        outcome = Outcome("refuted", f"all {len(tests)} preservation test(s) pass on patched")
        return FindingResult(group_id, outcome, "base", logs)
    ran = any(junit_key(t) in first.tests for t in tests)
    blind = environment_problem(first, patched, first.status) if first.status == "error" else ""
    # A group where some tests ran is compared with the base even when one errored (a fixture
    # from an uninstalled plugin): the error may be pre-existing, a failure beside it may not.
    if first.status == "error" and (blind or not ran):
        outcome = Outcome(
            "inconclusive", f"on the patched tree: {blind or first.reason}", environment=bool(blind)
        )
        return FindingResult(group_id, outcome, "base", logs)
    by_key = {junit_key(t): t for t in tests}
    failing = [by_key.get(k, k) for k, v in first.tests.items() if v in ("failed", "error")]
    on_base = _run(ctx, base, failing)
    logs["counterfactual"] = on_base.to_dict()
    if on_base.status == "error" and not on_base.tests:
        outcome = Outcome("inconclusive", f"on the base tree: {on_base.reason}")
        return FindingResult(group_id, outcome, "base", logs)
    pre_existing = [by_key.get(k, k) for k, v in on_base.tests.items() if v in ("failed", "error")]
    regressions = [t for t in failing if t not in pre_existing]
    logs["pre_existing"] = pre_existing
    if not regressions:
        outcome = Outcome(
            "inconclusive",
            "fail on the base too (pre-existing, not the patch's): " + ", ".join(pre_existing),
        )
        return FindingResult(group_id, outcome, "base", logs)
    confirmations = [first] + [_run(ctx, patched, regressions) for _ in range(ctx.reruns - 1)]
    logs["patched"] = [r.to_dict() for r in confirmations]
    flaky = [r for r in confirmations[1:] if r.status != "failed"]
    if flaky:
        outcome = Outcome(
            "inconclusive", f"flaky: the failure did not repeat in {len(flaky)} rerun(s)"
        )
        return FindingResult(group_id, outcome, "base", logs)
    note = f"; pre-existing failures not counted: {', '.join(pre_existing)}" if pre_existing else ""
    outcome = Outcome(
        "verified",
        f"regression: {', '.join(regressions)} pass on the base and fail on patched "
        f"({len(confirmations)}/{len(confirmations)} runs){note}",
    )
    return FindingResult(group_id, outcome, "base", logs)


# -- static: deterministic checks over base and patched sources -----------------------------


def located_edits(finding: ReviewFinding, patch: ParsedPatch) -> list[Any]:
    if finding.location == WHOLE_PATCH:
        return list(patch.edits)
    return [patch.edit(finding.location)]


def static_inputs(
    finding: ReviewFinding, patch: ParsedPatch, base: Path, patched: Path
) -> tuple[list[Any], dict[str, str]]:
    """The located edit(s) as FileChanges, and every Python source of the patched tree."""
    from pytest_critic22.checks import FileChange
    from pytest_critic22.evidence import python_files

    grouped: dict[str, dict[str, Any]] = {}
    for edit in located_edits(finding, patch):
        entry = grouped.setdefault(
            edit.path,
            {"old": edit.old_path, "new": edit.new_path, "added": set(), "removed": set()},
        )
        entry["added"].update(edit.added_lines)
        entry["removed"].update(edit.removed_lines)
    changes = []
    for path, entry in grouped.items():
        changes.append(
            FileChange(
                path=path,
                base_source=_read(base, entry["old"]),
                patched_source=_read(patched, entry["new"]),
                added_lines=frozenset(entry["added"]),
                removed_lines=frozenset(entry["removed"]),
            )
        )
    sources = {p: text for p in python_files(patched) if (text := _read(patched, p)) is not None}
    return changes, sources


def static_reason(
    finding: ReviewFinding, procedure: Procedure, patch: ParsedPatch, trees: TreeSet, registry: Any
) -> str | None:
    """Why a ``static:`` procedure cannot run on this patch (None: it can)."""
    from pytest_critic22.checks import not_executable_reason

    if procedure.check == TYPE_ERRORS:
        import importlib.util

        if importlib.util.find_spec("mypy") is None:
            return "static: type-errors needs mypy, which is not installed"
        return None if not procedure.args else "static: type-errors takes no arguments"
    if registry.get(procedure.check) is None:
        known = ", ".join(sorted([*registry.names(), TYPE_ERRORS]))
        return f"static: unknown check {procedure.check!r} (known: {known})"
    try:
        base = trees.get(Variant.base())
        patched = trees.get(Variant.patched(patch))
    except TreeError as exc:
        return f"static: {exc}"
    changes, sources = static_inputs(finding, patch, base, patched)
    reason = not_executable_reason(procedure.check, procedure.args, changes, sources, registry)
    return f"static: {reason}" if reason else None


TYPE_ERRORS = "type-errors"


def execute_static(
    finding_id: str,
    finding: ReviewFinding,
    procedure: Procedure,
    ctx: ExecutionContext,
    registry: Any,
) -> FindingResult:
    from pytest_critic22.checks import run_check

    logs: dict[str, Any] = {"procedure": "static", "check": procedure.check}
    try:
        base = ctx.trees.get(Variant.base())
        patched = ctx.trees.get(Variant.patched(ctx.patch))
    except TreeError as exc:
        return FindingResult(finding_id, Outcome("inconclusive", str(exc)), "base", logs)
    changes, sources = static_inputs(finding, ctx.patch, base, patched)
    if procedure.check == TYPE_ERRORS:
        hits, error = _type_errors(ctx, changes, base, patched)
        if error:
            logs["error"] = error
            return FindingResult(finding_id, Outcome("inconclusive", error), "base", logs)
    else:
        hits = [
            f"{h.path}:{h.line}: {h.message}"
            for h in run_check(procedure.check, procedure.args, changes, sources, registry)
        ]
    logs["hits"] = hits
    if hits:
        outcome = Outcome(
            "verified",
            f"{procedure.check} reports {len(hits)} hit(s) the located edit introduces: "
            + "; ".join(hits[:5]),
        )
    else:
        outcome = Outcome("refuted", f"{procedure.check} finds nothing the located edit introduces")
    return FindingResult(finding_id, outcome, "base", logs)


_MYPY_LINE = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+): error: (?P<msg>.*)$")


def _type_errors(
    ctx: ExecutionContext, changes: Sequence[Any], base: Path, patched: Path
) -> tuple[list[str], str]:
    """Differential mypy: errors on patched at the edit's lines that base does not have."""
    from pytest_critic22.runner import spawn_python

    def errors(tree: Path, files: list[str]) -> tuple[list[tuple[str, int, str]], str]:
        if not files:
            return [], ""
        code, out, _ = spawn_python(
            tree,
            [
                "-m",
                "mypy",
                "--no-incremental",
                "--cache-dir=/dev/null",
                "--follow-imports=silent",
                "--ignore-missing-imports",
                "--no-error-summary",
                "--no-pretty",
                "--show-error-codes",
                *files,
            ],
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            scratch=ctx.scratch,
        )
        if code is None:
            return [], "type-errors: mypy timed out"
        if code not in (0, 1):
            return [], f"type-errors: mypy failed ({code}): {out.strip().splitlines()[-1:]}"
        found = []
        for line in out.splitlines():
            match = _MYPY_LINE.match(line.strip())
            if match:
                found.append((match["path"], int(match["line"]), match["msg"]))
        return found, ""

    patched_files = [c.path for c in changes if c.patched_source is not None]
    base_files = [c.path for c in changes if c.base_source is not None]
    after, error = errors(patched, patched_files)
    if error:
        return [], error
    before, error = errors(base, base_files)
    if error:
        return [], error
    known = {(path, msg) for path, _, msg in before}
    added = {c.path: c.added_lines for c in changes}
    return [
        f"{path}:{line}: {msg}"
        for path, line, msg in after
        if line in added.get(path, frozenset()) and (path, msg) not in known
    ], ""


def _read(tree: Path, path: str | None) -> str | None:
    if not path:
        return None
    try:
        return (tree / path).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None


# -- trace: replay a test many times on both trees under a tracer ----------------------------


def execute_trace(
    finding_id: str, finding: ReviewFinding, procedure: Procedure, ctx: ExecutionContext
) -> FindingResult:
    """Replays on patched and on the counterfactual, in parallel within the CPU cap, with a
    tiny switch interval and a different hash seed per run, all within the procedure timeout.

    verified: at least one failure on patched and none on the counterfactual.
    """
    import tempfile
    from concurrent.futures import ThreadPoolExecutor

    from pytest_critic22.tracediff import pick_passing, read_trace

    variant = counterfactual_variant(finding, procedure, ctx.patch)
    logs: dict[str, Any] = {"procedure": "trace", "repeat": procedure.repeat}
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch))
        counter = ctx.trees.get(variant)
    except TreeError as exc:
        return FindingResult(finding_id, Outcome("inconclusive", str(exc)), variant.name, logs)
    files = sorted({e.path for e in located_edits(finding, ctx.patch) if e.path.endswith(".py")})
    for tree in (patched, counter):
        problem = check_in_tree(procedure.nodeids[0], tree)
        if problem:
            return FindingResult(
                finding_id,
                Outcome("inconclusive", f"refused to run: {problem}"),
                variant.name,
                logs,
            )
    deadline = time.monotonic() + ctx.timeout
    scratch = str(ctx.scratch) if ctx.scratch else None
    if ctx.scratch:
        ctx.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="critic22-trace-", dir=scratch) as tmp:

        def replay(tree: Path, label: str, seed: int) -> tuple[RunResult, Path]:
            out = Path(tmp) / f"{label}-{seed}.jsonl"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return RunResult("error", "the procedure's time ran out", None, 0.0), out
            with cpu_slot(ctx.slot_dir, ctx.slots):
                result = run_pytest(
                    tree,
                    as_pytest_args(procedure.nodeids),
                    timeout=remaining,
                    pythonpath=detect_pythonpath(tree, ctx.pythonpath),
                    sandbox=ctx.sandbox,
                    writable=[Path(tmp)],
                    scratch=ctx.scratch,
                    plugins=["pytest_critic22.tracer"],
                    extra_env={
                        "PYTHONHASHSEED": str(seed),
                        "CRITIC22_TRACE_OUT": str(out),
                        "CRITIC22_TRACE_FILES": os.pathsep.join(str(tree / f) for f in files),
                        "CRITIC22_SWITCH_INTERVAL": "1e-6",
                    },
                )
            return result, out

        # Interleaved, so a run out of time costs both trees alike rather than starving the
        # counterfactual queued behind every patched replay.
        jobs = [
            (tree, label, seed)
            for seed in range(1, procedure.repeat + 1)
            for tree, label in ((patched, "patched"), (counter, "counterfactual"))
        ]
        with ThreadPoolExecutor(max_workers=max(1, ctx.slots)) as pool:
            done = list(pool.map(lambda job: replay(*job), jobs))
        patched_runs = done[0::2]
        counter_runs = done[1::2]
        summary = {
            "patched": _tally(r for r, _ in patched_runs),
            "counterfactual": _tally(r for r, _ in counter_runs),
        }
        logs["runs"] = summary
        failing_seeds = [
            seed for seed, (r, _) in enumerate(patched_runs, 1) if r.status == "failed"
        ]
        counter_failures = sum(1 for r, _ in counter_runs if r.status == "failed")
        errors = [r for r, _ in done if r.status == "error"]
        if errors and not failing_seeds:
            outcome = Outcome("inconclusive", f"replays did not run: {errors[0].reason}")
        elif not failing_seeds:
            outcome = Outcome(
                "refuted", f"passes all {procedure.repeat} replays on the patched tree"
            )
        elif counter_failures:
            outcome = Outcome(
                "inconclusive",
                f"fails on the {variant.name} tree too ({counter_failures} of "
                f"{procedure.repeat} replays): not shown to come from the located edit",
            )
        elif any(r.status == "error" for r, _ in counter_runs):
            unfinished = [r for r, _ in counter_runs if r.status == "error"]
            outcome = Outcome(
                "inconclusive",
                f"{len(unfinished)} of {procedure.repeat} replays on the {variant.name} tree did "
                f"not finish ({unfinished[0].reason}); raise --critic22-timeout or lower repeat",
            )
        else:
            evidence = _divergence(patched_runs, read_trace, pick_passing)
            logs["divergence"] = evidence
            outcome = Outcome(
                "verified",
                f"fails {len(failing_seeds)} of {procedure.repeat} replays on patched "
                f"(first failing PYTHONHASHSEED={failing_seeds[0]}) and none of "
                f"{procedure.repeat} on the {variant.name} tree"
                + (f"; {evidence}" if evidence else ""),
            )
        logs["failing_seeds"] = failing_seeds
    return FindingResult(finding_id, outcome, variant.name, logs)


def _tally(runs: Iterable[RunResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    return counts


def _divergence(runs: Sequence[tuple[RunResult, Path]], read_trace: Any, pick_passing: Any) -> str:
    traces = []
    for result, path in runs:
        try:
            trace = read_trace(path)
        except (OSError, ValueError):
            continue
        traces.append((list(trace.events), result.status == "failed"))
    pairing = pick_passing(traces)
    if pairing is None or pairing.divergence is None:
        return ""
    return str(pairing.divergence.describe()).split("\n")[0]


def scrubbed(result: FindingResult) -> FindingResult:
    """The result with credentials masked in its reason and logs: a child's output (and a
    trace it wrote itself) flows into reasons that reach the terminal, not only the files."""
    import json

    from pytest_critic22.scrub import scrub

    outcome = replace(result.outcome, reason=scrub(result.outcome.reason, os.environ))
    logs = json.loads(scrub(json.dumps(result.logs), os.environ))
    return replace(result, outcome=outcome, logs=logs)
