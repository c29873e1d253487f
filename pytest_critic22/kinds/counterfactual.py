"""``counterfactual:`` — existing tests of the repository that the patch breaks.

    counterfactual:  NODEID [NODEID ...]   (node ids may hold spaces; quotes or a JSON
                                            list are accepted: see pytest_critic22.model.nodeids)

Run like ``test:`` (patched, then the counterfactual tree), without writing any test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.kinds.test import execute_on_trees
from pytest_critic22.model.nodeids import check_in_tree, check_nodeid, split_nodeids
from pytest_critic22.model.procedure import NodeIds, NotExecutable, Procedure
from pytest_critic22.verification.procedures import Scope

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike
    from pytest_critic22.verification.procedures import ExecutionContext, FindingResult

__all__ = ["KIND", "CounterfactualKind", "NodeIds", "nodeids_in_tree"]

GRAMMAR = """\
  counterfactual:  NODEID [NODEID ...]  existing tests of the repository that the patch breaks.
                   Example: counterfactual: tests/test_mod.py::test_parse_empty
"""


class CounterfactualKind:
    name = "counterfactual"
    grammar = GRAMMAR
    description = "Existing tests of the repository pass without the edit and fail with it."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        nodeids = tuple(split_nodeids(rest))
        if not nodeids:
            return NotExecutable("counterfactual: names no test", "counterfactual")
        for nodeid in nodeids:
            problem = check_nodeid(nodeid)
            if problem:
                return NotExecutable(f"counterfactual: {problem}", "counterfactual")
        return Procedure("counterfactual", NodeIds(nodeids))

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return nodeids_in_tree(procedure.kind, procedure.payload(NodeIds).nodeids, scope)

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        assert finding is not None
        return execute_on_trees(finding_id, finding, procedure, ctx)


def nodeids_in_tree(kind: str, nodeids: Sequence[str], scope: Scope) -> str | None:
    """Node ids must name test files inside the patched tree."""
    try:
        patched = scope.trees.get(Variant.patched(scope.patch))
    except TreeError:
        return None  # the item will say the tree cannot be built
    for nodeid in nodeids:
        problem = check_in_tree(nodeid, patched)
        if problem:
            return f"{kind}: {problem}"
    return None


KIND = CounterfactualKind()
