"""The human checkpoint: after each round's review, show the result and read one reply.

With ``--checkpoint`` the loop stops between review and repair so a person decides what
is applied: all the verified fixes, all but some, a diff of their own, or nothing more.
Parsing is a pure function so every spelling is tested; :func:`ask` reads lines from the
stream it is given (and the file an ``apply`` names: a regular file of at most
:data:`MAX_DIFF_BYTES`, anything else is a reply to give again), and any doubt (end of
input, repeated nonsense) ends in ``stop``, because applying fixes nobody approved is the one
thing a checkpoint must never do.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

__all__ = [
    "MAX_DIFF_BYTES",
    "Reply",
    "ask",
    "header",
    "parse_reply",
    "read_diff",
    "render",
    "require_terminal",
]

GO_WORDS = ("go", "continue", "ok", "proceed")
STOP_WORDS = ("stop", "enough", "done")
#: How many findings the checkpoint shows; the journal keeps all of them.
TOP_FINDINGS = 3
#: The largest diff ``apply FILE`` reads: a fix is small, and ``/dev/zero`` is endless.
MAX_DIFF_BYTES = 2 << 20

ACCEPTED = "answer go/continue/ok/proceed, skip N[,M], stop/enough/done, or apply FILE.diff"
OPTIONS = (
    "Options:",
    "  go | continue | ok | proceed   apply the fixes above",
    "  skip N[,M]                     apply the fixes above except fix N (and M)",
    "  stop | enough | done           end the loop and record the current state",
    "  apply FILE.diff                apply your own diff instead of the fixes above",
)
TERMINAL_NEEDED = (
    "critic22 loop: --checkpoint needs a terminal on stdin (it reads one reply per round); "
    "run without --checkpoint to let the loop apply verified repairs by itself"
)

_WORDS = re.compile(r"(\S+)\s*(.*)", re.DOTALL)
_NUMBER = re.compile(r"[0-9]+\Z")


@dataclass(frozen=True, slots=True)
class Reply:
    """What the person chose; ``skip`` holds 1-based fix numbers, ``path`` the diff to apply
    and ``diff`` its text (read by :func:`ask`)."""

    action: Literal["go", "skip", "stop", "apply"]
    skip: tuple[int, ...] = ()
    path: str | None = None
    diff: str | None = None


def parse_reply(text: str, fixes: int) -> Reply | str:
    """The reply, or the one-line error to show (the caller asks again)."""
    match = _WORDS.fullmatch(text.strip())
    if match is None:
        return f"empty reply: {ACCEPTED}"
    word, rest = match.group(1).lower(), match.group(2).strip()
    if word in GO_WORDS and not rest:
        return Reply("go")
    if word in STOP_WORDS and not rest:
        return Reply("stop")
    if word == "apply":
        # The path exactly as typed: file names are case-sensitive.
        return Reply("apply", path=rest) if rest else "apply needs a file: apply FILE.diff"
    if word == "skip":
        return _skip(rest, fixes)
    return f"unrecognised reply {text.strip()!r}: {ACCEPTED}"


def read_diff(name: str) -> str:
    """The text of the diff file ``name`` (``~`` expanded, relative to the current folder),
    read with a bound; ValueError with the one line to show when it is not a regular file
    (a device, a FIFO, a folder), is larger than :data:`MAX_DIFF_BYTES`, cannot be read or
    is not UTF-8."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(Path(name).expanduser(), flags)
    except OSError as exc:
        raise ValueError(f"apply {name}: cannot read it ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ValueError(f"apply {name}: not a regular file; give the path of a diff file")
    with os.fdopen(fd, "rb") as handle:
        data = b"" if info.st_size > MAX_DIFF_BYTES else handle.read(MAX_DIFF_BYTES + 1)
    if info.st_size > MAX_DIFF_BYTES or len(data) > MAX_DIFF_BYTES:
        limit = f"{MAX_DIFF_BYTES >> 20} MiB"
        raise ValueError(f"apply {name}: larger than {limit}; a fix is a small diff file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"apply {name}: not UTF-8 text; give a unified diff") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as read_text's newlines


def _with_diff(reply: Reply) -> Reply | str:
    """An ``apply`` reply with its file read, or the one line saying why it cannot be."""
    try:
        return dataclasses.replace(reply, diff=read_diff(reply.path or ""))
    except ValueError as exc:
        return str(exc)


def _skip(rest: str, fixes: int) -> Reply | str:
    if fixes < 1:
        return "there are no fixes to skip this round; answer go, stop or apply FILE.diff"
    valid = f"fix numbers go from 1 to {fixes}"
    parts = [p for p in re.split(r"[\s,]+", rest) if p]
    if not parts:
        return f"skip needs the fix numbers to skip, e.g. skip 1 or skip 1,3 ({valid})"
    bad = [p for p in parts if not _NUMBER.match(p) or not 1 <= int(p) <= fixes]
    if bad:
        return f"cannot skip {', '.join(bad)}: {valid}"
    return Reply("skip", skip=tuple(sorted({int(p) for p in parts})))


def _one_line(text: str) -> str:
    """Findings and fixes can span lines; the checkpoint shows each on one."""
    return " ".join(text.split())


def header(round: int, max_rounds: int, score: int, verdict: str) -> str:
    """The seed's first checkpoint line, which the loop prints after every round's review
    (with or without a checkpoint): :func:`render` follows it, never repeats it."""
    return f"Round {round}/{max_rounds} review complete. Score: {score}/10 — {verdict}"


def render(findings: Sequence[str], fixes: Sequence[str]) -> str:
    """The rest of the seed's checkpoint text, under :func:`header`: the top findings, the
    fixes, the options."""
    lines = ["Top verified findings:"]
    shown = findings[:TOP_FINDINGS]
    lines += [f"  {n}. {_one_line(f)}" for n, f in enumerate(shown, 1)] or ["  (none)"]
    if len(findings) > len(shown):
        lines.append(f"  (+{len(findings) - len(shown)} more in the journal)")
    lines.append("Fixes the loop would apply:")
    lines += [f"  {n}. {_one_line(f)}" for n, f in enumerate(fixes, 1)] or ["  (none)"]
    lines += OPTIONS
    return "\n".join(lines)


def require_terminal(stdin: TextIO) -> str | None:
    """None when ``stdin`` is a terminal, else the usage error: a checkpoint on a pipe would
    either hang or read a script's answers as a person's approval."""
    try:
        if stdin.isatty():
            return None
    except (AttributeError, OSError, ValueError):  # a closed or unusual stream: no terminal
        pass
    return TERMINAL_NEEDED


def ask(stdin: TextIO, stdout: TextIO, prompt: str, fixes: int, attempts: int = 3) -> Reply:
    """Show ``prompt`` and read one line per attempt; end of input or ``attempts`` invalid
    replies mean ``stop``, never an unapproved ``go``. An ``apply`` whose file cannot be
    used (:func:`read_diff`) is an invalid reply: said in one line, and asked again."""
    stdout.write(prompt if prompt.endswith("\n") or not prompt else prompt + "\n")
    for _ in range(max(1, attempts)):
        stdout.write("> ")
        stdout.flush()
        line = stdin.readline()
        if not line:
            stdout.write("\nNo reply (end of input); stopping the loop.\n")
            stdout.flush()
            return Reply("stop")
        reply = parse_reply(line, fixes)
        if isinstance(reply, Reply) and reply.action == "apply":
            reply = _with_diff(reply)
        if isinstance(reply, Reply):
            return reply
        stdout.write(reply + "\n")
    stdout.write(f"No valid reply after {max(1, attempts)} attempts; stopping the loop.\n")
    stdout.flush()
    return Reply("stop")
