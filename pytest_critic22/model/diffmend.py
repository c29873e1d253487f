"""A diff as models write it, mended once into the diff ``git apply`` reads as meant.

Pure. A critic's ``repair:`` and the review loop's fixes come with miscounted hunks, no
``a/``/``b/`` prefixes, two files without ``diff --git`` lines, CRLF line endings or no last
newline; they are mended here, once, and applied as mended (never with git's ``--recount``,
which reads a next file's ``---``/``+++`` lines as hunk lines). A diff git wrote comes back
byte for byte; start lines and context lines are never changed, so git still checks them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["mend_diff", "recount_hunks"]

_FILE_START_GIT = "diff --git "
_DEV_NULL = "/dev/null"

_RECOUNT_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def mend_diff(text: str) -> str:
    """A diff as models write it, made into the diff ``git apply`` reads as meant; a diff
    git wrote comes back byte for byte. The result is applied as it is (no ``--recount``:
    git's recount reads a next file's ``---``/``+++`` lines as hunk lines).

    - Every line ends in CRLF, the ``---``/``+++`` lines too (git never writes them so):
      the text came through something that changed line endings; each line loses one CR.
    - No newline after the last line: one is added (git would call the patch corrupt).
    - Hunk counts that do not fit the body: :func:`recount_hunks`.
    - A ``---``/``+++`` pair without git's ``a/`` and ``b/``: both names get them, and so
      does the pair's ``diff --git`` line, so the ``-p1`` of ``git apply`` takes them off.

    Start lines and every context line stay as written, so git still checks the context
    exactly: a repair written against text the tree does not hold is refused.
    """
    *ended, last = text.split("\n")
    if ended and all(line.endswith("\r") for line in ended):
        # A last line without its line end lost the whole CRLF; any CR left is the file's.
        text = "".join(f"{line[:-1]}\n" for line in ended) + last
    if text and not text.endswith("\n"):
        text += "\n"
    return _mend(text, prefixes=True)


def recount_hunks(text: str) -> str:
    """``text`` with each hunk header's line counts recomputed from the hunk's body where
    they do not fit it: models routinely miscount ``@@ -101,8 +101,12 @@``.

    Only counts that are wrong change (``@@ -3 +3 @@`` stays when each side has one line);
    the start lines and the body stay as written, so the context is still checked exactly
    when the diff is applied. A blank line inside a hunk (an editor or a model ate the
    leading space) is an empty context line. Blank lines that end a hunk are ambiguous:
    when the header's counts fit the hunk with them, or without them, the counts decide;
    otherwise they are context before another hunk or file, and not the hunk's at the end.
    """
    return _mend(text, prefixes=False)


def _mend(text: str, *, prefixes: bool) -> str:
    ends = text.endswith("\n")
    lines = text.split("\n")
    if ends:
        lines.pop()
    out: list[str] = []
    git_line: int | None = None  # where in out the current file's "diff --git" line is
    index = 0
    while index < len(lines):
        line = lines[index]
        header = _RECOUNT_HEADER.match(line)
        if header is None:
            if line.startswith(_FILE_START_GIT):
                git_line = len(out)
            if prefixes and _is_file_pair(lines, index):
                out.extend(_with_prefixes(line, lines[index + 1], out, git_line))
                git_line = None
                index += 2
                continue
            out.append(line)
            index += 1
            continue
        start = index = index + 1
        while index < len(lines) and not _ends_hunk(lines, index):
            index += 1
        hunk, after = _hunk_and_after(header, lines[start:index], _another(lines, index))
        old, new = _counts(hunk)
        if (old, new) != _written(header):
            old_start, _, new_start, _, tail = header.groups()
            line = f"@@ -{old_start},{old} +{new_start},{new} @@{tail}"
        out.append(line)
        out.extend(hunk)
        out.extend(after)
    return "\n".join(out) + ("\n" if ends else "")


def _hunk_and_after(
    header: re.Match[str], raw: list[str], more: bool
) -> tuple[list[str], list[str]]:
    """The hunk's body (blank lines made context lines) and the blank lines after it."""
    inner = len(raw)
    while inner > 0 and _blank(raw[inner - 1]):
        inner -= 1
    written = _written(header)
    if inner < len(raw) and (
        written == _counts(raw[:inner]) or (not more and written != _counts(raw))
    ):
        body, after = raw[:inner], raw[inner:]
    else:
        body, after = raw, []
    return [f" {line}" if _blank(line) else line for line in body], after


def _written(header: re.Match[str]) -> tuple[int, int]:
    # A count left out is one line ("@@ -3 +3 @@").
    old, new = header.group(2), header.group(4)
    return (1 if old is None else int(old)), (1 if new is None else int(new))


def _counts(body: Sequence[str]) -> tuple[int, int]:
    old = sum(1 for line in body if _blank(line) or line[:1] in (" ", "-"))
    new = sum(1 for line in body if _blank(line) or line[:1] in (" ", "+"))
    return old, new


def _blank(line: str) -> bool:
    return line in ("", "\r")


def _another(lines: Sequence[str], index: int) -> bool:
    """Whether another hunk or file starts at ``index``."""
    if index >= len(lines):
        return False
    return lines[index].startswith(("@@ ", _FILE_START_GIT, "Index: ")) or _is_file_pair(
        lines, index
    )


def _is_file_pair(lines: Sequence[str], index: int) -> bool:
    return (
        lines[index].startswith("--- ")
        and index + 1 < len(lines)
        and lines[index + 1].startswith("+++ ")
    )


def _ends_hunk(lines: Sequence[str], index: int) -> bool:
    line = lines[index]
    if line.startswith("--- "):
        # A removed "-- " line, unless a "+++ " line follows: then a new file starts.
        return _is_file_pair(lines, index)
    if line.startswith(("@@ ", _FILE_START_GIT, "Index: ")):
        return True
    return not (_blank(line) or line[:1] in (" ", "+", "-", "\\"))


def _with_prefixes(
    old_line: str, new_line: str, out: list[str], git_line: int | None
) -> tuple[str, str]:
    """The pair with git's ``a/`` and ``b/``, unless it has them; the pair's ``diff --git``
    line in ``out`` gets them too when it names the same files."""
    old, new = old_line[4:], new_line[4:]
    old_name, new_name = _header_name(old), _header_name(new)
    if (old_name == _DEV_NULL or old_name.startswith("a/")) and (
        new_name == _DEV_NULL or new_name.startswith("b/")
    ):
        return old_line, new_line
    if git_line is not None:
        first = new_name if old_name == _DEV_NULL else old_name
        second = old_name if new_name == _DEV_NULL else new_name
        eol = "\r" if out[git_line].endswith("\r") else ""
        if out[git_line] == f"{_FILE_START_GIT}{first} {second}{eol}":
            out[git_line] = f"{_FILE_START_GIT}a/{first} b/{second}{eol}"
    return f"--- {_prefixed(old, 'a/')}", f"+++ {_prefixed(new, 'b/')}"


def _header_name(name: str) -> str:
    """The path of a ``---``/``+++`` line's rest: no timestamp, no quotes, no line end."""
    name = name.split("\t", 1)[0].rstrip()
    return name[1:-1] if len(name) > 1 and name[0] == name[-1] == '"' else name


def _prefixed(name: str, prefix: str) -> str:
    if _header_name(name) == _DEV_NULL:
        return name
    return f'"{prefix}{name[1:]}' if name.startswith('"') else f"{prefix}{name}"
