"""Executing a routed finding's procedure on the trees (I/O), and deciding its outcome.

The decision itself is :func:`pytest_critic22.verify.decide`; this module only builds
the trees, writes the critic's test into them, and runs pytest there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_critic22.diffparse import WHOLE_PATCH, ParsedPatch
from pytest_critic22.falsify import Procedure
from pytest_critic22.finding import ReviewFinding
from pytest_critic22.runner import cpu_slot, detect_pythonpath, run_pytest
from pytest_critic22.trees import TreeError, TreeSet, Variant
from pytest_critic22.verify import Outcome, RunResult, confirm_failure, decide

__all__ = ["ExecutionContext", "FindingResult", "acceptance_test_of", "execute"]

GENERATED_DIR = "critic22_generated"
_NODEID = re.compile(r"(?<![\w/.-])([\w./-]+\.py::[\w\[\]./:-]+)")


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


@dataclass(frozen=True, slots=True)
class FindingResult:
    finding_id: str
    outcome: Outcome
    counterfactual: str  # which tree: "base", "without-e2", "repair-…"
    logs: dict[str, Any] = field(default_factory=dict)


def acceptance_test_of(root_cause: str) -> str | None:
    """The first test node id the diagnosed root cause names, if any."""
    match = _NODEID.search(root_cause or "")
    return match.group(1) if match else None


def obligation_tests(obligations: Sequence[str]) -> tuple[str, ...]:
    return tuple(o.strip() for o in obligations if _NODEID.fullmatch(o.strip()))


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
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch))
    except TreeError as exc:
        outcome = Outcome("inconclusive", f"the patched tree cannot be built: {exc}")
        return FindingResult(finding_id, outcome, variant.name, logs)

    args = _prepare(finding_id, procedure, patched)
    patched_runs: list[RunResult] = []
    for attempt in range(max(1, ctx.reruns)):
        run = _run(ctx, patched, args)
        patched_runs.append(run)
        if run.status != "failed" or attempt + 1 >= ctx.reruns:
            break
    logs["patched"] = [r.to_dict() for r in patched_runs]
    early = confirm_failure(patched_runs)
    if early is not None:
        return FindingResult(finding_id, early, variant.name, logs)

    try:
        tree = ctx.trees.get(variant)
    except TreeError as exc:
        logs["counterfactual_error"] = str(exc)
        outcome = decide(
            patched_runs, None, counterfactual_name=variant.name, counterfactual_error=str(exc)
        )
        return FindingResult(finding_id, outcome, variant.name, logs)
    counter = _run(ctx, tree, _prepare(finding_id, procedure, tree))
    logs["counterfactual"] = counter.to_dict()
    acceptance = None
    if ctx.acceptance and counter.status == "passed":
        acceptance = _run(ctx, tree, [ctx.acceptance])
        logs["acceptance"] = acceptance.to_dict()
    obligations = None
    if procedure.repair and ctx.obligation_tests and counter.status == "passed":
        obligations = _run(ctx, tree, list(ctx.obligation_tests))
        logs["obligations"] = obligations.to_dict()
    outcome = decide(
        patched_runs,
        counter,
        counterfactual_name=variant.name,
        acceptance=acceptance,
        obligations=obligations,
    )
    return FindingResult(finding_id, outcome, variant.name, logs)


def _prepare(finding_id: str, procedure: Procedure, tree: Path) -> list[str]:
    """The pytest arguments for this procedure in this tree (writing the critic's test)."""
    if procedure.kind == "test":
        folder = tree / GENERATED_DIR
        folder.mkdir(exist_ok=True)
        path = folder / f"test_critic22_{finding_id.lower()}.py"
        path.write_text(procedure.source, encoding="utf-8")
        return [str(path.relative_to(tree))]
    return list(procedure.nodeids)


def _run(ctx: ExecutionContext, tree: Path, args: list[str]) -> RunResult:
    with cpu_slot(ctx.slot_dir, ctx.slots):
        return run_pytest(
            tree,
            args,
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
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
        return FindingResult(group_id, Outcome("inconclusive", str(exc)), "base", logs)
    first = _run(ctx, patched, list(tests))
    logs["patched"] = [first.to_dict()]
    if first.status == "passed":
        outcome = Outcome("refuted", f"all {len(tests)} preservation test(s) pass on patched")
        return FindingResult(group_id, outcome, "base", logs)
    if first.status == "error":
        outcome = Outcome("inconclusive", f"on the patched tree: {first.reason}")
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
