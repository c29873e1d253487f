"""Where a result points: an edit's added lines, or a preservation group's failing test.

Shared by the SARIF report and the GitHub annotations. Locations are in the patched tree:
an edit's region comes from its hunk; a test's ``def`` line from its file at the base commit
(read by a :data:`Sources`) with the patch's hunks of that file applied. Pure: the one read
is the caller's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_critic22.model.patch import AtomicEdit, ParsedPatch
    from pytest_critic22.verification.procedures import FindingResult

__all__ = [
    "Location",
    "Sources",
    "def_line_of",
    "edit_region",
    "failing_tests",
    "hunk_body",
    "locate",
    "locate_test",
    "patched_text",
]

#: A repository path -> the file's text at the review's base commit, or None.
Sources = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a result points: a repository-relative file and a region of the patched file."""

    path: str
    start_line: int = 1
    end_line: int = 1
    start_column: int = 1
    end_column: int = 1

    def region(self) -> dict[str, int]:
        return {
            "startLine": self.start_line,
            "startColumn": self.start_column,
            "endLine": self.end_line,
            "endColumn": self.end_column,
        }


def _width(text: str) -> int:
    """A line's length in UTF-16 code units (the run's ``columnKind``, as GitHub counts)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2  # a lone surrogate: one unit


def hunk_body(edit: AtomicEdit) -> list[str]:
    """The hunk's lines after its header, without line endings."""
    return [line.rstrip("\r\n") for line in edit.hunk.splitlines(keepends=True)[1:]]


def edit_region(edit: AtomicEdit) -> Location:
    """The edit's added lines in the patched file, or (a pure deletion) the line where the
    removed lines were: the line that follows them, else the one before, at least line 1."""
    new_side: list[tuple[int, str, str, bool]] = []  # (line, tag, text, after a removal)
    removed = False
    for line in hunk_body(edit):
        if line[:1] in ("-", "\\"):
            removed = removed or line[:1] == "-"
            continue
        new_side.append((edit.new_start + len(new_side), line[:1], line[1:], removed))
    added = [(n, text) for n, tag, text, _ in new_side if tag == "+"]
    after = [(n, text) for n, _, text, later in new_side if later]
    before = [(n, text) for n, _, text, later in new_side if not later]
    if added:
        return Location(edit.path, added[0][0], added[-1][0], 1, _width(added[-1][1]) + 1)
    # the file is gone, or the hunk is nothing but removals: line 1
    line_no, text = after[0] if after else before[-1] if before else (1, "")
    line_no = max(line_no, 1)
    return Location(edit.path, line_no, line_no, 1, _width(text) + 1)


def locate(patch: ParsedPatch, location: str) -> Location:
    """A finding's location (an edit id, or ``whole-patch``: the first edit) in the patched
    tree; the first file of the patch at line 1 when there is no such edit."""
    edits = {edit.edit_id: edit for edit in patch.edits}
    if location in edits:
        return edit_region(edits[location])
    if patch.edits:
        return edit_region(patch.edits[0])
    return Location(patch.files[0].path if patch.files else "")


def failing_tests(tests: Sequence[str], result: FindingResult) -> list[str]:
    """The group's tests that failed on the patched tree, in the group's order: the patched
    runs' failures in the result's logs (under the base's harness too, when it judged), less
    those that fail on the base too; every test of the group when the logs do not say."""
    from pytest_critic22.verification.procedures import junit_key  # how the logs name a test

    failed: set[str] = set()
    logs = result.logs
    for judged in (logs, logs.get("base_harness")):
        runs = judged.get("patched") if isinstance(judged, dict) else None
        for run in runs if isinstance(runs, list) else ():
            cases = run.get("tests") if isinstance(run, dict) else None
            if isinstance(cases, dict):
                failed |= {k for k, status in cases.items() if status in ("failed", "error")}
    pre_existing = logs.get("pre_existing")
    known = set(pre_existing) if isinstance(pre_existing, list) else set()
    found = [t for t in tests if junit_key(t) in failed and t not in known]
    return found or list(tests)


def _lines(text: str) -> list[str]:
    """A file's lines as git and Python count them: split at LF, a CR before it dropped
    (``str.splitlines`` would split at a form feed too)."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines and not lines[-1] else lines


def patched_text(patch: ParsedPatch, path: str, sources: Sources) -> str | None:
    """The text of ``path`` in the patched tree: the base's file with the patch's hunks of
    it applied as written; None when it cannot be read or a hunk's lines do not match."""
    changed = next((f for f in patch.files if f.new_path == path), None)
    if changed is None:
        return sources(path)
    base = sources(changed.old_path) if changed.old_path else ""
    if base is None:
        return None
    lines, out, at = _lines(base), [], 0
    for edit in sorted((patch.edit(e) for e in changed.edit_ids), key=lambda e: e.old_start):
        start = edit.old_start - 1 if edit.old_count else edit.old_start  # ",0": after it
        if start < at:
            return None
        out += lines[at:start]
        at = start
        for line in hunk_body(edit):
            tag, text = (line[:1] or " "), line[1:]  # a blank line: an empty context line
            if tag == "+":
                out.append(text)
            elif tag in (" ", "-"):
                if at >= len(lines) or lines[at] != text:
                    return None
                out += [text] if tag == " " else []
                at += 1
    return "\n".join(out + lines[at:]) + "\n"


def def_line_of(source: str, nodeid: str) -> int | None:
    """The line of the ``def`` of the test ``nodeid`` names (``path::Class::test[param]``)
    in ``source``: its classes followed, the last definition of a name, as Python binds it."""
    names = [part.split("[", 1)[0] for part in nodeid.split("::")[1:]]
    try:
        body = ast.parse(source).body if names else []
    except (SyntaxError, ValueError):  # not Python, or a NUL byte
        return None
    for depth, name in enumerate(names):
        want = ast.ClassDef if depth < len(names) - 1 else (ast.FunctionDef, ast.AsyncFunctionDef)
        found = [n for n in body if isinstance(n, want) and n.name == name]
        if not found:
            return None
        if depth == len(names) - 1:
            return found[-1].lineno
        body = found[-1].body
    return None


def locate_test(
    patch: ParsedPatch, path: str, tests: Sequence[str], sources: Sources | None
) -> Location:
    """The ``def`` line of the first of ``tests`` found in ``path`` of the patched tree (the
    base's file, read by ``sources``, with the patch applied); line 1 when none is found."""
    source = patched_text(patch, path, sources) if sources is not None else None
    if source is None:
        return Location(path)
    for test in tests:
        line_no = def_line_of(source, test)
        if line_no is not None:
            width = _width(_lines(source)[line_no - 1])
            return Location(path, line_no, line_no, 1, width + 1)
    return Location(path)
