"""Operator mutants of a fix's added lines (pure): the candidates for its defective twin.

Token-level (:mod:`tokenize`), so comments, strings and docstrings are never touched and
every other byte of the file stays as it was. Only tokens on lines the fix added are
mutated; a mutant must still parse, and must not restore a line the fix removed (that is a
revert of the fix, not a small wrong variant of it). Mutants come out ordered by how
realistic a mistake they are: off-by-one and boundary flips first, then dropped or flipped
conditions, then the rest.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pytest_critic22.apps.mine.select import FileDiff

__all__ = ["Mutant", "mutants_of"]

# (replacement, rank, operator name); rank 0 is the most realistic mistake.
_OPS: Mapping[str, tuple[tuple[str, int, str], ...]] = {
    "<": (("<=", 0, "boundary"),),
    "<=": (("<", 0, "boundary"),),
    ">": ((">=", 0, "boundary"),),
    ">=": ((">", 0, "boundary"),),
    "==": (("!=", 1, "flipped comparison"),),
    "!=": (("==", 1, "flipped comparison"),),
    "+=": (("-=", 2, "augmented assignment"),),
    "-=": (("+=", 2, "augmented assignment"),),
    "+": (("-", 2, "arithmetic"),),
    "-": (("+", 2, "arithmetic"),),
}
_NAMES: Mapping[str, tuple[tuple[str, int, str], ...]] = {
    "and": (("or", 1, "and/or"),),
    "or": (("and", 1, "and/or"),),
    "not": (("", 1, "dropped not"),),
    "True": (("False", 2, "constant"),),
    "False": (("True", 2, "constant"),),
    "min": (("max", 2, "min/max"),),
    "max": (("min", 2, "min/max"),),
}
_BINARY_LEFT = {tokenize.NAME, tokenize.NUMBER, tokenize.STRING}


@dataclass(frozen=True, slots=True)
class Mutant:
    path: str
    line: int
    col: int
    operator: str  # "boundary", "off-by-one", ...
    before: str  # the token replaced
    after: str  # what replaced it ("" for a dropped token)
    rank: int
    source: str  # the whole mutated file

    @property
    def description(self) -> str:
        shown = repr(self.after) if self.after else "nothing"
        return f"{self.operator}: {self.before!r} -> {shown} at {self.path}:{self.line}"

    def sort_key(self) -> tuple[int, str, int, int, str]:
        return (self.rank, self.path, self.line, self.col, self.after)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "operator": self.operator,
            "before": self.before,
            "after": self.after,
        }


def _replacements(
    token: tokenize.TokenInfo, previous: tokenize.TokenInfo | None
) -> Iterator[tuple[str, int, str]]:
    if token.type == tokenize.OP and token.string in _OPS:
        if token.string in ("+", "-") and not _binary(previous):
            return
        yield from _OPS[token.string]
    elif token.type == tokenize.NAME and token.string in _NAMES:
        yield from _NAMES[token.string]
    elif token.type == tokenize.NUMBER and token.string.isdigit():
        value = int(token.string)
        yield str(value + 1), 0, "off-by-one"
        # x - 1 -> x - 0 is the expression before the fix in all but name: not a twin
        if value > 1 or (value == 1 and (previous is None or previous.string not in "+-")):
            yield str(value - 1), 0, "off-by-one"


def _binary(previous: tokenize.TokenInfo | None) -> bool:
    if previous is None:
        return False
    return previous.type in _BINARY_LEFT or previous.string in (")", "]", "}")


def mutants_of(diff: FileDiff, new_source: str, old_source: str | None) -> list[Mutant]:
    """Every valid mutant of ``new_source`` (the fix's version of ``diff.path``) on the lines
    the fix added, ordered by :meth:`Mutant.sort_key`. ``old_source`` is the file before the
    fix (None: the fix adds the file); a mutant equal to it is a revert and is left out."""
    added = diff.added
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(new_source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    lines = new_source.splitlines(keepends=True)
    found: dict[tuple[int, int, str], Mutant] = {}
    previous: tokenize.TokenInfo | None = None
    for token in tokens:
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token if token.type != tokenize.COMMENT else previous
            continue
        row, col = token.start
        if row in added and token.end[0] == row:
            for after, rank, operator in _replacements(token, previous):
                mutant = _apply(diff, lines, token, after, rank, operator)
                if mutant is None or mutant.source == old_source:
                    continue
                found.setdefault((row, col, after), mutant)
        previous = token
    return sorted(found.values(), key=Mutant.sort_key)


def _apply(
    diff: FileDiff,
    lines: list[str],
    token: tokenize.TokenInfo,
    after: str,
    rank: int,
    operator: str,
) -> Mutant | None:
    row, col = token.start
    end = token.end[1]
    line = lines[row - 1]
    if not after:  # a dropped token takes the space after it
        while end < len(line) and line[end] == " ":
            end += 1
    new_line = line[:col] + after + line[end:]
    restored = {r.strip() for r in diff.removed_near(row)}
    if new_line.strip() in restored:
        return None  # the line as it was before the fix: a revert, not a mutant
    source = "".join([*lines[: row - 1], new_line, *lines[row:]])
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return Mutant(diff.path, row, col, operator, token.string, after, rank, source)
