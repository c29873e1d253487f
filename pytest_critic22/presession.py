"""A pytest configuration prepared once in the fork-server, for every session after it.

Part of the fork-server (:mod:`pytest_critic22.zygote`), sent to it as source and run there
(never imported into the zygote as part of this package). Most of a short session's time is
pytest making its configuration: registering some forty plugins, parsing the command line,
marking modules for assertion rewriting, loading the initial ``conftest.py`` files. When
every job of a batch would make the same one — the same arguments but for the test files,
all in one folder, and the number of attempts — the zygote makes it once (:func:`prepare`),
and each session, a fresh fork, starts from a copy of it (:func:`run`): what a separate child
would hold at that point, made by the same code in the same sandbox.

What a fork cannot copy faithfully, it must not inherit. So the configuration is prepared
without pytest's global capture (``--capture=no``: its temporary files would be one open file
shared by every session), and each session starts pytest's own ``fd`` capture afresh, as a
separate child does just before it loads the conftest files. And :func:`prepare` refuses,
leaving the zygote to end the batch (its jobs then run as children of their own), when the
preparation left anything a fork would not inherit as a separate child has it: a thread, a
process, a new open descriptor, a file in the folders the zygote empties between sessions.
It also refuses when this pytest lacks what :func:`run` needs, so that a session never fails
on our adaptation instead of on its tests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

# the capture option pytest's configuration is prepared with, and what each session restores
_NO_CAPTURE = "--capture=no"
_TAKES_VALUE = frozenset("kmcproWn")  # pytest's (and xdist's) short options with a value


def prepare(args: Sequence[str], folders: Sequence[str], seconds: float) -> tuple[Any, str]:
    """(pytest's configuration for ``args``, "") or (None, why not). ``folders``: those the
    zygote empties between sessions, to be found as they were; ``seconds``: a session's time
    limit, which the preparation gets too (a conftest that hangs on import)."""
    import _pytest.config as config_module
    import pytest

    fds = sorted(os.listdir("/proc/self/fd"))
    threads = threading.active_count()
    listing = _listing(folders)
    old_version = os.environ.get("PYTEST_VERSION")
    os.environ["PYTEST_VERSION"] = pytest.__version__
    saved = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # what conftest files print on import goes nowhere (not unbounded)
    os.dup2(null, 2)
    os.close(null)
    previous = signal.signal(signal.SIGALRM, _late)
    signal.alarm(max(1, int(seconds)))
    try:
        config = config_module._prepareconfig([*args, _NO_CAPTURE], None, prog="pytest.main()")
    except BaseException as exc:  # a conftest that fails, exits or is interrupted
        cause = getattr(exc, "cause", None) or exc.__cause__  # a conftest's: what it raised
        because = f" ({type(cause).__name__})" if isinstance(cause, BaseException) else ""
        return None, f"pytest's configuration failed here: {type(exc).__name__}{because}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # into the null device, before it is put back
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        if old_version is None:
            os.environ.pop("PYTEST_VERSION", None)
        else:
            os.environ["PYTEST_VERSION"] = old_version
    why = _unfaithful(config, fds, threads, listing, folders)
    if why:
        return None, why
    return config, ""


def _late(signum: int, frame: object) -> None:
    raise TimeoutError("the configuration took longer than a session may")


def _listing(folders: Sequence[str]) -> list[str]:
    """Every path in these folders, not entering another file system (a tree mounted there)."""
    found = []
    for folder in folders:
        try:
            device = os.lstat(folder).st_dev
        except OSError:
            continue
        for top, dirs, files in os.walk(folder):
            found += [os.path.join(top, name) for name in files]
            for name in list(dirs):
                path = os.path.join(top, name)
                found.append(path)
                try:
                    if os.lstat(path).st_dev != device:
                        dirs.remove(name)
                except OSError:
                    dirs.remove(name)
    return sorted(found)


def _unfaithful(
    config: Any, fds: list[str], threads: int, listing: list[str], folders: Sequence[str]
) -> str:
    if threading.active_count() != threads:
        return "the configuration started a thread"
    if sorted(os.listdir("/proc/self/fd")) != fds:
        return "the configuration left a descriptor open"
    if _listing(folders) != listing:
        return "the configuration left files in the folders emptied between sessions"
    mine = str(os.getpid())
    if any(p.isdigit() and p != mine for p in os.listdir("/proc")):
        return "the configuration started a process"
    if _names_capture([*config.getini("addopts"), *_split(os.environ.get("PYTEST_ADDOPTS"))]):
        return "the configuration chooses its own capture method"
    capman = config.pluginmanager.getplugin("capturemanager")
    needed = (
        (config, ("args", "option", "known_args_namespace", "invocation_params", "hook")),
        (config, ("_ensure_unconfigure",)),
        (capman, ("_method", "start_global_capturing", "suspend_global_capture")),
        (capman, ("stop_global_capturing",)),
    )
    for owner, names in needed:
        if owner is None or not all(hasattr(owner, name) for name in names):
            return "this pytest's configuration is not the one a session can start from"
    return ""


def _split(text: str | None) -> list[str]:
    import shlex

    try:
        return shlex.split(text or "")
    except ValueError:
        return ["-s"]  # unreadable: as if it chose


def _names_capture(args: Sequence[str]) -> bool:
    """Whether these options may choose a capture method (``-s``, ``--capture``). A short
    option cluster is read up to its first option that takes a value (``-rs``: ``-r s``);
    an unknown letter counts as a flag, so a doubt only costs the shared configuration."""
    for arg in args:
        if arg.startswith("--capture"):
            return True
        if arg.startswith("-") and not arg.startswith("--"):
            for letter in arg[1:]:
                if letter == "s":
                    return True
                if letter in _TAKES_VALUE:
                    break
    return False


def run(config: Any, args: Sequence[str], files: Sequence[str], attempts: int) -> int:
    """One session from the prepared ``config``, in a fresh fork: ``args`` are the job's own
    full arguments (what ``sys.argv`` and ``invocation_params`` say), ``files`` its test
    files and ``attempts`` its ``--critic22-attempts``. Returns the exit status, as
    ``pytest.main`` would."""
    import _pytest.config as config_module
    import pytest

    os.environ["PYTEST_VERSION"] = pytest.__version__
    for namespace in (config.option, config.known_args_namespace):
        namespace.capture = "fd"
        namespace.file_or_dir = list(files)
    config.option.critic22_attempts = attempts
    config.args = list(files)
    params = config.invocation_params
    config.invocation_params = type(params)(args=list(args), plugins=params.plugins, dir=params.dir)
    capman = config.pluginmanager.getplugin("capturemanager")
    capman.stop_global_capturing()  # the zygote's, which captured nothing (--capture=no)
    capman._method = "fd"
    capman.start_global_capturing()
    capman.suspend_global_capture()
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
        config_module.print_usage_error(exc, file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
