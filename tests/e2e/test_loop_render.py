"""The loop's journal page, AUTO_REVIEW.html.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_loop_render.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.apps.loop.render import render_file
from tests.e2e.test_formats_html import browse, browser_or_skip, png_size
from tests.unit.test_formats_html import _Page
from tests.unit.test_loop_render import CLAIM, RUN, _journal

WINDOW = (1280, 1600)


@pytest.mark.e2e
def test_a_two_round_journal_reads_right_in_a_real_browser(tmp_path: Path) -> None:
    browser = browser_or_skip()
    stage = tmp_path / "review-stage"
    _journal(stage)
    page = render_file(stage)
    assert page is not None
    scratch = tmp_path / "browser"
    dom = browse(browser, page, scratch, "--dump-dom").stdout
    shown = _Page(dom)
    text = shown.text
    assert shown.title == "critic22 loop: Auto Review Log"
    assert text.index("Round 1") < text.index("Round 2") < text.index("Final")
    assert f"{RUN} · 2026-07-13 10:00 UTC · acquitted (ready) · 37.2 s" in text
    assert "Score: 6/10" in text and "Score: 10/10" in text
    assert CLAIM in text and "Verdict: ready" in text
    # the raw answer is text: no element of it exists, the closing tag is shown
    assert "script" not in shown.tags and "img" not in shown.tags
    assert "</details> <script>alert(1)</script>" in text
    shot = scratch / "journal.png"
    browse(browser, page, scratch, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    assert png_size(shot) == WINDOW
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
