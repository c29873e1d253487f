"""The children this process starts: each in its own session, registered as live (Ctrl-C
kills it from any thread), its whole process group killed when it ends or its time is up.

A child may be started before what it is to do is known (:func:`spawn`, then
:func:`supervise` with ``proc``): a fork-server boots while the controller still reviews
(:mod:`pytest_critic22.execution.forkserver`). Its time limit counts from when it is handed its
input.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "allow_children",
    "drain",
    "kill",
    "kill_live_children",
    "spawn",
    "stopped",
    "supervise",
]

# Children started by this process and not yet reaped: a batch interrupted in one thread
# kills those that other threads wait for (see pytest_critic22.execution.batching).
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_STOPPED = threading.Event()


def spawn(
    command: Sequence[str],
    tree: Path,
    env: Mapping[str, str],
    *,
    stdin: bool = False,
    stderr_apart: bool = False,
) -> subprocess.Popen[bytes] | None:
    """Start a child, registered as live; None after an interrupted batch (no new child).
    With ``stdin`` it reads a pipe that :func:`supervise` writes (and closes)."""
    with _LIVE_LOCK:
        if _STOPPED.is_set():
            return None
        proc = subprocess.Popen(
            command,
            cwd=tree,
            env=dict(env),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if stderr_apart else subprocess.STDOUT,
            start_new_session=True,
        )
        _LIVE.add(proc)
    return proc


def supervise(
    command: Sequence[str],
    tree: Path,
    env: Mapping[str, str],
    timeout: float,
    *,
    stdin: bytes | None = None,
    stderr_apart: bool = False,
    proc: subprocess.Popen[bytes] | None = None,
) -> tuple[int | None, bytes, bytes, float]:
    """Run a child (or, given ``proc``, one :func:`spawn` started with the same command and
    a stdin pipe) to its end or its time limit: (exit status or None, standard output —
    with the error output unless ``stderr_apart`` —, error output, seconds)."""
    start = time.monotonic()
    if proc is None:
        proc = spawn(command, tree, env, stdin=stdin is not None, stderr_apart=stderr_apart)
    if proc is None:  # a batch was interrupted: no new child
        return None, b"interrupted before it started", b"", 0.0
    try:
        out, err = proc.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = _drained(proc)
        return None, out, err, time.monotonic() - start
    except BaseException:  # Ctrl-C and friends: leave no child behind
        _kill_group(proc)
        raise
    finally:
        kill(proc)  # grandchildren that outlived the child
    return proc.returncode, out or b"", err or b"", time.monotonic() - start


def kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group, reap it, and close its pipes."""
    _kill_group(proc)
    with _LIVE_LOCK:
        _LIVE.discard(proc)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def stopped() -> bool:
    """Whether a batch was interrupted: no new child starts until :func:`allow_children`."""
    return _STOPPED.is_set()


def allow_children() -> None:
    """Children may start again (a new batch, after an interrupted one in this process)."""
    _STOPPED.clear()


def kill_live_children() -> None:
    """Kill the process group of every child this process is running (from any thread), and
    start no new one until :func:`allow_children`."""
    with _LIVE_LOCK:
        _STOPPED.set()
        live = list(_LIVE)
    for proc in live:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(proc.pid, signal.SIGKILL)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def drain(proc: subprocess.Popen[bytes]) -> bytes:
    return _drained(proc)[0]


def _drained(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a killed child had written (communicate keeps what it read before a timeout)."""
    try:
        out, err = proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        return b"", b""
    return out or b"", err or b""
