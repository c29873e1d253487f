"""Live progress (issue 14): the model call and each procedure step on the terminal, from the
controller and from xdist workers; and the generated items' JUnit properties."""

from __future__ import annotations

import io
import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_critic22.progress import (
    Counter,
    FileProgress,
    Tailer,
    TerminalProgress,
    clean,
    labelled,
    ticking,
    worker_progress,
)
from pytest_critic22.samples import case_dir
from tests.e2e import make_sample
from tests.fake_llm import fake_llm

DROPS = case_dir("textstats", "median-drops-guard")
RECORD = {
    "location": "e2",
    "claim": "mean() of empty input no longer raises ValueError.",
    "severity": "blocking",
    "evidence": "e2 deletes the guard.",
    "falsification": "test:\nimport pytest\nfrom textstats import mean\n\n"
    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n",
    "confidence": 0.7,
}
SLOW = [("sleep", 3, json.dumps({"findings": [RECORD]}))]  # the model answers after 3 s


class Recorder:
    def __init__(self, live: bool = False) -> None:
        self.live = live
        self.lines: list[str] = []

    def __call__(self, text: str) -> None:
        self.lines.append(text)


# -- the module, pure ------------------------------------------------------------------------


def test_the_tailer_shows_each_appended_line_once_and_in_order(tmp_path: Path) -> None:
    shown = Recorder()
    tailer = Tailer(tmp_path, shown)
    assert tailer.poll() == 0  # nothing yet (and no folder content) is fine
    sink = FileProgress(tmp_path / "gw0.log", live=False)
    sink("F1 [e2] test: patched run 1/3 …")
    sink("F1 [e2] test: patched run 2/3 …")
    assert tailer.poll() == 2
    assert tailer.poll() == 0  # read once
    with open(tmp_path / "gw1.log", "ab") as fh:  # a line still being written waits
        fh.write(b"preserve[tests/test_x.py]: patched")
    sink("F1 [e2] test: counterfactual (without-e2) …")
    assert tailer.poll() == 1
    with open(tmp_path / "gw1.log", "ab") as fh:
        fh.write(b" run \xe2\x80\xa6\n")
    (tmp_path / "notes.txt").write_text("not ours\n")
    (tmp_path / "gw2.log").symlink_to(tmp_path / "notes.txt")  # never read through a link
    assert tailer.poll() == 1
    assert shown.lines == [
        "[gw0] F1 [e2] test: patched run 1/3 …",
        "[gw0] F1 [e2] test: patched run 2/3 …",
        "[gw0] F1 [e2] test: counterfactual (without-e2) …",
        "[gw1] preserve[tests/test_x.py]: patched run …",
    ]


def test_a_line_from_a_file_cannot_steer_the_terminal(tmp_path: Path) -> None:
    (tmp_path / "gw0.log").write_bytes(b"F1 \x1b[2J\x1b]0;title\x07 ok\r\x00\n")
    shown = Recorder()
    Tailer(tmp_path, shown).poll()
    assert shown.lines == ["[gw0] F1 [2J ]0;title ok"]
    assert clean("a\n\tb" + "x" * 500).startswith("a b") and len(clean("x" * 500)) == 200


def reporter(pytester: pytest.Pytester) -> tuple[pytest.TerminalReporter, io.StringIO]:
    out = io.StringIO()
    return pytest.TerminalReporter(pytester.parseconfig(), out), out


def test_in_a_log_each_step_is_a_plain_line(pytester: pytest.Pytester) -> None:
    tr, out = reporter(pytester)
    display = TerminalProgress(tr, live=False)
    tr.write("patch.diff ")
    sink = labelled(display, "F2 [e1] test")
    assert sink is not None
    sink("patched run 1/3 …")
    sink("counterfactual (without-e1) \r\x1b[31m…")
    display.settle()
    tr.write("F")
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines() == [
        "patch.diff ",
        "critic22: F2 [e1] test: patched run 1/3 …",
        "critic22: F2 [e1] test: counterfactual (without-e1) [31m…",
        "F",
    ]


def test_on_a_terminal_one_line_is_rewritten_and_pytest_s_line_is_left_as_it_was(
    pytester: pytest.Pytester,
) -> None:
    tr, out = reporter(pytester)
    display = TerminalProgress(tr, live=True)
    tr.write("patch.diff ..")
    display("F2 [e1] test: patched run 1/3 …")
    display("F2 [e1] test: patched run 2/3 …")
    display.settle()
    tr.write("F")
    assert out.getvalue() == (
        "patch.diff ..\n"
        "\rcritic22: F2 [e1] test: patched run 1/3 …\x1b[K"
        "\rcritic22: F2 [e1] test: patched run 2/3 …\x1b[K"
        "\r\x1b[K\x1b[A\x1b[14G"  # erased, and back to the end of pytest's line
        "F"
    )


def test_ticks_every_second_on_a_terminal_and_only_start_and_end_in_a_log() -> None:
    live, log = Recorder(live=True), Recorder(live=False)
    with ticking(live, "asking m") as tick, ticking(log, "asking m"):
        deadline = time.monotonic() + 9  # the first tick comes after a second
        while len(live.lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        tick.outcome = "answered"
    first, *ticks, last = live.lines
    assert first == "asking m …" and ticks and last.startswith("asking m … answered after ")
    assert all(re.fullmatch(r"asking m … [1-9] s", line) for line in ticks)
    assert len(log.lines) == 2 and re.fullmatch(r"asking m … done after \d s", log.lines[1])
    with pytest.raises(RuntimeError), ticking(log, "asking m"):
        raise RuntimeError
    assert log.lines[-1] == "asking m … failed after 0 s"


def test_a_counter_counts_on_a_terminal_and_says_one_line_in_a_log() -> None:
    live, log = Recorder(live=True), Recorder(live=False)
    for sink in (live, log):
        count = Counter(labelled(sink, "F3 [e1] trace"), "replays", 2, " on patched and base")
        count()
        count()
    assert log.lines == ["F3 [e1] trace: replays 0/2 on patched and base …"]
    assert live.lines[-1] == "F3 [e1] trace: replays 2/2 on patched and base …"
    assert len(live.lines) == 3


def test_a_worker_writes_only_when_the_controller_shows(tmp_path: Path) -> None:
    assert worker_progress({"workerid": "gw0"}, tmp_path) is None  # -q on the controller
    sink = worker_progress({"workerid": "gw3", "critic22_progress": "live"}, tmp_path)
    assert sink is not None and sink.live and sink.path == tmp_path / "gw3.log"
    odd = worker_progress({"workerid": "../x", "critic22_progress": "plain"}, tmp_path)
    assert odd is not None and odd.path == tmp_path / "worker.log" and not odd.live


# -- end to end: a slow loopback model, serial and under xdist, and -q ------------------------


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-api-key-0123456789")
    monkeypatch.delenv("CRITIC", raising=False)
    monkeypatch.delenv("CRITIC22_MODEL", raising=False)
    return make_sample(pytester, "textstats")


def review_with_slow_model(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    with fake_llm(SLOW) as server:
        return pytester.runpytest_subprocess(
            f"--critic22={DROPS / 'patch.diff'}",
            "--critic22-model=openai/critic-test",
            f"--critic22-api-base={server.url}",
            "--critic22-only",
            "--critic22-reruns=1",
            f"--junitxml={pytester.path / 'junit.xml'}",
            *extra,
        )


def junit_properties(pytester: pytest.Pytester) -> dict[str, dict[str, str]]:
    """testcase name -> its properties (critic22's JSON result left out)."""
    root = ET.parse(pytester.path / "junit.xml").getroot()
    return {
        case.attrib["name"]: {
            p.attrib["name"]: p.attrib["value"]
            for p in case.iter("property")
            if p.attrib["name"] != "critic22"
        }
        for case in root.iter("testcase")
    }


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_serial_run_shows_the_model_call_and_every_step(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = review_with_slow_model(pytester, "--critic22-preservation=off")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "\r" not in out  # not a terminal: plain lines
    assert "critic22: asking openai/critic-test …" in result.outlines
    assert re.search(r"^critic22: asking openai/critic-test … answered after [3-9] s$", out, re.M)
    result.stdout.fnmatch_lines(
        [
            "critic22: F1 [[]e2[]] test: patched run 1/1 …",
            "critic22: F1 [[]e2[]] test: counterfactual (without-e2) …",
            "patch.diff F*",  # the outcome on a line of its own, after its steps
        ]
    )
    assert junit_properties(pytester)["F1[e2]"] == {
        "critic22_finding": "F1",
        "critic22_location": "e2",
        "critic22_outcome": "verified",
    }


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_under_xdist_the_controller_shows_what_the_workers_do(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = review_with_slow_model(pytester, "-n", "2")
    result.assert_outcomes(failed=2)  # F1 and the preservation group
    asked = r"^critic22: asking openai/critic-test … answered after \d+ s$"
    assert re.search(asked, result.stdout.str(), re.M)
    result.stdout.re_match_lines_random(
        [
            r"critic22: \[gw\d\] F1 \[e2\] test: patched run 1/1 …$",
            r"critic22: \[gw\d\] F1 \[e2\] test: counterfactual \(without-e2\) …$",
            r"critic22: \[gw\d\] preserve\[tests/test_stats.py\]: patched run \(\d+ test\(s\)\) …$",
        ]
    )
    properties = junit_properties(pytester)
    assert properties["F1[e2]"] == {
        "critic22_finding": "F1",
        "critic22_location": "e2",
        "critic22_outcome": "verified",
    }
    assert properties["preserve[tests/test_stats.py]"] == {
        "critic22_finding": "preserve[tests/test_stats.py]",
        "critic22_location": "tests/test_stats.py",
        "critic22_outcome": "verified",
    }


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_quiet_keeps_it_all_quiet(pytester: pytest.Pytester, repo: Path) -> None:
    result = review_with_slow_model(pytester, "-q", "--critic22-preservation=off")
    result.assert_outcomes(failed=1)
    said = [line for line in result.outlines if line.startswith("critic22: ")]
    assert said == ["critic22: 1 of the collected items generated from patch.diff"]  # no more
    assert "asking" not in result.stdout.str() and "patched run" not in result.stdout.str()
