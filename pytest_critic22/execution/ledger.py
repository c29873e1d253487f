"""The append-only ledger: one JSON event per line, never truncated or rewritten.

Each event is written with a single ``write`` on a descriptor opened with ``O_APPEND``,
under an advisory lock where the platform has one, so several processes (xdist workers,
parallel runs) can append to the same file without tearing lines.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_critic22.execution.statedir import (
    STATE_DIR,
    StateLinkError,
    link_problem,
    make_folder,
    open_append,
    open_file,
)
from pytest_critic22.model.scrub import scrub

__all__ = [
    "SCHEMA_VERSION",
    "Ledger",
    "ensure_state_dir",
    "folder_write_problem",
    "new_run_id",
    "read_events",
    "write_problem",
]

SCHEMA_VERSION = 1

_GITIGNORE = "# Created by pytest-critic22 automatically.\n*\n"


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)


def ensure_state_dir(path: Path) -> Path:
    """Create ``.critic22/`` (or any folder) with a .gitignore, as pytest does for its cache.
    Inside the state folder no link is followed: :class:`StateLinkError` names it."""
    make_folder(path)
    if path.name != STATE_DIR:
        return path
    ignore = path / ".gitignore"
    try:
        fd = open_file(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:  # there already (another process won the race), or a link
        problem = link_problem(ignore)
        if problem is not None:
            raise StateLinkError(problem) from None
        return path
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(_GITIGNORE)
    return path


def write_problem(path: Path) -> str | None:
    """Why a file at ``path`` could not be created or appended to, or None when it can.

    Finds out by doing it, and leaves nothing behind: the folders it had to create and
    the file, when it did not exist before and is still empty, are removed again.
    """
    problem = link_problem(path)  # inside .critic22/: never probed through a link
    if problem is not None:
        return problem
    made = [p for p in (path.parent, *path.parent.parents) if not os.path.lexists(p)]
    existed = os.path.lexists(path)
    try:
        make_folder(path.parent)
        os.close(open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    except OSError as exc:
        return _why(path, exc)
    finally:
        _undo(path, existed, made)
    return None


def folder_write_problem(folder: Path) -> str | None:
    """Why files could not be created in ``folder``, or None when they can (leaves no trace)."""
    return write_problem(folder / f".critic22-probe-{os.getpid()}-{secrets.token_hex(4)}")


def _undo(path: Path, existed: bool, made: list[Path]) -> None:
    try:
        if not existed and path.is_file() and path.stat().st_size == 0:
            path.unlink()
    except OSError:
        pass
    for folder in made:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            break


def _why(path: Path, exc: OSError) -> str:
    """The reason in the user's terms: which file is in the way, or what the OS said."""
    for ancestor in (path.parent, *path.parent.parents):
        if os.path.lexists(ancestor):
            if not ancestor.is_dir():
                return f"{ancestor} is a file, not a folder"
            break
    if path.is_dir():
        return f"{path} is a folder"
    return exc.strerror or str(exc)


class Ledger:
    def __init__(self, path: Path, run_id: str) -> None:
        self.path = path
        self.run_id = run_id

    def append(self, event: str, payload: Mapping[str, Any] | None = None) -> None:
        record = {
            "schema": SCHEMA_VERSION,
            "run": self.run_id,
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "pid": os.getpid(),
            "event": event,
            "payload": dict(payload or {}),
        }
        text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str) + "\n"
        # Credentials never reach the ledger: the children's output, a URL in an error...
        line = scrub(text, os.environ).encode("utf-8", "backslashreplace")  # a lone surrogate
        if self.path.parent.name == STATE_DIR:
            ensure_state_dir(self.path.parent)
        # No link followed inside .critic22/ (the folders on the way, the file itself).
        fd = open_append(self.path)
        try:
            _lock(fd)
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)  # closing releases the lock


def read_events(path: Path, run_id: str | None = None) -> list[dict[str, Any]]:
    return list(_iter_events(path, run_id))


def _iter_events(path: Path, run_id: str | None) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            event = json.loads(line)
            if run_id is None or event.get("run") == run_id:
                yield event


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: O_APPEND alone
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
