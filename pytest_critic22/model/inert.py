"""Untrusted text made inert for a terminal or a CI log (DESIGN.md invariant 18).

Claims, evidence and falsifications come from the model critic; reasons, notes and captured
output from code under review; file names from the patch. Shown raw, such text could forge a
line (a newline, a carriage return over our verdict line), drive the terminal (ANSI escape
sequences), run a GitHub workflow command (``::error …`` or ``::stop-commands::`` read at the
start of a line, after leading whitespace; ``##[…]`` read anywhere in a line), reorder what is
shown (bidirectional overrides), or crash the writer (a lone surrogate from JSON cannot be
encoded). :func:`inert` turns every such character into a visible backslash escape; pure,
and it never raises. :func:`safe_line` is what a line of the terminal summary goes through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["inert", "inert_data", "safe_line"]

#: Characters never shown raw: C0 and C1 controls (ESC, CR, LF, TAB, CSI, NEL, ...), DEL, the
#: line and paragraph separators, the bidirectional controls, and surrogates (only a lone one
#: can be in a str, and no codec writes it).
_UNSAFE = re.compile(
    "[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e"
    "\\u2066-\\u2069\\ud800-\\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: GitHub's legacy workflow-command prefix, read anywhere in a line of a job's log.
_LEGACY_COMMAND = "##["
_LEGACY_DEFUSED = "#\\x23["
#: A workflow command after leading whitespace (the runner trims it before it looks).
_LEADING_COMMAND = re.compile(r"^(\s*):(?=:)")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert(text: object) -> str:
    """``text`` as one inert line: every control character, line break, bidirectional control
    and lone surrogate shown as a backslash escape (``\\n``, ``\\r``, ``\\t``, ``\\x1b``,
    ``\\ud800``), GitHub's ``##[`` defused. Printable text, backslashes included, is left as
    it is; so the result is always encodable as UTF-8 and never spans two lines. Never
    raises: an object whose ``str()`` fails is shown by its type."""
    if not isinstance(text, str):
        try:
            text = str(text)
        except Exception:  # shown, never raised: it is only text
            return f"<unprintable {type(text).__name__}>"
    text = _UNSAFE.sub(_escape, text)
    return text.replace(_LEGACY_COMMAND, _LEGACY_DEFUSED) if _LEGACY_COMMAND in text else text


def safe_line(text: object) -> str:
    """One line of the terminal summary: :func:`inert`, and a line that would start with
    ``::`` (after its indent) starts with ``\\x3a:`` instead, so no workflow command can be
    read from it whatever it embeds."""
    return _LEADING_COMMAND.sub(r"\1\\x3a", inert(text), count=1)


def inert_data(value: object) -> object:
    """A JSON-able document with every lone surrogate in its strings (keys too) shown as a
    backslash escape (``\\ud800``): strict JSON readers (code scanning's among them) reject
    the escaped lone surrogates ``json.dumps`` would write. Other text is unchanged."""
    if isinstance(value, str):
        return _without_surrogates(value)
    if isinstance(value, Mapping):
        return {
            (_without_surrogates(k) if isinstance(k, str) else k): inert_data(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [inert_data(v) for v in value]
    return value


_SURROGATE = re.compile("[\\ud800-\\udfff]")


def _without_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
