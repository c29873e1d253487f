"""The human checkpoint: every reply spelling, the rendered text, and real terminals."""

from __future__ import annotations

import io
import os
import select
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from pytest_critic22.apps.loop.checkpoint import (
    Reply,
    ask,
    header,
    parse_reply,
    render,
    require_terminal,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs os.openpty")

FIX = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.fixture
def pty() -> Iterator[tuple[int, TextIO]]:
    """(master fd, the slave side opened as a text stream, as a user's stdin would be)."""
    master, slave = os.openpty()
    reader = open(slave, encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        yield master, reader
    finally:
        reader.close()
        os.close(master)


def _drain(master: int) -> bytes:
    """What the program wrote to the terminal so far (echo included)."""
    out = b""
    while select.select([master], [], [], 0.5)[0]:
        chunk = os.read(master, 4096)
        if not chunk:
            break
        out += chunk
    return out


@pytest.mark.parametrize(
    "text", ["go", "continue", "ok", "proceed", "GO", "  Continue \n", "Ok\t", "PROCEED\r\n"]
)
def test_every_go_spelling(text: str) -> None:
    assert parse_reply(text, 3) == Reply("go")


@pytest.mark.parametrize("text", ["stop", "enough", "done", " STOP\n", "Done"])
def test_every_stop_spelling(text: str) -> None:
    assert parse_reply(text, 3) == Reply("stop")


@pytest.mark.parametrize(
    ("text", "skip"),
    [
        ("skip 2", (2,)),
        ("skip 1,3", (1, 3)),
        ("skip 1, 3", (1, 3)),
        ("SKIP 3,1", (1, 3)),
        ("skip 2,2", (2,)),
        ("skip 1 3", (1, 3)),
    ],
)
def test_skip_takes_one_based_fix_numbers(text: str, skip: tuple[int, ...]) -> None:
    assert parse_reply(text, 3) == Reply("skip", skip=skip)


@pytest.mark.parametrize("text", ["skip 0", "skip 4", "skip 1,4", "skip x", "skip -1", "skip 1.5"])
def test_skip_outside_the_fixes_names_the_valid_range(text: str) -> None:
    error = parse_reply(text, 3)
    assert isinstance(error, str) and "1 to 3" in error


def test_skip_needs_numbers_and_fixes() -> None:
    assert isinstance(parse_reply("skip", 3), str)
    error = parse_reply("skip 1", 0)
    assert isinstance(error, str) and "no fixes" in error


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("apply fix.diff", "fix.diff"),
        ("APPLY My Fix.diff  \n", "My Fix.diff"),
        ("apply ../patches/Round2.patch", "../patches/Round2.patch"),
    ],
)
def test_apply_keeps_the_path_as_typed(text: str, path: str) -> None:
    assert parse_reply(text, 3) == Reply("apply", path=path)


@pytest.mark.parametrize("text", ["", "  ", "yes", "go now", "stop it", "please go"])
def test_anything_else_lists_what_is_accepted(text: str) -> None:
    error = parse_reply(text, 3)
    assert isinstance(error, str) and "\n" not in error
    for word in ("go", "continue", "ok", "proceed", "skip N[,M]", "stop", "enough", "done"):
        assert word in error
    assert "apply FILE.diff" in error


def test_apply_needs_a_file() -> None:
    assert parse_reply("apply  ", 3) == "apply needs a file: apply FILE.diff"


def test_header_is_the_seeds_first_line() -> None:
    assert header(2, 4, 7, "almost") == "Round 2/4 review complete. Score: 7/10 — almost"


def test_render_sections_without_the_header() -> None:
    """The loop prints the header after every review; the checkpoint does not repeat it
    (issue 43: it was printed twice)."""
    text = render(["a", "b\nwrapped", "c", "d"], ["fix one", "fix two"])
    lines = ["", *text.splitlines()]
    assert "review complete" not in text
    assert lines[1:6] == [
        "Top verified findings:",
        "  1. a",
        "  2. b wrapped",
        "  3. c",
        "  (+1 more in the journal)",
    ]
    assert lines[6:9] == ["Fixes the loop would apply:", "  1. fix one", "  2. fix two"]
    options = "\n".join(lines[9:])
    for word in ("go", "continue", "ok", "proceed", "skip N[,M]", "stop", "enough", "done"):
        assert word in options
    assert "apply FILE.diff" in options


def test_render_says_none_for_empty_sections() -> None:
    lines = render([], []).splitlines()
    assert lines[0:4] == [
        "Top verified findings:",
        "  (none)",
        "Fixes the loop would apply:",
        "  (none)",
    ]


def test_require_terminal_refuses_a_string_and_a_pipe() -> None:
    error = require_terminal(io.StringIO("go\n"))
    assert error is not None and error.startswith("critic22 loop: --checkpoint needs a terminal")
    assert "\n" not in error and "run without --checkpoint" in error
    read_fd, write_fd = os.pipe()
    with open(read_fd, encoding="utf-8") as reader:
        os.close(write_fd)
        assert require_terminal(reader) == error
    closed = io.StringIO()
    closed.close()
    assert require_terminal(closed) == error


def test_require_terminal_accepts_a_real_terminal(pty: tuple[int, TextIO]) -> None:
    assert require_terminal(pty[1]) is None


@pytest.mark.parametrize(
    ("typed", "reply"),
    [
        (b"go\n", Reply("go")),
        (b"skip 1\n", Reply("skip", skip=(1,))),
        (b"stop\n", Reply("stop")),
        (b"apply fix.diff\n", Reply("apply", path="fix.diff", diff=FIX)),
    ],
)
def test_ask_reads_one_reply_from_a_real_terminal(
    pty: tuple[int, TextIO],
    typed: bytes,
    reply: Reply,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "fix.diff").write_text(FIX)
    monkeypatch.chdir(tmp_path)  # apply reads the file it names, relative to here
    master, reader = pty
    os.write(master, typed)
    out = io.StringIO()
    assert ask(reader, out, "Round 1/4 review complete.", fixes=2) == reply
    assert out.getvalue() == "Round 1/4 review complete.\n> "


def test_ask_reads_only_one_line_per_attempt(pty: tuple[int, TextIO]) -> None:
    master, reader = pty
    os.write(master, b"nonsense\nskip 2\nstop\n")
    out = io.StringIO()
    assert ask(reader, out, "prompt", fixes=2) == Reply("skip", skip=(2,))
    assert reader.readline() == "stop\n"  # the third line was left for the next round
    assert out.getvalue().count("> ") == 2


def test_ask_prompts_on_the_terminal(pty: tuple[int, TextIO]) -> None:
    master, reader = pty
    with open(os.dup(reader.fileno()), "w", encoding="utf-8") as writer:
        os.write(master, b"ok\n")
        assert ask(reader, writer, "Round 3/4 review complete.", fixes=1) == Reply("go")
    shown = _drain(master)
    assert b"Round 3/4 review complete." in shown and b"> " in shown


def test_ask_repeats_after_an_invalid_reply() -> None:
    out = io.StringIO()
    assert ask(io.StringIO("maybe\nskip 9\nskip 1\n"), out, "p", fixes=2) == Reply(
        "skip", skip=(1,)
    )
    text = out.getvalue()
    assert "unrecognised reply 'maybe'" in text and "1 to 2" in text
    assert text.count("> ") == 3


def test_ask_stops_after_too_many_invalid_replies() -> None:
    out = io.StringIO()
    replies = io.StringIO("a\nb\nc\ngo\n")
    assert ask(replies, out, "p", fixes=1, attempts=3) == Reply("stop")
    assert "No valid reply after 3 attempts; stopping the loop." in out.getvalue()
    assert replies.readline() == "go\n"  # never read past its attempts


def test_ask_stops_at_end_of_input() -> None:
    out = io.StringIO()
    assert ask(io.StringIO(""), out, "p\n", fixes=1) == Reply("stop")
    assert out.getvalue().startswith("p\n> ") and "end of input" in out.getvalue()
    out = io.StringIO()
    assert ask(io.StringIO("what\n"), out, "p", fixes=1) == Reply("stop")
    assert "end of input" in out.getvalue()


def test_ask_stops_when_the_terminal_hangs_up(pty: tuple[int, TextIO]) -> None:
    master, reader = pty
    os.write(master, b"\x04")  # Ctrl-D on an empty line: end of input
    assert ask(reader, io.StringIO(), "p", fixes=1) == Reply("stop")
