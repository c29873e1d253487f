"""AUTO_REVIEW.html: the journal's markdown as a page, hostile text kept text, and the page
of a two-round journal read in the same real headless Chromium as the HTML report."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_critic22.apps.loop.journal import AUTO_REVIEW, append_final, append_round, start_log
from pytest_critic22.apps.loop.model import DebateTurn, Fix, ItemResult, RoundRecord
from pytest_critic22.apps.loop.render import AUTO_REVIEW_HTML, inline, render_file, render_html
from tests.unit.test_formats_html import _Page

RUN = "run_20260713_a1b2c3d4"


HOSTILE_RAW = (
    "Looks fine.\n</details>\n<script>alert(1)</script>\n"
    "## Round 99\n```\n````\n<img src=x onerror=alert(2)>\n"
)


CLAIM = "mean() divides by zero on an empty list"


ALLOWED = {
    *("html", "head", "meta", "title", "style", "body", "nav", "a", "h1", "h2", "h3", "p"),
    *("ul", "li", "table", "thead", "tbody", "tr", "th", "td", "pre", "code", "strong", "br"),
    *("details", "summary", "span", "footer", "div"),
}


def _round(number: int, **changes: Any) -> RoundRecord:
    items = (
        ItemResult("F1", "critic", CLAIM, "e1", "test", "verified", "ZeroDivisionError"),
        ItemResult("F2", "critic", "a <b>|</b> claim", "e2", "static", "refuted", "no | way"),
    )
    record = RoundRecord(
        RUN,
        number,
        4,
        "not ready",
        6,
        False,
        "continue",
        items=items,
        critic_source="model",
        critic_raw=HOSTILE_RAW,
        fixes=(Fix("F1", "repair", "+x\n", "applied", "its test passes"),),
        trace_id=f"trace_{number}",
        timestamp=f"2026-07-13T1{number}:00:00Z",
        seconds=12.4 * number,
    )
    return replace(record, **changes)


def _journal(stage: Path) -> None:
    start_log(stage, RUN, "patch.diff", "2026-07-13T10:00:00Z", False)
    append_round(stage, _round(1))
    append_round(
        stage,
        _round(
            2,
            items=(ItemResult("scar[R1-F1]", "scar", CLAIM, "e1", "scar", "refuted", "passes"),),
            verdict="ready",
            score=10,
            positive=True,
            status="acquitted",
            debate=(
                DebateTurn("F2", "refuted", "keep", "</details><script>x()</script>", "refuted"),
            ),
        ),
    )
    append_final(stage, RUN, "acquitted", "final.diff", ())


OTHER = "run_20260714_0badf00d"


def _second_run(stage: Path) -> None:
    """A later run that did not finish, one round written before rounds were timed."""
    start_log(stage, OTHER, "other.diff", "2026-07-14T09:30:00Z", False)
    append_round(stage, _round(1, run_id=OTHER, seconds=None))


def test_every_run_is_labelled_with_its_id_date_outcome_and_time(tmp_path: Path) -> None:
    """Issue 43: the navigation mixed every run's rounds in one unlabelled line, and the page
    said nothing of how long anything took."""
    _journal(tmp_path)
    _second_run(tmp_path)
    document = render_html((tmp_path / AUTO_REVIEW).read_text(), "t")
    nav = re.search(r"<nav>(.*?)</nav>", document)
    assert nav is not None
    first, second = re.findall(r"<div>(.*?)</div>", nav[1])
    run, other = RUN.replace("_", "-"), OTHER.replace("_", "-")  # their anchors
    assert first == (
        f'<a class="run" href="#{run}">{RUN} · 2026-07-13 10:00 UTC · acquitted (ready) · '
        '37.2 s</a><a href="#round-1">Round 1</a><a href="#round-2">Round 2</a>'
        '<a href="#final">Final</a>'
    )
    assert second == (
        f'<a class="run" href="#{other}">{OTHER} · 2026-07-14 09:30 UTC · not finished '
        '(last: not ready) · time not recorded</a><a href="#round-1-2">Round 1</a>'
    )
    assert f'<h2 class="run" id="{run}">Run {RUN} · 2026-07-13 10:00 UTC' in document
    page = _Page(document)
    assert "12.4 s" in page.text and "24.8 s" in page.text  # each round's own time
    assert not re.search(r"(?<![0-9])0\.0+ s", page.text)


def test_run_lines_quoted_in_a_raw_answer_make_no_run() -> None:
    text = (
        f"# Auto Review Log\n\nRun {RUN} started 2026-07-13T10:00:00Z on p.diff\n\n"
        "## Round 1\n\n```\nRun run_20990101_deadbeef started 2099-01-01T00:00:00Z on x\n"
        "## Final\n- **Status**: acquitted\n```\n"
    )
    document = render_html(text, "t")
    assert "run_20990101_deadbeef" not in re.sub(r"<pre>.*?</pre>", "", document, flags=re.S)
    assert f"{RUN} · 2026-07-13 10:00 UTC · not finished · time not recorded" in document


def test_hostile_text_renders_as_text(tmp_path: Path) -> None:
    _journal(tmp_path)
    document = render_html((tmp_path / AUTO_REVIEW).read_text(), "t <script>")
    page = _Page(document)
    assert set(page.tags) <= ALLOWED, set(page.tags) - ALLOWED
    assert "<script" not in document.lower() and "<img" not in document.lower()
    assert not [name for name, _ in page.attrs if name.startswith("on")]
    assert all(href.startswith("#") for href in page.hrefs)
    assert not re.search(r"url\(|@import|https?://", document)
    # the raw answer's </details> is text in its fence: the <details> elements pair up
    assert document.count("<details>") == document.count("</details>") == 2
    assert "</details>\n<script>alert(1)</script>" in page.raw
    assert "&lt;/details&gt;&lt;script&gt;x()&lt;/script&gt;" in document
    assert "## Round 99" in page.raw and "Round 99" not in " ".join(
        re.findall(r"<h\d[^>]*>(.*?)</h\d>", document)
    )
    assert page.title == "t <script>"
    assert "a <b>|</b> claim" in page.text and "no | way" in page.text


def test_tables_keep_escaped_pipes_in_their_cells() -> None:
    document = render_html(
        "| id | claim |\n|---|---|\n| F1 | a \\| b<br>c |\n| F2 | x \\\\| extra |\n| F3 |\n",
        "t",
    )
    rows = re.findall(r"<tr>(.*?)</tr>", document)
    assert rows[0] == "<th>id</th><th>claim</th>"
    assert rows[1] == "<td>F1</td><td>a | b<br>c</td>"
    assert rows[2] == "<td>F2</td><td>x \\</td>"  # an escaped backslash, then a real pipe
    assert rows[3] == "<td>F3</td><td></td>"  # a short row is padded
    # without a delimiter row a pipe line is a paragraph
    assert "<p>| not | a table |</p>" in render_html("| not | a table |\n", "t")


def test_fences_of_any_length_hold_their_text_verbatim() -> None:
    text = "before\n`````\n```\n## not a heading\n````\n</details>\n`````\nafter ``a ` b`` x"
    document = render_html(text, "t")
    assert "<pre><code>```\n## not a heading\n````\n&lt;/details&gt;</code></pre>" in document
    assert "<p>before</p>" in document and "<p>after <code>a ` b</code> x</p>" in document
    assert "<h2" not in document
    tilde = render_html("~~~\n```\n~~~\n", "t")
    assert "<pre><code>```</code></pre>" in tilde
    unclosed = render_html("````\nstill code\n```\n", "t")  # runs to the end
    assert "<pre><code>still code\n```\n</code></pre>" in unclosed


def test_inline_markup_and_nothing_else() -> None:
    assert inline("**Score**: 6/10") == "<strong>Score</strong>: 6/10"
    assert inline("\\*\\*not bold\\*\\* \\# \\| \\`") == "**not bold** # | `"
    assert inline("a &lt;b&gt; &amp;lt; <br> <i>x</i>") == (
        "a &lt;b&gt; &amp;lt; <br> &lt;i&gt;x&lt;/i&gt;"
    )
    assert inline("``code with ` tick``") == "<code>code with ` tick</code>"
    assert inline("`unclosed") == "`unclosed" and inline("** lone") == "** lone"
    assert inline("&#x3c;script&#62;") == "&lt;script&gt;"


def test_headings_lists_and_the_verdict_colour() -> None:
    text = (
        "# Auto Review Log\n\n## Round 1\n\n### Assessment\n\n- **Verdict**: not ready\n"
        "- **Unresolved**:\n  - F1\n  - F2\n- **Patterns**: none yet\n\n## Round 1\n\n"
        "### Status\n\n- **Verdict**: ready\n"
    )
    document = render_html(text, "t")
    assert '<h2 id="round-1">Round 1</h2>' in document and 'id="round-1-2"' in document
    assert '<a href="#round-1">Round 1</a><a href="#round-1-2">Round 1</a>' in document
    assert '<span class="verdict v-not-ready">not ready</span>' in document
    assert "<li><strong>Unresolved</strong>:<ul><li>F1</li><li>F2</li></ul></li>" in document
    assert document.count('class="verdict') == 1  # only in an Assessment


def test_render_file_writes_atomically_and_never_raises(tmp_path: Path) -> None:
    assert render_file(tmp_path) is None  # no journal yet
    assert list(tmp_path.iterdir()) == []
    _journal(tmp_path)
    written = render_file(tmp_path)
    assert written == tmp_path / AUTO_REVIEW_HTML
    assert written.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == [AUTO_REVIEW_HTML, AUTO_REVIEW]
    (tmp_path / AUTO_REVIEW).write_bytes(b"# bad \xff\xfe bytes\n\x00\n")
    assert render_file(tmp_path) == written  # undecodable bytes are replaced, not fatal
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / AUTO_REVIEW).write_text("# x\n")
    (blocked / AUTO_REVIEW_HTML).mkdir()  # os.replace cannot replace a directory
    assert render_file(blocked) is None
    assert sorted(p.name for p in blocked.iterdir()) == [AUTO_REVIEW_HTML, AUTO_REVIEW]
