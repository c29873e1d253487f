"""Candidate selection (pure): which commits of a history look like small, tested bug fixes.

A candidate is a non-merge commit that changes at least one test file and between one and
``max_files`` non-test Python files, in at most ``max_hunks`` hunks and ``max_added`` added
lines (counted on a zero-context diff). Everything here works on data git already gave us.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

__all__ = [
    "MINE_SCHEMA",
    "Candidate",
    "FileDiff",
    "Limits",
    "MineSettings",
    "NotCandidate",
    "check_size",
    "check_test_args",
    "classify",
    "is_test_path",
    "parse_zero_context",
]

_TEST_DIRS = frozenset({"test", "tests", "testing"})


def is_test_path(path: str) -> bool:
    """A test file (or a test's support file): under a ``test``/``tests``/``testing``
    folder, or named ``test_*.py``, ``*_test.py`` or ``conftest.py``."""
    pure = PurePosixPath(path)
    if any(part in _TEST_DIRS for part in pure.parts[:-1]):
        return True
    name = pure.name
    return name == "conftest.py" or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
    )


@dataclass(frozen=True, slots=True)
class Limits:
    max_files: int = 2  # non-test Python files the fix changes
    max_hunks: int = 4  # hunks over those files (zero-context diff)
    max_added: int = 25  # added lines over those files

    def to_dict(self) -> dict[str, int]:
        return {
            "max_files": self.max_files,
            "max_hunks": self.max_hunks,
            "max_added": self.max_added,
        }


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One non-test Python file of a fix: its added line numbers (in the fix's version) and
    the lines it removed, hunk by hunk."""

    path: str
    hunks: tuple[tuple[tuple[int, ...], tuple[str, ...]], ...]  # (added line numbers, removed)

    @property
    def added(self) -> frozenset[int]:
        return frozenset(n for numbers, _ in self.hunks for n in numbers)

    def removed_near(self, line: int) -> tuple[str, ...]:
        """The lines the hunk that added ``line`` removed (what a literal revert restores)."""
        for numbers, removed in self.hunks:
            if line in numbers:
                return removed
        return ()


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def parse_zero_context(path: str, diff: str) -> FileDiff:
    """A ``git diff -U0`` of one file, as a :class:`FileDiff`."""
    hunks: list[tuple[tuple[int, ...], tuple[str, ...]]] = []
    added: list[int] = []
    removed: list[str] = []
    started = False
    for line in diff.split("\n"):
        match = _HUNK.match(line)
        if match:
            if started:
                hunks.append((tuple(added), tuple(removed)))
            started = True
            first = int(match.group(1))
            count = int(match.group(2)) if match.group(2) is not None else 1
            added = list(range(first, first + count))
            removed = []
        elif started and line.startswith("-"):
            removed.append(line[1:])
    if started:
        hunks.append((tuple(added), tuple(removed)))
    return FileDiff(path, tuple(hunks))


@dataclass(frozen=True, slots=True)
class NotCandidate:
    code: str  # a short category, for the summary
    reason: str


@dataclass(frozen=True, slots=True)
class Candidate:
    commit: str
    parent: str
    message: str
    test_files: tuple[str, ...]  # changed test files (added or modified) of the fix
    code_files: tuple[str, ...]  # changed non-test Python files
    other_files: tuple[str, ...] = ()  # changed non-test, non-Python files (part of the patch)
    diffs: tuple[FileDiff, ...] = field(default=())


def classify(
    commit: str,
    parents: Sequence[str],
    message: str,
    changes: Sequence[tuple[str, str]],
    limits: Limits,
) -> Candidate | NotCandidate:
    """First pass, from the name-status of ``parent..commit`` only (no diff text yet)."""
    if len(parents) != 1:
        return NotCandidate("merge or root", "a merge or root commit")
    tests = [(s, p) for s, p in changes if is_test_path(p)]
    code = [(s, p) for s, p in changes if not is_test_path(p) and p.endswith(".py")]
    other = [p for s, p in changes if not is_test_path(p) and not p.endswith(".py")]
    if not tests:
        return NotCandidate("no test change", "changes no test file")
    if not code:
        return NotCandidate("no code change", "changes no non-test Python file")
    if len(code) > limits.max_files:
        return NotCandidate(
            "too many files",
            f"changes {len(code)} non-test Python files (limit {limits.max_files})",
        )
    if any(status == "D" for status, _ in tests):
        return NotCandidate("deletes a test file", "deletes a test file")
    return Candidate(
        commit=commit,
        parent=parents[0],
        message=message,
        test_files=tuple(sorted(p for _, p in tests)),
        code_files=tuple(sorted(p for _, p in code)),
        other_files=tuple(sorted(other)),
    )


def check_size(
    candidate: Candidate, diffs: Sequence[FileDiff], limits: Limits
) -> NotCandidate | None:
    """Second pass, on the zero-context diffs of the code files: hunks and added lines."""
    hunks = sum(len(d.hunks) for d in diffs)
    added = sum(len(d.added) for d in diffs)
    if hunks > limits.max_hunks:
        return NotCandidate("too many hunks", f"{hunks} hunks (limit {limits.max_hunks})")
    if added > limits.max_added:
        return NotCandidate("too many lines", f"{added} added lines (limit {limits.max_added})")
    if added == 0:
        return NotCandidate("no added line", "adds no line to mutate (only deletions)")
    return None


#: Bump when what a commit's cached result means changes.
MINE_SCHEMA = 1


@dataclass(frozen=True, slots=True)
class MineSettings:
    """Everything a commit's result depends on besides the commit (its cache key)."""

    limits: Limits = field(default_factory=Limits)
    test_args: tuple[str, ...] = ()  # the project's own test command's arguments
    timeout: float = 600.0  # one pytest run
    max_mutants: int = 12  # mutants tried per fix, most realistic first

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": MINE_SCHEMA,
            "limits": self.limits.to_dict(),
            "test_args": list(self.test_args),
            "timeout": self.timeout,
            "max_mutants": self.max_mutants,
        }


_FLAGS = frozenset({"-x", "-q", "-v", "-s", "-l", "--strict-markers", "--runxfail", "-ra"})
_VALUED = frozenset({"-m", "-k"})


def check_test_args(args: Sequence[str]) -> str | None:
    """Why these test-command arguments are refused (None: they are fine). They reach pytest
    in every tree, so they are data: a few flags that change no file and load no code
    (``-x``, ``-q``, ``-m EXPR``, ``-k EXPR``, ...), and paths inside the repository."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in _VALUED and index + 1 < len(args):
            index += 2
            continue
        if arg.startswith("-"):
            if arg not in _FLAGS:
                allowed = ", ".join(sorted(_FLAGS | _VALUED))
                return f"test command option {arg!r} is not one of {allowed}"
        else:
            pure = PurePosixPath(arg.split("::", 1)[0])
            if arg.startswith("@") or pure.is_absolute() or ".." in pure.parts or "\\" in arg:
                return f"test command argument {arg!r} is not a path inside the repository"
        index += 1
    return None
