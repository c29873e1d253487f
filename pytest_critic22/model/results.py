"""The typed results every stage hands on: a child run's result, a finding's outcome, and the
review's disposition (verdict). Values only; :mod:`pytest_critic22.verification.decide` makes
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Disposition", "Outcome", "OutcomeKind", "RunResult", "RunStatus", "Verdict"]

OutcomeKind = Literal["verified", "refuted", "inconclusive"]
RunStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True, slots=True)
class RunResult:
    status: RunStatus  # passed: every selected test passed; failed: >= 1 test failed
    reason: str  # for "error": why the run says nothing about the claim
    exit_code: int | None
    seconds: float
    tests: Mapping[str, str] = field(default_factory=dict)  # name -> passed|failed|skipped|error
    output: str = ""  # the tail of the child's output, for the report
    note: str = ""  # what a person should know: an exit status the outcomes overruled
    # Per test that failed: the outcomes of its attempts in the same child (first included),
    # when the child confirmed failures in process (--critic22-rerun-mode=inprocess).
    attempts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    merged: int = 0  # > 1: this run's tests ran in one child with other requests' (a batch)
    attempt: int = 0  # > 1: this "run" is attempt N of a test in the child of the first run
    # Fresh runs, each a process of its own, that went on confirming this failing one (a
    # fork-server session's confirmations: pytest_critic22.execution.forkserver); not part of the
    # record.
    then: tuple[RunResult, ...] = ()

    def to_dict(self) -> dict[str, object]:
        record: dict[str, object] = {
            "status": self.status,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "tests": dict(self.tests),
            "output": self.output,
        }
        if self.note:
            record["note"] = self.note
        if self.merged > 1:
            record["merged"] = self.merged
        if self.attempt > 1:
            record["attempt"] = self.attempt
        return record


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    reason: str
    # inconclusive because the review could not look: a tree could not be built, or could
    # not import the code under test. Unlike flaky or fails-on-both-trees, this is no
    # answer about the claim at all, and the gate says INCOMPLETE rather than PROCEED.
    environment: bool = False


Verdict = Literal["reject", "incomplete", "proceed"]


@dataclass(frozen=True, slots=True)
class Disposition:
    verdict: Verdict
    verified: tuple[str, ...]  # ids of verified blocking findings
    reason: str
    problems: tuple[str, ...] = ()  # why the review could not look (INCOMPLETE)
    interrupted: bool = False
