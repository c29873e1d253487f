"""A pytest configuration prepared once in the fork-server, for every session after it.

Part of the fork-server (:mod:`pytest_critic22.child.forkserver`), sent to it as source and run
there (never imported into the zygote as part of this package). Most of a short session's time is
pytest making its configuration: registering some forty plugins, parsing the command line,
marking modules for assertion rewriting, loading the initial ``conftest.py`` files. When
every job of a batch would make the same one — the same arguments but for the test files,
all in one folder, and the number of attempts — the zygote makes it once (:func:`prepare`),
and each session, a fresh fork, starts from a copy of it (:func:`session`): what a separate child
would hold at that point, made by the same code in the same sandbox.

pytest's global capture is running while it loads the conftest files, so a conftest that keeps
a stream on import (``logging.basicConfig()``) keeps pytest's. A fork would share those
capture files with every other fork (one open file each), so each session gives every capture
file descriptor a file of its own, with what the preparation had captured, and points the
saved descriptors at its own output (:func:`own_output`).

What a fork cannot copy faithfully, it must not inherit. :func:`prepare` refuses when the
preparation failed or left anything a fork would not have as a separate child has it: a
thread (native ones too), a process, a new open descriptor but pytest's capture files, a
shared memory mapping (a ``multiprocessing`` lock, an anonymous shared ``mmap``), a SysV IPC
object, a signal handler; and when this pytest lacks what :func:`session` needs, so that a
session never fails on our adaptation instead of on its tests. The zygote refuses it too when
its own sandbox changed (a file in the folders it empties, /dev, a limit), and then restarts
without it (:func:`restart`). One that takes longer than a session may ends the zygote.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence, Set
from typing import Any


def _prog() -> dict[str, str]:
    import inspect

    import _pytest.config as config_module

    try:
        named = inspect.signature(config_module._prepareconfig).parameters
    except (TypeError, ValueError):
        return {}
    return {"prog": "pytest.main()"} if "prog" in named else {}  # pytest 9.2 and later


_PRINTED: list[bytes] = []  # what the preparation printed (its tail), for every session
_PRINTED_TAIL = 64 * 1024  # the zygote sends a session's output tail of this size


def prepare(args: Sequence[str], seconds: float, home: str, sessions: int = 3) -> tuple[Any, str]:
    """(pytest's configuration for ``args``, "") or (None, why not). ``seconds``: a session's
    time limit, which the preparation gets too (a conftest that hangs on import ends the zygote:
    its jobs then run as children of their own); ``home``: the sessions' HOME; ``sessions``:
    how many will start from it (the scan of :func:`_scan_once` pays from the third on)."""
    import _pytest.config as config_module
    import pytest

    made = home.startswith("/tmp/") and not os.path.lexists(home)
    if made:
        os.makedirs(home)  # as a session finds it (the first sweep took it)
    before = _state()
    old_version = os.environ.get("PYTEST_VERSION")
    os.environ["PYTEST_VERSION"] = pytest.__version__
    saved = os.dup(1), os.dup(2)
    # what the preparation prints past pytest's capture (with -s, say) each session prints
    printed = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 (closed in finally)
    os.dup2(printed.fileno(), 1)
    os.dup2(printed.fileno(), 2)
    done = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(done, seconds), daemon=True)
    watchdog.start()
    try:
        config = config_module._prepareconfig(list(args), None, **_prog())
    except BaseException as exc:  # a conftest that fails, exits or is interrupted
        cause = getattr(exc, "cause", None) or exc.__cause__  # a conftest's: what it raised
        because = f" ({type(cause).__name__})" if isinstance(cause, BaseException) else ""
        return None, f"pytest's configuration failed here: {type(exc).__name__}{because}"
    finally:
        done.set()
        watchdog.join()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # into that file, before 1 and 2 are put back
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        size = printed.seek(0, os.SEEK_END)
        printed.seek(max(0, size - _PRINTED_TAIL))  # a session's output is read as a tail
        _PRINTED[:] = [printed.read()]
        printed.close()
        _settle(before["threads"])
        if old_version is None:
            os.environ.pop("PYTEST_VERSION", None)
        else:
            os.environ["PYTEST_VERSION"] = old_version
    why = _unfaithful(config, before, _state(capture_fds(config)))
    if not why:
        _warm()
        if sessions > 2:
            _scan_once(config)
    if made:
        with contextlib.suppress(OSError):
            os.rmdir(home)  # each session makes it again, as it finds the zygote's sandbox
    return (None, why) if why else (config, "")


def restart(
    spec: dict[str, Any], results: int, environ: dict[str, str], cwd: str, mask: int
) -> None:
    """After a refused preparation, the zygote anew, without one: the same command (it is
    PID 1 of its sandbox, which must stay), its input ``spec`` again, its results on standard
    output, the environment, folder and umask it started with, every signal's default. The
    new zygote empties the sandbox again (a process or a file the conftest files left) and
    says it is ready a second time, which the controller skips. Returns only if the
    ``execve`` fails."""
    import json

    data = memoryview(json.dumps({k: v for k, v in spec.items() if k != "presession"}).encode())
    fd = os.memfd_create("critic22-spec", 0)
    while data:
        data = data[os.write(fd, data) :]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    os.dup2(results, 1)
    for number in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            signal.signal(number, signal.SIG_DFL)
    os.umask(mask)
    os.chdir(cwd)
    os.execve(sys.executable, sys.orig_argv, environ)


def outside(now: list[Any], then: list[Any], folders: Sequence[str]) -> bool:
    """Whether two layouts (the zygote's: entries whose first item is the path) differ only
    inside the folders a restarted zygote empties first."""

    def kept(layout: list[Any]) -> list[Any]:
        return [e for e in layout if not any(str(e[0]).startswith(f + "/") for f in folders)]

    return kept(now) == kept(then)


def _warm() -> None:
    """What every session would otherwise do for itself, done once: ``inspect``'s table of
    which file is which module, which a session's first failure report builds from every
    module loaded (a fork adds only the modules it imports). The
    table only caches what each module's ``__file__`` says: a session finds what it would
    have built itself."""
    import inspect

    with contextlib.suppress(Exception):
        inspect.getmodule(None, "/critic22-no-such-file")


#: The classes of pytest's own plugin instances that each session registers anew; the rest of
#: pytest's are those the prepared configuration holds.
_SESSION_PLUGINS = (
    ("_pytest.main", "Session"),
    ("_pytest.fixtures", "FixtureManager"),
    ("_pytest.terminal", "TerminalReporter"),
    ("_pytest.logging", "LoggingPlugin"),
    ("_pytest.junitxml", "LogXML"),
)


def _scan_once(config: Any) -> None:
    """pytest's scan of its own plugins for fixtures, done once, here.

    At every session's start, its fixture manager looks at every name of every plugin
    registered (some forty, two thousand names, each unwrapped in search of a hidden fixture:
    about a sixth of a short session's own time here). The zygote runs that scan — pytest's
    own code, on a stand-in manager that records instead of registering — on pytest's own
    plugin modules and on the classes of pytest's own plugin instances. A session's manager
    then registers exactly what was recorded, in that order, for such a module, and nothing
    for an instance of such a class whose scan found nothing, as long as their names still
    hold the very objects they held here; it scans every other plugin itself (the project's,
    conftest files, other packages', an instance with fixtures). Nothing is recorded when this
    pytest's manager is not the one recorded here: a scan that warns, raises, or touches more
    of the manager than its fixtures."""
    import importlib
    import inspect
    import types

    try:
        from _pytest import fixtures

        original = fixtures.FixtureManager.pytest_plugin_registered
        if list(inspect.signature(original).parameters) != ["self", "plugin", "plugin_name"]:
            return
    except (ImportError, AttributeError, TypeError, ValueError):
        return
    stand_in = object()  # each session, whose manager registers the fixtures
    modules: dict[int, tuple[Any, Any, list[dict[str, Any]]]] = {}  # by identity
    empty: dict[type, Any] = {}  # a class whose instances' scans find nothing

    def pytest_plugin_registered(self: Any, plugin: Any, plugin_name: str) -> None:
        entry = modules.get(id(plugin))
        if entry is not None and entry[0] is plugin and _same(plugin, entry[1]):
            for call in entry[2]:
                self._register_fixture(
                    **{key: self.session if v is stand_in else v for key, v in call.items()}
                )
            return
        kind = type(plugin)
        if kind in empty and _same(kind, empty[kind]):
            return
        original(self, plugin, plugin_name)

    pytest_plugin_registered.__doc__ = original.__doc__
    pytest_plugin_registered.__wrapped__ = original  # type: ignore[attr-defined]
    # first, so that the manager's own class is recorded as each session finds it
    fixtures.FixtureManager.pytest_plugin_registered = pytest_plugin_registered  # type: ignore[method-assign]
    holders = [
        plugin if isinstance(plugin, types.ModuleType) else type(plugin)
        for plugin in config.pluginmanager.get_plugins()
    ]
    for module, name in _SESSION_PLUGINS:
        with contextlib.suppress(Exception):
            holders.append(getattr(importlib.import_module(module), name))
    for holder in dict.fromkeys(holders):
        is_module = isinstance(holder, types.ModuleType)
        where = holder.__name__ if is_module else getattr(holder, "__module__", "")
        if not str(where).startswith("_pytest."):
            continue
        calls = _record(original, config, holder, stand_in)
        if calls is not None and is_module:
            modules[id(holder)] = (holder, _names(holder), calls)
        elif calls == [] and isinstance(holder, type):
            empty[holder] = _names(holder)


def _record(original: Any, config: Any, holder: Any, stand_in: object) -> Any:
    """What pytest's scan of ``holder`` registers (each call's arguments), or None."""
    import warnings

    from _pytest import fixtures

    if any("__dir__" in vars(k) for k in _layers(holder) if k is not object):
        return None  # names a look-up makes: not the same each time
    calls: list[dict[str, Any]] = []
    recorder = object.__new__(fixtures.FixtureManager)
    fields = {"session": stand_in, "config": config, "_pending_conftests": {}}
    recorder.__dict__.update(fields, _register_fixture=lambda **kw: calls.append(kw))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            original(recorder, holder, getattr(holder, "__name__", ""))
    except Exception:
        return None
    if caught or set(recorder.__dict__) != {*fields, "_register_fixture"}:
        return None
    return calls


def _layers(holder: Any) -> tuple[Any, ...]:
    return holder.__mro__ if isinstance(holder, type) else (holder,)


def _names(holder: Any) -> tuple[tuple[Any, ...], list[dict[str, Any]]]:
    """What a scan of ``holder`` reads: its classes (a class) and each one's names."""
    layers = _layers(holder)
    return layers, [dict(vars(k)) for k in layers]


def _same(holder: Any, names: tuple[tuple[Any, ...], list[dict[str, Any]]]) -> bool:
    layers = _layers(holder)
    if len(layers) != len(names[0]) or any(
        a is not b for a, b in zip(layers, names[0], strict=True)
    ):
        return False
    try:  # each name's object the very one (a dict's == tries `is` first)
        return all(vars(k) == then for k, then in zip(layers, names[1], strict=True))
    except Exception:
        return False


def _watch(done: threading.Event, seconds: float) -> None:
    if not done.wait(max(1.0, seconds)):
        os._exit(0)  # the zygote gives no result: every request runs as a child of its own


def _settle(threads: list[str]) -> None:
    """Wait a moment for a joined thread to be gone from /proc too."""
    for _ in range(200):
        if sorted(os.listdir("/proc/self/task")) == threads:
            return
        time.sleep(0.005)


def capture_fds(config: Any) -> set[int]:
    """The descriptors of pytest's global capture (:func:`own_output` gives each session its
    own)."""
    fds: set[int] = set()
    for capture in _fd_captures(config):
        fds |= {capture.targetfd_save, capture.tmpfile.fileno()}
    return fds


def _fd_captures(config: Any) -> list[Any]:
    capman = config.pluginmanager.getplugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None)
    found = [getattr(multi, name, None) for name in ("in_", "out", "err")]
    return [capture for capture in found if hasattr(capture, "targetfd_save")]


def _state(capture: Set[int] = frozenset()) -> dict[str, Any]:
    """What a fork inherits that a separate child would not have as it is, as far as the
    preparation can change it."""
    handlers = {}
    for number in signal.valid_signals():
        with contextlib.suppress(ValueError, OSError):
            handlers[int(number)] = signal.getsignal(number)
    return {
        "threads": sorted(os.listdir("/proc/self/task")),
        "processes": sorted(p for p in os.listdir("/proc") if p.isdigit()),
        "descriptors": _descriptors(capture),
        "shared memory": sorted(_shared_mappings()),
        "SysV IPC objects": [_read(f"/proc/sysvipc/{kind}") for kind in ("shm", "sem", "msg")],
        "signal handlers": handlers,
    }


def _descriptors(capture: Set[int]) -> list[tuple[int, int, int]]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if int(name) not in capture:
                status = os.fstat(int(name))
                found.append((int(name), status.st_dev, status.st_ino))
    return sorted(found)


def _shared_mappings() -> list[str]:
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) > 1 and fields[1].endswith("s") and "w" in fields[1]:
                found.append(line.strip())
    return found


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _unfaithful(config: Any, before: dict[str, Any], after: dict[str, Any]) -> str:
    for what, value in before.items():
        if after[what] != value:
            return f"the configuration changed the zygote's {what}"
    capman = config.pluginmanager.getplugin("capturemanager")
    needed = (
        (config, ("args", "option", "known_args_namespace", "invocation_params", "hook")),
        (config, ("_ensure_unconfigure",)),
        (capman, ("_global_capturing",)),
    )
    for owner, names in needed:
        if owner is None or not all(hasattr(owner, name) for name in names):
            return "this pytest's configuration is not the one a session can start from"
    for capture in _fd_captures(config):
        if not hasattr(capture, "targetfd") or not hasattr(capture.tmpfile, "fileno"):
            return "this pytest's capture is not the one a session can start from"
    return ""


def own_output(config: Any) -> None:
    """In the session's fork, once its descriptors 0-2 are its own: what the preparation
    printed, printed; each capture file a file of its own, holding what the preparation
    captured; each descriptor pytest saved to restore, the session's own."""
    for data in _PRINTED:
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]
    for capture in _fd_captures(config):
        if capture.targetfd != 0:  # fd 0's "file" is the null device, read-only
            held = capture.tmpfile.fileno()
            with tempfile.TemporaryFile(buffering=0) as fresh:
                offset = 0
                while chunk := os.pread(held, 1 << 16, offset):
                    fresh.write(chunk)
                    offset += len(chunk)
                os.dup2(fresh.fileno(), held, inheritable=False)
        os.dup2(capture.targetfd, capture.targetfd_save, inheritable=False)


def session(config: Any, args: Sequence[str], job: dict[str, Any]) -> int:
    """A zygote's job as a session from the prepared ``config``, in a fresh fork whose
    descriptors 0-2 are its own already: ``args`` are the job's own full arguments (what
    ``sys.argv`` and ``invocation_params`` say), its ``files`` the test files and its
    ``attempts`` the ``--critic22-attempts``. Returns the exit status, as ``pytest.main``
    would."""
    import _pytest.config as config_module
    import pytest

    own_output(config)
    files = [str(name) for name in job["files"]]
    attempts = int(job.get("attempts", 1))

    os.environ["PYTEST_VERSION"] = pytest.__version__
    for namespace in (config.option, config.known_args_namespace):
        namespace.file_or_dir = list(files)
    config.option.critic22_attempts = attempts
    config.option.critic22_attempt_timeout = float(job.get("attempt_timeout", 0.0))
    config.args = list(files)
    params = config.invocation_params
    config.invocation_params = type(params)(args=list(args), plugins=params.plugins, dir=params.dir)
    try:
        try:
            code = config.hook.pytest_cmdline_main(config=config)
            try:
                return int(pytest.ExitCode(code))
            except ValueError:
                return int(code)
        finally:
            config._ensure_unconfigure()
    except pytest.UsageError as exc:
        say = getattr(config_module, "print_usage_error", None)  # not in every pytest 8
        if say is not None:
            say(exc, file=sys.stderr)
        else:
            for message in exc.args:
                sys.stderr.write(f"ERROR: {message}\n\n")
        return int(pytest.ExitCode.USAGE_ERROR)
