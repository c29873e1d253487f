"""Reporting: pure functions from values to terminal text and to JSON-able documents.

Terminal text carries untrusted text (the critic's claims, reasons and notes from the
children, the patch's file names): every line goes through :func:`pytest_critic22.model.inert.
safe_line`, so none can hold a second line, a terminal escape or a workflow command, and
none starts with untrusted text (each such text follows a label or an indent of ours).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_critic22.critic.finding import Downgraded, ParseResult
from pytest_critic22.model.inert import inert, safe_line
from pytest_critic22.model.procedure import COLLECTION
from pytest_critic22.pipeline.review import preservation_id

if TYPE_CHECKING:
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RoutedFinding
    from pytest_critic22.verification.procedures import FindingResult

Results = Mapping[str, "FindingResult"]

__all__ = [
    "REPORT_SCHEMA",
    "explain_failure",
    "json_report",
    "parse_result_dict",
    "summary_lines",
]

REPORT_SCHEMA = 1
_CLAIM_WIDTH = 60
_COLUMNS = 2 + 4 + 12 + 9 + 15 + 13  # the row's columns before the claim


def summary_lines(
    review: Review,
    results: Results,
    disposition: Disposition | None,
    *,
    ledger: str,
    notes: Sequence[str] = (),
    preservation_mode: str = "auto",
    width: int = 80,
) -> list[str]:
    """The terminal summary; ``width`` is the terminal's (a finding's claim takes the rest)."""
    patch, stripped = review.patch, review.stripped
    n_edits = len(patch.edits)
    lines = [
        f"patch {review.patch_path.name}: {n_edits} edit{'s' if n_edits != 1 else ''} "
        f"in {len(patch.files)} file{'s' if len(patch.files) != 1 else ''}"
    ]
    for file in patch.files:
        edits = ", ".join(file.edit_ids) if file.edit_ids else "no hunks"
        label = file.path if file.status != "renamed" else f"{file.old_path} -> {file.new_path}"
        lines.append(f"  {label} ({file.status}): {edits}")
    lines.append(f"packet {review.packet.digest[:19]}")
    if stripped.removals:
        counts = Counter(r.field for r in stripped.removals)
        lines.append(
            "stripped before review: "
            + ", ".join(f"{field} x{count}" for field, count in sorted(counts.items()))
        )
        for removal in stripped.removals:
            detail = f" ({removal.detail})" if removal.detail else ""
            lines.append(f"  {removal.field}: {removal.source} {removal.where}{detail}")
    else:
        lines.append("stripped before review: nothing")
    if stripped.ignored:
        lines.append("request keys ignored (not packet elements): " + ", ".join(stripped.ignored))
    lines.extend(notes)

    if preservation_mode == "off":
        lines.append("preservation: off (--critic22-preservation=off)")
    else:
        found_by = review.packet.impact_evidence.get("preservation_found_by") or {}
        lines.extend(_preservation_rows(review.preservation, results, found_by))
    lines.append(critic_line(review.critic))
    lines.extend(_finding_rows(review.wrapped, results, width))
    lines.extend(_record_rows(review.findings))
    if disposition is not None:
        if disposition.verdict == "incomplete":
            head = "INCOMPLETE (interrupted)" if disposition.interrupted else "INCOMPLETE"
            lines.append(f"verdict: {head} — the review could not look:")
            lines.extend(f"  - {problem}" for problem in disposition.problems)
        else:
            lines.append(f"verdict: {disposition.verdict.upper()} — {disposition.reason}")
    lines.append(f"ledger {ledger}")
    return [safe_line(line) for line in lines]


def _preservation_rows(
    groups: Mapping[str, Sequence[str]], results: Results, found_by: Mapping[str, str]
) -> list[str]:
    tests = {g: t for g, t in groups.items() if g != COLLECTION}
    rows = []
    if COLLECTION in groups:
        result = results.get(preservation_id(COLLECTION))
        said = f"{held(result)} — {result.outcome.reason}" if result else "not run"
        rows.append(f"collection: {said}")
    if not tests:
        return [*rows, "preservation: no existing test reaches the touched symbols"]
    measured = sum(found_by.get(t) == "measured" for names in tests.values() for t in names)
    seen = f", {measured} of them seen only by coverage.py" if measured else ""
    rows.append(
        f"preservation: {sum(len(t) for t in tests.values())} test(s) in {len(tests)} group(s)"
        + seen
    )
    for group, names in tests.items():
        result = results.get(preservation_id(group))
        outcome = held(result) if result else "not run"
        reason = f" — {result.outcome.reason}" if result and outcome != "held" else ""
        rows.append(f"  {group} ({len(names)}): {outcome}{reason}")
        if result:
            rows.extend(f"      note: {note}" for note in run_notes(result.logs))
    return rows


def held(result: FindingResult) -> str:
    """A preservation group's outcome in its own words: ``held`` (the tests pass on patched),
    ``regression`` (verified), ``pre-existing`` (they fail on the base too), ``inconclusive``."""
    kind = result.outcome.kind
    if kind == "verified":
        return "regression"
    if kind == "refuted":
        return "held"
    if result.logs.get("pre_existing") and "pre-existing" in result.outcome.reason:
        return "pre-existing"
    return kind


def explain_preservation(group: str, result: FindingResult) -> str:
    """What a FAILED preservation item shows: which existing tests the patch breaks."""
    logs = result.logs
    lines = [
        f"critic22 preservation {group}: verified regression",
        f"decided by: {result.outcome.reason}",
    ]
    patched = logs.get("patched") or []
    if patched:
        lines += ["", "--- on the patched tree ---", *_short(patched[0].get("output", ""))]
    base = logs.get("counterfactual")
    if base:
        lines += ["", "--- the same tests on the base tree ---", *_short(base.get("output", ""), 8)]
    return "\n".join(safe_line(line) for line in lines)


def critic_line(critic: Mapping[str, Any]) -> str:
    """One line on where the findings came from, or why there are none."""
    if not critic.get("engaged"):
        return f"critic: not engaged — {critic.get('reason', '')}"
    if critic.get("source") == "replay":
        return f"critic: replayed from {critic.get('file', '')}"
    if critic.get("absent"):
        return (
            f"critic: WARNING {critic.get('model', '')} gave no usable answer — "
            f"{critic.get('reason', '')}; the deterministic gates ran alone"
        )
    tokens = critic.get("tokens", {}).get("total_tokens")
    detail = "cached answer" if critic.get("cached") else f"{critic.get('calls', 0)} call(s)"
    if tokens:
        detail += f", {tokens} tokens"
    return f"critic: {critic.get('model', '')} ({detail}, prompt {critic.get('prompt_version')})"


def _finding_rows(wrapped: Sequence[RoutedFinding], results: Results, columns: int) -> list[str]:
    if not wrapped:
        return ["findings: none"]
    # The claim takes what the terminal has beyond the columns before it (at least 60).
    width = max(_CLAIM_WIDTH, columns - _COLUMNS)
    rows = [f"findings: {len(wrapped)}"]
    for w in wrapped:
        f = w.finding
        kind = w.procedure.kind if w.procedure is not None else "-"
        result = results.get(w.finding_id)
        if f.severity != "blocking":
            outcome = "advisory"
        elif result is None:
            outcome = "not run"
        else:
            outcome = result.outcome.kind
        claim = f.claim if len(f.claim) <= width else f.claim[: width - 1] + "…"
        location, severity = inert(f.location), inert(f.severity)
        rows.append(
            f"  {w.finding_id:<4}{location:<12}{severity:<9}{kind:<15}{outcome:<13}{inert(claim)}"
        )
        # Why it was not verified, where a newcomer looks: not only with -rs or in the JSON.
        if result is not None and outcome in ("inconclusive", "refuted"):
            rows.append(f"      {outcome}: {result.outcome.reason}")
        if result is not None:
            rows.extend(f"      note: {note}" for note in run_notes(result.logs))
    return rows


def run_notes(logs: Mapping[str, Any]) -> list[str]:
    """The distinct notes of a result's child runs (an exit status the outcomes overruled)."""
    notes: list[str] = []
    for value in logs.values():
        runs = value if isinstance(value, list) else [value]
        for run in runs:
            if isinstance(run, Mapping) and run.get("note") and run["note"] not in notes:
                notes.append(str(run["note"]))
    return notes


def _record_rows(parsed: ParseResult) -> list[str]:
    rows = []
    if parsed.error:
        rows.append(f"critic output unusable: {parsed.error}")
    for r in parsed.rejected:
        rows.append(f"  rejected record {r.index} of the critic's answer (not listed): {r.reason}")
    for d in parsed.downgraded:
        rows.append(f"  downgraded {downgraded_name(parsed, d)} to advisory: {d.reason}")
    rows.extend(f"  {line}" for line in parsed.dropped_summary())
    return rows


def downgraded_name(parsed: ParseResult, record: Downgraded) -> str:
    """A downgraded record as the findings list shows it (F8), not by its place in the
    critic's answer (record 10): it stays in the list, as an advisory finding."""
    if record.finding in parsed.findings:
        return f"F{parsed.findings.index(record.finding) + 1}"
    return f"record {record.index}"


def parse_result_dict(parsed: ParseResult) -> dict[str, Any]:
    return parsed.to_dict()


def json_report(
    *,
    run_id: str,
    review: Review,
    results: Results,
    disposition: Disposition,
    ledger: str,
    notes: Sequence[str] = (),
    sandbox: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The validator's document. Each finding stays six fields, wrapped with what we did."""
    findings = []
    counts: Counter[str] = Counter()
    for w in review.wrapped:
        result = results.get(w.finding_id)
        if w.finding.severity != "blocking":
            outcome = {"status": "advisory", "reason": "advisory findings are never run"}
        elif result is None:
            outcome = {"status": "not run", "reason": "deselected or the session stopped early"}
        else:
            outcome = {"status": result.outcome.kind, "reason": result.outcome.reason}
        counts[outcome["status"]] += 1
        findings.append(
            {
                "id": w.finding_id,
                "finding": w.finding.to_dict(),
                "route": {
                    "kind": w.procedure.kind if w.procedure is not None else None,
                    "executable": w.procedure is not None,
                    "reason": w.route_reason,
                },
                "outcome": outcome,
                "counterfactual": result.counterfactual if result else None,
                "logs": result.logs if result else {},
            }
        )
    parsed = parse_result_dict(review.findings)
    return {
        "schema": REPORT_SCHEMA,
        "run_id": run_id,
        "patch": str(review.patch_path),
        "base": review.base_commit,
        "packet_digest": review.packet.digest,
        "stripped": review.stripped.to_dict(),
        "critic": dict(review.critic),
        "findings": findings,
        "rejected": parsed["rejected"],
        "downgraded": parsed["downgraded"],
        "dropped": parsed["dropped"],
        "counts": {
            "findings": len(findings),
            "blocking": sum(1 for w in review.wrapped if w.finding.severity == "blocking"),
            **{
                k: counts[k] for k in ("verified", "refuted", "inconclusive", "advisory", "not run")
            },
            "rejected": len(parsed["rejected"]),
            "downgraded": len(parsed["downgraded"]),
            "dropped": len(parsed["dropped"]),
        },
        "disposition": {
            "verdict": disposition.verdict,
            "verified": list(disposition.verified),
            "reason": disposition.reason,
            "problems": list(disposition.problems),
            "interrupted": disposition.interrupted,
        },
        "preservation": [
            _preservation_entry(group, tests, results)
            for group, tests in review.preservation.items()
        ],
        "harness_changed": list(review.harness_changed),
        "impact_evidence": dict(review.packet.impact_evidence),
        "engage": dict(review.engage),
        "sandbox": dict(sandbox or {}),
        "notes": list(notes),
        "ledger": ledger,
    }


def _preservation_entry(group: str, tests: Sequence[str], results: Results) -> dict[str, Any]:
    result = results.get(preservation_id(group))
    return {
        "group": group,
        "tests": list(tests),
        "outcome": result.outcome.kind if result else "not run",
        "reason": result.outcome.reason if result else "",
        "logs": result.logs if result else {},
    }


def explain_failure(wrapped: RoutedFinding, result: FindingResult) -> str:
    """What a verified finding's FAILED item shows instead of a traceback."""
    f = wrapped.finding
    logs = result.logs
    lines = [
        f"critic22 {wrapped.finding_id} [{f.location}]: verified defect",
        f"claim:      {f.claim}",
        f"evidence:   {f.evidence}",
        f"procedure:  {logs.get('procedure', '?')} "
        f"(counterfactual tree: {result.counterfactual or '?'})",
        f"decided by: {result.outcome.reason}",
    ]
    patched = logs.get("patched") or []
    if patched:
        lines += [
            "",
            "--- on the patched tree (last run) ---",
            *_short(patched[-1].get("output", "")),
        ]
    counter = logs.get("counterfactual")
    if counter:
        lines += [
            "",
            f"--- on the {result.counterfactual} tree ---",
            *_short(counter.get("output", ""), 12),
        ]
    return "\n".join(safe_line(line) for line in lines)


def _short(text: object, keep: int = 30) -> list[str]:
    """The last ``keep`` non-blank lines of a child's output, each indented: a line of the
    child's never starts a line of ours."""
    lines = [ln for ln in str(text).strip().splitlines() if ln.strip()]
    if len(lines) > keep:
        lines = ["...", *lines[-keep:]]
    return [f"  {line}" for line in lines]
