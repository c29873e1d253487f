"""Running pytest inside a tree, in a subprocess we do not trust.

The child runs in the sandbox (:mod:`pytest_critic22.execution.sandbox`: bubblewrap namespaces, or
the rlimits fallback), in its own process group (a timeout or Ctrl-C kills the whole
group), under CPU-time, address-space and process-count limits, with an allow-listed
environment. Results come from a JUnit XML report, never from scraped terminal text, and
the output tail kept for reports is scrubbed of credentials.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pytest_critic22.child.protocol import CPU_GRACE, expired
from pytest_critic22.execution.child_files import child_tempdir
from pytest_critic22.execution.child_plugins import blocked_plugins, blocked_plugins_innocent
from pytest_critic22.execution.junit import NO_REPORT, Case, interpret, read_cases
from pytest_critic22.execution.processes import (
    stopped,
    supervise,
)
from pytest_critic22.execution.sandbox import (
    CHILD_HOME,
    CHILD_TMP,
    Sandbox,
    bwrap_argv,
    child_env,
    resolve,
)
from pytest_critic22.model.results import RunResult
from pytest_critic22.model.scrub import scrub

__all__ = [
    "clean_env",
    "cpu_slot",
    "default_sandbox",
    "detect_pythonpath",
    "launcher_argv",
    "pytest_args",
    "run_cases",
    "run_pytest",
    "scrubbed_tail",
    "spawn_python",
]

# The launcher sets limits, then becomes pytest: limits without preexec_fn (thread-safe).
_LAUNCHER = """\
import os, resource, signal, sys
try:  # die with the controller even under SIGKILL (bwrap does this itself; rlimits needs it)
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
except Exception:
    pass
def _set(limit, value, ceiling):
    try:
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value, ceiling = min(value, hard), min(ceiling, hard)
        resource.setrlimit(limit, (value, ceiling))
    except (ValueError, OSError):
        pass
cpu, cpu_hard, mem, nproc = (int(x) for x in sys.argv[1:5])
_set(resource.RLIMIT_CPU, cpu, cpu_hard or resource.RLIM_INFINITY)
if mem:
    _set(resource.RLIMIT_AS, mem, mem)
if nproc:
    _set(resource.RLIMIT_NPROC, nproc, nproc)
os.execv(sys.executable, [sys.executable, *sys.argv[5:]])
"""


def clean_env(
    base: Mapping[str, str], pythonpath: Sequence[Path], pass_env: Sequence[str] = ()
) -> dict[str, str]:
    """The child's environment, from an allow-list (see :func:`sandbox.child_env`)."""
    return child_env(base, pythonpath, home=CHILD_HOME, pass_env=pass_env)


def detect_pythonpath(tree: Path, override: Sequence[str] = ()) -> list[Path]:
    """Where the tree's code lives: ``src/`` when it has one, and the tree's root."""
    if override:
        return [tree / p for p in override]
    return [tree / "src", tree] if (tree / "src").is_dir() else [tree]


def run_pytest(
    tree: Path,
    args: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    module: Sequence[str] = (),
    plugins: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    writable: Sequence[Path] = (),
    scratch: Path | None = None,
    attempts: int = 1,
    trim_plugins: bool = True,
) -> RunResult:
    """Run ``python -m pytest ARGS`` in ``tree``; never hangs past ``timeout``.

    ``module`` wraps pytest (``["coverage", "run", ..., "-m"]`` runs it under coverage);
    ``plugins`` are extra ``-p`` plugins for the child (our tracer); ``extra_env`` is
    added after the environment was built (a hash seed, the tracer's settings);
    ``writable`` are folders besides the tree the child may write (a coverage data file,
    a trace); ``scratch`` is where the run's temporary folders go (default: the temp dir).
    ``args`` must already be checked (node ids are data, see :mod:`nodeids`); as a last
    line of defence an argument starting with ``@`` is refused: pytest reads it as a file of
    more arguments (``@x.py`` reads ``x.py``), so a tree holding both files could smuggle
    options, or tests outside the tree, past every node id check.

    ``attempts`` > 1 re-executes a failing test in the same child until it passes or has
    failed that often (:mod:`pytest_critic22.child.rerun`); the outcomes are the result's
    ``attempts``. ``trim_plugins`` blocks the installed plugins the project does not use
    (:mod:`pytest_critic22.execution.child_plugins`); a run that errors that way is run again whole.
    """
    result, _ = run_cases(
        tree,
        args,
        timeout=timeout,
        pythonpath=pythonpath,
        memory_bytes=memory_bytes,
        max_processes=max_processes,
        env=env,
        extra_env=extra_env,
        module=module,
        plugins=plugins,
        sandbox=sandbox,
        writable=writable,
        scratch=scratch,
        attempts=attempts,
        trim_plugins=trim_plugins,
    )
    return result


def run_cases(
    tree: Path,
    args: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    module: Sequence[str] = (),
    plugins: Sequence[str] = (),
    sandbox: Sandbox | None = None,
    writable: Sequence[Path] = (),
    scratch: Path | None = None,
    attempts: int = 1,
    trim_plugins: bool = True,
    extra_args: Sequence[str] = (),
    retry_whole: bool = True,
    attempt_timeout: float = 0.0,
) -> tuple[RunResult, list[Case]]:
    """:func:`run_pytest`, with the per-test cases of its JUnit report (node ids, attempts,
    failure texts): what a batch of several findings' tests is split by. With ``attempts``
    > 1, ``attempt_timeout`` (seconds) bounds each attempt inside the child."""
    for arg in args:
        if arg.startswith("@"):
            reason = f"refused to run: {arg!r} would be read by pytest as a file of arguments"
            return RunResult("error", reason, None, 0.0), []
    blocked: tuple[str, ...] = ()
    if trim_plugins:
        blocked = blocked_plugins(tree, [a for a in args if not a.startswith("-")])
    # With plugins blocked, a run that errors is run again whole: a guess about the plugins
    # may be why, and the verdict comes from a whole run.
    for block in (blocked, ()) if retry_whole and blocked else (blocked,):
        with child_tempdir("critic22-run-", _scratch(scratch)) as tmp:
            junit = Path(tmp) / "junit.xml"
            python_args = [
                "-m",
                *module,
                "pytest",
                *pytest_args(
                    str(junit), plugins, block, attempts, [*extra_args, *args], attempt_timeout
                ),
            ]
            code, out, seconds = spawn_python(
                tree,
                python_args,
                timeout=timeout,
                pythonpath=pythonpath,
                memory_bytes=memory_bytes,
                max_processes=max_processes,
                env=env,
                extra_env=extra_env,
                sandbox=sandbox,
                writable=[Path(tmp), *writable],
                scratch=scratch,
            )
            cases = read_cases(junit) if code is not None else []
            reported = junit.exists()
        if code is None or expired(code, attempts, attempt_timeout, reported):
            # out of the child's time, or out of one attempt's (its watchdog ended it)
            limit = timeout if code is None else attempt_timeout * attempts
            return RunResult("error", _no_end(limit, attempts), None, seconds, output=out), []
        result = interpret(code, cases, out, seconds)
        if code in (0, 1) and not reported:  # a passing run whose results nobody can read
            result = RunResult("error", NO_REPORT, code, seconds, output=out)
        retry = block and result.status == "error" and code in (1, 2, 3, 4, 5)
        if not retry or blocked_plugins_innocent(cases, block, out, code, args):
            break
    return result, cases


def pytest_args(
    junit: str,
    plugins: Sequence[str],
    blocked: Sequence[str],
    attempts: int,
    args: Sequence[str],
    attempt_timeout: float = 0.0,
) -> list[str]:
    """A child's pytest arguments: our plugins in, the user's critic22 and the cache out,
    the blocked plugins out, results to the JUnit report ``junit``, then ``args``."""
    timed = attempts > 1 and attempt_timeout > 0
    return [
        *[arg for name in plugins for arg in ("-p", name)],
        "-p",
        "no:critic22",
        "-p",
        "no:cacheprovider",
        *[arg for name in blocked for arg in ("-p", f"no:{name}")],
        "-p",
        "pytest_critic22.child.rerun",
        "-p",
        "pytest_critic22.config.inert_options",
        *([f"--critic22-attempts={attempts}"] if attempts > 1 else []),
        *([f"--critic22-attempt-timeout={attempt_timeout:g}"] if timed else []),
        "-q",
        "-rN",
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit2",
        "-o",
        "junit_logging=no",
        "--color=no",
        *([] if "pytest_cov" in blocked else _no_measurement()),
        *args,
    ]


def _no_end(timeout: float, attempts: int) -> str:
    """Why a child gave no exit status: an interrupted batch, or the time limit (per run)."""
    if stopped():
        return "interrupted: no new child after Ctrl-C"
    if attempts > 1:
        return f"timed out after {timeout / attempts:g}s per run ({attempts} in one child)"
    return f"timed out after {timeout:g}s"


def default_sandbox() -> Sandbox:
    """What a caller that does not say gets: bubblewrap when it works here."""
    return resolve("auto")


def spawn_python(
    tree: Path,
    python_args: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
    writable: Sequence[Path] = (),
    scratch: Path | None = None,
) -> tuple[int | None, str, float]:
    """``python ARGS`` in ``tree``, sandboxed: (exit code or None on timeout, output tail, s).

    The output tail is scrubbed of credentials before anything can record it.
    """
    box = sandbox or default_sandbox()
    launcher = launcher_argv(python_args, int(timeout) + 5, memory_bytes, max_processes)
    base_env = os.environ if env is None else env
    with contextlib.ExitStack() as stack:
        if box.isolated:
            home, tmp = CHILD_HOME, CHILD_TMP
            command = bwrap_argv(launcher, tree=tree, writable=writable)
        else:
            # No private /tmp here: a fresh, empty HOME keeps ~/.netrc and friends out of
            # the child's default paths, and its own TMPDIR (in the run's scratch, pruned
            # with it even after a kill -9) keeps what its tests write out of the temp dir.
            own = Path(stack.enter_context(child_tempdir("critic22-child-", _scratch(scratch))))
            (own / "home").mkdir()
            (own / "tmp").mkdir()
            home, tmp = str(own / "home"), str(own / "tmp")
            command = launcher
        child = child_env(base_env, pythonpath, home=home, tmp=tmp, pass_env=box.pass_env)
        child["CRITIC22_SANDBOX"] = box.mode
        child.update(extra_env or {})
        code, out, seconds = _supervise(command, tree, child, timeout)
    return code, scrubbed_tail(out, base_env), seconds


def launcher_argv(
    python_args: Sequence[str],
    cpu_seconds: int,
    memory_bytes: int,
    max_processes: int,
    *,
    cpu_hard: int | None = None,
) -> list[str]:
    """``python ARGS`` behind the launcher that sets the resource limits first. Isolated
    (``-I -S``): the launcher's folder is the tree, and ``python -c`` would put it first on
    ``sys.path``, so a ``resource.py`` or ``ctypes.py`` of the patch's was imported in place
    of the standard library's and the child ran without its limits; nor does it need site.

    Hard limits too, or any test could raise its own soft ones back (no privilege needed):
    address space and processes at the value, CPU time ``cpu_hard`` (SIGXCPU at the soft
    limit, SIGKILL at the hard one; default ``cpu_seconds`` + 5, 0 keeps the hard limit:
    the fork-server sets its own once it knows its jobs)."""
    hard = cpu_seconds + CPU_GRACE if cpu_hard is None else cpu_hard
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _LAUNCHER,
        str(cpu_seconds),
        str(hard),
        str(memory_bytes),
        str(max_processes),
        *python_args,
    ]


def scrubbed_tail(out: bytes | None, environ: Mapping[str, str], limit: int = 4000) -> str:
    """The output's tail, credentials masked. Scrubbed before it is cut, with a margin, so a
    secret straddling the cut is masked whole rather than leaking its end."""
    text = (out or b"").decode("utf-8", "replace")
    window = text if len(text) <= limit + _MARGIN else text[-(limit + _MARGIN) :]
    return tail_text(scrub(window, environ).encode("utf-8"), limit)


_MARGIN = 1024  # longer than any credential


def _supervise(
    command: Sequence[str], tree: Path, env: Mapping[str, str], timeout: float
) -> tuple[int | None, bytes, float]:
    code, out, _, seconds = supervise(command, tree, env, timeout)
    return code, out, seconds


def _scratch(folder: Path | None) -> str | None:
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


@functools.cache
def _no_measurement() -> list[str]:
    """Options that keep the project's measurement plugins out of a child's verdict: its
    ``addopts`` may say ``--cov --cov-fail-under=99``, which fails a run whose tests all
    passed. Only the engage decision's coverage run measures, with coverage.py itself."""
    import importlib.util

    return ["--no-cov"] if importlib.util.find_spec("pytest_cov") is not None else []


def tail_text(out: bytes | None, limit: int = 4000) -> str:
    text = (out or b"").decode("utf-8", "replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: ``taskset``, a cpuset), not the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# A slot given back here wakes this process's waiters at once (the count: none is missed);
# another process's (an xdist worker's) are found by polling.
_GIVEN_BACK = threading.Condition()
_given_back = [0]


@contextlib.contextmanager
def cpu_slot(folder: Path, slots: int) -> Iterator[None]:
    """Hold one of ``slots`` machine-wide slots (file locks), so xdist workers times
    subprocesses never exceed the CPUs."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    fds = []
    try:
        while True:
            seen = _given_back[0]
            for index in range(max(1, slots)):
                fd = os.open(folder / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                fds.append(fd)
                break
            if fds:
                break
            with _GIVEN_BACK:
                if _given_back[0] == seen:
                    _GIVEN_BACK.wait(0.05)
        yield
    finally:
        for fd in fds:
            os.close(fd)
        if fds:
            with _GIVEN_BACK:
                _given_back[0] += 1
                _GIVEN_BACK.notify_all()
