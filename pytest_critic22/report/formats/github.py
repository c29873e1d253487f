"""GitHub Actions: annotations and a job summary, only when ``GITHUB_ACTIONS=true``.

Annotations are workflow commands on stdout, one per reportable outcome (as in the SARIF
report: :func:`pytest_critic22.report.formats.sarif.all_outcomes`), at most ten per level, each at
the start of a line of its own whatever pytest wrote before (``-q``'s progress dots end no
line: :func:`pytest_critic22.report.formats.say`)::

    ::error file=PATH,line=L,endLine=E,title=critic22 F1 verified::CLAIM (F1 verified: REASON)

``error`` for verified blocking findings and verified preservation regressions, ``warning``
for inconclusive ones, ``notice`` for advisory findings. When ``GITHUB_STEP_SUMMARY`` names a
file, a Markdown job summary is appended to it: the verdict and why, the findings, the
preservation groups and where the report files are. The claims, reasons and paths are the
critic's and the patch's text, untrusted: escaped as data everywhere. An annotation's message
and properties are escaped by GitHub's rules and then made inert (no terminal escape, no lone
surrogate, no ``##[``): the only workflow command on a line is ours, at its start. The job
summary is written with lone surrogates as backslash escapes, never an encoding error.

Everything but the hook at the end is pure.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_critic22.model.inert import inert
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.report.formats.locations import Sources, locate
from pytest_critic22.report.formats.sarif import Outcome, all_outcomes
from pytest_critic22.report.terminal import held

if TYPE_CHECKING:
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RunInfo
    from pytest_critic22.verification.procedures import FindingResult

#: GitHub shows at most ten annotations of each level per step.
MAX_PER_LEVEL = 10
_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}  # SARIF level -> command
#: The report files, as (option dest, option, what it is).
ARTIFACTS: tuple[tuple[str, str, str], ...] = (
    ("critic22_report", "--critic22-report", "JSON report"),
    ("critic22_sarif", "--critic22-sarif", "SARIF report"),
    ("critic22_html", "--critic22-html", "HTML report"),
)


# -- workflow commands -----------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (GitHub's rules), then every
    other control character, lone surrogate and ``##[`` made inert (:func:`inert`)."""
    return inert(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A workflow command's property value: the message's escapes plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(outcome: Outcome) -> str:
    """The workflow command for one outcome."""
    where = outcome.location
    properties = ",".join(
        [
            f"file={escape_property(where.path)}",
            f"line={where.start_line}",
            f"endLine={where.end_line}",
            f"title={escape_property(f'critic22 {outcome.result_id} {outcome.kind}')}",
        ]
    )
    return f"::{_COMMANDS[outcome.level]} {properties}::{escape_data(outcome.message)}"


def annotation_lines(
    review: Review,
    results: Mapping[str, FindingResult],
    *,
    limit: int = MAX_PER_LEVEL,
    sources: Sources | None = None,
) -> list[str]:
    """Errors, then warnings, then notices, at most ``limit`` of each; one more plain line
    says how many were left out. ``sources`` reads the base's files (a preservation group's
    annotation is at its failing test, as in the SARIF report)."""
    outcomes = all_outcomes(review, results, sources)
    lines: list[str] = []
    left_out: list[str] = []
    for level, command in _COMMANDS.items():
        these = [o for o in outcomes if o.level == level]
        lines += [annotation(o) for o in these[:limit]]
        if len(these) > limit:
            left_out.append(f"{len(these) - limit} {command}")
    if left_out:
        lines.append(
            f"critic22: {', '.join(left_out)} annotation(s) left out (GitHub shows at most "
            f"{limit} per level): every finding is in the job summary and the reports"
        )
    return lines


#: The issue's name for :func:`annotation_lines` (``from __future__ import annotations`` binds
#: the same module name at compile time; rebinding it here changes nothing for the compiler).
annotations = annotation_lines  # type: ignore[assignment]


# -- the job summary -------------------------------------------------------------------------

_MARKDOWN = re.compile(r"([\\`*_{}\[\]|~#])")
_BLOCK_START = re.compile(r"^(\s*\d*)([-+=.)])")  # a list item or heading underline


def md(text: str) -> str:
    """Untrusted text as inert Markdown, safe in a table cell: HTML escaped, Markdown's
    punctuation backslash-escaped, line breaks as ``<br>``, any other control character and
    lone surrogate as a backslash escape (:func:`inert`)."""
    text = _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))
    text = _BLOCK_START.sub(r"\1\\\2", text)
    return inert(re.sub(r"\r\n|\r|\n", "<br>", text))


def _where(review: Review, location: str) -> str:
    if location not in review.patch.edit_ids:
        return md(location)
    found = locate(review.patch, location)
    lines = f"{found.start_line}" + (
        f"-{found.end_line}" if found.end_line != found.start_line else ""
    )
    return f"{md(found.path)}:{lines} ({md(location)})"


def _finding_rows(review: Review, results: Mapping[str, FindingResult]) -> list[str]:
    rows = ["| id | location | kind | outcome | claim |", "| --- | --- | --- | --- | --- |"]
    for w in review.wrapped:
        result = results.get(w.finding_id)
        if w.finding.severity != "blocking":
            outcome, reason = "advisory", w.route_reason or "never run"
        elif result is None:
            outcome, reason = "not run", "deselected or the session stopped early"
        else:
            outcome, reason = result.outcome.kind, result.outcome.reason
        kind = w.procedure.kind if w.procedure is not None else "—"
        rows.append(
            f"| {md(w.finding_id)} | {_where(review, w.finding.location)} | {md(kind)} | "
            f"**{md(outcome)}**<br>{md(reason)} | {md(w.finding.claim)} |"
        )
    return rows


def _preservation_rows(review: Review, results: Mapping[str, FindingResult]) -> list[str]:
    rows = ["| group | tests | outcome |", "| --- | --- | --- |"]
    for group, tests in review.preservation.items():
        result = results.get(preservation_id(group))
        outcome = held(result) if result else "not run"  # held, regression, pre-existing, …
        reason = f"<br>{md(result.outcome.reason)}" if result else ""
        rows.append(f"| {md(group)} | {len(tests)} | **{md(outcome)}**{reason} |")
    return rows


def job_summary(
    review: Review,
    results: Mapping[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    *,
    artifacts: Sequence[tuple[str, str]] = (),
) -> str:
    """The job summary in Markdown. ``artifacts`` are (what, path) of the report files."""
    patch = review.patch
    out = [f"## critic22: {disposition.verdict.upper()}", ""]
    if disposition.verdict == "incomplete":
        out += ["The review could not look:", ""]
        out += [f"- {md(problem)}" for problem in disposition.problems or (disposition.reason,)]
    else:
        out.append(md(disposition.reason))
    out += [
        "",
        f"Patch {md(review.patch_path.name)}: {len(patch.edits)} edit(s) in "
        f"{len(patch.files)} file(s); base {md(review.base_commit[:12] or '?')}; "
        f"run {md(run.run_id)} ({run.seconds:.1f} s).",
        "",
        f"### Findings ({len(review.wrapped)})",
        "",
    ]
    out += _finding_rows(review, results) if review.wrapped else ["No findings."]
    out += ["", f"### Preservation ({len(review.preservation)} group(s))", ""]
    if review.preservation:
        out += _preservation_rows(review, results)
    else:
        out.append("No existing test reaches the touched code, or preservation is off.")
    out += ["", "### Artifacts", ""]
    out += [f"- {md(what)}: {md(path)}" for what, path in artifacts]
    out.append(f"- ledger: {md(run.ledger)}")
    return "\n".join(out) + "\n"


# -- the hook --------------------------------------------------------------------------------


def in_github_actions(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


@pytest.hookimpl
def pytest_critic22_review_finished(
    review: Review,
    results: dict[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    config: pytest.Config,
) -> None:
    from pytest_critic22.model.scrub import scrub
    from pytest_critic22.report.formats import base_sources, isolated, output_path, say

    if not in_github_actions(os.environ):
        return
    notes: list[str] = []
    summary = os.environ.get("GITHUB_STEP_SUMMARY", "")
    if summary:
        with isolated(config, "GitHub job summary"):
            artifacts = [
                (f"{what} ({option})", str(path))
                for dest, option, what in ARTIFACTS
                if (path := output_path(config, dest)) is not None
            ]
            text = job_summary(review, results, disposition, run, artifacts=artifacts)
            try:
                with open(summary, "a", encoding="utf-8", errors="backslashreplace") as fh:
                    fh.write(scrub(text, os.environ) + "\n")
            except OSError as exc:
                notes.append(f"critic22: cannot append the job summary to {summary}: {exc}")
    with isolated(config, "GitHub annotations"):
        lines = annotation_lines(review, results, sources=base_sources(run.repo, review))
        # Each line is ours from its first character: an annotation (its message and
        # properties escaped) or a line starting "critic22:"; say() makes it inert as well.
        for line in [*lines, *notes]:
            say(config, scrub(line, os.environ), command=line.startswith("::"))
