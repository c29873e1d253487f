"""Generated pytest items: one per blocking finding, under a node for the patch.

verified -> FAILED, refuted -> PASSED, inconclusive -> SKIPPED with the reason. The
item's failure shows the claim, its evidence, the procedure and what decided it, never
a traceback of the plugin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_critic22.diffparse import WHOLE_PATCH
from pytest_critic22.falsify import Procedure
from pytest_critic22.finding import ReviewFinding

if TYPE_CHECKING:
    from pytest_critic22.procedures import FindingResult
    from pytest_critic22.session import Critic22Plugin

__all__ = ["PROPERTY", "PatchFile", "ReviewItem", "WrappedFinding"]

PROPERTY = "critic22"  # the user_properties key that carries a result to the controller


@dataclass(frozen=True, slots=True)
class WrappedFinding:
    """A finding and what the plugin did with it: the finding itself stays six fields."""

    finding_id: str
    finding: ReviewFinding
    procedure: Procedure | None
    route_reason: str = ""


class VerifiedDefect(Exception):
    def __init__(self, result: FindingResult) -> None:
        super().__init__(result.outcome.reason)
        self.result = result


class PatchFile(pytest.File):
    """The patch as a collector, made explicitly: it may lie outside the collected paths."""

    def __init__(self, *, review: Critic22Plugin, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.review = review

    def collect(self) -> Iterable[pytest.Item]:
        for group, tests in self.review.preservation.items():
            name = f"preserve[{group}]"
            yield PreservationItem.from_parent(
                self, name=name, nodeid=f"{self.nodeid}::{name}", group=group, tests=tuple(tests)
            )
        for wrapped in self.review.blocking_findings():
            name = f"{wrapped.finding_id}[{wrapped.finding.location}]"
            # An explicit node id: parsed the way pytest's cache parses it, so --lf
            # matches "F1[e2]" as name "F1" with parameter "e2".
            yield ReviewItem.from_parent(
                self, name=name, nodeid=f"{self.nodeid}::{name}", wrapped=wrapped
            )


class _GeneratedItem(pytest.Item):
    """What every generated item shares: its session, and how an outcome becomes a report."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("critic22")

    @property
    def review(self) -> Critic22Plugin:
        parent = self.parent
        assert isinstance(parent, PatchFile)
        return parent.review

    def execute(self) -> FindingResult:
        raise NotImplementedError

    def explain(self, result: FindingResult) -> str:
        raise NotImplementedError

    def runtest(self) -> None:
        result = self.execute()
        # Carried to the controller (also from an xdist worker) through the test report.
        self.user_properties.append((PROPERTY, json.dumps(self.review.result_record(result))))
        if result.outcome.kind == "verified":
            raise VerifiedDefect(result)
        if result.outcome.kind == "inconclusive":
            # Located at the item (the finding's edit), not at this line of the plugin.
            raise pytest.skip.Exception(
                f"inconclusive: {result.outcome.reason}", _use_item_location=True
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, VerifiedDefect):
            return self.explain(excinfo.value.result)
        return f"critic22: {type(excinfo.value).__name__}: {excinfo.value}"


class ReviewItem(_GeneratedItem):
    def __init__(self, *, wrapped: WrappedFinding, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.wrapped = wrapped
        self.user_properties.append(("critic22_finding", wrapped.finding_id))

    def execute(self) -> FindingResult:
        result: FindingResult = self.review.execute(self.wrapped)
        return result

    def explain(self, result: FindingResult) -> str:
        return self.review.explain(self.wrapped, result)

    def reportinfo(self) -> tuple[Path | str, int, str]:
        finding = self.wrapped.finding
        label = f"critic22 {self.wrapped.finding_id} [{finding.location}]"
        if finding.location == WHOLE_PATCH:
            return self.path, 0, label
        edit = self.review.review.patch.edit(finding.location)
        line = (edit.added_lines or (edit.new_start,))[0]
        return self.review.rootpath / edit.path, max(0, line - 1), label


class PreservationItem(_GeneratedItem):
    """Existing tests that reach the touched symbols, run on patched with base as the
    counterfactual: the deterministic validator, with or without a critic."""

    def __init__(self, *, group: str, tests: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.group = group
        self.tests = tests

    def execute(self) -> FindingResult:
        result: FindingResult = self.review.execute_preservation(
            f"preserve[{self.group}]", self.tests
        )
        return result

    def explain(self, result: FindingResult) -> str:
        from pytest_critic22.report import explain_preservation

        return explain_preservation(self.group, self.review.result_record(result))

    def reportinfo(self) -> tuple[Path | str, int, str]:
        return self.review.rootpath / self.group, 0, f"critic22 preservation {self.group}"
