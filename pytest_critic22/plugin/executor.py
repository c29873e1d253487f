"""The generated items' executor: runs a finding's or a preservation group's procedure in
this process (the controller, or an xdist worker), in the run's execution context.

The items (:mod:`pytest_critic22.plugin.items`) call it; it knows the trees, the sandbox,
the registries and the ledger, and nothing of pytest's hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.execution.runner import usable_cpus
from pytest_critic22.model.procedure import COLLECTION, NodeIds, Procedure
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.verification.procedures import scrubbed

if TYPE_CHECKING:
    from pytest_critic22.checks import CheckRegistry
    from pytest_critic22.config.settings import ReviewOptions
    from pytest_critic22.execution.batching import RunRequest
    from pytest_critic22.execution.junit import Case
    from pytest_critic22.execution.ledger import Ledger
    from pytest_critic22.execution.sandbox import Sandbox
    from pytest_critic22.execution.trees import TreeSet
    from pytest_critic22.kinds import KindRegistry
    from pytest_critic22.model.results import RunResult
    from pytest_critic22.pipeline.review import Review, RoutedFinding
    from pytest_critic22.plugin.itembatch import ItemBatch
    from pytest_critic22.verification.procedures import ExecutionContext, FindingResult

__all__ = ["ItemExecutor"]


class ItemExecutor:
    """What runs an item's procedure (:class:`pytest_critic22.plugin.items.Executor`)."""

    def __init__(
        self,
        review: Review,
        opts: ReviewOptions,
        trees: TreeSet,
        sandbox: Sandbox,
        ledger: Ledger,
        kinds: KindRegistry,
        checks: CheckRegistry,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.review = review
        self.opts = opts
        self.trees = trees
        self.sandbox = sandbox
        self.ledger = ledger
        self.kinds = kinds
        self.checks = checks
        self.progress = progress
        self._context: ExecutionContext | None = None
        self._items: ItemBatch | None = None  # the generated items this process executes

    def execute(self, routed: RoutedFinding) -> FindingResult:
        if routed.procedure is None:
            raise RuntimeError(f"critic22: {routed.finding_id} has no procedure to run")
        label = f"{routed.finding_id} [{routed.finding.location}] {routed.procedure.kind}"
        ctx = self._ctx(label)
        result = self.kinds.execute(routed.finding_id, routed.finding, routed.procedure, ctx)
        result = scrubbed(result)
        self.ledger.append("procedure-run", result.to_record())
        return result

    def execute_preservation(self, group: str, tests: tuple[str, ...]) -> FindingResult:
        procedure = Procedure(COLLECTION if group == COLLECTION else "preservation", NodeIds(tests))
        ctx = self._ctx(preservation_id(group))
        result = self.kinds.execute(preservation_id(group), None, procedure, ctx)
        result = scrubbed(result)
        self.ledger.append("preservation-run", result.to_record())
        return result

    def run_item(
        self, name: str, peers: Mapping[str, Callable[[], FindingResult]]
    ) -> FindingResult:
        if self._items is None:
            from pytest_critic22.plugin.itembatch import ItemBatch

            # --critic22-rerun-mode=process: every run a child of its own, no fork-server
            forked = self._run_sessions if self.opts.rerun_mode != "process" else None
            self._items = ItemBatch(
                self.trees.scratch / "results", self._run_child, usable_cpus(), forked
            )
        return self._items.result(name, peers)

    def _run_sessions(
        self, tree: Path, requests: Sequence[RunRequest], booted: bool
    ) -> list[tuple[RunResult, list[Case]] | None]:
        from pytest_critic22.verification.procedures import run_sessions

        return run_sessions(self._ctx("batch"), tree, requests, booted)

    def _run_child(
        self, tree: Path, nodeids: Sequence[str], attempts: int, merged: int
    ) -> tuple[RunResult, list[Case]]:
        from pytest_critic22.verification.procedures import run_child

        return run_child(self._ctx("batch"), tree, nodeids, attempts, merged)

    def _ctx(self, label: str) -> ExecutionContext:
        """The run's execution context, its progress lines labelled with the item's id."""
        from pytest_critic22.execution.progress import labelled

        if self._context is None:
            from pytest_critic22.verification.procedures import ExecutionContext

            review = self.review
            self._context = ExecutionContext(
                patch=review.patch,
                trees=self.trees,
                timeout=self.opts.timeout,
                reruns=self.opts.reruns,
                slots=usable_cpus(),
                slot_dir=self.trees.slots,
                sandbox=self.sandbox,
                scratch=self.trees.scratch,
                test_dir=review.test_dir,
                pythonpath=self.opts.pythonpath,
                acceptance=review.acceptance,
                obligation_tests=review.obligation_tests,
                harness=review.harness_changed,
                checks=self.checks,
                progress=self.progress,
                rerun_mode=self.opts.rerun_mode,
            )
        batch = self._items.batcher if self._items is not None else None
        return replace(self._context, progress=labelled(self._context.progress, label), batch=batch)
