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

__all__ = [
    "SCHEMA_VERSION",
    "Ledger",
    "ensure_state_dir",
    "new_run_id",
    "read_events",
]

SCHEMA_VERSION = 1
STATE_DIR = ".critic22"

_GITIGNORE = "# Created by pytest-critic22 automatically.\n*\n"


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(4)


def ensure_state_dir(path: Path) -> Path:
    """Create ``.critic22/`` (or any folder) with a .gitignore, as pytest does for its cache."""
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if path.name == STATE_DIR and not ignore.exists():
        try:
            with open(ignore, "x", encoding="utf-8") as fh:
                fh.write(_GITIGNORE)
        except FileExistsError:  # another process won the race
            pass
    return path


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
        line = (json.dumps(record, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode()
        if self.path.parent.name == STATE_DIR:
            ensure_state_dir(self.path.parent)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
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
