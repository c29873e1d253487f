"""Several requests' pytest sessions in one sandboxed child
(:mod:`pytest_critic22.child.forkserver`).

Each request keeps what a child of its own gives it: its own session (a fresh fork of a
process that imported pytest once), exit status, JUnit report and output, read by the same
:func:`pytest_critic22.execution.junit.interpret`, and a sandbox emptied of the sessions before it
(no process, no ``/tmp`` file, no IPC object left). Only the sandbox's start-up, the
interpreter's and pytest's imports are shared. A request's ``attempts`` re-execute a failing
test inside its session (:mod:`pytest_critic22.child.rerun`); a failing session is then
confirmed by fresh forks, each a new process and a run of its own in the result (never
filled in).

Only under bubblewrap: the rlimits fallback has no PID namespace in which leftovers can be
found and killed, so there every request runs as a child of its own. A request is left to a
child of its own (None) when its first session errored with plugins blocked (the guess about
plugins may be why; not when its errors cannot be theirs,
:func:`~pytest_critic22.execution.child_plugins.blocked_plugins_innocent`), and when the child
ended before its session did (a crash, a kill).
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_critic22.child.protocol import JUNIT, expired
from pytest_critic22.execution.child_plugins import blocked_plugins, blocked_plugins_innocent
from pytest_critic22.execution.junit import NO_REPORT, Case, interpret, parse_cases
from pytest_critic22.execution.processes import kill, spawn, supervise
from pytest_critic22.execution.runner import (
    default_sandbox,
    launcher_argv,
    pytest_args,
    scrubbed_tail,
)
from pytest_critic22.execution.sandbox import (
    CHILD_HOME,
    CHILD_TMP,
    Sandbox,
    bwrap_argv,
    child_env,
    hidden_folders,
    probe_fork_server,
)
from pytest_critic22.model.results import RunResult

__all__ = ["ForkRequest", "discard_prestarted", "prestart", "run_forked"]

_CHILD = Path(__file__).resolve().parent.parent / "child"
_SOURCE = _CHILD / "forkserver.py"
_PRESESSION = _CHILD / "forkserver_setup.py"
# Whether sessions start from one configuration the zygote prepared (presession.py) when
# their jobs allow it; tests and benchmarks turn it off to compare.
PREPARE = True
# Non-empty once a server gave no ready line: every later request runs as a child of its own.
_NOT_STARTED: list[str] = []
# A server's own CPU limit until it reads its input (then the input's): its boot's.
_BOOT_CPU = 60
# Servers booted before their runs were known (prestart), by (tree, command, environment).
_PRESTARTED: dict[tuple[object, ...], subprocess.Popen[bytes]] = {}
_PRESTARTED_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class ForkRequest:
    args: tuple[str, ...]  # checked pytest arguments (node ids)
    runs: int = 1  # the first run, then fresh forks confirming while it fails
    attempts: int = 1  # each session re-executes a failing test up to this many times in all


def run_forked(
    tree: Path,
    requests: Sequence[ForkRequest],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None = None,
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    booted: bool = True,
) -> list[tuple[RunResult, list[Case]] | None]:
    """Each request as sessions of its own in one child (with ``booted``, the one
    :func:`prestart` booted for it, if any); ``timeout`` is each session's, per attempt.

    A request's result is its first run, with the confirming runs as its ``then``; its cases
    are the first run's. None: a child of its own must decide (see the module's docstring).
    """
    box = sandbox or default_sandbox()
    if not box.isolated or not requests or probe_fork_server() or _NOT_STARTED:
        return [None for _ in requests]
    if any(arg.startswith("@") for request in requests for arg in request.args):
        return [None for _ in requests]  # run_pytest refuses it, with its reason
    files = [a for request in requests for a in request.args if not a.startswith("-")]
    blocked = blocked_plugins(tree, files)
    runs = [max(1, request.runs) for request in requests]
    tries = [max(1, request.attempts) for request in requests]
    jobs = [
        {
            "args": pytest_args(JUNIT, (), blocked, k, request.args, timeout),
            "runs": n,
            "timeout": timeout * k,
        }
        for request, n, k in zip(requests, runs, tries, strict=True)
    ]
    # each session is timed inside, and a configuration the zygote prepares; a backstop
    overall = timeout * (sum(n * k for n, k in zip(runs, tries, strict=True)) + 1) + 30
    base_env = os.environ if env is None else env
    command, child = _server(tree, pythonpath, box, memory_bytes, max_processes, base_env)
    sweep = [str(folder) for folder in hidden_folders()]  # the sandbox's writable tmpfs
    order: dict[str, Any] = {"jobs": jobs, "sweep": sweep, "cpu_seconds": int(overall) + 5}
    if PREPARE and max(runs) == 1 and _one_configuration(tree, requests):
        # every job's arguments but for its test files and attempts: one configuration
        order["presession"] = {
            "source": _source(_PRESESSION),
            "args": pytest_args(JUNIT, (), blocked, 1, requests[0].args),
            "timeout": timeout,
        }
        for job, request, k in zip(jobs, requests, tries, strict=True):
            job.update(files=list(request.args), attempts=k, attempt_timeout=timeout)
    spec = json.dumps(order).encode("utf-8")
    proc = _take(tree, command, child) if booted else None
    code, out, _, _ = supervise(
        command, tree, child, overall, stdin=spec, stderr_apart=True, proc=proc
    )
    # split on newlines only: a record may hold U+2028 and friends, which splitlines() cuts at
    lines = out.decode("utf-8", "replace").split("\n")
    if code is not None and code > 0 and not lines[0].startswith('{"ready"'):
        # It exited by itself before it was ready (not killed, not out of time): no server
        # starts here, and the rest of this process's requests go to children of their own.
        _NOT_STARTED.append(lines[0][:200])
    done = _in_order(lines, runs)
    if done is None:
        return [None for _ in requests]
    return [
        _result(done.get(index, []), timeout, k, blocked, base_env, request.args)
        for index, (k, request) in enumerate(zip(tries, requests, strict=True))
    ]


def prestart(
    tree: Path,
    *,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None = None,
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
) -> bool:
    """Boot a fork-server for ``tree`` now, before its runs are known: it imports pytest, then
    waits for its input, which the first :func:`run_forked` of the same tree, command and
    environment hands it (any other kind of call, or none, leaves it to
    :func:`discard_prestarted`). Only from the main thread: the sandbox dies with the thread
    that started it (``--die-with-parent``). True when one was started."""
    box = sandbox or default_sandbox()
    if threading.current_thread() is not threading.main_thread():
        return False
    if not box.isolated or probe_fork_server() or _NOT_STARTED:
        return False
    command, child = _server(tree, pythonpath, box, memory_bytes, max_processes, os.environ)
    key = _key(tree, command, child)
    with _PRESTARTED_LOCK:
        if key in _PRESTARTED:
            return False
        try:
            proc = spawn(command, tree, child, stdin=True, stderr_apart=True)
        except OSError:  # no process now (EAGAIN, EMFILE): its run starts one, or says why
            return False
        if proc is None:
            return False
        _PRESTARTED[key] = proc
    return True


def discard_prestarted() -> None:
    """Kill every booted fork-server no run took (the run's trees go next)."""
    with _PRESTARTED_LOCK:
        booted = list(_PRESTARTED.values())
        _PRESTARTED.clear()
    for proc in booted:
        kill(proc)


def _take(tree: Path, command: list[str], env: Mapping[str, str]) -> subprocess.Popen[bytes] | None:
    """The server booted for exactly this command, if it still waits for its input."""
    if not _PRESTARTED:  # none booted (the usual case under xdist, rlimits, a replay of 0)
        return None
    key = _key(tree, command, env)
    with _PRESTARTED_LOCK:
        proc = _PRESTARTED.pop(key, None)
    if proc is not None and proc.poll() is not None:
        kill(proc)
        return None
    return proc


def _key(tree: Path, command: Sequence[str], env: Mapping[str, str]) -> tuple[object, ...]:
    """What a server inherits: its command, folder and environment, and what the process
    that starts it hands down besides (a booted one has the state from its boot; the user's
    own tests may have run in between and changed it)."""
    return (str(tree), tuple(command), tuple(sorted(env.items())), _inherited())


def _inherited() -> tuple[object, ...]:
    """As /proc tells them (read, never set: ``os.umask()`` would change the umask for every
    thread meanwhile): every resource limit, and the calling thread's umask, blocked signals
    and CPU affinity; with the priority."""
    texts: list[str] = []
    for path, wanted in (
        ("/proc/self/limits", ("",)),
        ("/proc/thread-self/status", ("Umask:", "SigBlk:", "Cpus_allowed_list:")),
    ):
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                texts += [line for line in handle if line.startswith(wanted)]
        except OSError:
            texts.append(f"{path}: unreadable")
    return (*texts, os.getpriority(os.PRIO_PROCESS, 0))


def _server(
    tree: Path,
    pythonpath: Sequence[Path],
    box: Sandbox,
    memory_bytes: int,
    max_processes: int,
    base_env: Mapping[str, str],
) -> tuple[list[str], dict[str, str]]:
    """The fork-server's command and environment: nothing in them depends on its jobs."""
    command = bwrap_argv(
        launcher_argv(
            ["-c", _source(_SOURCE)], _BOOT_CPU, memory_bytes, max_processes, cpu_hard=0
        ),  # its hard CPU limit: its own, once it has read its jobs (zygote.py)
        tree=tree,
        writable=(),
        fork_server=True,  # PID 1: nothing else in its namespace holds the results' pipe
    )
    child = child_env(base_env, pythonpath, home=CHILD_HOME, tmp=CHILD_TMP, pass_env=box.pass_env)
    child["CRITIC22_SANDBOX"] = box.mode
    return command, child


def _one_configuration(tree: Path, requests: Sequence[ForkRequest]) -> bool:
    """Whether pytest would make one configuration for all of these sessions: only test
    files (node ids) that exist, all in one folder, so the same rootdir, ini file and initial
    conftest files (presession.py makes it once). Not when a session is confirmed by fresh
    forks (``runs`` > 1): a random generator made on a conftest's import would be the same
    in each, and a random failure would look like a steady one."""
    folders = set()
    for request in requests:
        for arg in request.args:
            path = arg.split("::", 1)[0]
            if arg.startswith("-") or not (tree / path).is_file():
                return False
            folders.add(posixpath.dirname(path))
    return len(folders) == 1


def _in_order(lines: Sequence[str], runs: Sequence[int]) -> dict[int, list[dict[str, Any]]] | None:
    """The sessions' records by job, exactly in the order the zygote runs them (job by job,
    run by run, a further run only after a failing one); None when anything deviates, so
    that nothing is ever credited to the wrong request. A line cut short ends the reading."""
    done: dict[int, list[dict[str, Any]]] = {}
    job, run, code = -1, 0, None
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            break  # the child was killed while writing
        if not isinstance(record, dict):
            return None
        if "ready" in record or "restarted" in record:  # a zygote that restarted says both
            continue
        if "broken" in record:
            break
        nth, kth, this = record.get("job"), record.get("run"), record.get("code")
        if type(nth) is not int or type(kth) is not int or not _well_typed(record):
            return None
        if nth == job and kth == run + 1 and code == 1 and kth < runs[job]:
            run = kth
        elif nth == job + 1 and kth == 0 and nth < len(runs):
            job, run = nth, 0
        else:
            return None
        code = this
        done.setdefault(job, []).append(record)
    return done


def _well_typed(record: dict[str, Any]) -> bool:
    code, seconds = record.get("code"), record.get("seconds", 0.0)
    return (
        (code is None or type(code) is int)
        and type(seconds) in (int, float)
        and all(isinstance(record.get(key, ""), str) for key in ("junit", "output"))
    )


def _result(
    records: list[dict[str, Any]],
    timeout: float,
    attempts: int,
    blocked: Sequence[str],
    environ: Mapping[str, str],
    requested: Sequence[str] = (),
) -> tuple[RunResult, list[Case]] | None:
    if not records:
        return None
    done = [_run(record, timeout, attempts, environ) for record in records]
    first, cases = done[0]
    if first.status == "error" and first.exit_code is not None and blocked:
        code, output = first.exit_code, first.output
        if not blocked_plugins_innocent(cases, blocked, output, code, requested):
            return None  # maybe a blocked plugin's doing: a run of its own, whole, decides
    return replace(first, then=tuple(run for run, _ in done[1:])), cases


def _run(
    record: dict[str, Any], timeout: float, attempts: int, environ: Mapping[str, str]
) -> tuple[RunResult, list[Case]]:
    output = scrubbed_tail(str(record.get("output", "")).encode("utf-8"), environ)
    seconds = float(record.get("seconds") or 0.0)
    code = record.get("code")
    if not isinstance(code, int) or expired(code, attempts, timeout, bool(record.get("junit"))):
        reason = f"timed out after {timeout:g}s" + (
            f" per run ({attempts} in one session)" if attempts > 1 else ""
        )
        return RunResult("error", reason, None, seconds, output=output), []
    if code in (0, 1) and not record.get("junit"):
        return RunResult("error", NO_REPORT, code, seconds, output=output), []
    cases = parse_cases(str(record.get("junit", "")))
    return interpret(code, cases, output, seconds), cases


@functools.cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")
