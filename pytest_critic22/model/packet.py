"""The review packet (EXACTLY five elements) and its blinding.

Blinding is a deny list applied twice: the constructor never writes the four stripped
fields into the packet, and :func:`blind` removes any that leak in anyway, returning a
strip report that says what was removed and from where (never the removed text itself,
which may be long and is nobody's business downstream).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_critic22.model.patch import ParsedPatch

__all__ = [
    "BLIND_CONTRACT",
    "PACKET_ELEMENTS",
    "CandidatePatch",
    "Removal",
    "ReviewPacket",
    "StripReport",
    "blind",
    "build_packet",
]

#: BlindContract.strip: what never reaches the critic.
BLIND_CONTRACT: tuple[str, ...] = (
    "generator_rationale",
    "self_confidence",
    "peer_votes",
    "provenance",
)

PACKET_ELEMENTS: tuple[str, ...] = (
    "specification",
    "diagnosed_root_cause",
    "preservation_obligations",
    "impact_evidence",
    "candidate_patch",
)

# Keys (normalised: lower case, "-" and " " as "_") that carry a stripped field.
_DENY_KEYS: dict[str, str] = {
    **dict.fromkeys(
        [
            "generator_rationale",
            "rationale",
            "reasoning",
            "reasoning_trace",
            "explanation",
            "justification",
            "chain_of_thought",
            "cot",
            "thoughts",
            "thinking",
            "why",
            "motivation",
            "plan",
        ],
        "generator_rationale",
    ),
    **dict.fromkeys(
        [
            "self_confidence",
            "confidence",
            "generator_confidence",
            "certainty",
            "probability_correct",
            "p_correct",
            "self_assessment",
            "self_score",
            "self_rating",
        ],
        "self_confidence",
    ),
    **dict.fromkeys(
        [
            "peer_votes",
            "votes",
            "vote",
            "peer_reviews",
            "reviews",
            "reviewers",
            "approvals",
            "approved_by",
            "verdict",
            "verdicts",
            "consensus",
            "agreement",
        ],
        "peer_votes",
    ),
    **dict.fromkeys(
        [
            "provenance",
            "model",
            "model_name",
            "model_id",
            "generator",
            "generated_by",
            "created_by",
            "author",
            "authors",
            "agent",
            "agent_id",
            "committer",
            "trajectory",
            "session_id",
            "run_id",
            "sampling",
            "temperature",
        ],
        "provenance",
    ),
}

# Request keys that feed a packet element, with the aliases a harness may use.
_ELEMENT_KEYS: dict[str, str] = {
    "specification": "specification",
    "spec": "specification",
    "task": "specification",
    "diagnosed_root_cause": "diagnosed_root_cause",
    "root_cause": "diagnosed_root_cause",
    "preservation_obligations": "preservation_obligations",
    "obligations": "preservation_obligations",
    "impact_evidence": "impact_evidence",
}

_NUMBER = r"(?:\d+(?:\.\d+)?|\.\d+)\s*%?"
_CONFIDENCE_PATTERNS = [
    re.compile(rf"\b(?:self[-_ ]?)?confidence\s*(?:level|score)?\s*[:=]\s*{_NUMBER}", re.I),
    re.compile(
        rf"\bI(?:'m|\s+am)\s+(?:about\s+|roughly\s+|around\s+|~\s*)?{_NUMBER}\s*"
        r"(?:sure|confident|certain)\b",
        re.I,
    ),
    re.compile(rf"\b{_NUMBER}\s*(?:sure|confident|certain)\b", re.I),
    re.compile(
        r"\b(?:probability|likelihood|chance)\s+(?:that\s+)?(?:this|the)\s+"
        r"(?:patch|fix|change)\s+is\s+correct",
        re.I,
    ),
    re.compile(
        r"\bI(?:'m|\s+am)\s+(?:very\s+|fairly\s+|quite\s+|highly\s+|extremely\s+|"
        r"absolutely\s+)?(?:confident|certain|sure)\b",
        re.I,
    ),
]
_TRAILER = re.compile(
    r"^\s*(From|Date|Author|Committer|Co-authored-by|Signed-off-by|Generated-by|"
    r"Generated-with|Assisted-by|Reviewed-by|Acked-by|Tested-by|Approved-by|Model|Agent|"
    r"Provenance|Change-Id|X-[A-Za-z-]+)\s*:",
    re.I,
)
_TRAILER_FIELD = {
    "reviewed-by": "peer_votes",
    "acked-by": "peer_votes",
    "tested-by": "peer_votes",
    "approved-by": "peer_votes",
}
_LABELLED = re.compile(
    r"^\s*(rationale|reasoning|why this works|explanation|justification|"
    r"peer votes?|votes?|reviewer verdicts?)\s*:",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class Removal:
    field: str  # one of BLIND_CONTRACT
    source: str  # "request", "patch", "specification", ...
    where: str  # a JSON path, a header name, a line number
    detail: str = ""  # short and safe: a header name, a matched confidence phrase


@dataclass(frozen=True, slots=True)
class StripReport:
    removals: tuple[Removal, ...] = ()
    ignored: tuple[str, ...] = ()  # request keys that are not packet elements

    def __bool__(self) -> bool:
        return bool(self.removals)

    def merged(self, other: StripReport) -> StripReport:
        return StripReport(self.removals + other.removals, self.ignored + other.ignored)

    def to_dict(self) -> dict[str, Any]:
        return {
            "removals": [
                {"field": r.field, "source": r.source, "where": r.where, "detail": r.detail}
                for r in self.removals
            ],
            "ignored": list(self.ignored),
        }


@dataclass(frozen=True, slots=True)
class CandidatePatch:
    atomic_edits: tuple[tuple[str, str], ...]  # (edit_id, hunk)
    whole_patch: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "atomic_edits": [{"edit_id": i, "hunk": h} for i, h in self.atomic_edits],
            "whole_patch": self.whole_patch,
        }


@dataclass(frozen=True, slots=True)
class ReviewPacket:
    specification: str
    diagnosed_root_cause: str
    preservation_obligations: tuple[str, ...]
    impact_evidence: Mapping[str, Any] = field(hash=False)
    candidate_patch: CandidatePatch = field(default_factory=lambda: CandidatePatch((), ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "specification": self.specification,
            "diagnosed_root_cause": self.diagnosed_root_cause,
            "preservation_obligations": list(self.preservation_obligations),
            "impact_evidence": _plain(self.impact_evidence),
            "candidate_patch": self.candidate_patch.to_dict(),
        }

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @property
    def digest(self) -> str:
        # The inputs are strict UTF-8 (inputs.py); text read from the repository for the
        # impact evidence may still carry undecodable bytes as surrogates: hash them as
        # the bytes they were rather than crash.
        text = self.canonical_json()
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def build_packet(
    patch: ParsedPatch,
    *,
    specification: str | None = None,
    root_cause: str | None = None,
    obligations: Sequence[str] | None = None,
    request: Mapping[str, Any] | None = None,
    impact_evidence: Mapping[str, Any] | None = None,
) -> tuple[ReviewPacket, StripReport]:
    """Assemble the five elements and blind them.

    Explicit inputs win over the request's; the request may carry anything a harness
    writes, and only the five elements' keys are read from it (after stripping).
    """
    report = StripReport()
    from_request: dict[str, Any] = {}
    if request is not None:
        cleaned, report = _strip_mapping(request, "request", "$")
        for key, value in cleaned.items():
            element = _ELEMENT_KEYS.get(_norm(key))
            if element is None:
                report = report.merged(StripReport(ignored=(str(key),)))
            else:
                from_request.setdefault(element, value)

    spec = (
        specification if specification is not None else _as_text(from_request.get("specification"))
    )
    cause = (
        root_cause if root_cause is not None else _as_text(from_request.get("diagnosed_root_cause"))
    )
    if obligations is None:
        obligations = _as_list(from_request.get("preservation_obligations"))
    evidence = dict(impact_evidence) if impact_evidence is not None else {}
    if not evidence and isinstance(from_request.get("impact_evidence"), Mapping):
        evidence = dict(from_request["impact_evidence"])

    report = report.merged(_patch_provenance(patch))
    packet = ReviewPacket(
        specification=spec,
        diagnosed_root_cause=cause,
        preservation_obligations=tuple(obligations),
        impact_evidence=evidence,
        candidate_patch=CandidatePatch(
            tuple((e.edit_id, e.as_unit()) for e in patch.edits), patch.whole_patch
        ),
    )
    packet, more = blind(packet)
    return packet, report.merged(more)


def blind(packet: ReviewPacket) -> tuple[ReviewPacket, StripReport]:
    """Remove whatever of the four stripped fields leaked into a packet. Idempotent."""
    removals: list[Removal] = []
    spec, found = _strip_text(packet.specification, "specification")
    removals += found
    cause, found = _strip_text(packet.diagnosed_root_cause, "diagnosed_root_cause")
    removals += found
    obligations: list[str] = []
    for i, item in enumerate(packet.preservation_obligations):
        text, found = _strip_text(item, f"preservation_obligations[{i}]")
        removals += found
        if text.strip():
            obligations.append(text)
    evidence, ev_report = _strip_mapping(packet.impact_evidence, "impact_evidence", "$")
    removals += ev_report.removals
    cleaned = replace(
        packet,
        specification=spec,
        diagnosed_root_cause=cause,
        preservation_obligations=tuple(obligations),
        impact_evidence=evidence,
    )
    return cleaned, StripReport(tuple(removals))


#: Evidence keys whose values are source code, kept verbatim by the blinding's text filters
#: (denied keys are still dropped wherever they appear).
_CODE_KEYS = frozenset({"source", "imports", "signature"})


def _is_code(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    )


def _norm(key: object) -> str:
    return re.sub(r"[-\s]+", "_", str(key).strip().lower())


def _strip_mapping(
    value: Mapping[str, Any], source: str, path: str
) -> tuple[dict[str, Any], StripReport]:
    removals: list[Removal] = []

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, Mapping):
            out = {}
            for key, child in node.items():
                denied = _DENY_KEYS.get(_norm(key))
                if denied is not None:
                    removals.append(Removal(denied, source, f"{where}.{key}", str(key)))
                    continue
                if _norm(key) in _CODE_KEYS and _is_code(child):
                    # Source code is not prose: "explanation: str" is a dataclass field, not
                    # a labelled rationale. Its lines reach the critic as the patch's own do.
                    out[key] = child
                    continue
                out[key] = walk(child, f"{where}.{key}")
            return out
        if isinstance(node, list | tuple):
            return [walk(child, f"{where}[{i}]") for i, child in enumerate(node)]
        if isinstance(node, str):
            text, found = _strip_text(node, source, where)
            removals.extend(found)
            return text
        return node

    cleaned = walk(value, path)
    return cleaned, StripReport(tuple(removals))


def _strip_text(text: str, source: str, where_prefix: str = "") -> tuple[str, list[Removal]]:
    """Drop trailers, labelled rationale/votes paragraphs and confidence statements."""
    if not text:
        return text, []
    removals: list[Removal] = []
    kept: list[str] = []
    skipping_paragraph = False
    for number, line in enumerate(text.split("\n"), 1):
        where = f"{where_prefix} line {number}".strip()
        if skipping_paragraph:
            if line.strip():
                continue
            skipping_paragraph = False
        trailer = _TRAILER.match(line)
        if trailer:
            name = trailer.group(1)
            removals.append(
                Removal(_TRAILER_FIELD.get(name.lower(), "provenance"), source, where, name)
            )
            continue
        labelled = _LABELLED.match(line)
        if labelled:
            label = labelled.group(1).lower()
            kind = (
                "peer_votes" if ("vote" in label or "verdict" in label) else "generator_rationale"
            )
            removals.append(Removal(kind, source, where, labelled.group(1)))
            skipping_paragraph = True
            continue
        sentences = _SENTENCE.split(line)
        good = []
        for sentence in sentences:
            hit = next((m for p in _CONFIDENCE_PATTERNS if (m := p.search(sentence))), None)
            if hit:
                removals.append(Removal("self_confidence", source, where, hit.group(0)[:60]))
            else:
                good.append(sentence)
        if len(good) != len(sentences) and not any(s.strip() for s in good):
            continue
        kept.append(" ".join(good) if len(good) != len(sentences) else line)
    return "\n".join(kept).strip("\n") if removals else text, removals


def _patch_provenance(patch: ParsedPatch) -> StripReport:
    """Mail headers, commit message and signature of a format-patch never reach the packet."""
    removals: list[Removal] = []
    headers_done = False
    message_lines = 0
    for number, line in enumerate(patch.preamble.split("\n"), 1):
        if not headers_done:
            if not line.strip():
                headers_done = True
                continue
            if line.startswith("From ") and number == 1:
                removals.append(Removal("provenance", "patch", f"line {number}", "From (mbox)"))
                continue
            header = re.match(r"^([A-Za-z][\w-]*):", line)
            if header:
                name = header.group(1)
                kind = "provenance"
                if name.lower() == "subject":
                    kind = "generator_rationale"
                removals.append(Removal(kind, "patch", f"line {number}", name))
            continue
        if line.strip() == "---":
            break
        if line.strip():
            trailer = _TRAILER.match(line)
            if trailer:
                name = trailer.group(1)
                removals.append(
                    Removal(
                        _TRAILER_FIELD.get(name.lower(), "provenance"),
                        "patch",
                        f"line {number}",
                        name,
                    )
                )
            else:
                message_lines += 1
    if message_lines:
        removals.append(
            Removal("generator_rationale", "patch", "commit message", f"{message_lines} line(s)")
        )
    if patch.trailer.strip():
        removals.append(Removal("provenance", "patch", "signature", "format-patch signature"))
    return StripReport(tuple(removals))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    if isinstance(value, list | tuple):
        return [_as_text(v) for v in value if _as_text(v).strip()]
    return [_as_text(value)]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
