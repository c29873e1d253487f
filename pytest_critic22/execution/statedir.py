"""The repository's state folder ``.critic22/``: made, written and read without following a
symbolic link (I/O).

Everything the plugin and its commands keep lives under ``<repository>/.critic22/``: the
ledger, the answer and graph caches, the traces, the review loop's stage, the A/B and mining
caches. A checkout can hold anything at that path, and a repository that commits
``.critic22 -> ~/somewhere`` or ``.critic22/ledger.jsonl -> ~/.bashrc`` must not get a run to
write (or delete) there. So, from the last ``.critic22`` component of a path down, every
folder on the way must be a real folder (checked with ``lstat``, made one level at a time)
and the file itself is opened with ``O_NOFOLLOW``: a link anywhere there is a
:class:`StateLinkError` whose message is one line naming it. A path without a ``.critic22``
component (a ``--critic22-ledger`` or ``--cache`` the user chose elsewhere) is the user's
business, written as it always was.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "KNOWN",
    "STATE_DIR",
    "StateLinkError",
    "check",
    "check_known",
    "link_problem",
    "make_folder",
    "open_append",
    "open_file",
    "read_file",
    "remove_folder",
    "write_file",
    "write_json",
]

STATE_DIR = ".critic22"

#: What the plugin and its commands keep in the state folder, checked before any of them
#: starts writing (a link planted deeper, where nothing is known in advance, is refused
#: when it is reached).
KNOWN = (
    ".gitignore",
    "ledger.jsonl",
    "cache",
    "cache/graph",
    "traces",
    "review-stage",
    "critic22-trees",
    "ab-cache",
    "mine-cache",
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class StateLinkError(OSError):
    """A symbolic link where the state folder needs a folder or a file of its own; the
    message is one line, ``.critic22/ledger.jsonl is a symbolic link; refusing ...``."""


def _split(path: Path) -> tuple[Path, tuple[str, ...]] | None:
    """The folder holding the state folder, and the parts of ``path`` from ``.critic22``
    on; None when ``path`` is not inside a state folder."""
    parts = path.parts
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] == STATE_DIR:
            return Path(*parts[:index]) if index else Path(), parts[index:]
    return None


def _message(parts: tuple[str, ...]) -> str:
    return f"{'/'.join(parts)} is a symbolic link; refusing to follow it (remove it)"


def link_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be used without following a link (the first link from
    ``.critic22`` down to ``path`` itself), or None."""
    split = _split(Path(path))
    if split is None:
        return None
    root, parts = split
    current = root
    for depth, name in enumerate(parts):
        current = current / name
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None  # nothing further exists: nothing further can be a link
        except NotADirectoryError:
            return None  # a file on the way: the write fails on its own, saying so
        if stat.S_ISLNK(mode):
            return _message(parts[: depth + 1])
    return None


def check(path: str | os.PathLike[str]) -> None:
    """Raise :class:`StateLinkError` when :func:`link_problem` finds one."""
    problem = link_problem(path)
    if problem is not None:
        raise StateLinkError(problem)


def check_known(state_dir: Path, extra: Iterable[str] = ()) -> str | None:
    """The first link among the state folder and what is kept in it (:data:`KNOWN`, and
    ``extra`` relative paths), or None: what a command checks before it writes anything."""
    for relative in ("", *KNOWN, *extra):
        problem = link_problem(state_dir / relative if relative else state_dir)
        if problem is not None:
            return problem
    return None


def make_folder(path: Path) -> Path:
    """``mkdir -p`` that makes the levels inside the state folder one at a time, each of them
    a real folder afterwards (never a link followed); ``path`` returned."""
    split = _split(path)
    if split is None:
        path.mkdir(parents=True, exist_ok=True)
        return path
    root, parts = split
    if root != Path():
        root.mkdir(parents=True, exist_ok=True)
    current = root
    for depth, name in enumerate(parts):
        current = current / name
        with contextlib.suppress(FileExistsError):
            os.mkdir(current, 0o777)
        mode = os.lstat(current).st_mode
        if stat.S_ISLNK(mode):
            raise StateLinkError(_message(parts[: depth + 1]))
        if not stat.S_ISDIR(mode):
            raise FileExistsError(errno.EEXIST, "a file, not a folder", str(current))
    return path


def open_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that follows no link inside the state folder (``O_NOFOLLOW`` on ``path``
    itself, ``lstat`` on the folders on the way); the folders must exist."""
    if _split(path) is None:
        return os.open(path, flags | _CLOEXEC, mode)
    check(path)
    try:
        return os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        # ELOOP: planted between the check and the open (EMLINK on the BSDs)
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            check(path)
        raise


def open_append(path: Path, *, read: bool = False) -> int:
    """A descriptor appending to ``path`` (made, with its folders, when missing); ``read``:
    open for reading too (every write still goes to the end)."""
    make_folder(path.parent)
    flags = (os.O_RDWR if read else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    return open_file(path, flags)


def remove_folder(path: Path) -> None:
    """``rm -rf`` of a folder inside the state folder; a link on the way to it, or at it, is
    refused (``shutil.rmtree`` refuses only the latter: through a linked parent it removes
    what the link names)."""
    check(path)
    shutil.rmtree(path, ignore_errors=True)


def read_file(path: Path) -> bytes:
    """The bytes of the regular file ``path`` (no link followed inside the state folder, no
    FIFO or device opened: OSError for those)."""
    fd = open_file(path, os.O_RDONLY | _NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def write_file(path: Path, data: str | bytes, *, sync: bool = False) -> None:
    """Replace ``path`` atomically with ``data`` (a reader sees the old file or the new one):
    a temporary file made beside it with ``O_EXCL | O_NOFOLLOW``, then renamed over it.
    ``sync``: flushed to the disk before the rename."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    make_folder(path.parent)
    check(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    fd = open_file(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)  # a rename replaces a link there; it never follows one
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json(path: Path, record: Mapping[str, Any]) -> None:
    """``record`` as JSON (keys sorted) at ``path``, atomically, as :func:`write_file`."""
    write_file(path, json.dumps(record, sort_keys=True))
