"""``AUTO_REVIEW.md`` and ``REVIEWER_MEMORY.md``: the loop's two logs, appended, never rewritten.

A round is a fact: a later round never edits an earlier one, so every write opens its file in
append mode. Every value of a record is untrusted (the critic wrote the claims and raw answers,
children's output flows into the reasons): inline values are escaped so none can start a line,
add a table cell or become HTML (:func:`_inline`); verbatim texts go only into fences longer
than any backtick run inside them (:func:`_fenced`). :func:`critic_memory`, what the next
critic reads, holds only what execution established about its own findings, never its own
words about itself (``memory_update``), its raw answers or the loop's notes.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from pathlib import Path

from pytest_critic22.apps.loop.model import DebateTurn, Fix, ItemResult, RoundRecord

__all__ = [
    "AUTO_REVIEW",
    "MEMORY",
    "MEMORY_HEADING",
    "append_final",
    "append_memory",
    "append_round",
    "critic_memory",
    "duration",
    "memory_markdown",
    "round_markdown",
    "start_log",
]

AUTO_REVIEW = "AUTO_REVIEW.md"
MEMORY = "REVIEWER_MEMORY.md"
MEMORY_HEADING = "## Your Reviewer Memory (persistent across rounds)"
REDONE = "(redone after an interruption)"
#: How much of execution's reason the next critic reads, per item.
REASON_CHARS = 300
#: The statuses a blocker can end a run with: the log then names what still blocks.
BLOCKED_STATUSES = ("max-rounds", "no-fix", "blocked", "stopped")
_SUSPECT = ("verified", "inconclusive")
_CRITIC_SOURCES = ("critic", "second-critic", "debate")
_ROUND_RUN = "Run: "  # the first line of a round section in AUTO_REVIEW.md
_MEMORY_RUN = "- **Run**: "  # the first bullet of a round section in REVIEWER_MEMORY.md

#: Everything ``str.splitlines`` breaks on: none of it may survive inside an inline value.
_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_MARKUP = re.compile(r"([\\`*\[\]|#~])")
_LIST_START = re.compile(r"^([-+])|^(\d+)([.)])")
_ROUND = re.compile(r"^## Round (\d+)\b")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _inline(value: object) -> str:
    """A value as one line of markdown text that renders as itself and nothing more.

    HTML-escaped (so ``</details>`` or ``<script>`` stay text on GitHub too), markdown
    punctuation backslash-escaped (``|`` cannot add a cell, a backtick cannot open code),
    line breaks turned into ``<br>`` (so ``\\n## Injected`` cannot start a heading line), and
    a leading ``-``/``+``/``1.`` escaped so a value that opens a list item stays text.
    """
    text = html.escape(str(value).strip(), quote=False)
    text = _MARKUP.sub(r"\\\1", text)
    text = _LIST_START.sub(lambda m: f"\\{m[1]}" if m[1] else f"{m[2]}\\{m[3]}", text)
    return _BREAKS.sub("<br>", text)


def _cell(value: object) -> str:
    return _inline(value) or "—"


def _fenced(text: str) -> list[str]:
    """Verbatim text in a backtick fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return [fence, body + fence] if body else [fence, fence]


def _flat(text: str) -> str:
    """A short token (an id, a location) on one line."""
    return _BREAKS.sub(" ", text)


def _one_line(text: str, limit: int = 0) -> str:
    """A value for the critic's memory: exact (or cut at ``limit``), on one line (JSON string
    quoting; JSON leaves U+0085, U+2028 and U+2029 raw and ``splitlines`` breaks on them)."""
    text = text[: limit - 1] + "…" if 0 < limit < len(text) else text
    quoted = json.dumps(text, ensure_ascii=False)
    return re.sub("[\x85\u2028\u2029]", lambda m: f"\\u{ord(m[0]):04x}", quoted)


def _applied(record: RoundRecord) -> set[str]:
    return {fix.finding_id for fix in record.fixes if fix.status == "applied"}


def _assessment(record: RoundRecord) -> list[str]:
    counts = record.counts()
    return [
        "### Assessment",
        "",
        f"- **Score**: {record.score}/10",
        f"- **Verdict**: {_inline(record.verdict)}",
        f"- **Positive**: {'yes' if record.positive else 'no'} (score >= 6 and ready/almost)",
        f"- **Counts**: {counts['verified']} verified / {counts['inconclusive']} inconclusive"
        f" / {counts['refuted']} refuted",
        f"- **Review independence**: {_inline(record.review_independence)}",
        f"- **Acceptance status**: {_inline(record.acceptance_status)}",
        f"- **Trace**: {_inline(record.trace_id) or 'none'}",
        f"- **Critic**: {_inline(record.critic_source) or 'none'}",
        "",
    ]


def _findings(items: Sequence[ItemResult]) -> list[str]:
    out = ["### Findings", ""]
    if not items:
        return [*out, "No blocking finding or preservation group ran this round.", ""]
    out += [
        "| id | source | procedure | location | status | claim | execution's reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for i in items:
        cells = (i.id, i.source, i.procedure or "", i.location, i.status, i.claim, i.reason)
        out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [*out, ""]


def _details(summary: str, text: str) -> list[str]:
    # <summary> is HTML on GitHub (no markdown inside): HTML-escaped only.
    head = f"<details><summary>{html.escape(_flat(summary), quote=False)}</summary>"
    return [head, "", *_fenced(text), "", "</details>", ""]


def _raw(record: RoundRecord) -> list[str]:
    out = ["### Raw critic response", ""]
    source, raw, second = record.critic_source or "unknown", record.critic_raw, record.second_raw
    if raw:
        out += _details(f"The critic's answer, verbatim (source {source}, {len(raw)} chars)", raw)
    else:
        out += [f"No raw answer (critic source: {_inline(source)}).", ""]
    if second:
        out += _details(f"The second critic's answer, verbatim ({len(second)} chars)", second)
    elif record.difficulty == "nightmare":
        out += ["No answer from the second critic.", ""]
    return out


def _debate(turns: Sequence[DebateTurn]) -> list[str]:
    out = ["### Debate Transcript", ""]
    for number, turn in enumerate(turns, 1):
        out += [
            f"**Turn {number}: {_inline(turn.finding_id)}**",
            "",
            f"- **Status before**: {_cell(turn.before)}",
            f"- **Ruling**: {_cell(turn.ruling)}",
            f"- **Status after**: {_cell(turn.after)}",
            f"- **Execution's reason**: {_inline(turn.reason) or 'no revision ran'}",
            "- **The critic's argument (verbatim)**:",
            "",
            *_fenced(turn.argument),
            "",
        ]
    return out


def _actions(fixes: Sequence[Fix]) -> list[str]:
    out = ["### Actions", ""]
    if not fixes:
        return [*out, "No fix was considered this round.", ""]
    for status in ("applied", "skipped", "refused"):
        for fix in (f for f in fixes if f.status == status):
            lines = len(fix.diff.splitlines())
            why = f": {_inline(fix.reason)}" if fix.reason.strip() else ""
            out.append(
                f"- **{status}**: fix for {_inline(fix.finding_id)}"
                f" ({fix.origin}, {lines}-line diff){why}"
            )
    return [*out, ""]


def _results(record: RoundRecord) -> list[str]:
    counts = record.counts()
    fixes = [f.status for f in record.fixes]
    outcomes = " · ".join(f"{_inline(i.id)} {_inline(i.status)}" for i in record.items)
    return [
        "### Results",
        "",
        f"- {len(record.items)} items: {counts['verified']} verified, "
        f"{counts['inconclusive']} inconclusive, {counts['refuted']} refuted; fixes: "
        f"{fixes.count('applied')} applied, {fixes.count('skipped')} skipped, "
        f"{fixes.count('refused')} refused",
        f"- Outcomes: {outcomes or 'none'}",
        "",
    ]


def _status(record: RoundRecord) -> list[str]:
    out = ["### Status", "", f"- **Status**: {_inline(record.status)}"]
    out += [f"- **Note**: {_inline(note)}" for note in record.notes]
    out.append("")
    if record.status in BLOCKED_STATUSES:
        blockers = [f"- {_cell(b)}" for b in record.blockers] or ["- none recorded"]
        out += ["Remaining blockers:", "", *blockers, ""]
    return out


def duration(seconds: float) -> str:
    """A round's wall time as the journal writes it (and the HTML page reads it back)."""
    return f"{seconds:.1f} s"


def round_markdown(record: RoundRecord, *, redone: bool = False) -> str:
    """One round of ``AUTO_REVIEW.md`` (pure). ``redone`` marks a round run again after an
    interruption, so the log keeps both attempts and says which one came later."""
    heading = f"## Round {record.round}" + (f" {REDONE}" if redone else "")
    run = (
        f"{_ROUND_RUN}{_inline(record.run_id)} · round {record.round} of {record.max_rounds}"
        f" · difficulty {_inline(record.difficulty)}"
        f" · {_inline(record.timestamp) or 'no timestamp'}"
    )
    if record.seconds is not None:  # a record written before rounds were timed has none
        run += f" · {duration(record.seconds)}"
    if record.candidate:
        run += f" · candidate {_inline(record.candidate)}"
    lines = [heading, "", run, ""]
    lines += _assessment(record) + _findings(record.items) + _raw(record)
    if record.debate:
        lines += _debate(record.debate)
    lines += _actions(record.fixes) + _results(record) + _status(record)
    return "\n".join(lines)


def _append(path: Path, header: str, text: str) -> None:
    """Append ``text``; a new (or empty) file gets ``header`` first. Never truncates.
    Credentials are scrubbed, as everywhere the plugin records (a child's output in a
    reason, a model's answer that echoes an environment value)."""
    import os

    from pytest_critic22.execution.statedir import open_append
    from pytest_critic22.model.scrub import scrub

    text = scrub(text, os.environ)
    fd = open_append(path)  # no link followed inside .critic22/
    # errors="replace": a lone surrogate (from JSON) must not lose a round of the log.
    with open(fd, "a", encoding="utf-8", errors="replace", newline="") as out:
        if out.tell() == 0:
            out.write(header + "\n")
        out.write("\n" + text.rstrip("\n") + "\n")


def _has_round(path: Path, prefix: str, run_id: str, number: int) -> bool:
    """Whether the file already holds round ``number`` of this run (fenced text skipped:
    a raw answer quoting ``## Round 2`` is not a round)."""
    if not path.exists():
        return False
    text, want = path.read_text(encoding="utf-8", errors="replace"), _inline(run_id)
    fence, current = "", None
    for line in text.split("\n"):
        found = _FENCE.match(line)
        if fence:
            if found and found[1][0] == fence[0] and len(found[1]) >= len(fence):
                fence = "" if not found[2].strip() else fence
            continue
        if found:
            fence = found[1]
            continue
        heading = _ROUND.match(line)
        if heading:
            current = int(heading[1])
        elif current is not None and line.strip():
            run = line[len(prefix) :].split(" · ", 1)[0] if line.startswith(prefix) else None
            if current == number and run == want:
                return True
            current = None
    return False


def start_log(stage: Path, run_id: str, patch: str, timestamp: str, resumed: bool) -> None:
    """Name the run in ``AUTO_REVIEW.md`` (the file gets its header when new)."""
    how = "resumed" if resumed else "started"
    line = f"Run {_inline(run_id)} {how} {_inline(timestamp)} on {_inline(patch)}"
    _append(stage / AUTO_REVIEW, "# Auto Review Log", line)


def append_round(stage: Path, record: RoundRecord) -> None:
    """Log a round; one this run already logged (an interrupted round, run again) says so."""
    path = stage / AUTO_REVIEW
    redone = _has_round(path, _ROUND_RUN, record.run_id, record.round)
    _append(path, "# Auto Review Log", round_markdown(record, redone=redone))


def append_final(
    stage: Path, run_id: str, status: str, final_diff: str | None, blockers: Sequence[str]
) -> None:
    """The run's closing section: how it ended, where its final diff is, what still blocks."""
    lines = [
        "## Final",
        "",
        f"- **Run**: {_inline(run_id)}",
        f"- **Status**: {_inline(status)}",
        f"- **Final diff**: {_inline(final_diff) if final_diff else 'none written'}",
    ]
    lines += _nested("Blockers", [_cell(b) for b in blockers])
    _append(stage / AUTO_REVIEW, "# Auto Review Log", "\n".join(lines))


def _nested(label: str, entries: Sequence[str], empty: str = "none") -> list[str]:
    if not entries:
        return [f"- **{label}**: {empty}"]
    return [f"- **{label}**:", *(f"  - {e}" for e in entries)]


def _about(item: ItemResult) -> str:
    where = _inline(item.location) or "no location"
    how = f", {_inline(item.procedure)}" if item.procedure else ""
    return f"{_inline(item.id)} at {where}: {_cell(item.claim)} ({_inline(item.status)}{how})"


def _unresolved(record: RoundRecord) -> list[str]:
    """Suspects that are not verified-and-repaired: inconclusive, or verified with no fix."""
    applied = _applied(record)
    return [
        _about(i)
        for i in record.items
        if i.status in _SUSPECT and not (i.status == "verified" and i.id in applied)
    ]


def _addressed(prev: ItemResult, previous: RoundRecord, record: RoundRecord) -> str:
    """Execution's answer, this round, to "was this earlier suspicion addressed?"."""
    # Scar tissue re-runs an earlier verified test: its claim names where it came from.
    scar = f"scar tissue of R{previous.round}-{prev.id}:"
    related = [
        i
        for i in record.items
        if i.claim == prev.claim or (i.source == "scar" and i.claim.startswith(scar))
    ]
    still = [i for i in related if i.status == "verified"]
    if still:
        return "no — still verified: " + ", ".join(_inline(i.id) for i in still)
    seen = ", ".join(f"{_inline(i.id)} {_inline(i.status)}" for i in related)
    return "yes — not verified this round" + (f" ({seen})" if seen else " (not re-checked)")


def memory_markdown(record: RoundRecord, previous: RoundRecord | None) -> str:
    """One round of ``REVIEWER_MEMORY.md`` (pure), in the seed's template; the judgments in
    it are execution's, and the critic's own ``Memory update`` is copied verbatim."""
    lines = [f"## Round {record.round} — Score: {record.score}/10", ""]
    lines.append(f"{_MEMORY_RUN}{_inline(record.run_id)} · verdict {_inline(record.verdict)}")
    suspects = [i for i in record.items if i.status in _SUSPECT]
    if record.round <= 1:
        patterns: dict[str, list[str]] = {}
        for i in suspects:
            if i.status == "verified":
                patterns.setdefault(i.procedure or "no procedure", []).append(_inline(i.id))
        found = [f"{_inline(p)} verified {', '.join(ids)}" for p, ids in sorted(patterns.items())]
        lines += _nested("Suspicion", [_about(i) for i in suspects])
        lines += _nested("Unresolved", _unresolved(record))
        lines += _nested("Patterns", found, empty="none yet")
    else:
        if previous is None:
            answers = ["not known: the previous round's record is missing"]
        else:
            answers = [
                f"{_about(p)}: {_addressed(p, previous, record)}"
                for p in previous.items
                if p.status in _SUSPECT
            ]
        known = {p.claim for p in previous.items} if previous else set()
        new = [i for i in suspects if i.claim not in known and i.source != "scar"]
        lines += _nested("Previous suspicions addressed?", answers)
        lines += _nested("New suspicions", [_about(i) for i in new])
        lines += _nested("Unresolved", _unresolved(record))
    if record.memory_update.strip():
        lines += ["- **Memory update (the critic's words, verbatim)**:", ""]
        lines += _fenced(record.memory_update)
    return "\n".join(lines)


def append_memory(stage: Path, record: RoundRecord, previous: RoundRecord | None) -> None:
    """Phase B.5: the round's memory, appended before the state is written (seed order)."""
    path = stage / MEMORY
    text = memory_markdown(record, previous)
    if _has_round(path, _MEMORY_RUN, record.run_id, record.round):
        heading, _, rest = text.partition("\n")
        text = f"{heading} {REDONE}\n{rest}"
    _append(path, "# Reviewer Memory", text)


def critic_memory(records: Sequence[RoundRecord]) -> str:
    """What the next critic is told about its own earlier rounds (pure): executed facts
    only. Its own words (memory update, raw answers) and the loop's notes stay out, so a
    critic cannot talk its next round into anything; execution is all it hears back."""
    intro = "What execution established about your findings in earlier rounds:"
    lines = [MEMORY_HEADING, "", intro]
    for record in records:
        mine = [i for i in record.items if i.source in _CRITIC_SOURCES]
        lines += ["", f"### Round {record.round}", ""] if mine else []
        for i in mine:
            repaired = "yes" if i.id in _applied(record) else "no"
            lines += [
                f"- {_flat(i.id)} ({i.source}) at {_flat(i.location) or 'no location'}, "
                f"procedure {_flat(i.procedure or 'none')}: {_flat(i.status)}; "
                f"repair applied: {repaired}",
                f"  - claim: {_one_line(i.claim)}",
                f"  - execution: {_one_line(i.reason, REASON_CHARS)}",
            ]
    if len(lines) == 3:
        lines += ["", "No finding of yours has been executed yet."]
    lines += [
        "",
        "Check whether your earlier verified claims were genuinely addressed or merely "
        "sidestepped; claims already verified are re-checked by execution anyway, so look "
        "for new defects.",
    ]
    return "\n".join(lines) + "\n"
