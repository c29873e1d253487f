"""The HTML report (``--critic22-html``).

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_formats_html.py.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from pytest_critic22.report.formats.html import html_document
from tests.runs import case_args, expected, make_sample
from tests.unit.test_formats_html import (
    IMG,
    REJECT,
    RUN,
    SCRIPT_CLAIM,
    _Page,
    _section,
    hand_review,
)

BROWSER = "chromium-headless-shell"


WINDOW = (1280, 1600)


def browser_or_skip() -> str:
    """chromium-headless-shell, which CI installs: there its absence fails the test."""
    found = shutil.which(BROWSER) or (
        f"/usr/bin/{BROWSER}" if os.access(f"/usr/bin/{BROWSER}", os.X_OK) else None
    )
    problem = None if found else f"{BROWSER} is not installed (apt-get install {BROWSER})"
    if found:
        try:
            probe = subprocess.run(
                [found, "--version"], capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            problem = f"{BROWSER} --version: {exc}"
        else:
            if probe.returncode != 0:
                problem = f"{BROWSER} --version exits {probe.returncode}: {probe.stderr[-300:]}"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the HTML report in a real browser, but {problem}")
        pytest.skip(problem)
    assert found is not None
    return found


def browse(browser: str, page: Path, scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the headless browser on a ``file://`` page with an empty HOME and profile."""
    home = scratch / "home"
    home.mkdir(parents=True, exist_ok=True)
    command = [
        browser,
        "--no-sandbox",  # CI runs as root; the page is ours and loads nothing
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={scratch / 'profile'}",
        *args,
        page.resolve().as_uri(),
    ]
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=180, env=env, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.e2e
def test_the_browser_runs_scripts_but_not_in_the_report(tmp_path: Path) -> None:
    """The control: this browser does run a page's script (so "nothing ran" means something),
    and the report's own Content-Security-Policy stops one even if markup slipped through."""
    browser = browser_or_skip()
    plain = tmp_path / "plain.html"
    plain.write_text(
        "<!DOCTYPE html><html><head><title>before</title></head><body>"
        "<script>document.title = 'ran'</script></body></html>"
    )
    assert _Page(browse(browser, plain, tmp_path, "--dump-dom").stdout).title == "ran"
    review, results = hand_review()
    injected = html_document(review, results, REJECT, RUN).replace(
        "</head>", "<script>document.title = 'ran'</script></head>", 1
    )
    page = tmp_path / "injected.html"
    page.write_text(injected, encoding="utf-8")
    assert _Page(browse(browser, page, tmp_path, "--dump-dom").stdout).title == (
        "critic22 REJECT: patch.diff"
    )


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_real_review_reads_right_in_a_real_browser(pytester: pytest.Pytester) -> None:
    browser = browser_or_skip()
    sample, case = "textstats", "report-tour"
    repo = make_sample(pytester, sample)
    want = expected(sample, case)
    out = repo.parent / "out"
    report, page = out / "report.json", out / "report.html"
    result = pytester.runpytest_subprocess(
        *case_args(sample, case),
        f"--critic22-report={report}",
        f"--critic22-html={page}",
        "--critic22-reruns=1",
    )
    result.assert_outcomes(**want["outcomes"])
    assert result.ret == want["exit"]
    document = json.loads(report.read_text())
    assert {f["id"]: f["outcome"]["status"] for f in document["findings"]} == want["findings"]
    claims = {f["id"]: f["finding"]["claim"] for f in document["findings"]}

    scratch = repo.parent / "browser"
    dom = browse(browser, page, scratch, "--dump-dom").stdout
    shown = _Page(dom)
    text = shown.text
    # the verdict and why, at the top
    assert (
        text.index("Verdict: REJECT") < text.index("Findings (4)") < text.index("Patch patch.diff")
    )
    assert want["verdict"].upper() == "REJECT"
    assert "2 verified blocking defects: F1, preserve[tests/test_stats.py]" in text
    # every finding, its claim and its outcome; every edit
    for fid, claim in claims.items():
        section = _section(dom, f"finding-{fid}")
        assert claim in section and want["findings"][fid] in section, fid
    assert {"edit-e1", "edit-e2", "edit-e3", "edit-whole-patch"} <= set(shown.ids)
    # both trees' output, side by side
    f1 = _section(dom, "finding-F1")
    assert "patched tree" in f1 and "DID NOT RAISE ValueError" in f1
    assert "without-e2 tree (counterfactual)" in f1 and "1 passed" in f1
    f3 = _section(dom, "finding-F3")
    assert f3.count("AssertionError") >= 2 and "without-e3 tree (counterfactual)" in f3
    # the critic's markup is text: escaped in the DOM, and no element of it exists
    assert SCRIPT_CLAIM in text and IMG in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; must render as text" in dom
    assert "script" not in shown.tags and "img" not in shown.tags
    assert not [name for name, _ in shown.attrs if name.startswith("on")]
    assert shown.title == "critic22 REJECT: patch.diff"  # no onerror rewrote it

    shot = scratch / "report.png"
    browse(browser, page, scratch, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}")
    assert png_size(shot) == WINDOW
    assert shot.stat().st_size > 40_000  # a rendered page, not a blank one
