"""The run's I/O configuration, read from pytest's config and checked before any tree is
built: the ledger's path, writable outputs, the sandbox, the tree setup, the base commit.
Every problem is one ``pytest.UsageError`` line."""

from __future__ import annotations

import contextlib
import functools
import shlex
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_critic22.config.inputs import InputError
from pytest_critic22.execution.git import GitError, git
from pytest_critic22.execution.statedir import STATE_DIR

if TYPE_CHECKING:
    from pytest_critic22.config.settings import ReviewOptions
    from pytest_critic22.execution.sandbox import Sandbox
    from pytest_critic22.execution.trees import TreeSetup

__all__ = [
    "check_outputs_of",
    "end_probe",
    "ledger_path",
    "resolve_base",
    "resolve_sandbox",
    "start_probe",
    "tree_setup",
]


def ledger_path(config: pytest.Config) -> Path:
    value = config.getoption("critic22_ledger")
    path = Path(value) if value else config.rootpath / STATE_DIR / "ledger.jsonl"
    return path if path.is_absolute() else config.invocation_params.dir / path


def check_outputs_of(config: pytest.Config, opts: ReviewOptions) -> None:
    """The controller checks its outputs once, before any tree."""
    from pytest_critic22.config.inputs import check_outputs
    from pytest_critic22.execution.ledger import write_problem
    from pytest_critic22.pipeline.review import critic_source
    from pytest_critic22.report.formats import OUTPUT_OPTIONS, output_path

    try:
        check_outputs(
            state_dir=config.rootpath / STATE_DIR,
            ledger=ledger_path(config),
            ledger_given=bool(config.getoption("critic22_ledger")),
            report=output_path(config, "critic22_report"),
            state_needed=critic_source(opts)[0] == "model",
        )
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    for dest, flag in OUTPUT_OPTIONS[1:]:
        path = output_path(config, dest)
        problem = write_problem(path) if path is not None else None
        if problem is not None:
            raise pytest.UsageError(
                f"{flag}: cannot write {path} ({problem}); choose a writable path"
            )


def tree_setup(config: pytest.Config, sandbox: Sandbox, opts: ReviewOptions) -> TreeSetup:
    """ini critic22_copy and critic22_tree_setup, checked before any tree is built."""
    from pytest_critic22.execution.trees import TreeSetup

    copy = tuple(str(g) for g in (config.getini("critic22_copy") or []))
    for glob in copy:
        if glob.startswith("/") or ".." in Path(glob).parts:
            raise pytest.UsageError(
                f"ini critic22_copy: {glob!r} must be a glob relative to the repository root"
            )
    raw = str(config.getini("critic22_tree_setup") or "").strip()
    try:
        command = tuple(shlex.split(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"ini critic22_tree_setup: {exc}: {raw!r}") from None
    from pytest_critic22.pipeline.review import critic_source

    try:
        source = critic_source(opts)[0]
    except InputError:  # check_outputs_of says it first, on the controller
        source = "none"
    # The controller, a critic that may give findings, and items run in fork-servers
    booted = not hasattr(config, "workerinput") and opts.rerun_mode != "process"
    booted = booted and source in ("replay", "model")
    return TreeSetup(
        copy=copy,
        command=command,
        timeout=opts.timeout,
        sandbox=sandbox,
        pythonpath=opts.pythonpath,
        ready=functools.partial(_boot, config, sandbox, opts.pythonpath) if booted else None,
    )


def _boot(config: pytest.Config, sandbox: Sandbox, pythonpath: Sequence[str], tree: Path) -> None:
    """A fork-server booted for a tree the controller just built, while it goes on reviewing
    (the critic's answer, the routing): its first run of the tree's generated tests takes it
    (:func:`pytest_critic22.execution.forkserver.prestart`). Not on an xdist worker, nor for a
    controller whose workers run the items. Unused, it costs one start-up (about 0.2 CPU-s)."""
    if config.pluginmanager.has_plugin("dsession"):
        return
    from pytest_critic22.execution.forkserver import prestart
    from pytest_critic22.execution.runner import detect_pythonpath

    with contextlib.suppress(Exception):  # a head start only: never a reason to stop
        prestart(tree, pythonpath=detect_pythonpath(tree, pythonpath), sandbox=sandbox)


_PROBE = pytest.StashKey[threading.Event]()


def start_probe(config: pytest.Config) -> threading.Event | None:
    """Begin the bubblewrap probe (``sandbox.probe_bwrap``, once per process) in a thread, on
    the controller when the sandbox may be bubblewrap: its child, a Python started in the
    sandbox, is mostly waiting, which the controller spends reading the rest of
    its configuration. Returns what :func:`end_probe` waits for; :func:`resolve_sandbox`
    waits for it too, then finds the answer cached (a probe that raised is not: that call
    probes again, and raises in its place), never probing beside it."""
    if getattr(config, "workerinput", None) is not None or _requested(config) == "rlimits":
        return None
    from pytest_critic22.execution.sandbox import probe_bwrap

    ended = config.stash[_PROBE] = threading.Event()

    def probe() -> None:
        try:
            with contextlib.suppress(Exception):
                probe_bwrap()
        finally:
            ended.set()  # its temporary folder is removed by then

    threading.Thread(target=probe, name="critic22-probe", daemon=True).start()
    return ended


def end_probe(ended: threading.Event | None) -> None:
    """Wait for the probe to end, a Ctrl-C meanwhile too (then raised): its child ends at
    the same Ctrl-C, and its temporary folder is removed before the run stops. An event, not
    ``Thread.join``: Python 3.11's join, interrupted, takes the thread for ended."""
    if ended is None:
        return
    try:
        ended.wait()
    except KeyboardInterrupt:
        ended.wait()
        from pytest_critic22.execution.sandbox import probe_bwrap

        probe_bwrap.cache_clear()  # "bwrap exited -2": the Ctrl-C's, not bubblewrap's
        raise


def _requested(config: pytest.Config) -> str:
    value = config.getoption("critic22_sandbox") or config.getini("critic22_sandbox") or "auto"
    return str(value).strip()


def resolve_sandbox(config: pytest.Config) -> Sandbox:
    """The run's sandbox: the controller probes once, its xdist workers take its answer."""
    from pytest_critic22.execution.sandbox import Sandbox, SandboxError, resolve

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "critic22_sandbox" in workerinput:
        mode, names, note = workerinput["critic22_sandbox"]
        return Sandbox(mode, tuple(names), note)
    end_probe(config.stash.get(_PROBE, None))
    names = [
        *(config.getini("critic22_pass_env") or []),
        *(config.getoption("critic22_pass_env") or []),
    ]
    try:
        return resolve(_requested(config), names)
    except SandboxError as exc:
        raise pytest.UsageError(str(exc)) from None


def resolve_base(repo: Path, rev: str) -> str:
    try:
        done = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo)
    except GitError:
        raise pytest.UsageError(
            f"--critic22-base: {rev!r} is not a commit in {repo} "
            "(a repository needs at least one commit to review a patch against)"
        ) from None
    return done.stdout.strip()
