"""The HTML report (``--critic22-html``): the pure page builder, and the page in a real browser.

The browser is Debian's ``chromium-headless-shell`` (CI installs it, see ``.ci/run``): a real
review of the ``report-tour`` case (a verified, a refuted, an inconclusive and an advisory
finding, hostile text among them) is opened from ``file://``, its DOM dumped and a screenshot
taken; what a person reads must be there, and the critic's ``<script>`` must be text.
"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.model.packet import Removal, StripReport, build_packet
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.model.results import Disposition, Outcome
from pytest_critic22.pipeline.review import Review, RunInfo, preservation_id, route_findings
from pytest_critic22.report.formats import html as html_format
from pytest_critic22.report.formats.html import html_document
from pytest_critic22.report.formats.html_parts import OUTPUT_LINES
from pytest_critic22.verification.procedures import FindingResult

SCRIPT_CLAIM = "<script>alert(1)</script> must render as text"


IMG = "<img src=x onerror=\"document.title='pwned'\">"


PATCH = """\
diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,3 +1,3 @@
 def f(x):
-    return x
+    return "<script>steal()</script>" + x
 # end of f
@@ -10,2 +10,3 @@ def g():
     pass
+    # </pre></td><b onmouseover=alert(2)>bold</b>
 # end of g
diff --git a/pkg/other.py b/pkg/other.py
--- a/pkg/other.py
+++ b/pkg/other.py
@@ -1,2 +1,2 @@
-A = 1
+A = 2
 B = 3
"""


def _finding(location: str, claim: str, severity: str = "blocking", **extra: Any) -> dict[str, Any]:
    record = {
        "location": location,
        "claim": claim,
        "severity": severity,
        "evidence": extra.pop("evidence", f"{location} changes it"),
        "falsification": extra.pop(
            "falsification",
            "test:\ndef test_it():\n    assert True\n" if severity == "blocking" else "",
        ),
        "confidence": 0.5,
    }
    record.update(extra)
    return record


RECORDS = [
    _finding("e1", SCRIPT_CLAIM, evidence=IMG),
    _finding("e2", "g() grows a comment", falsification="counterfactual: tests/test_x.py::test_g"),
    _finding("e3", "A changes & B stays", evidence="'quotes' & \"doubles\""),
    _finding("whole-patch", "the whole patch is odd", severity="advisory"),
    _finding("e3", "never run: the session stopped"),
    _finding("e1", "blocking without a procedure", falsification="trust me"),  # downgraded
    {"location": "e1", "severity": "blocking"},  # rejected: no claim
]


def _run(status: str, output: str, seconds: float = 1.5) -> dict[str, Any]:
    return {"status": status, "reason": "", "exit_code": 1, "seconds": seconds, "output": output}


def hand_review(
    *, output: str = "E   AssertionError: </pre><script>alert(3)</script>\n1 failed"
) -> tuple[Review, dict[str, FindingResult]]:
    patch = parse_patch(PATCH)
    packet, _ = build_packet(patch, specification="spec")
    stripped = StripReport(
        (Removal("self_confidence", "request", "$.notes", "I am 95% sure SECRET-PHRASE"),),
        ("votes",),
    )
    parsed = parse_findings(json.dumps(RECORDS), patch.edit_ids)
    group = "tests/<b>group</b>.py"
    review = Review(
        Path("/tmp/x/patch.diff"),
        patch,
        packet,
        stripped,
        "abc123",
        findings=parsed,
        wrapped=route_findings(parsed),
        critic={"engaged": True, "source": "replay", "file": "findings.json"},
        preservation={group: ("tests/<b>group</b>.py::test_keep",)},
    )
    results = {
        "F1": FindingResult(
            "F1",
            Outcome("verified", f"fails on patched and passes on without-e1 {IMG}"),
            "without-e1",
            {"patched": [_run("failed", output)], "counterfactual": _run("passed", "1 passed")},
            "test",
        ),
        "F2": FindingResult(
            "F2",
            Outcome("refuted", "the procedure passes on the patched tree"),
            "without-e2",
            {"patched": [_run("passed", "1 passed <i>on patched</i>")]},
            "counterfactual",
        ),
        "F3": FindingResult(
            "F3",
            Outcome("inconclusive", "fails on both the patched and the without-e3 tree"),
            "without-e3",
            {
                "patched": [_run("failed", "patched says no")],
                "counterfactual": _run("failed", "counterfactual says no"),
                "hits": ["<x>"],
            },
            "test",
        ),
        preservation_id(group): FindingResult(
            preservation_id(group),
            Outcome("refuted", "every test passes on patched"),
            "base",
            {"patched": [_run("passed", "1 passed")], "pre_existing": []},
            "preservation",
        ),
    }
    return review, results


RUN = RunInfo(
    run_id="r1",
    ledger="/tmp/ledger.jsonl",
    notes=("a note <u>underlined</u>",),
    sandbox={"mode": "bwrap", "isolated": True, "warning": "", "pass_env": []},
    started=1_700_000_000.0,
    seconds=12.5,
)


REJECT = Disposition("reject", ("F1",), "1 verified blocking defect: F1")


_BLOCKS = {
    *("p", "div", "section", "article", "nav", "footer", "pre", "ul", "li", "dl", "dt", "dd"),
    *("table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "summary", "details"),
}


class _Page(HTMLParser):
    """A page's elements, attributes, title and visible text (the browser's DOM as data)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.title = ""
        self.chunks: list[str] = []
        self._where: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self.chunks.append(" ")
        self.tags.append(tag)
        self.attrs += attrs
        self._where.append(tag)
        for name, value in attrs:
            if name == "id" and value:
                self.ids.append(value)
            if name == "href" and value:
                self.hrefs.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCKS:
            self.chunks.append(" ")
        if tag in self._where:
            while self._where.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if "title" in self._where:
            self.title += data
        elif "style" not in self._where:
            self.chunks.append(data)

    @property
    def raw(self) -> str:
        return "".join(self.chunks)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", self.raw)


def _section(document: str, element_id: str) -> str:
    """The visible text of the element with this id (up to its closing tag), unescaped."""
    start = document.index(f'id="{element_id}"')
    end = document.index("</article>", start)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", document[start:end])))


def _edit_block(document: str, location: str) -> str:
    """An edit's block up to its diff (its pins), or the whole-patch block."""
    start = document.index(f'id="edit-{location}"')
    ends = [document.find(m, start) for m in ('<pre class="diff"', '<div class="file"')]
    return document[start : min(e for e in ends if e != -1)]


ALLOWED_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "p", "code", "section", "nav", "a"),
    *("h1", "h2", "h3", "h4", "h5", "table", "thead", "tbody", "tr", "th", "td", "pre"),
    *("span", "details", "summary", "article", "ul", "li", "dl", "dt", "dd", "small", "div"),
    "footer",
}


def test_every_untrusted_text_renders_as_text_and_nothing_else() -> None:
    review, results = hand_review()
    document = html_document(review, results, REJECT, RUN)
    page = _Page(document)
    # Only the page's own elements: the critic's, the patch's and the outputs' markup is text.
    assert set(page.tags) <= ALLOWED_TAGS, set(page.tags) - ALLOWED_TAGS
    assert not [name for name, _ in page.attrs if name.startswith("on")]
    assert "<script" not in document.lower() and "<img" not in document.lower()
    assert "<b>" not in document and "<i>" not in document and "<u>" not in document
    for hostile in (
        SCRIPT_CLAIM,  # a claim
        IMG,  # an evidence
        "E AssertionError: </pre><script>alert(3)</script>",  # a child's output
        "1 passed <i>on patched</i>",
        "'quotes' & \"doubles\"",
        "tests/<b>group</b>.py::test_keep",  # a preservation test
        "a note <u>underlined</u>",  # a run note
    ):
        assert hostile in page.text, hostile
    for line in (
        '+    return "<script>steal()</script>" + x',  # a patch line
        "+    # </pre></td><b onmouseover=alert(2)>bold</b>",  # one that closes our markup
    ):
        assert line in page.raw, line
    assert "&lt;script&gt;alert(1)&lt;/script&gt; must render as text" in document
    assert page.title == "critic22 REJECT: patch.diff"


def test_the_page_is_self_contained() -> None:
    review, results = hand_review()
    document = html_document(review, results, REJECT, RUN)
    page = _Page(document)
    assert not {"link", "img", "script", "iframe", "object", "embed"} & set(page.tags)
    assert all(href.startswith("#") for href in page.hrefs), page.hrefs
    assert not re.search(r"url\(|@import|https?://", document)
    # scripts and loads are barred by the browser too
    assert ("http-equiv", "Content-Security-Policy") in page.attrs
    assert "default-src 'none'" in unescape(document)


def test_every_finding_and_edit_is_there_and_pinned_both_ways() -> None:
    review, results = hand_review()
    document = html_document(review, results, REJECT, RUN)
    page = _Page(document)
    assert len(review.wrapped) == 6  # five accepted + the downgraded one; one rejected
    for edit in review.patch.edits:
        assert f"edit-{edit.edit_id}" in page.ids
    assert "edit-whole-patch" in page.ids
    for routed in review.wrapped:
        fid, location = routed.finding_id, routed.finding.location
        assert f"finding-{fid}" in page.ids
        # the finding links to its edit, the edit links back to the finding
        article = document[document.index(f'id="finding-{fid}"') :]
        assert f'href="#edit-{location}"' in article[: article.index("</article>")]
        assert f'href="#finding-{fid}"' in _edit_block(document, location)
    # whole-patch findings come first in the patch, before any edit
    assert document.index('id="edit-whole-patch"') < document.index('id="edit-e1"')
    # every link goes somewhere
    assert {h[1:] for h in page.hrefs} <= set(page.ids)
    outcomes = {
        fid: _section(document, f"finding-{fid}") for fid in ("F1", "F2", "F3", "F4", "F5", "F6")
    }
    assert "verified" in outcomes["F1"] and "refuted" in outcomes["F2"]
    assert "inconclusive" in outcomes["F3"] and "advisory" in outcomes["F4"]
    assert "not run" in outcomes["F5"]
    assert "advisory" in outcomes["F6"] and "trust me" in outcomes["F6"]
    assert (
        "rejected record 7 of the critic's answer (not listed): missing field(s): claim"
        in page.text
    )
    assert "downgraded F6 to advisory" in page.text


def test_the_verdict_and_why_come_first() -> None:
    review, results = hand_review()
    page = _Page(html_document(review, results, REJECT, RUN))
    text = page.text
    assert (
        text.index("Verdict: REJECT") < text.index("Findings (6)") < text.index("Patch patch.diff")
    )
    assert "1 verified blocking defect: F1" in text
    incomplete = Disposition(
        "incomplete",
        (),
        "the review could not look",
        problems=("F1: the patched tree cannot be built", "the findings file is <b>unusable</b>"),
        interrupted=True,
    )
    text = _Page(html_document(review, results, incomplete, RUN)).text
    head = text[: text.index("Findings (6)")]
    assert "Verdict: INCOMPLETE (interrupted)" in head
    assert "F1: the patched tree cannot be built" in head
    assert "the findings file is <b>unusable</b>" in head


def test_both_trees_output_side_by_side_trimmed() -> None:
    long = "\n".join(f"line {n:04d}" for n in range(1, 501)) + "\n" + "x" * 5000
    review, results = hand_review(output=long)
    document = html_document(review, results, REJECT, RUN)
    f1 = _section(document, "finding-F1")
    assert "patched tree" in f1 and "without-e1 tree (counterfactual)" in f1
    first = 502 - OUTPUT_LINES  # 501 lines: the last OUTPUT_LINES are shown
    assert "line 0500" in f1 and f"line {first:04d}" in f1
    assert f"line {first - 1:04d}" not in f1 and "line 0001" not in f1
    assert f"{first - 1} earlier lines not shown" in f1
    assert "x" * 5000 not in document and "x" * 300 in document
    f3 = _section(document, "finding-F3")
    assert "patched says no" in f3 and "counterfactual says no" in f3


def test_blinding_shows_where_never_what() -> None:
    review, results = hand_review()
    text = _Page(html_document(review, results, REJECT, RUN)).text
    assert "self_confidence request $.notes" in text
    assert "SECRET-PHRASE" not in text and "95%" not in text
    assert "votes" in text  # an ignored request key


def test_critic_sandbox_and_timings() -> None:
    review, results = hand_review()
    text = _Page(html_document(review, results, REJECT, RUN)).text
    assert "critic: replayed from findings.json" in text
    assert "sandbox bwrap (isolated)" in text
    assert "wall time 12.5 s" in text
    assert "2023-11-14 22:13:20 UTC" in text
    assert "F1 patched failed 1.50" in text  # each child run's time


def test_the_hook_writes_only_when_asked(tmp_path: Path) -> None:
    review, results = hand_review()

    def config(value: str | None) -> pytest.Config:
        fake = SimpleNamespace(
            getoption=lambda dest: value if dest == "critic22_html" else None,
            invocation_params=SimpleNamespace(dir=tmp_path),
        )
        return cast(pytest.Config, fake)

    html_format.pytest_critic22_review_finished(review, results, REJECT, RUN, config(None))
    assert list(tmp_path.iterdir()) == []
    html_format.pytest_critic22_review_finished(
        review, results, REJECT, RUN, config("out/report.html")
    )
    written = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert written.startswith("<!DOCTYPE html>") and "Verdict: REJECT" in written
