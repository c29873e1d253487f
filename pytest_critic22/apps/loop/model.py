"""The loop's records: frozen, typed, plain data. No I/O here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DebateTurn",
    "Fix",
    "ItemResult",
    "RoundRecord",
]


#: Where a fix came from.
Origin = Literal["repair", "fixer", "user"]

#: Where an item of a round came from.
Source = Literal["critic", "second-critic", "debate", "validator", "scar"]


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One blocking finding or preservation group of a round, and what execution said."""

    id: str  # F1 (critic), N1 (second critic), D1 (debate), preserve[...], scar[R1-F1]
    source: Source
    claim: str  # the finding's claim; for a preservation group, the tests it runs
    location: str  # an edit id, whole-patch, or "" for a preservation group
    procedure: str | None  # test, counterfactual, static, trace, property, preservation, scar
    status: str  # verified | refuted | inconclusive
    reason: str  # execution's reason for that status
    falsification: str = ""  # the finding's falsification text ("" for groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "claim": self.claim,
            "location": self.location,
            "procedure": self.procedure,
            "status": self.status,
            "reason": self.reason,
            "falsification": self.falsification,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ItemResult:
        source = str(data.get("source", "critic"))
        if source not in ("critic", "second-critic", "debate", "validator", "scar"):
            source = "critic"
        procedure = data.get("procedure")
        return cls(
            id=str(data["id"]),
            source=source,  # type: ignore[arg-type]
            claim=str(data.get("claim", "")),
            location=str(data.get("location", "")),
            procedure=None if procedure is None else str(procedure),
            status=str(data.get("status", "")),
            reason=str(data.get("reason", "")),
            falsification=str(data.get("falsification", "")),
        )


@dataclass(frozen=True, slots=True)
class Fix:
    """A fix the loop considered for the next candidate."""

    finding_id: str  # the verified finding it fixes
    origin: Origin
    diff: str
    status: Literal["applied", "skipped", "refused"]  # refused: its verification failed
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "finding_id": self.finding_id,
            "origin": self.origin,
            "diff": self.diff,
            "status": self.status,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fix:
        return cls(
            str(data["finding_id"]),
            data.get("origin", "repair"),
            str(data.get("diff", "")),
            data.get("status", "skipped"),
            str(data.get("reason", "")),
        )


@dataclass(frozen=True, slots=True)
class DebateTurn:
    """The critic's second turn on one finding that ended inconclusive or refuted (``hard``)."""

    finding_id: str
    before: str  # the finding's status before the turn
    ruling: str  # withdraw | revise | keep | no answer
    argument: str  # the critic's words, verbatim (a record, never a decision)
    after: str  # the status after the turn: changed only by executing a revision
    reason: str = ""  # execution's reason when a revision ran

    def to_dict(self) -> dict[str, Any]:
        return {
            "finding_id": self.finding_id,
            "before": self.before,
            "ruling": self.ruling,
            "argument": self.argument,
            "after": self.after,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DebateTurn:
        return cls(**{k: str(data.get(k, "")) for k in cls.__slots__})


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """Everything one round did, as the journal, the memory and the HTML render read it."""

    run_id: str
    round: int
    max_rounds: int
    verdict: str  # ready | almost | not ready | BLOCKED
    score: int
    positive: bool  # score >= 6 and verdict in {ready, almost}
    # continue | acquitted | max-rounds | blocked | stopped | no-fix
    status: str
    items: tuple[ItemResult, ...] = ()
    critic_source: str = ""  # model | replay | off | ...
    critic_raw: str = ""  # the critic's raw answer, verbatim
    memory_update: str = ""  # the critic's memory_update, verbatim
    second_raw: str = ""  # nightmare: the second critic's raw answer
    fixes: tuple[Fix, ...] = ()
    debate: tuple[DebateTurn, ...] = ()
    blockers: tuple[str, ...] = ()  # what keeps the candidate from acquittal, one line each
    notes: tuple[str, ...] = ()
    review_independence: str = "unknown"  # same-family | cross-family | unknown
    acceptance_status: str = "provisional"  # provisional | accepted
    trace_id: str = ""  # a directory under .critic22/traces/
    candidate: str = ""  # the candidate patch reviewed this round (a path)
    difficulty: str = "medium"
    timestamp: str = ""  # ISO-8601 UTC with Z
    extra: Mapping[str, Any] = field(default_factory=dict)
    seconds: float | None = None  # the round's wall time; None when not measured (old records)

    def counts(self) -> dict[str, int]:
        out = {"verified": 0, "refuted": 0, "inconclusive": 0}
        for item in self.items:
            if item.status in out:
                out[item.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "round": self.round,
            "max_rounds": self.max_rounds,
            "verdict": self.verdict,
            "score": self.score,
            "positive": self.positive,
            "status": self.status,
            "items": [i.to_dict() for i in self.items],
            "critic_source": self.critic_source,
            "critic_raw": self.critic_raw,
            "memory_update": self.memory_update,
            "second_raw": self.second_raw,
            "fixes": [f.to_dict() for f in self.fixes],
            "debate": [d.to_dict() for d in self.debate],
            "blockers": list(self.blockers),
            "notes": list(self.notes),
            "review_independence": self.review_independence,
            "acceptance_status": self.acceptance_status,
            "trace_id": self.trace_id,
            "candidate": self.candidate,
            "difficulty": self.difficulty,
            "timestamp": self.timestamp,
            "seconds": self.seconds,
            "extra": dict(self.extra),
            "counts": self.counts(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoundRecord:
        """A record the loop wrote (``record.json`` of a finished round)."""
        plain = {
            k: data[k]
            for k in cls.__slots__
            if k in data and k not in ("items", "fixes", "debate", "blockers", "notes", "extra")
        }
        return cls(
            **plain,
            items=tuple(ItemResult.from_dict(i) for i in data.get("items", [])),
            fixes=tuple(Fix.from_dict(f) for f in data.get("fixes", [])),
            debate=tuple(DebateTurn.from_dict(d) for d in data.get("debate", [])),
            blockers=tuple(str(b) for b in data.get("blockers", [])),
            notes=tuple(str(n) for n in data.get("notes", [])),
            extra=dict(data.get("extra", {})),
        )
