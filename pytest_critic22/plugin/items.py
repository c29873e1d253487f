"""Generated pytest items: one per blocking finding and per preservation group, under a node
for the patch.

verified -> FAILED, refuted -> PASSED, inconclusive -> SKIPPED with the reason. The
item's failure shows the claim, its evidence, the procedure and what decided it, never
a traceback of the plugin. Items know the review (data) and an :class:`Executor` (one
method per item kind); they never reach into the plugin object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from pytest_critic22.model.inert import inert
from pytest_critic22.model.patch import WHOLE_PATCH
from pytest_critic22.pipeline.review import preservation_id

if TYPE_CHECKING:
    from pytest_critic22.pipeline.review import Review, RoutedFinding
    from pytest_critic22.verification.procedures import FindingResult

__all__ = [
    "FINDING",
    "LOCATION",
    "OUTCOME",
    "PROPERTY",
    "Executor",
    "PatchFile",
    "PreservationItem",
    "ReviewItem",
]

PROPERTY = "critic22"  # the user_properties key that carries a result to the controller
# Shown by --junitxml as <property>s of the item's testcase (they travel with xdist reports).
FINDING, OUTCOME, LOCATION = "critic22_finding", "critic22_outcome", "critic22_location"


class Executor(Protocol):
    """What runs an item's procedure (in this process: the controller or an xdist worker)."""

    def execute(self, routed: RoutedFinding) -> FindingResult: ...

    def execute_preservation(self, group: str, tests: tuple[str, ...]) -> FindingResult: ...

    def run_item(
        self, name: str, peers: Mapping[str, Callable[[], FindingResult]]
    ) -> FindingResult:
        """Item ``name``'s result: executed together with its selected ``peers``
        (:mod:`pytest_critic22.plugin.itembatch`), or read from the process that did."""
        ...


class VerifiedDefect(Exception):
    def __init__(self, result: FindingResult) -> None:
        super().__init__(result.outcome.reason)
        self.result = result


class PatchFile(pytest.File):
    """The patch as a collector, made explicitly: it may lie outside the collected paths."""

    def __init__(self, *, review: Review, executor: Executor, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.review = review
        self.executor = executor

    def collect(self) -> Iterable[pytest.Item]:
        for group, tests in self.review.preservation.items():
            name = preservation_id(group)
            yield PreservationItem.from_parent(
                self, name=name, nodeid=f"{self.nodeid}::{name}", group=group, tests=tuple(tests)
            )
        for routed in self.review.blocking():
            # An explicit node id: parsed the way pytest's cache parses it, so --lf
            # matches "F1[e2]" as name "F1" with parameter "e2".
            yield ReviewItem.from_parent(
                self,
                name=routed.item_name,
                nodeid=f"{self.nodeid}::{routed.item_name}",
                routed=routed,
            )


class _GeneratedItem(pytest.Item):
    """What every generated item shares: its patch node, and how an outcome becomes a report."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("critic22")

    @property
    def patch_node(self) -> PatchFile:
        parent = self.parent
        assert isinstance(parent, PatchFile)
        return parent

    def execute(self) -> FindingResult:
        raise NotImplementedError

    def explain(self, result: FindingResult) -> str:
        raise NotImplementedError

    def peers(self) -> dict[str, Callable[[], FindingResult]]:
        """The generated items of this patch that this session runs (after -k, --lf, ...)."""
        return {
            item.name: item.execute
            for item in self.session.items
            if isinstance(item, _GeneratedItem) and item.parent is self.parent
        }

    def runtest(self) -> None:
        peers = self.peers()
        peers.setdefault(self.name, self.execute)
        result = self.patch_node.executor.run_item(self.name, peers)
        # Carried to the controller (also from an xdist worker) through the test report.
        self.user_properties.append((PROPERTY, json.dumps(result.to_record())))
        self.user_properties.append((OUTCOME, result.outcome.kind))
        if result.outcome.kind == "verified":
            raise VerifiedDefect(result)
        if result.outcome.kind == "inconclusive":
            # Located at the item (the finding's edit), not at this line of the plugin.
            raise pytest.skip.Exception(
                f"inconclusive: {inert(result.outcome.reason)}", _use_item_location=True
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, VerifiedDefect):
            return self.explain(excinfo.value.result)
        return f"critic22: {type(excinfo.value).__name__}: {inert(str(excinfo.value))}"


class ReviewItem(_GeneratedItem):
    def __init__(self, *, routed: RoutedFinding, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.routed = routed
        self.user_properties.append((FINDING, routed.finding_id))
        self.user_properties.append((LOCATION, routed.finding.location))

    def execute(self) -> FindingResult:
        return self.patch_node.executor.execute(self.routed)

    def explain(self, result: FindingResult) -> str:
        from pytest_critic22.report.terminal import explain_failure

        return explain_failure(self.routed, result)

    def reportinfo(self) -> tuple[Path | str, int, str]:
        finding = self.routed.finding
        label = f"critic22 {self.routed.finding_id} [{finding.location}]"
        if finding.location == WHOLE_PATCH:
            return self.path, 0, label
        edit = self.patch_node.review.patch.edit(finding.location)
        line = (edit.added_lines or (edit.new_start,))[0]
        return self.config.rootpath / edit.path, max(0, line - 1), label


class PreservationItem(_GeneratedItem):
    """Existing tests that reach the touched symbols, run on patched with base as the
    counterfactual: the deterministic validator, with or without a critic."""

    def __init__(self, *, group: str, tests: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.group = group
        self.tests = tests
        self.user_properties.append((FINDING, preservation_id(group)))
        self.user_properties.append((LOCATION, group))

    def execute(self) -> FindingResult:
        return self.patch_node.executor.execute_preservation(self.group, self.tests)

    def explain(self, result: FindingResult) -> str:
        from pytest_critic22.report.terminal import explain_preservation

        return explain_preservation(self.group, result)

    def reportinfo(self) -> tuple[Path | str, int, str]:
        return self.config.rootpath / self.group, 0, f"critic22 preservation {self.group}"
