"""``test:`` — the critic's pytest source, run on the patched tree and on its counterfactual.

    test:            Python source of pytest tests that PASS when the claim is wrong,
                     optionally followed by a line "repair:" and a unified diff

The counterfactual is the patched tree plus the critic's ``repair:`` when given, else the
patch without the located edit (the base for ``whole-patch``). The decision itself is
:func:`pytest_critic22.verification.decide.decide`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.model.procedure import NotExecutable, Procedure, TestData
from pytest_critic22.model.results import Outcome, RunResult
from pytest_critic22.verification.decide import confirm_failure, decide
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    Scope,
    counterfactual_variant,
    drop_speculated,
    environment_problem,
    fallback_to_base,
    prepare_args,
    run_confirmed,
    run_speculated,
    run_tests,
    speculate,
    speculates,
)

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike

__all__ = ["KIND", "TestData", "TestKind", "execute_on_trees"]

_REPAIR = re.compile(r"^repair:\s*$", re.MULTILINE)

GRAMMAR = """\
  test:            followed by Python source of pytest test functions that PASS when your claim
                   is wrong and FAIL when it is right. Import the code under test by its module
                   path (see the impact evidence and the file paths in the patch).
                   Example:
                   test:
                   from pkg.mod import parse
                   def test_empty_input_still_raises():
                       import pytest
                       with pytest.raises(ValueError):
                           parse("")

  test: ... followed by a line "repair:" and a unified diff against the PATCHED tree: use this
                   when the claim is that the patch does not (fully) do what the specification
                   asks. Your test must fail on the patched tree and pass once your repair is
                   applied, while the acceptance test and obligations still pass.
"""


class TestKind:
    name = "test"
    grammar = GRAMMAR
    description = "A test the critic wrote fails with the edit and passes without it."
    __test__ = False  # not a pytest test class, whatever its name

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return _parse_test(rest)

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return None

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        assert finding is not None
        return execute_on_trees(finding_id, finding, procedure, ctx)


KIND = TestKind()


def _parse_test(rest: str) -> Procedure | NotExecutable:
    repair = ""
    split = _REPAIR.search(rest)
    if split is not None:
        repair = rest[split.end() :].lstrip("\n")
        rest = rest[: split.start()]
    source = dedent_source(rest)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return NotExecutable(f"test: source does not parse: {exc.msg} (line {exc.lineno})", "test")
    tests = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        return NotExecutable("test: source defines no test function", "test")
    given = ""
    if split is not None:
        from pytest_critic22.model.diffmend import mend_diff
        from pytest_critic22.model.patch import DiffError, parse_patch

        # Models write diffs git does not read as meant (miscounted hunks, no a/ and b/, CRLF
        # line endings): the repair is mended here, once, and applied as mended; the context
        # is still checked exactly. The diff as given is kept when it had to change.
        mended = mend_diff(repair)
        try:
            parse_patch(mended)
        except DiffError as exc:
            return NotExecutable(f"test: repair is not a usable diff: {exc}", "test")
        if mended != repair:
            given, repair = repair, mended
    return Procedure("test", TestData(source, repair, given))


def dedent_source(source: str) -> str:
    """The critic's source as a module: fences dropped, common indentation removed."""
    import textwrap

    lines = [ln for ln in source.lstrip(" \t").split("\n") if not ln.strip().startswith("```")]
    return textwrap.dedent("\n".join(lines).strip("\n")) + "\n"


def execute_on_trees(
    finding_id: str, finding: FindingLike, procedure: Procedure, ctx: ExecutionContext
) -> FindingResult:
    """Run the procedure on ``patched`` and on its counterfactual; return the outcome.

    A ``without-…`` counterfactual whose run shows it cannot run the project's own code
    (:func:`pytest_critic22.verification.procedures.fallback_to_base`) is replaced by the base, and
    the outcome's reason says so: the ``test:`` and ``counterfactual:`` kinds both come here."""
    variant = counterfactual_variant(finding, procedure, ctx.patch)
    logs: dict[str, Any] = {"procedure": procedure.kind, "counterfactual_tree": variant.name}
    # test: the critic's test, maybe with its repair; counterfactual: existing tests, no repair
    test = procedure.data if isinstance(procedure.data, TestData) else None
    repair = test.repair if test is not None else ""
    if test is not None and test.repair_given:
        logs["repair_given"] = test.repair_given
        logs["repair_applied"] = repair
    # The critic's code runs in views of its own (invariant 15): what it does to them never
    # reaches the pristine trees where preservation, collection and the obligations run.
    view = variant.for_critic()
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch).for_critic())
    except TreeError as exc:
        outcome = Outcome(
            "inconclusive", f"the patched tree cannot be built: {exc}", environment=True
        )
        return FindingResult(finding_id, outcome, variant.name, logs)

    try:
        args = prepare_args(finding_id, procedure, patched, ctx.test_dir)
    except TreeError as exc:
        return FindingResult(
            finding_id, Outcome("inconclusive", f"cannot write the test: {exc}"), variant.name, logs
        )
    # The counterfactual's run starts beside the patched one when a CPU slot is free for it:
    # a verified finding needs both, and the patched run alone decides whether it is read.
    speculation = None
    if speculates(ctx):
        try:
            early_tree = ctx.trees.get(view)
            early_args = prepare_args(finding_id, procedure, early_tree, ctx.test_dir)
            speculation = speculate(ctx, early_tree, early_args)
        except TreeError:
            pass  # said below, if the counterfactual is needed
    try:
        patched_runs = run_confirmed(ctx, patched, args)
    except BaseException:
        drop_speculated(ctx, speculation)
        raise
    logs["patched"] = [r.to_dict() for r in patched_runs]
    early = confirm_failure(patched_runs)
    if early is not None:
        drop_speculated(ctx, speculation)
        blind = environment_problem(patched_runs[0], patched, patched_runs[0].status)
        if blind:
            early = Outcome("inconclusive", f"on the patched tree: {blind}", environment=True)
        return FindingResult(finding_id, early, variant.name, logs)

    try:
        tree = ctx.trees.get(view)
    except TreeError as exc:
        logs["counterfactual_error"] = str(exc)
        outcome = decide(
            patched_runs, None, counterfactual_name=variant.name, counterfactual_error=str(exc)
        )
        if not repair:  # a repair that does not apply is the critic's, not ours
            outcome = replace(outcome, environment=True)
        return FindingResult(finding_id, outcome, variant.name, logs)
    ctx.say(f"counterfactual ({variant.name})")
    try:
        if speculation is not None:
            counter = run_speculated(ctx, speculation)
        else:
            counter = run_tests(ctx, tree, prepare_args(finding_id, procedure, tree, ctx.test_dir))
    except TreeError as exc:
        outcome = Outcome("inconclusive", f"cannot write the test: {exc}")
        return FindingResult(finding_id, outcome, variant.name, logs)
    logs["counterfactual"] = counter.to_dict()
    own = [arg.split("::", 1)[0] for arg in args]
    fallback = fallback_to_base(variant, counter, tree, patched_runs[0], patched, own)
    if fallback is not None:
        # The patch without the edit cannot run (another edit removed what it used): it says
        # nothing about the edit, so the base, where neither is, is the counterfactual.
        logs["counterfactual_fallback"] = fallback.record(logs.pop("counterfactual"))
        variant = fallback.variant
        logs["counterfactual_tree"] = variant.name
        ctx.say(f"counterfactual ({variant.name}: {fallback.tree} is not a working program)")
        try:
            tree = ctx.trees.get(variant.for_critic())
            counter = run_tests(ctx, tree, prepare_args(finding_id, procedure, tree, ctx.test_dir))
        except TreeError as exc:
            why = f"{fallback.note}, but the base tree cannot be used: {exc}"
            return FindingResult(
                finding_id, Outcome("inconclusive", why, environment=True), variant.name, logs
            )
        logs["counterfactual"] = counter.to_dict()
    acceptance = None
    obligations = None
    judged = ctx.acceptance or (repair and ctx.obligation_tests)
    if judged and counter.status == "passed":
        # The project's own tests judge on the pristine tree, where the critic's test never ran.
        try:
            pristine = ctx.trees.get(variant)
        except TreeError as exc:
            outcome = Outcome("inconclusive", f"the {variant.name} tree cannot be built: {exc}")
            return FindingResult(finding_id, outcome, variant.name, logs)
        if ctx.acceptance:
            ctx.say(f"acceptance test on {variant.name}")
            acceptance = run_tests(ctx, pristine, [ctx.acceptance])
            logs["acceptance"] = acceptance.to_dict()
        if repair and ctx.obligation_tests:
            ctx.say(f"obligations on {variant.name}")
            obligations = run_tests(ctx, pristine, list(ctx.obligation_tests))
            logs["obligations"] = obligations.to_dict()
            on_patched = ctx.trees.get(Variant.patched(ctx.patch))
            obligations = _blame_repair(ctx, obligations, on_patched, logs)
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
    if fallback is not None:
        outcome = replace(outcome, reason=f"{outcome.reason}; {fallback.note}")
    return FindingResult(finding_id, outcome, variant.name, logs)


def _blame_repair(
    ctx: ExecutionContext, on_repair: RunResult, patched: Path, logs: dict[str, Any]
) -> RunResult | None:
    """The obligations' run on the repair tree, if the repair is to blame for a failure in
    it; None when every obligation that fails there fails on the patched tree too
    (pre-existing: a missing fixture, an uninstalled plugin), which is not the repair's."""
    if on_repair.status == "passed":
        return None
    ctx.say("obligations on patched")
    on_patched = run_tests(ctx, patched, list(ctx.obligation_tests))
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
