"""``scar`` — scar tissue of the review loop, offered to no critic.

A falsification test that was verified in an earlier round of ``critic22 loop`` is re-run on
every later candidate as a preservation obligation: it must pass now. One that fails again,
consistently, is a verified defect (the fix brought it back) — with the critic silent. The
base is not consulted: the earlier round already showed, by execution, that the test's
failure was the patch's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.model.procedure import NotExecutable, Procedure, TestData
from pytest_critic22.model.results import Outcome
from pytest_critic22.verification.decide import confirm_failure
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    Scope,
    environment_problem,
    prepare_args,
    run_confirmed,
)

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike

__all__ = ["KIND", "ScarKind", "scar_procedure"]


class ScarKind:
    name = "scar"
    grammar = ""  # the loop's, not the critic's
    description = "A defect a test showed in an earlier round of the review loop is back."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return NotExecutable("scar: is the review loop's procedure, not the critic's")

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return None

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        return execute_scar(finding_id, procedure, ctx)


KIND = ScarKind()


def scar_procedure(test: str) -> Procedure:
    """The procedure of a test verified in an earlier round: written and run as ``test:``'s."""
    return Procedure(KIND.name, TestData(test))


def execute_scar(finding_id: str, procedure: Procedure, ctx: ExecutionContext) -> FindingResult:
    logs: dict[str, object] = {"procedure": "scar"}
    procedure.payload(TestData)  # a test to write: never an empty pytest command line
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch).for_critic())  # a critic's test
        args = prepare_args(finding_id, procedure, patched, ctx.test_dir)
    except TreeError as exc:
        outcome = Outcome("inconclusive", f"the candidate's tree: {exc}", environment=True)
        return FindingResult(finding_id, outcome, "none", logs)
    runs = run_confirmed(ctx, patched, args, "candidate run")
    logs["patched"] = [r.to_dict() for r in runs]
    early = confirm_failure(runs)
    if early is not None:
        if early.kind == "refuted":
            early = Outcome("refuted", "passes on this candidate: the earlier defect stays fixed")
        elif runs[0].status == "error":
            blind = environment_problem(runs[0], patched, runs[0].status)
            if blind:
                early = Outcome("inconclusive", f"on the candidate: {blind}", environment=True)
        return FindingResult(finding_id, early, "none", logs)
    outcome = Outcome(
        "verified",
        f"a defect verified in an earlier round is back: its test fails on this candidate "
        f"({len(runs)}/{len(runs)} runs)",
    )
    return FindingResult(finding_id, outcome, "none", logs)
