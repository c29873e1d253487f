"""Reading one review's JSON report as the loop needs it: items, repairs, decisive output.

Pure functions over the plugin's report (``--critic22-report``). Only blocking findings
with an executable falsification and preservation groups count; an advisory finding is
never run, so never scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_critic22.apps.loop.model import ItemResult, RoundRecord, Source

__all__ = [
    "blockers",
    "decisive_output",
    "earlier_repairs",
    "find",
    "incomplete",
    "items_of",
    "scar_entries",
    "split_test",
]

_STATUSES = ("verified", "refuted", "inconclusive")


def items_of(
    report: Mapping[str, Any], *, prefix: str = "", source: Source = "critic"
) -> tuple[ItemResult, ...]:
    """The scored items of one report (read through the typed :class:`ReviewReport`).
    ``prefix`` renames findings (``N`` for the second critic: F1 -> N1). A blocking finding
    that did not run counts as inconclusive: what could not be looked at is never "nothing
    found"."""
    from pytest_critic22.report.document import ReviewReport

    typed = ReviewReport.from_json(report)
    out: list[ItemResult] = []
    for finding in typed.findings:
        if finding.severity != "blocking" or not finding.executable:
            continue
        status, reason = _scored(finding.status, finding.reason)
        scar = finding.procedure == "scar"
        out.append(
            ItemResult(
                id=finding.id if scar or not prefix else prefix + finding.id.removeprefix("F"),
                source="scar" if scar else source,
                claim=finding.claim,
                location=finding.location,
                procedure=finding.procedure,
                status=status,
                reason=reason,
                falsification=finding.falsification,
            )
        )
    for group in typed.preservation:
        status, reason = _scored(group.outcome, group.reason)
        out.append(
            ItemResult(
                id=f"preserve[{group.group}]",
                source="validator",
                claim="existing tests keep passing: " + ", ".join(group.tests),
                location="",
                procedure="preservation",
                status=status,
                reason=reason,
            )
        )
    return tuple(out)


def _scored(status: str, reason: str) -> tuple[str, str]:
    """A status the loop scores: anything but verified/refuted/inconclusive is inconclusive."""
    if status in _STATUSES:
        return status, reason
    return "inconclusive", f"{status or 'no outcome'}: {reason}".rstrip(": ")


def split_test(falsification: str) -> tuple[str, str] | None:
    """``(test source, repair diff)`` of a ``test:`` falsification (repair "" when none);
    None for any other kind."""
    from pytest_critic22.kinds.grammar import parse_procedure
    from pytest_critic22.kinds.test import TestData
    from pytest_critic22.model.procedure import NotExecutable

    procedure = parse_procedure(falsification)
    if isinstance(procedure, NotExecutable) or not isinstance(procedure.data, TestData):
        return None
    return procedure.data.source, procedure.data.repair


def scar_entries(rounds: Sequence[tuple[int, Sequence[ItemResult]]]) -> list[dict[str, str]]:
    """The ``--critic22-scar`` file's entries: every ``test:`` finding verified in an earlier
    round, once (the same test source is not run twice)."""
    entries: list[dict[str, str]] = []
    seen: set[str] = set()
    for number, items in rounds:
        for item in items:
            if item.status != "verified" or item.source == "scar":
                continue
            found = split_test(item.falsification)
            if found is None or found[0] in seen:
                continue
            seen.add(found[0])
            entries.append({"id": f"R{number}-{item.id}", "claim": item.claim, "test": found[0]})
    return entries


def find(report: Mapping[str, Any], finding_id: str) -> Mapping[str, Any] | None:
    for record in report.get("findings") or []:
        if record.get("id") == finding_id:
            return record  # type: ignore[no-any-return]
    return None


def decisive_output(record: Mapping[str, Any], limit: int = 2500) -> str:
    """The output that decided a finding, on both trees: the last patched run and the
    counterfactual run, each cut to its last ``limit`` characters."""
    logs = record.get("logs") or {}
    parts = []
    patched = logs.get("patched") or []
    if isinstance(patched, list) and patched:
        last = patched[-1]
        parts.append(f"--- patched tree: {last.get('status', '?')} ---\n" + _tail(last, limit))
    counter = logs.get("counterfactual")
    if isinstance(counter, Mapping):
        name = record.get("counterfactual") or "counterfactual"
        parts.append(f"--- {name} tree: {counter.get('status', '?')} ---\n" + _tail(counter, limit))
    return "\n\n".join(parts) or "(no run output was recorded)"


def _tail(run: Mapping[str, Any], limit: int) -> str:
    text = str(run.get("output") or run.get("reason") or "")
    return text if len(text) <= limit else "…" + text[-limit:]


def earlier_repairs(records: Sequence[RoundRecord]) -> dict[str, str]:
    """Test source -> repair of every verified finding of earlier rounds (the latest wins)."""
    out: dict[str, str] = {}
    for record in records:
        for item in record.items:
            found = split_test(item.falsification) if item.status == "verified" else None
            if found is not None and found[1]:
                out[found[0]] = found[1]
    return out


def incomplete(report: Mapping[str, Any] | None) -> str:
    """Why a review could not do what was asked ("" when it could): an INCOMPLETE verdict,
    and also a REJECT that came with problems — a failed critic, an interrupted run — since
    a round that could not look is BLOCKED whatever else it found."""
    if report is None:
        return ""
    disposition = report.get("disposition") or {}
    critic = report.get("critic") or {}
    problems = [str(p) for p in disposition.get("problems") or []]
    if critic.get("absent"):
        problems.append(f"the critic gave no answer: {critic.get('reason', '')}")
    if disposition.get("interrupted"):
        problems.append("the review was interrupted")
    if disposition.get("verdict") == "incomplete" and not problems:
        problems.append(str(disposition.get("reason") or "incomplete"))
    return "; ".join(dict.fromkeys(problems))


def blockers(items: Sequence[ItemResult]) -> tuple[str, ...]:
    out = []
    for item in items:
        if item.status in ("verified", "inconclusive"):
            where = f" [{item.location}]" if item.location else ""
            out.append(f"{item.id}{where} {item.status}: {item.claim} — {item.reason}")
    return tuple(out)
