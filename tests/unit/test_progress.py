"""Live progress (issue 14): the model call and each procedure step on the terminal, from the
controller and from xdist workers. The module itself here; end to end (a slow loopback model,
serially, under xdist and with -q, and the generated items' JUnit properties) in
tests/test_critic.py, whose runs also check the critic's wiring."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pytest

from pytest_critic22.execution.progress import (
    Counter,
    FileProgress,
    Tailer,
    TerminalProgress,
    clean,
    labelled,
    ticking,
    worker_progress,
)


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
