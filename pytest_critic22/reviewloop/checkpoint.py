"""The human checkpoint: after each round's review, show the result and read one reply.

With ``--checkpoint`` the loop stops between review and repair so a person decides what
is applied: all the verified fixes, all but some, a diff of their own, or nothing more.
Parsing is a pure function so every spelling is tested; :func:`ask` only reads lines from
the stream it is given, and any doubt (end of input, repeated nonsense) ends in ``stop``,
because applying fixes nobody approved is the one thing a checkpoint must never do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

__all__ = ["Reply", "ask", "parse_reply", "render", "require_terminal"]

GO_WORDS = ("go", "continue", "ok", "proceed")
STOP_WORDS = ("stop", "enough", "done")
#: How many findings the checkpoint shows; the journal keeps all of them.
TOP_FINDINGS = 3

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
    """What the person chose; ``skip`` holds 1-based fix numbers, ``path`` the diff to apply."""

    action: Literal["go", "skip", "stop", "apply"]
    skip: tuple[int, ...] = ()
    path: str | None = None


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


def render(
    round: int,
    max_rounds: int,
    score: int,
    verdict: str,
    findings: Sequence[str],
    fixes: Sequence[str],
) -> str:
    """The seed's checkpoint text: the round's result, the top findings, the fixes, options."""
    lines = [f"Round {round}/{max_rounds} review complete. Score: {score}/10 — {verdict}"]
    lines.append("Top verified findings:")
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
    replies mean ``stop``, never an unapproved ``go``."""
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
        if isinstance(reply, Reply):
            return reply
        stdout.write(reply + "\n")
    stdout.write(f"No valid reply after {max(1, attempts)} attempts; stopping the loop.\n")
    stdout.flush()
    return Reply("stop")
