"""``preservation`` — the validator's own procedure, offered to no critic.

Existing tests that reach the touched symbols (and explicit obligations that are test ids)
run on the patched tree with the base as the counterfactual: a test that passes on the base
and fails (consistently) on patched is a verified regression.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.model.procedure import NodeIds, NotExecutable, Procedure
from pytest_critic22.model.results import Outcome
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    Scope,
    environment_problem,
    junit_key,
    run_tests,
)

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike

__all__ = ["KIND", "PreservationKind"]


class PreservationKind:
    name = "preservation"
    grammar = ""  # not offered to the critic
    description = "An existing test that passes on the base commit fails with the patch applied."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return NotExecutable("preservation: is the validator's procedure, not the critic's")

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return None

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        return execute_preservation(finding_id, procedure.payload(NodeIds).nodeids, ctx)


KIND = PreservationKind()


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
    result = _preserve(group_id, tests, ctx, patched, base, logs)
    if not ctx.harness or result.outcome.kind == "verified":
        return result
    # The patch changes the harness that judges (invariant 16): the same tests once more on
    # the patched source under the base's conftest.py files and pytest configuration.
    from pytest_critic22.verification.harness import base_harness

    again: dict[str, Any] = {"procedure": "preservation", "tests": list(tests)}
    try:
        tree = ctx.trees.get(base_harness(ctx.patch, ctx.harness))
    except TreeError as exc:
        logs["base_harness_error"] = str(exc)
        return result
    ctx.say("under the base's harness")
    judged = _preserve(group_id, tests, ctx, tree, base, again)
    logs["base_harness"] = again
    if judged.outcome.kind == "verified":
        reason = f"under the base's harness ({', '.join(ctx.harness)} as on the base): "
        outcome = Outcome("verified", reason + judged.outcome.reason)
        return FindingResult(group_id, outcome, "base", logs)
    return result


def _preserve(
    group_id: str,
    tests: Sequence[str],
    ctx: ExecutionContext,
    patched: Path,
    base: Path,
    logs: dict[str, Any],
) -> FindingResult:
    ctx.say(f"patched run ({len(tests)} test(s))")
    first = run_tests(ctx, patched, list(tests))
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
    ctx.say(f"base run ({len(failing)} failing test(s))")
    on_base = run_tests(ctx, base, failing)
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
    confirmations = [first]
    for again in range(2, ctx.reruns + 1):
        ctx.say(f"patched run {again}/{ctx.reruns}")
        confirmations.append(run_tests(ctx, patched, regressions))
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
