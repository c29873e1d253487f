"""``AUTO_REVIEW.html``: the journal as one self-contained page (the seed's RENDER_HTML).

A small renderer for exactly the markdown :mod:`.journal` writes, not a general one: ATX
headings ``#``..``###``, paragraphs, ``- `` lists (one nested level), pipe tables, fenced
code blocks of any fence length, the ``<details><summary>`` lines the journal emits, and
inline ``**bold**``, ``` `code` ```, backslash escapes, ``<br>`` and character references.

The journal holds the critic's raw answers and children's output, so everything is
escaped except those few constructs: no other tag passes, a ``</details>`` inside a fence
is text, and lines split on ``\\n`` only (what markdown itself breaks on). The page loads
nothing and runs nothing (a Content-Security-Policy says so to the browser, as the
``--critic22-html`` report does). Rendering is a convenience: :func:`render_file` never
raises, so a rendering failure cannot keep the loop from ending.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_critic22.apps.loop.journal import AUTO_REVIEW, duration
from pytest_critic22.report.formats.html_parts import CSP, esc

__all__ = ["AUTO_REVIEW_HTML", "render_file", "render_html"]

AUTO_REVIEW_HTML = "AUTO_REVIEW.html"
VERDICTS = ("not ready", "almost", "ready", "BLOCKED")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^(#{1,3})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_ITEM = re.compile(r"^( *)- (.*)$")
_DETAILS = re.compile(r"^<details><summary>(.*)</summary>\s*$")
_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});")
_PLAIN = re.compile(r"[^\\`*<&]+")
_SLUG = re.compile(r"[^a-z0-9]+")
# The journal's run lines (:mod:`.journal`): a run's start (or resumption), a round's run.
_RUN_START = re.compile(r"^Run (\S+) (started|resumed) (\S+) on ")
_ROUND_RUN = re.compile(r"^Run: (\S+) · round ")
_SECONDS = re.compile(r"^([0-9]+(?:\.[0-9]+)?) s$")
_STAMP = re.compile(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}:[0-9]{2})")

CSS = """
:root{--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--link:#0969da;
--bad:#cf222e;--good:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;
--panel:#151b23;--line:#3d444d;--link:#4493f8}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:16px 20px 48px;color:var(--fg);background:var(--bg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
a{color:var(--link)}h1{font-size:22px;margin:0 0 8px}
h2{font-size:18px;margin:32px 0 8px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}p{margin:6px 0}ul{margin:4px 0;padding-left:22px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:12.5px}
code{background:var(--panel);padding:0 3px;border-radius:4px}
pre{margin:6px 0;padding:8px;background:var(--panel);border:1px solid var(--line);
border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere;max-height:40em;overflow:auto}
pre code{background:none;padding:0}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;
overflow-wrap:anywhere}
th{background:var(--panel);font-weight:600}
details{margin:6px 0;padding:2px 8px;border:1px solid var(--line);border-radius:6px}
summary{cursor:pointer;color:var(--link)}
nav{font-size:13px;margin:6px 0 12px}nav a{margin-right:10px}nav div{margin:2px 0}
nav .run,h2.run{font-weight:600}h2.run{border-bottom-style:double}
.verdict{display:inline-block;padding:0 8px;border-radius:10px;font-weight:600;color:#fff}
.v-not-ready,.v-BLOCKED{background:var(--bad)}.v-almost{background:var(--warn)}
.v-ready{background:var(--good)}
footer{margin-top:32px;color:var(--muted);font-size:12px}
"""


# -- inline text ------------------------------------------------------------------------------


def _code_span(text: str, start: int) -> tuple[str, int] | None:
    """A code span opening at ``start``: its HTML and where it ends; None if unclosed."""
    run = len(text[start:]) - len(text[start:].lstrip("`"))
    ticks = "`" * run
    end = start + run
    while True:
        end = text.find(ticks, end)
        if end == -1:
            return None
        after = end + run
        if after >= len(text) or text[after] != "`":
            body = text[start + run : end]
            if body.startswith(" ") and body.endswith(" ") and body.strip():
                body = body[1:-1]
            return f"<code>{esc(body)}</code>", after
        end = after + len(text[after:]) - len(text[after:].lstrip("`"))


def inline(text: str) -> str:
    """One line of markdown text as HTML: only <strong>, <code> and <br> can come out of it."""
    out: list[str] = []
    bold = False
    i = 0
    while i < len(text):
        plain = _PLAIN.match(text, i)
        if plain:
            out.append(esc(plain[0]))
            i = plain.end()
            continue
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _PUNCT:
            out.append(esc(text[i + 1]))
            i += 2
        elif char == "`" and (span := _code_span(text, i)) is not None:
            out.append(span[0])
            i = span[1]
        elif char == "`":
            run = len(text[i:]) - len(text[i:].lstrip("`"))
            out.append(esc(text[i : i + run]))
            i += run
        elif text.startswith("**", i) and (bold or "**" in text[i + 2 :]):
            out.append("</strong>" if bold else "<strong>")
            bold = not bold
            i += 2
        elif text.startswith("<br>", i):
            out.append("<br>")
            i += 4
        elif char == "&" and (entity := _ENTITY.match(text, i)) is not None:
            out.append(esc(html.unescape(entity[0])))
            i = entity.end()
        else:
            out.append(esc(char))
            i += 1
    if bold:
        out.append("</strong>")
    return "".join(out)


def _plain(markdown: str) -> str:
    """A heading's text without markup (for its anchor)."""
    return re.sub(r"<[^>]+>", "", html.unescape(inline(markdown)))


# -- blocks -----------------------------------------------------------------------------------


def _cells(row: str) -> list[str]:
    """A table row's cells; an escaped ``\\|`` stays inside its cell."""
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    cells, cell, i = [], "", 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row):
            cell += row[i : i + 2]
            i += 2
            continue
        if row[i] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += row[i]
        i += 1
    if cell.strip():
        cells.append(cell)
    return [c.strip() for c in cells]


def _table(rows: Sequence[str]) -> str:
    head = _cells(rows[0])
    out = ["<table><thead><tr>", *(f"<th>{inline(c)}</th>" for c in head), "</tr></thead><tbody>"]
    for row in rows[1:]:
        cells = (_cells(row) + [""] * len(head))[: len(head)]
        out += ["<tr>", *(f"<td>{inline(c)}</td>" for c in cells), "</tr>"]
    return "".join([*out, "</tbody></table>"])


def _list(items: Sequence[tuple[int, str]]) -> str:
    out = ["<ul>"]
    nested = False
    for depth, body in items:
        if depth and len(out) > 1:
            if not nested:
                out[-1] = out[-1].removesuffix("</li>") + "<ul>"
                nested = True
            out.append(f"<li>{body}</li>")
            continue
        if nested:
            out.append("</ul></li>")
            nested = False
        out.append(f"<li>{body}</li>")
    if nested:
        out.append("</ul></li>")
    return "".join([*out, "</ul>"])


@dataclass
class _RunFacts:
    """What the page says of one run of the loop: read back from the journal's lines."""

    started: str = ""  # the first start line's timestamp
    verdict: str = ""  # the last round's
    status: str = ""  # the Final section's; "" while the run has not ended
    seconds: float = 0.0  # the rounds' wall times, summed
    timed: bool = False  # whether any round carried one

    def label(self, run_id: str) -> str:
        """``run_… · 2026-12-04 21:15 UTC · acquitted (ready) · 25.3 s`` (plain text)."""
        stamp = _STAMP.match(self.started)
        when = f"{stamp[1]} {stamp[2]} UTC" if stamp else "start not recorded"
        if self.status:
            outcome = self.status + (f" ({self.verdict})" if self.verdict else "")
        else:
            outcome = "not finished" + (f" (last: {self.verdict})" if self.verdict else "")
        took = duration(self.seconds) if self.timed else "time not recorded"
        return " · ".join((run_id, when, outcome, took))


def _unmark(markdown: str) -> str:
    """A journal value back as plain text (the journal escapes markdown in it)."""
    return _plain(markdown).strip()


def run_facts(lines: Sequence[str]) -> dict[str, _RunFacts]:
    """Each run of the journal (in order) and what its lines say of it; fenced text (a raw
    answer quoting a run line) is skipped."""
    runs: dict[str, _RunFacts] = {}
    current, fence, final = "", "", False
    for line in lines:
        found = _FENCE.match(line)
        if fence:
            if found and found[1][0] == fence[0] and len(found[1]) >= len(fence):
                fence = "" if not found[2].strip() else fence
            continue
        if found and not (found[1][0] == "`" and "`" in found[2]):
            fence = found[1]
            continue
        if line.startswith("## "):
            final = line.strip() == "## Final"
        start = _RUN_START.match(line)
        in_round = _ROUND_RUN.match(line)
        if start:
            current = _unmark(start[1])
            facts = runs.setdefault(current, _RunFacts())
            facts.started = facts.started or _unmark(start[3])
        elif in_round:
            current = _unmark(in_round[1])
            facts = runs.setdefault(current, _RunFacts())
            for part in line.split(" · ")[1:]:
                took = _SECONDS.match(part.strip())
                if took:
                    facts.seconds += float(took[1])
                    facts.timed = True
                    break
        elif final and line.startswith("- **Run**: "):
            current = _unmark(line.removeprefix("- **Run**: "))
            runs.setdefault(current, _RunFacts())
        elif current and line.startswith("- **Verdict**: ") and not final:
            runs[current].verdict = _unmark(line.removeprefix("- **Verdict**: "))
        elif current and final and line.startswith("- **Status**: "):
            runs[current].status = _unmark(line.removeprefix("- **Status**: "))
    return runs


class _Page:
    """The block structure, line by line (journal markdown never needs lookbehind)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.paragraph: list[str] = []
        self.items: list[tuple[int, str]] = []
        self.details = 0
        self.section = ""  # the current ### heading: the verdict is coloured in Assessment
        self.anchors: list[tuple[str, str, str]] = []  # (id, text, run) of every ## heading
        self.runs: dict[str, _RunFacts] = {}
        self.run = ""  # the run the lines being read belong to
        self.labelled: dict[str, str] = {}  # run -> the id of its heading on the page

    def flush(self) -> None:
        if self.paragraph:
            self.out.append("<p>" + "<br>".join(inline(p) for p in self.paragraph) + "</p>")
            self.paragraph = []
        if self.items:
            self.out.append(_list(self.items))
            self.items = []

    def item(self, indent: str, body: str) -> None:
        if self.paragraph:
            self.flush()
        verdict = body.removeprefix("**Verdict**: ").strip()
        if (
            self.section == "Assessment"
            and body.startswith("**Verdict**: ")
            and verdict in VERDICTS
        ):
            css = _SLUG.sub("-", verdict.lower()) if verdict != "BLOCKED" else verdict
            html_body = f'<strong>Verdict</strong>: <span class="verdict v-{css}">{verdict}</span>'
        else:
            html_body = inline(body)
        self.items.append((1 if len(indent) >= 2 else 0, html_body))

    def heading(self, level: int, text: str) -> None:
        self.flush()
        plain = _plain(text)
        if level == 3:
            self.section = plain
        if level != 2:
            self.out.append(f"<h{level}>{inline(text)}</h{level}>")
            return
        anchor = self.anchor(plain)
        self.anchors.append((anchor, plain, self.run))
        self.out.append(f'<h2 id="{esc(anchor)}">{inline(text)}</h2>')

    def anchor(self, text: str) -> str:
        slug = _SLUG.sub("-", text.lower()).strip("-") or "section"
        taken = {a for a, _, _ in self.anchors} | set(self.labelled.values())
        anchor, n = slug, 1
        while anchor in taken:
            n += 1
            anchor = f"{slug}-{n}"
        return anchor

    def run_start(self, run: str) -> None:
        """A run's first start line gets a heading that names it: id, date, outcome, time."""
        self.flush()
        self.run = run
        if run in self.labelled or run not in self.runs:
            return
        anchor = self.anchor(run)
        self.labelled[run] = anchor
        label = esc(self.runs[run].label(run))
        self.out.append(f'<h2 class="run" id="{esc(anchor)}">Run {label}</h2>')

    def nav(self) -> str:
        """The page's links, grouped under the run each section belongs to."""
        groups: dict[str, list[str]] = {}
        for anchor, text, run in self.anchors:
            groups.setdefault(run, []).append(f'<a href="#{esc(anchor)}">{esc(text)}</a>')
        if not self.labelled:
            links = [link for group in groups.values() for link in group]
            return f"<nav>{''.join(links)}</nav>" if len(links) > 1 else ""
        rows = []
        for run, links in groups.items():
            if run in self.labelled:
                title = esc(self.runs[run].label(run))
                head = f'<a class="run" href="#{esc(self.labelled[run])}">{title}</a>'
                links = [head, *links]
            rows.append(f"<div>{''.join(links)}</div>")
        return f"<nav>{''.join(rows)}</nav>"

    def feed(self, lines: Sequence[str]) -> None:
        i = 0
        while i < len(lines):
            line = lines[i]
            fence = _FENCE.match(line)
            if fence and not (fence[1][0] == "`" and "`" in fence[2]):
                self.flush()
                i = self.code(lines, i + 1, fence[1])
                continue
            heading = _HEADING.match(line)
            details = _DETAILS.match(line)
            item = _ITEM.match(line)
            start = _RUN_START.match(line)
            if not line.strip():
                self.flush()
            elif start:
                self.run_start(_unmark(start[1]))
                self.paragraph.append(line.strip())
            elif details:
                self.flush()
                self.details += 1
                summary = esc(html.unescape(details[1]))
                self.out.append(f"<details><summary>{summary}</summary>")
            elif line.strip() == "</details>" and self.details:
                self.flush()
                self.details -= 1
                self.out.append("</details>")
            elif heading:
                self.heading(len(heading[1]), heading[2])
            elif (
                line.lstrip().startswith("|")
                and i + 1 < len(lines)
                and _DELIMITER.match(lines[i + 1])
            ):
                self.flush()
                end = i + 2
                while end < len(lines) and lines[end].lstrip().startswith("|"):
                    end += 1
                self.out.append(_table([lines[i], *lines[i + 2 : end]]))
                i = end
                continue
            elif item and len(item[1]) <= 3:
                self.item(item[1], item[2])
            else:
                if self.items:
                    self.flush()
                self.paragraph.append(line.strip())
            i += 1
        self.flush()
        self.out += ["</details>"] * self.details

    def code(self, lines: Sequence[str], start: int, fence: str) -> int:
        """A fenced block up to its closing fence (or the end): verbatim, escaped."""
        end = start
        while end < len(lines):
            close = _FENCE.match(lines[end])
            if (
                close
                and close[1][0] == fence[0]
                and len(close[1]) >= len(fence)
                and not close[2].strip()
            ):
                break
            end += 1
        body = "\n".join(lines[start:end])
        self.out.append(f"<pre><code>{esc(body)}</code></pre>")
        return end + 1


def render_html(markdown_text: str, title: str) -> str:
    """The journal's markdown as a whole page (pure): inline CSS, no script, no URL."""
    lines = markdown_text.split("\n")
    page = _Page()
    page.runs = run_facts(lines)
    page.feed(lines)
    nav = page.nav()
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="color-scheme" content="light dark">',
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n",
            nav,
            "\n".join(page.out),
            "\n<footer>rendered from AUTO_REVIEW.md by critic22 loop; no script, "
            "nothing loaded from elsewhere</footer>\n</body></html>\n",
        ]
    )


def render_file(stage: Path) -> Path | None:
    """Render ``stage/AUTO_REVIEW.md`` to ``stage/AUTO_REVIEW.html`` (atomically: a reader
    sees the old page or the new one). Any failure returns None and leaves no temporary
    file: the page is a convenience, the loop's ending must not depend on it."""
    from pytest_critic22.execution.statedir import read_file, write_file

    target = stage / AUTO_REVIEW_HTML
    try:
        text = read_file(stage / AUTO_REVIEW).decode("utf-8", errors="replace")
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text's newlines
        # Atomic (write_file leaves no temporary file), no link followed inside .critic22/.
        write_file(target, render_html(text, "critic22 loop: Auto Review Log"))
    except Exception:
        return None
    return target
