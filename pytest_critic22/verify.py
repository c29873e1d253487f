"""The deterministic verification gate: run results -> outcome -> disposition.

Pure functions. The critic's confidence is never read here (nor anywhere that decides).

verified     -- the procedure fails on ``patched`` (confirmed by reruns) and passes on the
                counterfactual (and the acceptance test passes there, when there is one)
refuted      -- the procedure passes on ``patched``
inconclusive -- anything else: flaky, fails on both trees, a tree that cannot be built,
                a timeout, a usage or internal error, no tests collected
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Disposition",
    "Outcome",
    "OutcomeKind",
    "RunResult",
    "RunStatus",
    "confirm_failure",
    "decide",
    "gate",
]

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

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "tests": dict(self.tests),
            "output": self.output,
        }


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    reason: str


@dataclass(frozen=True, slots=True)
class Disposition:
    verdict: Literal["reject", "proceed"]
    verified: tuple[str, ...]  # ids of verified blocking findings
    reason: str


def confirm_failure(runs: Sequence[RunResult]) -> Outcome | None:
    """None when every run on ``patched`` failed; otherwise the outcome those runs give."""
    if not runs:
        return Outcome("inconclusive", "the procedure did not run")
    first = runs[0]
    if first.status == "error":
        return Outcome("inconclusive", f"on the patched tree: {first.reason}")
    if first.status == "passed":
        return Outcome("refuted", "the procedure passes on the patched tree")
    failures = sum(1 for r in runs if r.status == "failed")
    if failures != len(runs):
        return Outcome(
            "inconclusive",
            f"flaky: failed {failures} of {len(runs)} runs on the patched tree",
        )
    return None


def decide(
    patched_runs: Sequence[RunResult],
    counterfactual: RunResult | None,
    *,
    counterfactual_name: str,
    acceptance: RunResult | None = None,
    obligations: RunResult | None = None,
    counterfactual_error: str = "",
) -> Outcome:
    """The outcome of one finding from its runs (``counterfactual`` None: not built)."""
    early = confirm_failure(patched_runs)
    if early is not None:
        return early
    n = len(patched_runs)
    if counterfactual is None:
        why = counterfactual_error or "it could not be built"
        return Outcome("inconclusive", f"fails on patched ({n}/{n}); counterfactual: {why}")
    if counterfactual.status == "error":
        return Outcome(
            "inconclusive",
            f"fails on patched ({n}/{n}); on the {counterfactual_name} tree: "
            f"{counterfactual.reason}",
        )
    if counterfactual.status == "failed":
        return Outcome(
            "inconclusive",
            f"fails on both the patched and the {counterfactual_name} tree: the claim is "
            "not shown to be caused by the located edit",
        )
    if acceptance is not None and acceptance.status != "passed":
        return Outcome(
            "inconclusive",
            f"the {counterfactual_name} tree fails the specification's acceptance test: "
            "the counterfactual is not a valid fix",
        )
    if obligations is not None and obligations.status != "passed":
        return Outcome(
            "inconclusive",
            f"the {counterfactual_name} tree breaks a preservation obligation",
        )
    return Outcome(
        "verified",
        f"fails on patched ({n}/{n} runs) and passes on the {counterfactual_name} tree",
    )


def gate(outcomes: Sequence[tuple[str, str, Outcome]]) -> Disposition:
    """reject iff at least one BLOCKING finding is verified, whatever the others did.

    ``outcomes`` holds (finding id, severity, outcome).
    """
    verified = tuple(
        fid for fid, severity, o in outcomes if severity == "blocking" and o.kind == "verified"
    )
    if verified:
        return Disposition(
            "reject",
            verified,
            f"{len(verified)} verified blocking defect{'s' if len(verified) != 1 else ''}: "
            + ", ".join(verified),
        )
    counts: dict[str, int] = {}
    for _, severity, outcome in outcomes:
        if severity == "blocking":
            counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
    detail = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no blocking findings"
    return Disposition("proceed", (), f"no verified blocking defect ({detail})")
