"""The fork-server: several pytest sessions in one sandboxed child, one after another.

Started by :mod:`pytest_critic22.execution.forkserver` as ``python -c SOURCE`` inside bubblewrap
(imported as part of this package, it would make pytest warn that it cannot rewrite a plugin
imported before it). It makes itself non-dumpable, imports pytest and its built-in plugins once,
only then reads its input (one started early waits there: ``forkrun.prestart``), freezes its heap,
then runs every job's sessions, one at a time, each in a fresh fork of itself. Between two
sessions it leaves the next one what a separate child would have found (:func:`_sweep`):

- no process: everything in the sandbox's PID namespace but the zygote, its first process
  (``--as-pid-1``: no other process there holds the results' pipe), is killed and reaped,
  ``setsid`` and double-forked ones included (they cannot leave the namespace);
- an empty ``/tmp`` (the sandbox's private tmpfs: the session's JUnit report, output and
  ``HOME`` live there; a mount under it, a tree, is never entered) and ``/dev/shm``, no
  POSIX message queue and no SysV IPC object;
- /dev and those folders' modes, owners and extended attributes as they were, no socket
  left in flight, and the limits, priority and affinity the zygote started with (a session
  that changed any of these ends the batch early);
- its descriptors closed but its own result pipe, a session of its own (``setsid``).

Results travel only through that pipe: the session sends its exit status, its JUnit report
and its output's tail, the zygote relays them as one JSON line on the standard output it
kept for itself. The zygote is non-dumpable and the sandbox dropped every capability, so a
session can read neither its memory nor its descriptors through ``/proc``; as PID 1 it gets
no signal from inside its namespace it did not ask for. Should it end anyway, the batch ends
early and the caller runs the rest as children of their own. A job's sessions are its first
run, then fresh forks confirming while it fails (exit status 1), up to ``runs``; each has
its own time limit, after which it is killed.

With ``presession`` in its input, the sessions start from one pytest configuration the
zygote made after its ready line (:mod:`pytest_critic22.child.forkserver_setup`; refused: it
restarts).

Standard input: JSON ``{"jobs": [{"args": [...], "runs": N, "timeout": S}, ...],
"cpu_seconds": C}`` (its CPU limit from then on, hard too; the boot's was soft). Standard
output: ``{"ready": true}``, then a line per session: ``{"job": I, "run": K, "code": C or
null, "seconds": S, "junit": XML, "output": TEXT}``; ``{"broken": WHY}`` when a session's
leftovers could not be cleared (no further session runs).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import resource
import select
import signal
import stat
import sys
import time
from typing import Any

from pytest_critic22.child.protocol import JOB_DIR, JUNIT, OUTPUT

_OUTPUT_TAIL = 64 * 1024
_MAX_RESULT = 16 << 20  # bytes a session may send; the rest is dropped
_PR_SET_DUMPABLE, _PR_GET_TIMERSLACK = 4, 30
_SYSCALLS = {"x86_64": (252, 315), "aarch64": (31, 275)}  # ioprio_get, sched_getattr

_libc = ctypes.CDLL(None, use_errno=True)


def main() -> int:
    start = dict(os.environ), os.getcwd(), os.umask(0o022)  # what a restart starts from
    os.umask(start[2])
    results = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
    os.dup2(2, 1)  # stray prints of ours go to stderr, never into the results
    if _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        _emit(results, {"broken": "prctl(PR_SET_DUMPABLE) failed"})
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as PID 1 it gets only signals it handles
    home = os.environ.get("HOME", "")
    # What every session imports first: pytest, its built-ins and pdb (nothing to assert-rewrite).
    import pytest  # noqa: F401
    from _pytest.config import default_plugins

    for name in [*(f"_pytest.{name}" for name in default_plugins), "pdb"]:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # its pattern is compiled here, not in every fork
        sys.modules["_pytest.junitxml"].bin_xml_escape("")
    spec = json.loads(sys.stdin.buffer.read() or b"{}")
    os.dup2(null := os.open(os.devnull, os.O_RDWR), 0)
    os.close(null)
    if (cpu := int(spec.get("cpu_seconds", 0))) > 0:
        _cpu_limit(cpu)
    gc.freeze()  # the forks' collections neither walk nor copy what the zygote holds
    folders = [str(f) for f in spec.get("sweep", [])] + ["/dev/shm", "/dev/mqueue"]
    try:
        _sweep(folders)  # nothing of the sandbox's start-up is left for the first one either
        layout = _layout(folders)
        inherited = _inherited()
    except (_Broken, OSError) as exc:
        _emit(results, {"broken": str(exc)})
        return 0
    _emit(results, {"ready": True})
    prepared = None
    if isinstance(spec.get("presession"), dict):
        prepared = _prepare(spec, folders, home, results, start, (inherited, layout))
        if prepared is None:
            return 0
        gc.freeze()
    for index, job in enumerate(spec.get("jobs", [])):
        for run in range(max(1, int(job.get("runs", 1)))):
            try:
                if _inherited() != inherited:  # prlimit, renice... on the zygote by a session
                    raise _Broken("a session changed what the next one would inherit")
                if _layout(folders) != layout:
                    raise _Broken("a session changed /dev or a folder's owner, mode or xattrs")
                done = _session(job, home, folders, prepared)
            except (_Broken, OSError, RecursionError) as exc:
                _emit(results, {"broken": str(exc)})
                return 0
            _emit(results, {"job": index, "run": run, **done})
            if done["code"] != 1:  # only a failing session is confirmed
                break
    return 0


def _cpu_limit(seconds: int) -> None:
    """SIGXCPU after ``seconds`` of CPU, SIGKILL 5 s later (protocol.CPU_GRACE), hard as well as
    soft (what runs here next cannot raise it back), within the hard limit this process had."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    top = seconds + 5 if hard == resource.RLIM_INFINITY else min(seconds + 5, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(seconds, top), top))


def _inherited() -> tuple[object, ...]:
    """What a fork inherits that another process of the same user can change without ptrace: all
    of /proc/self/limits, priority, CPU affinity, the whole sched_getattr, I/O priority, cgroup,
    OOM score, core dump filter, timer slack (on an architecture whose syscalls are known)."""
    texts = []
    for name in ("limits", "cgroup", "oom_score_adj", "coredump_filter"):
        with open(f"/proc/self/{name}", encoding="ascii") as handle:
            texts.append(handle.read())
    numbers = _SYSCALLS.get(os.uname().machine)
    if numbers is None:
        raise _Broken(f"no fork-server on {os.uname().machine}")
    ioprio = _libc.syscall(numbers[0], 1, 0)  # IOPRIO_WHO_PROCESS, this process
    attr = ctypes.create_string_buffer(128)
    if _libc.syscall(numbers[1], 0, attr, 128, 0) != 0:
        raise _Broken(f"sched_getattr: {os.strerror(ctypes.get_errno())}")
    return (
        texts,
        os.getpriority(os.PRIO_PROCESS, 0),
        sorted(os.sched_getaffinity(0)),
        attr.raw,
        ioprio,
        _libc.prctl(_PR_GET_TIMERSLACK, 0, 0, 0, 0),
    )


def _emit(stream: Any, record: dict[str, Any]) -> None:
    """One record a line: control characters escaped, not the rest (it would grow sixfold)."""
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    stream.flush()


def _prepare(
    spec: dict[str, Any], folders: list[str], home: str, results: Any, start: Any, was: Any
) -> Any:
    """(presession.py, its configuration, its capture's descriptors), or None when the batch
    ends (said). A refusal that left nothing a restart's sweep cannot undo (``was``: what a
    fork inherits and the layout, as they were) restarts this zygote without one."""
    namespace: dict[str, Any] = {"__name__": "critic22_presession"}
    try:
        exec(compile(str(spec["presession"]["source"]), "<critic22-presession>", "exec"), namespace)
        args = [str(arg) for arg in spec["presession"]["args"]]
        _as_pytest_main(args)
        seconds = float(spec["presession"]["timeout"])
        config, why = namespace["prepare"](args, seconds, home, len(spec.get("jobs", ())))
        kept = namespace["capture_fds"](config) if config is not None else set()
    except Exception as exc:
        config, why = None, f"no configuration prepared: {type(exc).__name__}"
    same, now = _inherited() == was[0], _layout(folders)
    if config is not None and now != was[1]:  # a file, a mode: a fork would not make it
        config, why = None, "the configuration changed the zygote's files"
    if config is not None and same:
        return namespace, config, kept
    outside = namespace.get("outside")
    if config is None and same and callable(outside) and outside(now, was[1], folders):
        _emit(results, {"restarted": why})
        with contextlib.suppress(OSError):
            namespace["restart"](spec, results.fileno(), *start)
    _emit(results, {"broken": why or "the configuration changed the sandbox"})
    return None


def _session(
    job: dict[str, Any], home: str, folders: list[str], prepared: Any = None
) -> dict[str, Any]:
    """One session in a fresh fork: its exit status (None: killed at its time limit), time,
    JUnit report and output tail, as the session sent them through its pipe."""
    timeout = float(job.get("timeout", 60))
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _job(write_end, job, home, prepared)
        finally:
            os._exit(3)
    os.close(write_end)
    code, late, data = _wait(read_end, pid, start + timeout, folders)
    seconds = time.monotonic() - start
    os.close(read_end)
    record: dict[str, Any] = {"code": None if late else code, "seconds": seconds}
    try:
        sent = json.loads(data.decode("utf-8", "replace")) if data else {}
    except ValueError:
        sent = {}
    sent = sent if isinstance(sent, dict) else {}
    if not late and isinstance(sent.get("code"), int):
        record["code"] = sent["code"]
    for key in ("junit", "output"):
        if isinstance(sent.get(key), str):
            record[key] = sent[key]
    return record


def _wait(fd: int, pid: int, deadline: float, folders: list[str]) -> tuple[int | None, bool, bytes]:
    """Read what the session sends while it runs; when it ends (or its time is up: killed),
    clear its leftovers (their pipe copies end with them), read the rest: (code, late, data)."""
    chunks: list[bytes] = []
    size = 0
    code: int | None = None
    late = False
    open_ = True
    while open_ and code is None:
        if time.monotonic() > deadline:
            late = True
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        ready, _, _ = select.select([fd], [], [], 0.005)
        if ready:
            chunk = os.read(fd, 1 << 16)
            open_ = bool(chunk)
            if size < _MAX_RESULT:
                chunks.append(chunk)
                size += len(chunk)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
    if code is None and not late:
        _, status = os.waitpid(pid, 0)  # the pipe closed first: it is ending
        code = os.waitstatus_to_exitcode(status)
    _sweep(folders)
    os.set_blocking(fd, False)
    with contextlib.suppress(BlockingIOError):
        while size < _MAX_RESULT and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            size += len(chunk)
    return code, late, b"".join(chunks)


class _Broken(Exception):
    pass


def _sweep(folders: list[str]) -> None:
    """Kill every process in the sandbox but this one (its PID 1), then empty every folder
    the sandbox made writable for its children besides their tree (its tmpfs folders: /tmp,
    /run, /var/tmp, the hidden home; /dev/shm, the POSIX message queues) and SysV IPC: the
    next session starts as a separate child would."""
    for _ in range(2000):
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # as PID 1: every other process of the namespace
        with contextlib.suppress(ChildProcessError):  # orphans are ours to reap
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if _pids() == [os.getpid()]:
            break
        time.sleep(0.001)
    else:
        raise _Broken("a session's processes could not all be killed")
    for folder in folders:
        try:
            clean = not os.path.isdir(folder) or _clear(folder, os.lstat(folder).st_dev)
        except (OSError, RecursionError):
            clean = False
        if not clean:
            raise _Broken(f"{folder} could not be emptied")
    _remove_ipc()
    if not _no_sockets():
        raise _Broken("a session's sockets outlived it")


def _layout(folders: list[str]) -> list[tuple[object, ...]]:
    """What the sweep leaves and must find again: all of /dev (a writable tmpfs: a session
    could replace a node or a link), and every emptied folder, with the folders that lead to
    a mount inside it and the mounts' roots (its pts and mqueue mounts too): path, mode,
    owner, device, link target, extended attributes."""
    found: list[tuple[object, ...]] = []
    for root in ["/dev", "/dev/pts", *folders]:
        if not os.path.lexists(root):
            continue
        device = os.lstat(root).st_dev
        found.append(_entry(root))
        for top, dirs, files in os.walk(root):
            for name in [*dirs, *files]:
                found.append(_entry(os.path.join(top, name)))
            dirs[:] = [d for d in dirs if os.lstat(os.path.join(top, d)).st_dev == device]
    return sorted(found, key=repr)


def _entry(path: str) -> tuple[object, ...]:
    info = os.lstat(path)
    link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else ""
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
        attrs = [(n, os.getxattr(path, n, follow_symlinks=False)) for n in names]
    except OSError:
        attrs = []
    return (path, info.st_mode, info.st_uid, info.st_gid, info.st_rdev, link, attrs)


def _no_sockets() -> bool:
    """No socket is left in the sandbox's network namespace but TCP ones in TIME_WAIT. A
    socket passed in flight over a UNIX socket outlives its processes until the kernel's
    garbage collection of such cycles, which passing one descriptor over a fresh pair starts."""
    import socket

    for _ in range(200):
        a, b = socket.socketpair()
        with a, b:
            socket.send_fds(a, [b"x"], [a.fileno()])
        if not _sockets_listed():
            return True
        time.sleep(0.005)
    return False


def _sockets_listed() -> bool:
    """The namespace's own count of sockets first (Linux 4.16 on; a host-wide one before, never
    0 on a running host): each read of /proc/net/tcp walks the whole host's table."""
    with contextlib.suppress(OSError, ValueError), open("/proc/net/sockstat", "rb") as handle:
        if handle.readline().split()[:3] == [b"sockets:", b"used", b"0"]:
            return False
    for name in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix", "packet", "udplite"):
        for fields in _table(f"/proc/net/{name}"):
            if name.startswith("tcp") and len(fields) > 3 and fields[3] == "06":
                continue  # TIME_WAIT: no process holds it
            if fields:
                return True
    return False


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _clear(folder: str, device: int) -> bool:
    """Remove everything in ``folder`` on its own file system, never crossing into another
    (the trees the sandbox binds may live under /tmp: a mount is left alone, whatever its
    name). True when all that is left are mounts and the folders that lead to them."""
    clean = True
    for entry in list(os.scandir(folder)):
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if status.st_dev != device:
            continue  # a mount
        if stat.S_ISDIR(status.st_mode):
            if _clear(entry.path, device):
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)
            else:
                clean = False
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            clean = False
    return clean and all(
        os.lstat(e.path).st_dev != device or _leads_to_mount(e.path, device)
        for e in os.scandir(folder)
    )


def _leads_to_mount(folder: str, device: int) -> bool:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    return bool(entries) and all(
        e.stat(follow_symlinks=False).st_dev != device
        or (e.is_dir(follow_symlinks=False) and _leads_to_mount(e.path, device))
        for e in entries
    )


def _table(path: str) -> list[list[str]]:
    """The rows of a /proc table, split, its header line left out ([] when unreadable)."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return [row.split() for row in handle.read().splitlines()[1:]]
    except OSError:
        return []


def _remove_ipc() -> None:
    """SysV shared memory, semaphores and message queues a session left (IPC_RMID)."""
    for kind, call in (("shm", "shmctl"), ("sem", "semctl"), ("msg", "msgctl")):
        for fields in _table(f"/proc/sysvipc/{kind}"):
            if len(fields) > 1 and fields[1].isdigit():
                rest = (0, 0, None) if kind == "sem" else (0, None)  # IPC_RMID
                getattr(_libc, call)(int(fields[1]), *rest)


def _job(result: int, job: dict[str, Any], home: str, prepared: Any) -> None:
    """The session: its own process group and session, the zygote's descriptors closed."""
    code = 3
    _close_all_but({result, *(prepared[2] if prepared else ())})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.setsid()
    with contextlib.suppress(OSError):
        os.makedirs(JOB_DIR, exist_ok=True)
        if home.startswith("/tmp/"):
            os.makedirs(home, exist_ok=True)
    with contextlib.suppress(ValueError, OSError):
        _cpu_limit(int(float(job.get("timeout", 60))) + 5)
    out = os.open(OUTPUT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    try:
        args = [str(arg) for arg in job["args"]]
        main = _as_pytest_main(args).main  # sys.argv and __main__ are pytest's either way
        code = int(main(args)) if not prepared else prepared[0]["session"](prepared[1], args, job)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    sent = {"code": code, "junit": _read(JUNIT, None), "output": _read(OUTPUT, _OUTPUT_TAIL)}
    _send(result, sent)
    os._exit(code & 0xFF)


def _close_all_but(keep: set[int]) -> None:
    os.dup2(null := os.open(os.devnull, os.O_RDWR), 0)
    os.dup2(null, 1)
    os.close(null)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _as_pytest_main(args: list[str]) -> Any:
    """``python -m pytest ARGS`` as far as a session can tell: its ``sys.argv`` and a
    ``__main__`` that is pytest's, not the zygote's. Returns pytest."""
    import importlib.util
    import types

    import pytest

    main_file = os.path.join(os.path.dirname(pytest.__file__), "__main__.py")
    module = types.ModuleType("__main__")
    module.__file__ = main_file
    module.__spec__ = importlib.util.find_spec("pytest.__main__")
    sys.modules["__main__"] = module
    sys.argv = [main_file, *args]
    return pytest


def _send(fd: int, record: dict[str, Any]) -> None:
    data = json.dumps(record).encode("utf-8")
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(fd, data) :]


def _read(path: str, tail: int | None) -> str:
    try:
        with open(path, "rb") as handle:
            if tail is not None:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - tail))
            return handle.read(_MAX_RESULT).decode("utf-8", "replace")
    except OSError:
        return ""


if __name__ == "__main__":
    raise SystemExit(main())
