"""The loop's logs: AUTO_REVIEW.md and REVIEWER_MEMORY.md, appended and never rewritten,
and the memory the next critic reads (executed facts only, none of the critic's own words)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_critic22.apps.loop.journal import (
    AUTO_REVIEW,
    MEMORY,
    MEMORY_HEADING,
    append_final,
    append_memory,
    append_round,
    critic_memory,
    memory_markdown,
    round_markdown,
    start_log,
)
from pytest_critic22.apps.loop.model import DebateTurn, Fix, ItemResult, RoundRecord, Source

RUN = "run_20260713_a1b2c3d4"
MEMORY_UPDATE = "MEMORY-UPDATE-MARKER: watch e1\n```python\nx = mean([])\n```\n~~~\n````\n"
C1 = "mean() divides by zero on an empty list"
C2 = "the cache key ignores case"
C3 = "the median of two values is wrong"


def _item(
    fid: str, source: Source, claim: str, loc: str, proc: str, status: str, why: str = ""
) -> ItemResult:
    return ItemResult(fid, source, claim, loc, proc, status, why, falsification="FALSIFY-MARKER")


ROUND1 = RoundRecord(
    run_id=RUN,
    round=1,
    max_rounds=4,
    verdict="not ready",
    score=5,
    positive=False,
    status="continue",
    items=(
        _item("F1", "critic", C1, "e1", "test", "verified", "ZeroDivisionError on patched"),
        _item("F2", "critic", C2, "e2", "counterfactual", "inconclusive", "fails on both trees"),
        _item("F3", "critic", "the docstring lies", "e3", "static", "refuted", "it does not"),
        _item("preserve[t.py]", "validator", "GROUP-MARKER", "", "preservation", "refuted"),
    ),
    critic_source="model",
    critic_raw="RAW-ANSWER-MARKER\n```json\n[]\n```\n",
    memory_update=MEMORY_UPDATE,
    fixes=(Fix("F1", "repair", "DIFF-MARKER\n+x\n", "applied", "the repair's test passes"),),
    notes=("NOTE-MARKER a loop note",),
    review_independence="same-family",
    trace_id="trace_run01",
    timestamp="2026-07-13T14:22:00Z",
)

ROUND2 = RoundRecord(
    run_id=RUN,
    round=2,
    max_rounds=2,
    verdict="not ready",
    score=5,
    positive=False,
    status="max-rounds",
    items=(
        _item("S1", "scar", "scar tissue of R1-F1: " + C1, "e1", "scar", "refuted", "passes now"),
        _item("S2", "scar", "scar tissue of R1-F2: " + C2, "e2", "scar", "verified", "fails"),
        _item("N1", "second-critic", C3, "e1", "property", "inconclusive", "R" * 1000),
        _item("D1", "debate", "revised: " + C3, "e1", "test", "refuted", "passes"),
    ),
    critic_source="model",
    critic_raw="RAW-ANSWER-MARKER round 2",
    second_raw="SECOND-RAW-MARKER",
    memory_update="MEMORY-UPDATE-MARKER 2",
    fixes=(Fix("S2", "fixer", "DIFF-MARKER", "refused", "its test still fails"),),
    debate=(
        DebateTurn("N1", "inconclusive", "revise", "ARGUMENT-MARKER ```x```", "refuted", "ok"),
    ),
    blockers=("BLOCKER-MARKER S2 verified",),
    notes=("NOTE-MARKER 2",),
    difficulty="nightmare",
    trace_id="trace_run02",
)


def _headings(text: str) -> list[str]:
    """Heading lines outside fences, however a reader splits lines."""
    out: list[str] = []
    for lines in (text.split("\n"), text.splitlines()):
        fence = ""
        for line in lines:
            found = re.match(r"^(`{3,}|~{3,})(.*)$", line)
            if fence:
                if found and found[1][0] == fence[0] and len(found[1]) >= len(fence):
                    fence = "" if not found[2].strip() else fence
                continue
            if found:
                fence = found[1]
            elif line.lstrip().startswith("#"):
                out.append(line)
    return out


def _fenced_after(text: str, marker: str) -> str:
    """The body of the first fence after ``marker``."""
    lines = text[text.index(marker) :].split("\n")
    start = next(n for n, line in enumerate(lines) if line.startswith("```"))
    fence = lines[start]
    end = next(n for n in range(start + 1, len(lines)) if lines[n] == fence)
    return "\n".join(lines[start + 1 : end]) + "\n"


def test_round_one_memory_follows_the_seed_template() -> None:
    assert memory_markdown(ROUND1, None) == (
        "## Round 1 — Score: 5/10\n"
        "\n"
        f"- **Run**: {RUN} · verdict not ready\n"
        "- **Suspicion**:\n"
        f"  - F1 at e1: {C1} (verified, test)\n"
        f"  - F2 at e2: {C2} (inconclusive, counterfactual)\n"
        "- **Unresolved**:\n"
        f"  - F2 at e2: {C2} (inconclusive, counterfactual)\n"
        "- **Patterns**:\n"
        "  - test verified F1\n"
        "- **Memory update (the critic's words, verbatim)**:\n"
        "\n"
        "`````\n" + MEMORY_UPDATE + "`````"
    )
    quiet = RoundRecord(RUN, 1, 4, "ready", 10, True, "acquitted", items=ROUND1.items[2:])
    text = memory_markdown(quiet, None)
    assert "- **Suspicion**: none\n" in text and "- **Patterns**: none yet" in text
    assert "Memory update" not in text


def test_later_rounds_say_what_execution_addressed() -> None:
    text = memory_markdown(ROUND2, ROUND1)
    lines = text.split("\n")
    assert lines[0] == "## Round 2 — Score: 5/10"
    assert [line for line in lines if line.startswith("- **")] == [
        f"- **Run**: {RUN} · verdict not ready",
        "- **Previous suspicions addressed?**:",
        "- **New suspicions**:",
        "- **Unresolved**:",
        "- **Memory update (the critic's words, verbatim)**:",
    ]
    assert f"  - F1 at e1: {C1} (verified, test): yes — not verified this round" in text
    assert "(S1 refuted)" in text
    assert f"  - F2 at e2: {C2} (inconclusive, counterfactual): no — still verified" in text
    new = text[text.index("New suspicions") : text.index("- **Unresolved**")]
    assert C3 in new and C1 not in new and C2 not in new  # the scars are not new
    unresolved = text[text.index("- **Unresolved**") : text.index("Memory update")]
    assert "S2" in unresolved and "N1" in unresolved and "R1-F1:" not in unresolved
    assert "not known" in memory_markdown(ROUND2, None)


def test_the_memory_update_is_copied_verbatim_whatever_fences_it_holds(tmp_path: Path) -> None:
    append_memory(tmp_path, ROUND1, None)
    written = (tmp_path / MEMORY).read_text(encoding="utf-8")
    assert written.startswith("# Reviewer Memory\n")
    assert _fenced_after(written, "Memory update") == MEMORY_UPDATE
    # a fence five backticks long: the update's four-backtick line cannot close it
    assert _headings(written) == ["# Reviewer Memory", "## Round 1 — Score: 5/10"] * 2


def test_the_logs_are_only_ever_appended_to(tmp_path: Path) -> None:
    steps: list[Callable[[], None]] = [
        lambda: start_log(tmp_path, RUN, "patch.diff", "2026-07-13T14:00:00Z", False),
        lambda: append_round(tmp_path, ROUND1),
        lambda: append_memory(tmp_path, ROUND1, None),
        lambda: start_log(tmp_path, RUN, "patch.diff", "2026-07-13T15:00:00Z", True),
        lambda: append_round(tmp_path, ROUND2),
        lambda: append_memory(tmp_path, ROUND2, ROUND1),
        lambda: append_final(tmp_path, RUN, "max-rounds", None, ROUND2.blockers),
    ]
    before = {name: b"" for name in (AUTO_REVIEW, MEMORY)}
    for step in steps:
        step()
        for name, old in before.items():
            path = tmp_path / name
            now = path.read_bytes() if path.exists() else b""
            assert now.startswith(old) and len(now) >= len(old), name
            before[name] = now
    log = before[AUTO_REVIEW].decode()
    assert log.count("# Auto Review Log\n") == 1
    assert f"\nRun {RUN} started 2026-07-13T14:00:00Z on patch.diff\n" in log
    assert f"\nRun {RUN} resumed 2026-07-13T15:00:00Z on patch.diff\n" in log
    rounds = [h for h in _headings(log) if not h.startswith("###")]
    assert rounds == ["# Auto Review Log", "## Round 1", "## Round 2", "## Final"] * 2


def test_an_existing_log_keeps_its_text_and_gets_no_second_header(tmp_path: Path) -> None:
    (tmp_path / AUTO_REVIEW).write_text("# Auto Review Log\n\nan older run's text\n")
    append_round(tmp_path, ROUND1)
    log = (tmp_path / AUTO_REVIEW).read_text()
    assert log.startswith("# Auto Review Log\n\nan older run's text\n\n## Round 1\n")
    assert log.count("# Auto Review Log") == 1


def test_a_round_redone_after_an_interruption_says_so(tmp_path: Path) -> None:
    # another run quotes a round header and a run line in its raw answer: fenced, not a round
    fake = f"## Round 2\n\nRun: {RUN} · round 2 of 4\n"
    other = RoundRecord("run_other", 1, 4, "ready", 10, True, "continue", critic_raw=fake)
    append_round(tmp_path, other)
    append_round(tmp_path, ROUND1)
    append_round(tmp_path, ROUND2)  # not redone: the quoted one is inside a fence
    append_round(tmp_path, ROUND1)  # redone
    append_round(tmp_path, ROUND1)  # redone again
    heads = [h for h in _headings((tmp_path / AUTO_REVIEW).read_text()) if h.startswith("## ")]
    redone = "## Round 1 (redone after an interruption)"
    assert heads == ["## Round 1", "## Round 1", "## Round 2", redone, redone] * 2
    append_memory(tmp_path, other, None)
    append_memory(tmp_path, ROUND1, None)
    append_memory(tmp_path, ROUND1, None)
    heads = [h for h in _headings((tmp_path / MEMORY).read_text()) if h.startswith("## ")]
    assert heads[-1] == "## Round 1 — Score: 5/10 (redone after an interruption)"
    assert heads[:2] == ["## Round 1 — Score: 10/10", "## Round 1 — Score: 5/10"]


def _unescaped_pipes(row: str) -> int:
    count, i = 0, 0
    while i < len(row):
        if row[i] == "\\":
            i += 2
            continue
        count += row[i] == "|"
        i += 1
    return count


HOSTILE = "x\n## Injected | y\r\n# Also\u2028### Sep C:\\path\\|z `code` <b>bold</b>"


def test_hostile_values_cannot_add_headings_rows_or_cells(tmp_path: Path) -> None:
    item = ItemResult("F1", "critic", HOSTILE, "e1\n## Loc", "test", "verified", "a|b\n## R")
    record = RoundRecord(
        RUN,
        1,
        4,
        "not ready\n## Verdict",
        6,
        False,
        "blocked",
        items=(item, item),
        critic_source="model\n## Source</summary>",
        critic_raw="raw",
        fixes=(Fix("F1", "repair", "", "skipped", "## skip | reason"),),
        debate=(DebateTurn("F1", "verified", "keep\n# Ruling", "## argued", "verified"),),
        blockers=("## Blocker heading", "- a list", "1. ordered", "   ```"),
        notes=("# a note",),
        trace_id="t\n## Trace",
    )
    append_round(tmp_path, record)
    append_memory(tmp_path, record, None)
    append_memory(tmp_path, replace(record, round=2), record)
    append_final(tmp_path, RUN, "blocked\n## Final 2", "out/final.diff\n# x", record.blockers)
    log = (tmp_path / AUTO_REVIEW).read_text()
    assert _headings(log) == ["# Auto Review Log", "## Round 1", *SECTIONS, "## Final"] * 2
    memory = (tmp_path / MEMORY).read_text()
    assert [h for h in _headings(memory) if "Injected" in h or "Loc" in h] == []
    rows = [line for line in log.split("\n") if line.startswith("|")]
    assert len(rows) == 4 and {_unescaped_pipes(r) for r in rows} == {8}
    assert "<b>" not in log and "&lt;b&gt;bold&lt;/b&gt;" in log
    assert "\n- \\#\\# Blocker heading\n- \\- a list\n- 1\\. ordered\n- \\`\\`\\`\n" in log
    summaries = [line for line in log.split("\n") if "summary>" in line]
    assert summaries == [
        "<details><summary>The critic's answer, verbatim (source model ## "
        "Source&lt;/summary&gt;, 3 chars)</summary>"
    ]


SECTIONS = [
    "### Assessment",
    "### Findings",
    "### Raw critic response",
    "### Debate Transcript",
    "### Actions",
    "### Results",
    "### Status",
]


def test_a_round_section_in_full() -> None:
    text = round_markdown(ROUND2)
    assert _headings(text) == ["## Round 2", *SECTIONS] * 2
    assert f"Run: {RUN} · round 2 of 2 · difficulty nightmare" in text
    assert "- **Score**: 5/10\n- **Verdict**: not ready\n" in text
    assert "- **Counts**: 1 verified / 1 inconclusive / 2 refuted\n" in text
    assert "- **Review independence**: unknown\n- **Acceptance status**: provisional\n" in text
    assert "- **Trace**: trace_run02\n" in text
    assert text.count("<details><summary>") == 2 and "SECOND-RAW-MARKER" in text
    assert "| S2 | scar | scar | e2 | verified | scar tissue of R1-F2: " + C2 in text
    assert _fenced_after(text, "critic's argument") == "ARGUMENT-MARKER ```x```\n"
    assert "- **refused**: fix for S2 (fixer, 1-line diff): its test still fails" in text
    assert "- 4 items: 1 verified, 1 inconclusive, 2 refuted; fixes: 0 applied" in text
    assert text.endswith("Remaining blockers:\n\n- BLOCKER-MARKER S2 verified\n")
    plain = round_markdown(ROUND1)
    assert "Debate Transcript" not in plain and "Remaining blockers" not in plain
    assert plain.count("<details>") == 1 and "DIFF-MARKER" not in plain
    assert _fenced_after(plain, "<details>") == ROUND1.critic_raw


@pytest.mark.parametrize("status", ["max-rounds", "no-fix", "blocked", "stopped"])
def test_a_run_that_stops_short_names_its_blockers(status: str) -> None:
    record = RoundRecord(RUN, 3, 3, "almost", 9, True, status)
    assert round_markdown(record).endswith("Remaining blockers:\n\n- none recorded\n")


def test_the_final_section(tmp_path: Path) -> None:
    append_final(tmp_path, RUN, "acquitted", ".critic22/review-stage/final.diff", ())
    log = (tmp_path / AUTO_REVIEW).read_text()
    assert log.endswith(
        f"## Final\n\n- **Run**: {RUN}\n- **Status**: acquitted\n"
        "- **Final diff**: .critic22/review-stage/final.diff\n- **Blockers**: none\n"
    )


def test_the_critic_hears_back_only_what_execution_established() -> None:
    text = critic_memory([ROUND1, ROUND2])
    assert text.startswith(MEMORY_HEADING + "\n")
    for absent in (
        "MEMORY-UPDATE-MARKER",  # its own words about itself
        "RAW-ANSWER-MARKER",
        "SECOND-RAW-MARKER",
        "NOTE-MARKER",
        "DIFF-MARKER",
        "FALSIFY-MARKER",
        "ARGUMENT-MARKER",
        "BLOCKER-MARKER",
        "GROUP-MARKER",  # a preservation group is not the critic's
        "scar tissue of",  # nor is a scar re-check
        "Score",
    ):
        assert absent not in text, absent
    assert "### Round 1" in text and "### Round 2" in text
    assert "- F1 (critic) at e1, procedure test: verified; repair applied: yes" in text
    assert "- F2 (critic) at e2, procedure counterfactual: inconclusive; repair applied: no" in text
    assert "- F3 (critic) at e3, procedure static: refuted; repair applied: no" in text
    assert "N1 (second-critic)" in text and "D1 (debate)" in text
    assert f'  - claim: "{C1}"' in text and '  - execution: "ZeroDivisionError on patched"' in text
    assert "R" * 299 + "…" in text and "R" * 300 not in text  # the reason, trimmed
    assert text.rstrip().endswith("so look for new defects.")
    assert "sidestepped" in text
    assert "No finding of yours has been executed yet." in critic_memory([])


def test_the_critic_memory_keeps_a_multiline_claim_on_its_line() -> None:
    item = ItemResult("F1", "critic", HOSTILE, "e1", "test", "verified", "why\n## Round 9")
    text = critic_memory([RoundRecord(RUN, 1, 4, "not ready", 6, False, "continue", (item,))])
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [MEMORY_HEADING, "### Round 1"]
    assert '"x\\n## Injected | y\\r\\n# Also\\u2028### Sep' in text
