"""The JSON report, read: the one typed reader of what ``--critic22-report`` writes.

:class:`ReviewReport` is what :func:`pytest_critic22.review` returns; the loop, ``critic22 ab``
and the ``critic22`` command read a report through it. Values and parsing only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "FindingOutcome",
    "PreservationOutcome",
    "ReviewCounts",
    "ReviewReport",
    "ReviewRun",
    "Verdict",
]

#: The gate's verdicts (the JSON report's ``disposition.verdict``).
Verdict = Literal["reject", "incomplete", "proceed"]
_VERDICTS: tuple[Verdict, ...] = ("reject", "incomplete", "proceed")


@dataclass(frozen=True, slots=True)
class FindingOutcome:
    """One finding of the report (``findings[*]``): what the critic claimed, what was done."""

    id: str  # F1, F2, ... (the generated item is PATCH::F1[location])
    location: str  # an edit id (e1, ...) or whole-patch
    severity: str  # blocking | advisory
    claim: str
    procedure: str | None  # the falsification's kind (test, counterfactual, static, trace, ...)
    # verified | refuted | inconclusive (blocking findings that ran) | advisory | not run
    status: str
    reason: str  # why that status
    falsification: str = ""  # the finding's falsification, as the critic wrote it
    executable: bool = False  # routed to a procedure that runs (a blocking finding)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> FindingOutcome:
        finding = _mapping(record.get("finding"))
        route = _mapping(record.get("route"))
        outcome = _mapping(record.get("outcome"))
        kind = route.get("kind")
        return cls(
            id=str(record.get("id", "")),
            location=str(finding.get("location", "")),
            severity=str(finding.get("severity", "")),
            claim=str(finding.get("claim", "")),
            procedure=None if kind is None else str(kind),
            status=str(outcome.get("status", "")),
            reason=str(outcome.get("reason", "")),
            falsification=str(finding.get("falsification", "")),
            executable=bool(route.get("executable")),
        )


@dataclass(frozen=True, slots=True)
class PreservationOutcome:
    """One preservation group of the report (``preservation[*]``): a test file's tests run on
    the patched tree with the base as counterfactual."""

    group: str  # the test file, e.g. tests/test_stats.py
    outcome: str  # verified (a regression) | refuted | inconclusive | not run
    tests: tuple[str, ...] = ()
    reason: str = ""

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> PreservationOutcome:
        tests = record.get("tests")
        return cls(
            group=str(record.get("group", "")),
            outcome=str(record.get("outcome", "")),
            tests=tuple(str(t) for t in tests) if isinstance(tests, list) else (),
            reason=str(record.get("reason", "")),
        )


@dataclass(frozen=True, slots=True)
class ReviewCounts:
    """The report's ``counts``: findings by severity and outcome, and the dropped records."""

    findings: int = 0
    blocking: int = 0
    verified: int = 0
    refuted: int = 0
    inconclusive: int = 0
    advisory: int = 0
    not_run: int = 0  # the JSON's "not run"
    rejected: int = 0  # records that broke the schema
    downgraded: int = 0  # blocking findings without an executable falsification
    dropped: int = 0  # duplicates, and records beyond --critic22-max-findings

    @classmethod
    def from_dict(cls, counts: Mapping[str, Any]) -> ReviewCounts:
        def number(key: str) -> int:
            value = counts.get(key, 0)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        return cls(
            findings=number("findings"),
            blocking=number("blocking"),
            verified=number("verified"),
            refuted=number("refuted"),
            inconclusive=number("inconclusive"),
            advisory=number("advisory"),
            not_run=number("not run"),
            rejected=number("rejected"),
            downgraded=number("downgraded"),
            dropped=number("dropped"),
        )


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """One run of the plugin on one patch: the JSON report it wrote, typed, and the run.

    Build one from a recorded report with :meth:`from_json`. ``raw`` (also ``report``) is
    the JSON document itself, or None when the run wrote none (then ``error`` says why).
    """

    verdict: Verdict | None  # the gate's; None when there is no report
    findings: tuple[FindingOutcome, ...] = ()
    preservation: tuple[PreservationOutcome, ...] = ()
    counts: ReviewCounts = field(default_factory=ReviewCounts)
    problems: tuple[str, ...] = ()  # why the review could not look (INCOMPLETE)
    raw: dict[str, Any] | None = None  # the JSON the plugin wrote (--critic22-report)
    exit_status: int | None = None  # pytest's exit status; None when the run timed out
    seconds: float = 0.0  # wall time of the whole run
    command: tuple[str, ...] = ()  # what ran (in ``cwd``)
    cwd: str = ""
    output: str = ""  # the tail of the run's stdout and stderr
    error: str = ""  # why there is no report, when there is none
    inputs: Mapping[str, str] = field(default_factory=dict)  # files written for the run

    @classmethod
    def from_json(
        cls,
        raw: Mapping[str, Any] | None,
        *,
        exit_status: int | None = None,
        seconds: float = 0.0,
        command: Sequence[str] = (),
        cwd: str = "",
        output: str = "",
        error: str = "",
        inputs: Mapping[str, str] | None = None,
    ) -> ReviewReport:
        """The typed report of a JSON report (as ``report.json_report`` writes it), or of
        no report (``raw=None``)."""
        document = dict(raw) if raw is not None else None
        disposition = _mapping((document or {}).get("disposition"))
        verdict = disposition.get("verdict")
        problems = disposition.get("problems")
        return cls(
            verdict=next((v for v in _VERDICTS if v == verdict), None),
            findings=tuple(
                FindingOutcome.from_dict(r) for r in _records((document or {}).get("findings"))
            ),
            preservation=tuple(
                PreservationOutcome.from_dict(r)
                for r in _records((document or {}).get("preservation"))
            ),
            counts=ReviewCounts.from_dict(_mapping((document or {}).get("counts"))),
            problems=tuple(str(p) for p in problems) if isinstance(problems, list) else (),
            raw=document,
            exit_status=exit_status,
            seconds=seconds,
            command=tuple(command),
            cwd=cwd,
            output=output,
            error=error,
            inputs=dict(inputs or {}),
        )

    @classmethod
    def read(cls, path: Path) -> ReviewReport:
        """The typed report of the JSON report file at ``path`` (``--critic22-report``)."""
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls.from_json(raw if isinstance(raw, Mapping) else None)

    @property
    def report(self) -> dict[str, Any] | None:
        """The JSON report (``raw``): kept for the callers of ``ReviewRun``."""
        return self.raw

    @property
    def ok(self) -> bool:
        """The run wrote a report (whatever its verdict)."""
        return self.raw is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "report": self.raw,
            "exit_status": self.exit_status,
            "seconds": round(self.seconds, 3),
            "command": list(self.command),
            "cwd": self.cwd,
            "output": self.output,
            "error": self.error,
        }


#: The former name of :class:`ReviewReport` (it returned the raw report only).
ReviewRun = ReviewReport


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _records(value: object) -> list[Mapping[str, Any]]:
    return [r for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []
