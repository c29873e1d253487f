"""ReviewFinding: the critic's only output, and the deterministic parser that enforces it.

A finding has EXACTLY six fields. Anything that wraps a finding (its route, outcome,
logs) lives in a record beside it, never inside it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from pytest_critic22.model.patch import WHOLE_PATCH

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import Procedure, Route

__all__ = [
    "FIELDS",
    "SEVERITIES",
    "Downgraded",
    "Dropped",
    "ParseResult",
    "Rejected",
    "ReviewFinding",
    "extract_records",
    "memory_update_of",
    "parse_findings",
]

Severity = Literal["blocking", "advisory"]
SEVERITIES: tuple[str, ...] = ("blocking", "advisory")


@dataclass(frozen=True, slots=True)
class ReviewFinding:
    location: str  # an edit id ("e2") or "whole-patch"
    claim: str  # the concrete defect, one sentence
    severity: Severity
    evidence: str  # what in the packet supports it
    falsification: str  # the procedure that would prove the claim WRONG
    confidence: float  # 0..1: recorded, NEVER read by routing, verification or the gate

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ReviewFinding))


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that breaks the schema. The critic may be re-asked about it."""

    index: int
    record: Any
    reason: str


@dataclass(frozen=True, slots=True)
class Downgraded:
    """A blocking finding without an executable falsification, kept as advisory."""

    index: int
    finding: ReviewFinding  # as downgraded (severity "advisory")
    reason: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """A valid finding that is not kept (a duplicate, or beyond the cap)."""

    index: int
    finding: ReviewFinding
    reason: str


@dataclass(frozen=True, slots=True)
class ParseResult:
    findings: tuple[ReviewFinding, ...]  # accepted, downgraded ones included as advisory
    rejected: tuple[Rejected, ...] = ()
    downgraded: tuple[Downgraded, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    error: str = ""  # the output as a whole was unusable (not JSON, wrong shape)
    max_findings: int | None = None  # the cap the findings were parsed under
    # Each accepted finding's route, in order (advisory ones' too: the report shows them).
    routes: tuple[Route, ...] = ()

    @property
    def blocking(self) -> tuple[ReviewFinding, ...]:
        return tuple(f for f in self.findings if f.severity == "blocking")

    @property
    def problems(self) -> tuple[str, ...]:
        """Messages for a re-ask: what was wrong, never what was found."""
        out = [self.error] if self.error else []
        out += [f"record {r.index}: {r.reason}" for r in self.rejected]
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        """What the ledger and the report record of the parse (never the findings' text)."""
        return {
            "accepted": len(self.findings),
            "error": self.error,
            "rejected": [{"index": r.index, "reason": r.reason} for r in self.rejected],
            "downgraded": [{"index": d.index, "reason": d.reason} for d in self.downgraded],
            "dropped": [{"index": d.index, "reason": d.reason} for d in self.dropped],
        }

    def dropped_summary(self) -> tuple[str, ...]:
        """The dropped records in at most one line per reason, however many there are.

        ``9980 records dropped beyond --critic22-max-findings=20 (records 21-10000)``
        """
        groups: dict[str, list[int]] = {}
        for d in self.dropped:
            groups.setdefault(d.reason, []).append(d.index)
        cap_reason = _cap_reason(self.max_findings) if self.max_findings is not None else None
        lines = []
        for reason, indices in groups.items():
            if reason == cap_reason:
                why = f" beyond --critic22-max-findings={self.max_findings}"
            elif reason == _DUPLICATE:
                why = (
                    " as duplicates of earlier findings"
                    if len(indices) > 1
                    else " as a duplicate of an earlier finding"
                )
            else:
                why = f": {reason}"
            lines.append(f"{_records(len(indices))} dropped{why} ({_span(indices)})")
        return tuple(lines)


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_records(raw: str) -> tuple[list[Any] | None, str]:
    """Raw critic text -> the list of records, or None and why.

    Accepts a JSON array, an object with a ``findings`` key, either possibly inside a
    fenced code block, possibly with prose around it.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(raw)] + [raw]
    for text in candidates:
        value = _loads_lenient(text)
        if value is _NOTHING:
            continue
        if isinstance(value, list):
            return value, ""
        if isinstance(value, dict):
            if "findings" in value and isinstance(value["findings"], list):
                return value["findings"], ""
            return None, "the output is a JSON object without a 'findings' list"
        return None, f"the output is JSON {type(value).__name__}, not a list of findings"
    if not raw.strip():
        return None, "the output is empty"
    return None, "the output holds no JSON array or object"


_NOTHING = object()


def memory_update_of(raw: str) -> str:
    """The critic's ``memory_update`` when it answered ``{"findings": [...], "memory_update":
    "..."}`` (critic22 loop copies it verbatim into its memory file); "" otherwise. It is a
    record, never read as a verdict."""
    value = _loads_lenient(raw)
    if isinstance(value, dict):
        update = value.get("memory_update")
        if isinstance(update, str):
            return update
    return ""


def loads_lenient(text: str) -> Any:
    """JSON in a model's answer, prose or fences around it allowed (:data:`_NOTHING` if none)."""
    return _loads_lenient(text)


def _loads_lenient(text: str) -> Any:
    text = text.strip()
    if not text:
        return _NOTHING
    try:
        return json.loads(text)
    except ValueError:
        pass
    # Prose around the JSON: take the outermost bracketed span that parses.
    decoder = json.JSONDecoder()
    for opener in ("[", "{"):
        start = text.find(opener)
        while start != -1:
            try:
                value, _ = decoder.raw_decode(text, start)
                return value
            except ValueError:
                start = text.find(opener, start + 1)
    return _NOTHING


Validator = Callable[["ReviewFinding", "Procedure"], "str | None"]
Router = Callable[[str], "Route"]


def parse_findings(
    raw: str,
    locations: Collection[str],
    *,
    max_findings: int | None = None,
    validate: Validator | None = None,
    route: Router | None = None,
) -> ParseResult:
    """Deterministic schema enforcement over raw critic output.

    ``locations`` is the patch's edit ids (``whole-patch`` is always allowed).
    """
    records, error = extract_records(raw)
    if records is None:
        return ParseResult(findings=(), error=error)
    return parse_records(
        records, locations, max_findings=max_findings, validate=validate, route=route
    )


def parse_records(
    records: list[Any],
    locations: Collection[str],
    *,
    max_findings: int | None = None,
    validate: Validator | None = None,
    route: Router | None = None,
) -> ParseResult:
    """``route`` is the run's router (default: the built-in kinds'); each accepted finding's
    route is kept in ``ParseResult.routes``, so nothing downstream routes it again.
    ``validate`` says why an executable procedure cannot run on this patch (a static
    check's arguments naming nothing in it); such a blocking finding is downgraded."""
    allowed = set(locations) | {WHOLE_PATCH}
    accepted: list[ReviewFinding] = []
    rejected: list[Rejected] = []
    downgraded: list[Downgraded] = []
    dropped: list[Dropped] = []
    routes: list[Route] = []
    if route is None:
        from pytest_critic22.kinds.grammar import route as builtin_route

        route = builtin_route
    seen: set[tuple[str, str, str]] = set()
    for index, record in enumerate(records, 1):
        finding, reason = _validate(record, allowed)
        if finding is None:
            rejected.append(Rejected(index, record, reason))
            continue
        key = (finding.location, finding.claim.strip(), finding.falsification.strip())
        if key in seen:
            dropped.append(Dropped(index, finding, _DUPLICATE))
            continue
        seen.add(key)
        if max_findings is not None and len(accepted) >= max_findings:
            dropped.append(Dropped(index, finding, _cap_reason(max_findings)))
            continue
        found = route(finding.falsification)
        if finding.severity == "blocking":
            reason = found.reason
            if found.procedure is not None and validate is not None:
                reason = validate(finding, found.procedure) or ""
            if not found.executable or reason:
                finding = replace(finding, severity="advisory")
                downgraded.append(Downgraded(index, finding, reason))
        accepted.append(finding)
        routes.append(found)
    return ParseResult(
        tuple(accepted),
        tuple(rejected),
        tuple(downgraded),
        tuple(dropped),
        max_findings=max_findings,
        routes=tuple(routes),
    )


_DUPLICATE = "duplicate of an earlier finding"


def _cap_reason(max_findings: int) -> str:
    return f"beyond the cap of {max_findings} findings"


def _records(count: int) -> str:
    return f"{count} record" if count == 1 else f"{count} records"


def _span(indices: list[int], shown: int = 5) -> str:
    """``record 7``, ``records 21-10000`` when consecutive, else the first few and an ellipsis."""
    if len(indices) == 1:
        return f"record {indices[0]}"
    if indices == list(range(indices[0], indices[0] + len(indices))):
        return f"records {indices[0]}-{indices[-1]}"
    head = ", ".join(str(i) for i in indices[:shown])
    return f"records {head}, …" if len(indices) > shown else f"records {head}"


def _validate(record: Any, allowed: set[str]) -> tuple[ReviewFinding | None, str]:
    if not isinstance(record, Mapping):
        return None, f"not an object but {type(record).__name__}"
    keys = set(record)
    missing = [f for f in FIELDS if f not in keys]
    extra = sorted(str(k) for k in keys - set(FIELDS))
    if missing:
        return None, f"missing field(s): {', '.join(missing)}"
    if extra:
        return None, f"unexpected field(s): {', '.join(extra)}"
    for name in ("location", "claim", "severity", "evidence", "falsification"):
        if not isinstance(record[name], str):
            return None, f"{name} must be a string"
    if not record["claim"].strip():
        return None, "claim is empty"
    location = record["location"].strip()
    if location not in allowed:
        known = ", ".join(sorted(allowed, key=_location_order))
        return None, f"location {record['location']!r} is not one of: {known}"
    if record["severity"] not in SEVERITIES:
        return None, f"severity {record['severity']!r} is not 'blocking' or 'advisory'"
    confidence = record["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None, "confidence must be a number in [0, 1]"
    if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        return None, f"confidence {confidence!r} is outside [0, 1]"
    return (
        ReviewFinding(
            location=location,
            claim=record["claim"].strip(),
            severity=record["severity"],
            evidence=record["evidence"],
            falsification=record["falsification"],
            confidence=float(confidence),
        ),
        "",
    )


def _location_order(location: str) -> tuple[int, int]:
    if location == WHOLE_PATCH:
        return (1, 0)
    return (0, int(location[1:]) if location[1:].isdigit() else 0)
