"""Unified diff -> atomic edits (one per hunk) plus the whole-patch view.

unidiff does the parsing; we keep the raw lines of the patch next to it so that any
subset of edits can be written back byte for byte (CRLF, "\\ No newline at end of
file" and all) and ``git apply`` accepts it. Edit ids are ``e1``..``eN`` in patch order,
so the same patch always gets the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "WHOLE_PATCH",
    "AtomicEdit",
    "DiffError",
    "FilePatch",
    "ParsedPatch",
    "parse_patch",
    "without_binary_files",
]

#: The location that names the patch as a unit rather than one of its edits.
WHOLE_PATCH = "whole-patch"

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NEW_START = re.compile(r"^(@@ -\d+(?:,\d+)? \+)(\d+)")
_FILE_START_GIT = "diff --git "
_SIGNATURE = ("-- \n", "-- \r\n")
_DEV_NULL = "/dev/null"


class DiffError(ValueError):
    """The patch cannot be reviewed; the message says where and why."""

    def __init__(self, message: str, *, line: int | None = None, path: str | None = None):
        where = []
        if path is not None:
            where.append(path)
        if line is not None:
            where.append(f"line {line}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.line = line
        self.path = path


@dataclass(frozen=True, slots=True)
class AtomicEdit:
    """One hunk: the smallest unit a finding can be located at."""

    edit_id: str
    old_path: str | None  # None when the patch creates the file
    new_path: str | None  # None when the patch deletes the file
    header: str  # the "@@ -a,b +c,d @@ ..." line, without its line ending
    hunk: str  # raw hunk text, header included, exactly as in the patch
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    added_lines: tuple[int, ...]  # line numbers in the new file
    removed_lines: tuple[int, ...]  # line numbers in the old file

    @property
    def path(self) -> str:
        """The file this edit is about (the new name, or the old one for a deletion)."""
        return self.new_path or self.old_path or ""

    @property
    def delta(self) -> int:
        return self.new_count - self.old_count

    def as_unit(self) -> str:
        """The hunk with a minimal file header, readable on its own."""
        old = f"a/{self.old_path}" if self.old_path else _DEV_NULL
        new = f"b/{self.new_path}" if self.new_path else _DEV_NULL
        return f"--- {old}\n+++ {new}\n{self.hunk}"


@dataclass(frozen=True, slots=True)
class FilePatch:
    old_path: str | None
    new_path: str | None
    status: str  # "modified" | "added" | "deleted" | "renamed"
    header: str  # raw header lines (diff --git, extended headers, ---/+++)
    edit_ids: tuple[str, ...]

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


@dataclass(frozen=True, slots=True)
class ParsedPatch:
    files: tuple[FilePatch, ...]
    edits: tuple[AtomicEdit, ...]
    whole_patch: str  # the diff itself: no mail headers, no commit message, no signature
    preamble: str  # what came before the first file (format-patch mail headers, message)
    trailer: str  # what came after the last hunk (format-patch signature)
    # Files whose diff is not text (a PNG, a "GIT binary patch"): left out of the edits and
    # of ``whole_patch``, listed as not reviewed. Empty: every file was reviewed.
    binary: tuple[str, ...] = ()

    @property
    def edit_ids(self) -> tuple[str, ...]:
        return tuple(edit.edit_id for edit in self.edits)

    @property
    def locations(self) -> frozenset[str]:
        """The location vocabulary of findings: every edit id, or ``whole-patch``."""
        return frozenset(self.edit_ids) | {WHOLE_PATCH}

    def edit(self, edit_id: str) -> AtomicEdit:
        for edit in self.edits:
            if edit.edit_id == edit_id:
                return edit
        raise KeyError(edit_id)

    def subset(self, edit_ids: Iterable[str]) -> str:
        """A patch of just these edits, which ``git apply`` accepts on the base tree.

        Later hunks of a file have their new-file start moved by the edits left out, so
        the result is exact, not merely within git's offset tolerance. Files without
        hunks (pure renames, mode changes, empty new files) always come along.
        """
        chosen = set(edit_ids)
        unknown = chosen - set(self.edit_ids)
        if unknown:
            raise KeyError(f"no such edit: {', '.join(sorted(unknown))}")
        by_id = {edit.edit_id: edit for edit in self.edits}
        out: list[str] = []
        for file in self.files:
            if not file.edit_ids:
                out.append(file.header)
                continue
            picked = [by_id[i] for i in file.edit_ids if i in chosen]
            if not picked:
                if file.status == "renamed":
                    out.append(_rename_only(file.header))
                continue
            out.append(file.header)
            shift = 0
            for edit_id in file.edit_ids:
                edit = by_id[edit_id]
                if edit_id in chosen:
                    out.append(_shift_new_start(edit.hunk, -shift))
                else:
                    shift += edit.delta
        return "".join(out)

    def without(self, edit_ids: Iterable[str]) -> str:
        """The counterfactual patch: every edit except these."""
        leave_out = set(edit_ids)
        return self.subset(i for i in self.edit_ids if i not in leave_out)


def parse_patch(text: str) -> ParsedPatch:
    """Parse unified diff text (plain, ``git diff`` or ``git format-patch``)."""
    from unidiff.errors import UnidiffParseError
    from unidiff.patch import PatchSet

    if not text.strip():
        return ParsedPatch((), (), "", "", "")  # nothing to review: a PR that only merges
    # Not str.splitlines: it also splits on \x0c, \u2028 and friends; diff lines end in \n.
    lines = _split_lines(text)
    start = _first_file_line(lines)
    if start is None:
        raise DiffError("the patch has no file diffs (no 'diff --git' or '---/+++' header)")
    body = lines[start:]
    try:
        patch_set = PatchSet(body)
    except UnidiffParseError as exc:
        bad = _locate_hunk_error(body)
        line = start + bad if bad is not None else None
        raise DiffError(f"malformed hunk: {str(exc).strip()}", line=line) from None
    if len(patch_set) == 0:
        raise DiffError("the patch has no file diffs")

    binary = tuple(
        _strip_prefix(pfile.target_file if pfile.target_file != _DEV_NULL else pfile.source_file)
        for pfile in patch_set
        if pfile.is_binary_file
    )
    if binary:
        # Not text: not reviewed, and not applied (the trees hold the text files' edits).
        starts = [_file_start(body, (pfile.diff_line_no or 1) - 1) for pfile in patch_set]
        ends = [*starts[1:], len(body)]
        spans = zip(patch_set, starts, ends, strict=True)
        cut = [(a, b) for pfile, a, b in spans if pfile.is_binary_file]
        body = [line for n, line in enumerate(body) if not any(a <= n < b for a, b in cut)]
        if not any(line.startswith(("--- ", "diff --git ")) for line in body):
            return ParsedPatch((), (), "", "".join(lines[:start]), "", binary)
        try:
            patch_set = PatchSet(body)
        except UnidiffParseError as exc:  # pragma: no cover - the same hunks parsed above
            raise DiffError(f"malformed hunk: {str(exc).strip()}") from None

    file_starts = [_file_start(body, (pfile.diff_line_no or 1) - 1) for pfile in patch_set]
    last_hunk_end = max(
        (_hunk_end(body, hunk) for pfile in patch_set for hunk in pfile), default=file_starts[-1]
    )
    body_end = _body_end(body, last_hunk_end)

    files: list[FilePatch] = []
    edits: list[AtomicEdit] = []
    for index, pfile in enumerate(patch_set):
        old_path = None if pfile.source_file == _DEV_NULL else _strip_prefix(pfile.source_file)
        new_path = None if pfile.target_file == _DEV_NULL else _strip_prefix(pfile.target_file)
        # A git header for a new empty file has no ---/+++ lines; unidiff leaves the paths
        # from "diff --git" and marks the mode. Trust the extended headers.
        info = "".join(pfile.patch_info or ())
        if "\nnew file mode " in "\n" + info:
            old_path = None
        if "\ndeleted file mode " in "\n" + info:
            new_path = None
        if old_path is None:
            status = "added"
        elif new_path is None:
            status = "deleted"
        elif old_path != new_path:
            status = "renamed"
        else:
            status = "modified"
        next_start = file_starts[index + 1] if index + 1 < len(file_starts) else body_end
        if len(pfile):
            header_end = _hunk_start(pfile[0])
        else:
            header_end = _trim_blank_tail(body, file_starts[index], next_start)
        header = "".join(body[file_starts[index] : header_end])
        ids: list[str] = []
        for hunk in pfile:
            edit_id = f"e{len(edits) + 1}"
            ids.append(edit_id)
            raw = "".join(body[_hunk_start(hunk) : _hunk_end(body, hunk)])
            edits.append(
                AtomicEdit(
                    edit_id=edit_id,
                    old_path=old_path,
                    new_path=new_path,
                    header=body[_hunk_start(hunk)].rstrip("\r\n"),
                    hunk=raw,
                    old_start=hunk.source_start,
                    old_count=hunk.source_length,
                    new_start=hunk.target_start,
                    new_count=hunk.target_length,
                    added_lines=tuple(
                        ln.target_line_no for ln in hunk if ln.is_added and ln.target_line_no
                    ),
                    removed_lines=tuple(
                        ln.source_line_no for ln in hunk if ln.is_removed and ln.source_line_no
                    ),
                )
            )
        files.append(FilePatch(old_path, new_path, status, header, tuple(ids)))

    return ParsedPatch(
        files=tuple(files),
        edits=tuple(edits),
        whole_patch="".join(body[:body_end]),
        preamble="".join(lines[:start]),
        trailer="".join(body[body_end:]),
        binary=binary,
    )


def without_binary_files(text: str) -> str:
    """``text`` without the ``diff --git`` sections of binary files ("Binary files … differ",
    "GIT binary patch"); "" when nothing else is left. Plain string work, no unidiff: the
    plugin's early hook calls it while the checkout is still on ``sys.path``."""
    sections: list[list[str]] = [[]]
    for line in _split_lines(text):
        if line.startswith(_FILE_START_GIT):
            sections.append([])
        sections[-1].append(line)
    kept = [
        "".join(section)
        for section in sections
        if not any(line.startswith(("Binary files ", "GIT binary patch")) for line in section)
    ]
    left = "".join(kept)
    return left if _FILE_START_GIT in left or "\n+++ " in left else ""


def _split_lines(text: str) -> list[str]:
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _first_file_line(lines: Sequence[str]) -> int | None:
    for i, line in enumerate(lines):
        if line.startswith(_FILE_START_GIT):
            return i
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            return i
    return None


def _file_start(body: Sequence[str], index: int) -> int:
    """unidiff numbers a plain diff's file at its '+++' line; ours starts at '---'."""
    if body[index].startswith("+++ ") and index > 0 and body[index - 1].startswith("--- "):
        return index - 1
    return index


def _hunk_start(hunk: object) -> int:
    # The header is the line before the first body line (diff_line_no is 1-based).
    first = next(line for line in hunk if line.diff_line_no)  # type: ignore[attr-defined]
    return int(first.diff_line_no) - 2


def _hunk_end(body: Sequence[str], hunk: object) -> int:
    """Index one past the hunk's last raw line, its '\\ No newline' markers included."""
    numbered = [line.diff_line_no for line in hunk if line.diff_line_no]  # type: ignore[attr-defined]
    end = int(max(numbered))
    while end < len(body) and body[end].startswith("\\"):
        end += 1
    return end


def _body_end(body: Sequence[str], last_hunk_end: int) -> int:
    """Where the diff stops and a format-patch signature ("-- " line) begins."""
    for i in range(last_hunk_end, len(body)):
        if body[i] in _SIGNATURE:
            return i
    return len(body)


def _trim_blank_tail(body: Sequence[str], start: int, end: int) -> int:
    while end > start + 1 and not body[end - 1].strip():
        end -= 1
    return end


def _strip_prefix(path: str) -> str:
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1]
    if path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def _shift_new_start(hunk: str, by: int) -> str:
    if by == 0:
        return hunk
    match = _NEW_START.match(hunk)
    if match is None:  # pragma: no cover - every hunk we emit was parsed from a header
        raise DiffError("hunk without a header")
    new_start = max(0, int(match.group(2)) + by)
    return f"{match.group(1)}{new_start}{hunk[match.end(2) :]}"


def _rename_only(header: str) -> str:
    """A rename header without its ---/+++ lines: git applies it as a pure rename."""
    keep = [
        line
        for line in _split_lines(header)
        if not line.startswith(("--- ", "+++ ", "index ", "similarity index", "dissimilarity"))
    ]
    return "".join(keep)


def _locate_hunk_error(body: Sequence[str]) -> int | None:
    """1-based line (within body) where a hunk stops making sense, for the error message."""
    i = 0
    while i < len(body):
        match = _HUNK_HEADER.match(body[i])
        if not match:
            i += 1
            continue
        header_line = i + 1
        old = int(match.group(2) or 1)
        new = int(match.group(4) or 1)
        i += 1
        while old > 0 or new > 0:
            if i >= len(body):
                return header_line
            tag = body[i][:1]
            if tag == " " or body[i] in ("\n", "\r\n"):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            elif tag != "\\":
                return i + 1
            if old < 0 or new < 0:
                return i + 1
            i += 1
    return None
