"""``--critic22-html=FILE``: the review as one self-contained HTML page.

The page is built by a pure function, :func:`html_document`, from the one typed review
result; it needs no network, no asset and no script (it opens from ``file://``, and a
Content-Security-Policy forbids anything but its inline style). Its content mirrors the
terminal summary (:mod:`pytest_critic22.report.terminal`): the verdict and why at the top; the patch
with its edits ``e1..eN`` as diff blocks, each finding pinned to its edit; per finding its
claim, evidence, route, outcome and the decisive output on the patched and the
counterfactual tree side by side; the preservation groups; the records the parser set
aside; what blinding stripped (never the removed text); the critic and the engage
decision; the sandbox and the timings. Every text it shows is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pytest_critic22.model.patch import WHOLE_PATCH
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.report.formats import isolated, output_path, write_output
from pytest_critic22.report.formats.html_parts import (
    CSP,
    CSS,
    anchor,
    badge,
    blinding_section,
    critic_section,
    css_name,
    definition_list,
    diff_block,
    esc,
    extra_logs,
    pre,
    records_section,
    run_section,
    side_by_side,
)
from pytest_critic22.report.terminal import run_notes

if TYPE_CHECKING:
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RoutedFinding, RunInfo
    from pytest_critic22.verification.procedures import FindingResult

__all__ = ["html_document", "pytest_critic22_review_finished"]

Results = Mapping[str, "FindingResult"]
#: Log keys the side-by-side comparison shows; the rest go under "more of the logs".
_SHOWN = ("patched", "counterfactual", "counterfactual_tree", "procedure", "counterfactual_error")
_OUTCOMES = ("verified", "refuted", "inconclusive", "advisory", "not run")


@dataclass(frozen=True, slots=True)
class _Row:
    """A finding with the outcome the report shows for it (as :func:`report.json_report`)."""

    routed: RoutedFinding
    result: FindingResult | None
    outcome: str
    reason: str
    pin: str  # the edit it is pinned to: its location, or whole-patch if it names no edit

    @property
    def fid(self) -> str:
        return self.routed.finding_id


def _rows(review: Review, results: Results) -> list[_Row]:
    rows = []
    edits = set(review.patch.edit_ids)
    for w in review.wrapped:
        result = results.get(w.finding_id)
        if w.finding.severity != "blocking":
            outcome, reason = "advisory", "advisory findings are never run"
        elif result is None:
            outcome, reason = "not run", "deselected or the session stopped early"
        else:
            outcome, reason = result.outcome.kind, result.outcome.reason
        pin = w.finding.location if w.finding.location in edits else WHOLE_PATCH
        rows.append(_Row(w, result, outcome, reason, pin))
    return rows


def _group_anchor(review: Review, group: str) -> str:
    return anchor("preserve", str(list(review.preservation).index(group) + 1))


def _link(review: Review, result_id: str) -> str:
    """A result id as a link to its finding or preservation group."""
    for group in review.preservation:
        if preservation_id(group) == result_id:
            return f'<a href="#{_group_anchor(review, group)}">{esc(result_id)}</a>'
    return f'<a href="#{anchor("finding", result_id)}">{esc(result_id)}</a>'


# -- the top: verdict, counts, contents ---------------------------------------------------


def _verdict(review: Review, disposition: Disposition, rows: Sequence[_Row]) -> str:
    verdict = disposition.verdict
    head = verdict.upper()
    if verdict == "incomplete" and disposition.interrupted:
        head += " (interrupted)"
    if verdict == "incomplete" and disposition.problems:
        why = "<p>the review could not look:</p><ul>" + "".join(
            f"<li>{esc(problem)}</li>" for problem in disposition.problems
        )
        why += "</ul>"
    else:
        why = f"<p>{esc(disposition.reason)}</p>"
    if disposition.verified:
        links = ", ".join(_link(review, v) for v in disposition.verified)
        why += f"<p>verified: {links}</p>"
    counts = {k: sum(1 for r in rows if r.outcome == k) for k in _OUTCOMES}
    tally = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    groups = len(review.preservation)
    return (
        f'<section class="verdict v-{esc(verdict)}" id="verdict">'
        f"<h1>Verdict: {esc(head)}</h1>{why}"
        f'<p class="muted">{len(rows)} finding(s){": " + esc(tally) if tally else ""}; '
        f"{groups} preservation group(s); patch {esc(review.patch_path.name)}: "
        f"{len(review.patch.edits)} edit(s) in {len(review.patch.files)} file(s)</p></section>"
    )


def _nav() -> str:
    items = [
        ("findings", "Findings"),
        ("patch", "Patch"),
        ("details", "Finding details"),
        ("preservation", "Preservation"),
        ("records", "Set-aside records"),
        ("blinding", "Blinding"),
        ("critic", "Critic"),
        ("run", "Run"),
    ]
    return "<nav>" + "".join(f'<a href="#{k}">{label}</a>' for k, label in items) + "</nav>"


def _overview(rows: Sequence[_Row]) -> str:
    if not rows:
        return '<h2 id="findings">Findings</h2><p>none</p>'
    body = "".join(
        f'<tr><td><a href="#{anchor("finding", r.fid)}">{esc(r.fid)}</a></td>'
        f'<td><a href="#{anchor("edit", r.pin)}">'
        f"{esc(r.routed.finding.location)}</a></td>"
        f"<td>{esc(r.routed.finding.severity)}</td>"
        f"<td>{esc(r.routed.procedure.kind if r.routed.procedure else '-')}</td>"
        f"<td>{badge(r.outcome)}</td><td>{esc(r.routed.finding.claim)}</td></tr>"
        for r in rows
    )
    return (
        f'<h2 id="findings">Findings ({len(rows)})</h2><table><thead><tr><th>id</th>'
        "<th>location</th><th>severity</th><th>procedure</th><th>outcome</th><th>claim</th>"
        f"</tr></thead><tbody>{body}</tbody></table>"
    )


# -- the patch, findings pinned to their edits ---------------------------------------------


def _pins(rows: Sequence[_Row]) -> str:
    if not rows:
        return ""
    items = "".join(
        f'<li><a href="#{anchor("finding", r.fid)}">{esc(r.fid)}</a> {badge(r.outcome)} '
        f"{esc(r.routed.finding.claim)}</li>"
        for r in rows
    )
    return f'<ul class="pins">{items}</ul>'


def _patch(review: Review, rows: Sequence[_Row]) -> str:
    by_location: dict[str, list[_Row]] = {}
    for r in rows:
        by_location.setdefault(r.pin, []).append(r)
    out = [f'<h2 id="patch">Patch {esc(review.patch_path.name)}</h2>']
    whole = by_location.get(WHOLE_PATCH, [])
    out.append(
        f'<div class="edit" id="{anchor("edit", WHOLE_PATCH)}"><h3>whole patch</h3>'
        + (_pins(whole) or '<p class="muted">no finding about the patch as a whole</p>')
        + "</div>"
    )
    edits = {e.edit_id: e for e in review.patch.edits}
    for file in review.patch.files:
        label = file.path
        if file.status == "renamed":
            label = f"{file.old_path} → {file.new_path}"
        out.append(f'<div class="file"><h3 class="mono">{esc(label)} <small>{esc(file.status)}')
        out.append(f"{', ' + esc(', '.join(file.edit_ids)) if file.edit_ids else ''}</small></h3>")
        if not file.edit_ids:
            out.append('<p class="muted">no hunks (a rename, a mode change or an empty file)</p>')
        for edit_id in file.edit_ids:
            edit = edits[edit_id]
            out.append(
                f'<div class="edit" id="{anchor("edit", edit_id)}">'
                f'<h4><a href="#{anchor("edit", edit_id)}">{esc(edit_id)}</a> '
                f"<small>{esc(edit.path)}: +{len(edit.added_lines)} "
                f"−{len(edit.removed_lines)} lines</small></h4>"
                f"{_pins(by_location.get(edit_id, []))}{diff_block(edit.hunk)}</div>"
            )
        out.append("</div>")
    return "".join(out)


# -- per finding ---------------------------------------------------------------------------


def _finding(row: _Row) -> str:
    w, f, result = row.routed, row.routed.finding, row.result
    kind = w.procedure.kind if w.procedure is not None else "-"
    where = anchor("edit", row.pin)
    facts: list[tuple[str, str]] = [
        ("location", f'<a href="#{where}">{esc(f.location)}</a> (the patch, above)'),
        ("evidence", esc(f.evidence)),
        ("severity", esc(f.severity)),
        ("procedure", esc(kind)),
        ("outcome", f"{badge(row.outcome)} {esc(row.reason)}"),
    ]
    if w.route_reason:
        facts.append(("route", esc(w.route_reason)))
    if result is not None and result.counterfactual:
        facts.append(("counterfactual tree", f"<code>{esc(result.counterfactual)}</code>"))
    if result is not None:
        facts += [("note", esc(note)) for note in run_notes(result.logs)]
    body = [
        f'<article class="finding {css_name(row.outcome)}" '
        f'id="{anchor("finding", row.fid)}">'
        f"<h3>{esc(row.fid)} {badge(row.outcome)} <small>at "
        f'<a href="#{where}">{esc(f.location)}</a> · {esc(f.severity)} · {esc(kind)}</small></h3>'
        f'<p class="claim">{esc(f.claim)}</p>{definition_list(facts)}'
    ]
    if f.falsification.strip():
        body.append(
            f"<details><summary>falsification as proposed</summary>{pre(f.falsification)}</details>"
        )
    if result is not None:
        body.append(f"<h4>Decisive output</h4>{side_by_side(result.logs, result.counterfactual)}")
        body.append(extra_logs(result.logs, _SHOWN))
    body.append("</article>")
    return "".join(body)


def _details(rows: Sequence[_Row]) -> str:
    inner = "".join(_finding(r) for r in rows) or "<p>none</p>"
    return f'<h2 id="details">Finding details</h2>{inner}'


# -- preservation ------------------------------------------------------------------------------


def _tests(tests: Sequence[str]) -> str:
    listed = "<ul>" + "".join(f"<li><code>{esc(t)}</code></li>" for t in tests) + "</ul>"
    if len(tests) > 12:  # a large group stays one line until it is opened
        return f"<details><summary>the {len(tests)} tests</summary>{listed}</details>"
    return f"<h4>Tests ({len(tests)})</h4>{listed}"


def _preservation(review: Review, results: Results) -> str:
    out = ['<h2 id="preservation">Preservation</h2>']
    if not review.preservation:
        out.append("<p>no preservation group: no existing test reaches the touched symbols</p>")
    for group, tests in review.preservation.items():
        result = results.get(preservation_id(group))
        outcome = result.outcome.kind if result else "not run"
        reason = result.outcome.reason if result else "deselected or the session stopped early"
        out.append(
            f'<article class="group" id="{_group_anchor(review, group)}">'
            f"<h3>{esc(preservation_id(group))} {badge(outcome)}</h3><p>{esc(reason)}</p>"
            + _tests(tests)
        )
        if result is not None:
            pre_existing = result.logs.get("pre_existing") or []
            if isinstance(pre_existing, list) and pre_existing:
                out.append(
                    "<p>failing on the base already (not blamed on the patch): "
                    + ", ".join(f"<code>{esc(t)}</code>" for t in pre_existing)
                    + "</p>"
                )
            out += [f'<p class="muted">note: {esc(n)}</p>' for n in run_notes(result.logs)]
            out.append(side_by_side(result.logs, result.counterfactual or "base"))
            out.append(extra_logs(result.logs, (*_SHOWN, "tests", "pre_existing")))
        out.append("</article>")
    return "".join(out)


def html_document(review: Review, results: Results, disposition: Disposition, run: RunInfo) -> str:
    """The whole page: one string, every shown text escaped, nothing to load or run."""
    rows = _rows(review, results)
    title = f"critic22 {disposition.verdict.upper()}: {review.patch_path.name}"
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="color-scheme" content="light dark">',
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n",
            f'<p class="muted">critic22 review of <code>{esc(review.patch_path.name)}</code></p>',
            _verdict(review, disposition, rows),
            _nav(),
            _overview(rows),
            _patch(review, rows),
            _details(rows),
            _preservation(review, results),
            records_section(review),
            blinding_section(review),
            critic_section(review),
            run_section(review, results, run),
            "<footer>written by pytest-critic22 (--critic22-html); no script, "
            "nothing loaded from elsewhere</footer>\n</body></html>\n",
        ]
    )


@pytest.hookimpl(trylast=True)
def pytest_critic22_review_finished(
    review: Review,
    results: dict[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    config: pytest.Config,
) -> None:
    path = output_path(config, "critic22_html")
    if path is None:
        return
    with isolated(config, "HTML report"):
        write_output(path, html_document(review, results, disposition, run))
