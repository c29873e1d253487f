"""The types the static checks share: hits, file changes, examples, checks and their registry.

Also the functions over one file change or one example, which need no registered check.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Hit:
    check: str
    path: str  # repo-relative file path
    line: int  # 1-based, patched file; base file for removals (the message says "base line")
    message: str


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str  # repo-relative, e.g. "pkg/mod.py"
    base_source: str | None  # None when the patch creates the file
    patched_source: str | None  # None when the patch deletes the file
    added_lines: frozenset[int]  # 1-based patched-file lines the located edit(s) add
    removed_lines: frozenset[int]  # 1-based base-file lines the located edit(s) remove


@dataclass(frozen=True, slots=True)
class Example:
    """A check's own example: base and patched source of one file ``mod.py``.

    The changed lines come from a difflib diff of the two (see ``example_change``); ``repo`` holds
    the other files of the patched repository.
    """

    base: str
    patched: str
    args: tuple[str, ...] = ()
    repo: Mapping[str, str] = field(default_factory=dict)


CheckRun = Callable[[Sequence[FileChange], tuple[str, ...], Mapping[str, str]], list[Hit]]
ArgsValidator = Callable[[tuple[str, ...], Sequence[FileChange], Mapping[str, str]], str | None]


def _takes_no_arguments(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    # Strict on purpose: an argument the check would silently ignore suggests the critic expects
    # a narrower claim than the one that would be judged.
    if args:
        return f"the check takes no arguments (got {' '.join(args)!r})"
    return None


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    description: str  # one line
    run: CheckRun  # (changes of the located edit(s), args, every .py file of the patched tree)
    valid: tuple[Example, ...]  # examples where the check must report no hit
    invalid: tuple[Example, ...]  # examples where it must report at least one hit
    validate_args: ArgsValidator = _takes_no_arguments  # None, or why the args are unusable


class CheckRegistry:
    """Checks by name; plugins may register more."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def register(self, check: Check) -> None:
        # The falsification grammar splits on whitespace, so such a name could never be invoked.
        if not check.name or any(ch.isspace() for ch in check.name):
            raise ValueError(f"check name must be one non-empty word, got {check.name!r}")
        if check.name in self._checks:
            raise ValueError(f"a static check named {check.name!r} is already registered")
        self._checks[check.name] = check

    def get(self, name: str) -> Check | None:
        return self._checks.get(name)

    def names(self) -> list[str]:
        return sorted(self._checks)


def changes_from_sources(path: str, base: str | None, patched: str | None) -> FileChange:
    """The change of one file with its added and removed lines computed by difflib."""
    old = _lines(base) if base is not None else []
    new = _lines(patched) if patched is not None else []
    added: set[int] = set()
    removed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.update(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            added.update(range(j1 + 1, j2 + 1))
    return FileChange(path, base, patched, frozenset(added), frozenset(removed))


def example_change(example: Example) -> FileChange:
    return changes_from_sources(_EXAMPLE_PATH, example.base, example.patched)


def run_example(check: Check, example: Example) -> list[Hit]:
    """Run a check on one of its examples, the patched ``mod.py`` included in the repository."""
    repo = {**example.repo, _EXAMPLE_PATH: example.patched}
    hits = set(check.run([example_change(example)], example.args, repo))
    return sorted(hits, key=lambda hit: (hit.path, hit.line, hit.message, hit.check))


_EXAMPLE_PATH = "mod.py"


def _lines(source: str) -> list[str]:
    # Python's own line breaks only: str.splitlines would also split on form feeds and other
    # separators and shift every line number after them.
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines
