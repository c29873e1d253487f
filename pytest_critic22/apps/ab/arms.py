"""From records to per-arm outcomes (pure): how each arm of ``critic22 ab`` sees a case."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_critic22.apps.ab.population import Label

#: Gate off (arm e): a blocking finding with at least this confidence rejects the patch.
CONFIDENCE_THRESHOLD = 0.5

ArmName = Literal["a", "b", "c", "d", "e"]
ARMS: tuple[ArmName, ...] = ("a", "b", "c", "d", "e")
ARM_TITLES: Mapping[str, str] = {
    "a": "a validator",
    "b": "b critic+validator",
    "c": "c blinding off",
    "d": "d routing off",
    "e": "e gate off",
}
MECHANISMS: Mapping[str, str] = {"c": "blinding", "d": "routing", "e": "gate"}


@dataclass(frozen=True, slots=True)
class Claim:
    """A blocking finding of the critic (as parsed: downgraded ones are not blocking)."""

    status: str  # verified | refuted | inconclusive | not run
    confidence: float


@dataclass(frozen=True, slots=True)
class ReviewSummary:
    """What the metrics need from one plugin run."""

    verdict: Literal["reject", "proceed"]
    claims: tuple[Claim, ...] = ()
    preservation: tuple[str, ...] = ()  # the outcome of each preservation group
    calls: int = 0  # critic calls (a replayed recording is one)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def validator_rejects(self) -> bool:
        return "verified" in self.preservation


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    label: Label
    ground_truth: str  # failed | passed | error | none (of the hidden tests on the patched tree)
    validator: ReviewSummary
    critic: ReviewSummary
    unblinded: ReviewSummary | None = None

    @property
    def defect_confirmed(self) -> bool:
        return self.ground_truth == "failed"


@dataclass(frozen=True, slots=True)
class ArmCase:
    """One case as one arm sees it."""

    rejected: bool
    emitted: int  # blocking claims of the critic
    killed: int  # ... refuted by their own falsification
    executed: int  # blocking items run (claims executed and preservation groups)
    inconclusive: int  # ... with an inconclusive outcome
    calls: int
    tokens: int
    seconds: float | None  # None: the arm has no run of its own


def summarize(record: Mapping[str, Any]) -> ReviewSummary | None:
    """A cached review record -> ReviewSummary (None when the run gave no report)."""
    report = record.get("report")
    if not isinstance(report, dict):
        return None
    verdict = report.get("disposition", {}).get("verdict")
    if verdict not in ("reject", "proceed"):
        return None
    claims = []
    for wrapped in report.get("findings", []):
        finding = wrapped.get("finding", {})
        if finding.get("severity") != "blocking":
            continue
        claims.append(
            Claim(
                status=str(wrapped.get("outcome", {}).get("status", "not run")),
                confidence=float(finding.get("confidence", 0.0)),
            )
        )
    critic = report.get("critic", {})
    calls = 0
    if critic.get("engaged"):
        calls = 1 if critic.get("source") == "replay" else int(critic.get("calls", 0) or 0)
    tokens = int((critic.get("tokens") or {}).get("total_tokens", 0) or 0)
    return ReviewSummary(
        verdict=verdict,
        claims=tuple(claims),
        preservation=tuple(
            str(p.get("outcome", "not run")) for p in report.get("preservation", [])
        ),
        calls=calls,
        tokens=tokens,
        seconds=float(record.get("seconds", 0.0) or 0.0),
    )


def arm_case(arm: str, result: CaseResult) -> ArmCase | None:
    """How arm ``arm`` sees one case (None: the arm was not run for it)."""
    if arm == "a":
        review = result.validator
        claims: tuple[Claim, ...] = ()
        rejected = review.verdict == "reject"
    elif arm in ("b", "d", "e"):
        review = result.critic
        claims = review.claims
        if arm == "b":
            rejected = review.verdict == "reject"
        elif arm == "d":
            rejected = bool(claims) or review.validator_rejects
        else:
            rejected = review.validator_rejects or any(
                c.confidence >= CONFIDENCE_THRESHOLD for c in claims
            )
    elif arm == "c":
        if result.unblinded is None:
            return None
        review = result.unblinded
        claims = review.claims
        rejected = review.verdict == "reject"
    else:
        raise ValueError(f"unknown arm {arm!r}")
    run_claims = () if arm == "d" else claims
    executed = [c.status for c in run_claims if c.status != "not run"] + [
        p for p in review.preservation if p != "not run"
    ]
    return ArmCase(
        rejected=rejected,
        emitted=len(claims),
        killed=sum(1 for c in claims if c.status == "refuted"),
        executed=len(executed),
        inconclusive=sum(1 for s in executed if s == "inconclusive"),
        calls=review.calls,
        tokens=review.tokens,
        seconds=review.seconds if arm in ("a", "b", "c") else None,
    )
