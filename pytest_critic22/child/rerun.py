"""Loaded into a child pytest (``-p pytest_critic22.child.rerun``), never into the user's run.

``--critic22-attempts=N``: a test whose call fails is executed again in the same process, up
to N attempts in all, until an attempt does not fail. Each attempt goes through pytest's own
run protocol (``runtestprotocol``): function-scoped fixtures are torn down and set up afresh,
as a new process would do; only the first attempt is reported, and the attempts' outcomes
travel with it as the JUnit property ``critic22_attempts`` (``failed,failed,passed``).

``--critic22-attempt-timeout=S``: each attempt has S seconds, as each run of a test in a
process of its own would have; an attempt that outlives them ends the process with status
:data:`EXPIRED`, which the parent reads as "timed out" (a hang is not waited out N times).

Every test also carries its node id as the property ``critic22_nodeid``: a child that runs
several findings' tests at once has its results mapped back by node id, never by name.
"""

from __future__ import annotations

import _thread
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from pytest_critic22.child.protocol import ATTEMPTS, EXPIRED, GENERATED_PREFIX, NODEID


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--critic22-attempts", dest="critic22_attempts", type=int, default=1)
    parser.addoption(
        "--critic22-attempt-timeout", dest="critic22_attempt_timeout", type=float, default=0.0
    )
    # The plugin's own options and ini values, inert, come from
    # pytest_critic22.config.inert_options, loaded beside this plugin (-p).


_NAMED = pytest.StashKey[tuple[tuple[str, ...], "frozenset[tuple[int, int]] | None"]]()


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Another finding's generated module is not there for a session that names only test
    files: pytest would make a node of every module beside the one named, and drop it, and
    the project's collection hooks would see each; here, as in a tree of that finding's own,
    none of that happens. A session that collects a folder is left to pytest."""
    name = collection_path.name
    if not (name.startswith(GENERATED_PREFIX) and name.endswith(".py")):
        return None
    named = _named_files(config)
    if named is None:
        return None
    try:
        found = os.stat(collection_path)
    except OSError:
        return None
    return None if (found.st_dev, found.st_ino) in named else True


def _named_files(config: pytest.Config) -> frozenset[tuple[int, int]] | None:
    """The files the session's arguments name (device, inode), or None when one is not a file."""
    args = tuple(str(arg) for arg in config.args)
    cached = config.stash.get(_NAMED, None)
    if cached is not None and cached[0] == args:
        return cached[1]
    config.stash[_NAMED] = (args, named := _stat_files(config.invocation_params.dir, args))
    return named


def _stat_files(base: Path, args: tuple[str, ...]) -> frozenset[tuple[int, int]] | None:
    found: set[tuple[int, int]] = set()
    for arg in args:
        try:
            info = os.stat(os.path.join(base, arg.split("::", 1)[0]))
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        found.add((info.st_dev, info.st_ino))
    return frozenset(found) or None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.user_properties.append((NODEID, item.nodeid))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    times = int(item.config.getoption("critic22_attempts") or 1)
    if times <= 1:
        return None
    limit = float(item.config.getoption("critic22_attempt_timeout") or 0.0)
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = _timed(limit, lambda: runtestprotocol(item, nextitem=nextitem, log=False))
    attempts = [outcome_of(reports)]
    while attempts[-1] == "failed" and len(attempts) < times:
        attempts.append(outcome_of(_timed(limit, lambda: _quiet_attempt(item, nextitem))))
    for report in reports:
        if report.when == "teardown":
            report.user_properties.append((ATTEMPTS, ",".join(attempts)))
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _timed(limit: float, attempt: Callable[[], list[TestReport]]) -> list[TestReport]:
    """One attempt; past ``limit`` seconds (0: none) the process ends with :data:`EXPIRED`.

    The watchdog is a bare ``_thread``: ``threading.enumerate()`` and ``active_count()``,
    which a test may count, do not see it (the OS does: Python 3.12+ warns that forking a
    process with threads may deadlock). No thread to be had: the child's own limit holds."""
    if limit <= 0:
        return attempt()
    done = _thread.allocate_lock()
    done.acquire()
    try:
        _thread.start_new_thread(_watch, (done, limit))
    except RuntimeError:  # out of threads (a process limit): the child's own limit holds
        return attempt()
    try:
        return attempt()
    finally:
        done.release()


def _watch(done: _thread.LockType, limit: float) -> None:
    if not done.acquire(timeout=limit):
        os._exit(EXPIRED)


def _quiet_attempt(item: pytest.Item, nextitem: pytest.Item | None) -> list[TestReport]:
    """An attempt after the first: only its outcome is read, never its reports' failure
    text, so that text is not formatted (the traceback with its source: most of a failing
    attempt's time). The item's own methods are back once it is done."""
    shadowed = {"repr_failure": _untold, "_repr_failure_py": _untold}
    vars(item).update(shadowed)
    try:
        return runtestprotocol(item, nextitem=nextitem, log=False)
    finally:
        for name in shadowed:
            vars(item).pop(name, None)


def _untold(excinfo: object, style: object = None) -> str:
    return "(an attempt's failure: not formatted)"


def outcome_of(reports: list[TestReport]) -> str:
    """One attempt's outcome: ``failed`` only when the test's own call failed."""
    for report in reports:
        if report.when == "call" and report.failed:
            return "failed"
    if any(report.failed for report in reports):
        return "error"  # setup or teardown: not the test's claim
    if any(report.skipped for report in reports):
        return "skipped"
    return "passed"
