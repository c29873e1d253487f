"""Which process owns a run's folder, and whether it is still running (I/O).

A run writes its owner file (:data:`OWNER`: its PID and the process's start time) when it
claims its folder; a later run prunes what a dead owner left (a crash, a kill -9). A PID
alone is not enough: a zombie not yet reaped and a PID reused by another process both
count as gone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["OWNER", "identity", "owner_alive", "start_time", "young"]

OWNER = "owner.json"


def identity(pid: int) -> dict[str, object]:
    return {"pid": pid, "start": start_time(pid)}


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat):
    with the PID, it names one process for the machine's uptime."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_alive(run: Path) -> bool:
    """Is the process that claimed this run still running (not a zombie, not a reused PID)?
    A run folder without an owner file is not yet claimed if it is young: its creator is
    between ``mkdir`` and writing the file."""
    try:
        owner = json.loads((run / OWNER).read_text())
        pid = int(owner["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return young(run)
    proc = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():  # Linux: the precise answer
        try:
            stat = proc.read_text()
        except OSError:
            return False
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X"):  # a zombie: dead, only not yet reaped by its parent
            return False
        started = owner.get("start")
        return started is None or fields[19] == started
    try:  # pragma: no cover - elsewhere: signal 0
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def young(run: Path, seconds: float = 60.0) -> bool:
    import time

    try:
        return time.time() - run.stat().st_mtime < seconds
    except OSError:
        return False
