"""The pytest entry point (``pytest11: critic22``): options, and nothing heavy.

Everything the review needs is imported only when ``--critic22`` is given, so a pytest
run without it pays for this module and :mod:`pytest_critic22.config.options` alone: no unidiff,
no libcst, no litellm.
"""

from __future__ import annotations

import atexit
import copy
import gc
import os
import shlex
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

from pytest_critic22.config.options import UNTRUSTED_TREE, check_ini, warn_deprecated
from pytest_critic22.config.optiontable import add_options

__all__ = ["PLUGIN_NAME", "check_ini", "guard_the_controller", "set_aside_addopts"]

#: The name the review session is registered under: ``pluginmanager.get_plugin(PLUGIN_NAME)``.
PLUGIN_NAME = "critic22-session"
_FROZE = pytest.StashKey[bool]()
_ONLY = pytest.StashKey[bool]()
#: Plugins whose terminal summary, in a run that never imported their library, reports
#: nothing yet imports it (plugin name -> library). hypothesis' imports all of hypothesis
#: (``hypothesis.internal.observability``) at the end of every run.
IDLE_SUMMARIES = {"hypothesispytest": "hypothesis"}
_FREEZE_AT_EXIT: list[bool] = []  # atexit.register(gc.freeze) done in this process


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_critic22.plugin import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, args: list[str], parser: pytest.Parser
) -> Generator[None, None, None]:
    """Before pytest imports the project's first conftest.py files, and before every other
    plugin's implementation (a wrapper runs first: pytest-cov starts measuring in its own):
    :func:`set_aside_addopts`, then :func:`guard_the_controller`."""
    set_aside_addopts(early_config, args, parser)
    guard_the_controller(early_config)
    yield


#: What the controller keeps of the project's ini ``addopts`` under ``--critic22-only``, by
#: argparse destination: the review's own options, and how pytest loads plugins, reads ini
#: values and imports the project's configuration (``-p``, ``-o``, ``--import-mode``,
#: ``--confcutdir``, ``--noconftest``: the first two it has acted on already).
_KEPT_PREFIX = "critic22"
_KEPT_DESTS = frozenset({"plugins", "override_ini", "importmode", "confcutdir", "noconftest"})
_UNSET = object()


def set_aside_addopts(early_config: pytest.Config, args: list[str], parser: pytest.Parser) -> None:
    """With ``--critic22-only`` the project's ini ``addopts`` are not this process's options.

    They say how the project's tests run and what their run leaves behind: ``--cov`` and
    ``--cov-fail-under`` (pytest-cov, which starts measuring in this same hook),
    ``--junitxml``, ``--html``, ``-n``, ``--timeout``. No test of the project runs here: they
    run in the sandboxed children, whose pytest reads the tree's configuration itself (with
    ``--no-cov``). So the controller measures nothing, writes no report of the project's,
    and exits with the verdict's status. Kept: the options of :data:`_KEPT_DESTS` and every
    ``--critic22*`` option in ``addopts``; the command line and ``PYTEST_ADDOPTS``, which
    whoever started this process chose for it, apply as given. Without ``--critic22-only``
    nothing changes: the project's tests run in this process, under its own options.

    pytest has put ``addopts`` in front of ``args`` (``addopts + PYTEST_ADDOPTS + the
    command line``) and parsed them into ``known_args_namespace``, which every plugin's
    ``pytest_load_initial_conftests`` reads: ``args`` (the list pytest parses in full next)
    loses them, the kept options' values move to ``config.option`` (where argparse starts
    from, so the command line still overrides them and extends a list), and the namespace
    is parsed again.
    """
    namespace = early_config.known_args_namespace
    if not getattr(namespace, "critic22_patch", None) or not getattr(
        namespace, "critic22_only", False
    ):
        return
    env = os.environ.get("PYTEST_ADDOPTS", "")
    tail = [*shlex.split(env), *early_config.invocation_params.args]
    cut = len(args) - len(tail)
    if cut <= 0 or args[cut:] != tail:
        return  # no addopts in args (none in the ini file, or a parse without them)
    option = early_config.option
    for dest, value in vars(parser.parse_known_args(args[:cut], copy.copy(option))).items():
        kept = dest.startswith(_KEPT_PREFIX) or dest in _KEPT_DESTS
        if kept and value != getattr(option, dest, _UNSET):
            setattr(option, dest, value)
    args[:] = tail
    fresh = parser.parse_known_args(args, copy.copy(option))
    if fresh.confcutdir is None:  # pytest's default (the ini file's folder), set after its parse
        fresh.confcutdir = namespace.confcutdir
    early_config.known_args_namespace = fresh


def guard_the_controller(early_config: pytest.Config) -> None:
    """The controller never imports code of a tree that holds the patch (invariant 17).

    With ``--critic22`` only, before pytest imports the project's initial ``conftest.py``
    files. When the checkout already has the patch applied (``git apply --reverse --check``
    succeeds on its working tree or its index: the pull request checked out, a staged
    change), a run that would collect the project's tests here, outside the sandbox,
    stops: one usage-error line that says to review from a checkout of the base. With
    ``--critic22-only`` nothing of the project runs in this process, so the review goes on
    without importing any ``conftest.py`` (as ``--noconftest``) and with the tree's folders
    off ``sys.path`` (a module the patch adds at its root cannot stand in for a library the
    review imports later); it does the same when the patch does not apply to the working
    tree (another candidate of a change the tree holds: the review loop's later rounds).
    The review's summary says so. What pytest imported before this hook — ``-p NAME`` in
    the configuration, installed entry points, ``.pth`` files — is out of its reach: that
    is why the CI recipe checks the base out before it installs anything.

    A patch that cannot be read, or a folder outside git, is left to the usual one-line
    errors at configure.
    """
    namespace = early_config.known_args_namespace
    value = getattr(namespace, "critic22_patch", None)
    if not value or getattr(namespace, "help", False):
        return
    from pytest_critic22.config.inputs import InputError, read_patch
    from pytest_critic22.execution.git import toplevel

    where = early_config.invocation_params.dir
    try:
        path, text = read_patch(value, where)
    except InputError:
        return
    from pytest_critic22.model.patch import without_binary_files

    if not text.strip():
        return  # an empty patch: nothing of it can be in the checkout
    # git cannot apply a "Binary files differ" diff: the text files' part says where the
    # checkout is (a patch of binary files only is checked whole: never held, so untrusted).
    # Plain text work: unidiff is not imported here, where the tree is still on sys.path.
    text = without_binary_files(text) or text
    repo = toplevel(early_config.rootpath) or toplevel(where)
    if repo is None:
        return
    only = bool(getattr(namespace, "critic22_only", False))
    held = _held(repo, text)
    if held and not only:
        base = str(getattr(namespace, "critic22_base", None) or "HEAD")
        rev = base if base != "HEAD" or held == "working tree" else "<base>"
        raise pytest.UsageError(
            f"--critic22: the checkout already has {path.name} applied: this pytest would "
            "import its conftest.py files and run its tests in this process, outside the "
            f"sandbox. Review it from a checkout of the base instead (git worktree add ../base "
            f"{rev}, then pytest there), as the CI recipe examples/github-actions.yml does, "
            "or add --critic22-only to review without importing them"
        )
    if held:
        why = "already has the patch applied"
    elif only and not _applies(repo, text):
        why = "is not what the patch applies to (the patch does not apply to it)"
    else:
        return
    namespace.noconftest = True  # what pytest reads to load the initial conftest.py files
    early_config.option.noconftest = True  # and kept through the full parse of the options
    early_config.stash[UNTRUSTED_TREE] = why
    _off_sys_path(early_config, repo)


def _applies(repo: Path, patch: str, *flags: str) -> bool:
    """``git apply --check`` of the patch in the repository's working tree: git alone reads
    the files, nothing of the tree runs."""
    from pytest_critic22.execution.git import git

    done = git(["apply", "--check", *flags, "-"], repo, input=patch, check=False, timeout=30)
    return done.returncode == 0


def _held(repo: Path, patch: str) -> str:
    """Where the checkout already has the patch applied: "working tree" (and not the index:
    the change is not committed), "index" (committed or staged), or "" (nowhere)."""
    if _applies(repo, patch, "--reverse", "--recount", "--cached"):
        return "index"
    return "working tree" if _applies(repo, patch, "--reverse", "--recount") else ""


def _off_sys_path(config: pytest.Config, repo: Path) -> None:
    """Take the repository's folders off ``sys.path`` (``python -m pytest``'s current folder,
    the ini ``pythonpath``, an editable install's): an interpreter installed inside it stays.
    They are put back when pytest unconfigures, for a caller that runs pytest in-process."""
    kept = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    top = repo.resolve()

    def in_tree(entry: str) -> bool:
        folder = Path(entry or os.getcwd()).resolve()
        inside = folder == top or top in folder.parents
        return inside and not any(folder == k or k in folder.parents for k in kept)

    removed = [(index, entry) for index, entry in enumerate(sys.path) if in_tree(entry)]
    sys.path[:] = [entry for entry in sys.path if not in_tree(entry)]

    def put_back() -> None:
        for index, entry in removed:
            if entry not in sys.path:
                sys.path.insert(index, entry)

    config.add_cleanup(put_back)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "critic22: an item generated by pytest-critic22 from a review finding"
    )
    warn_deprecated(config)
    if not config.getoption("critic22_patch", default=None):
        return
    from pytest_critic22.plugin.session import PLUGIN_KEY, configure

    plugin = configure(config)
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, PLUGIN_NAME)
    if plugin.opts.only:
        config.stash[_ONLY] = True
        _freeze(config)


def _freeze(config: pytest.Config) -> None:
    """With ``--critic22-only`` no test of the user's runs in this process: what pytest, the
    plugins and the review made lives to the end, so neither pytest's first full collection
    at the end (its unconfigure's, for unraisable exceptions) nor the interpreter's at exit
    need walk it again (a noticeable part of a one-finding run, more once litellm is
    imported). Frozen here and again at session finish, for what the session made (the
    review's imports among it). Given back when pytest unconfigures, before its cleanups'
    collection, so a process that runs pytest in-process collects as before, and frozen
    again at exit. A freeze someone else made is theirs: nothing is done."""
    if gc.get_freeze_count():
        return
    gc.freeze()
    config.stash[_FROZE] = True
    if not _FREEZE_AT_EXIT:
        atexit.register(gc.freeze)
        _FREEZE_AT_EXIT.append(True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """With ``--critic22-only`` no test of the user's ran in this session, on the controller
    or on an xdist worker (they ran only generated items), so a plugin of
    :data:`IDLE_SUMMARIES` whose library nothing imported in this process has nothing to
    report: it is unregistered before pytest calls the terminal summary (the terminal
    reporter's session-finish wrapper calls it once every session-finish hook has returned),
    which would import its library for nothing. A library something did import keeps its
    plugin. A heap this plugin froze at configure is frozen again (:func:`_freeze`)."""
    config = session.config
    if not config.stash.get(_ONLY, False):
        return
    if config.stash.get(_FROZE, False):
        gc.freeze()  # what the session made lives to the end too: litellm's import, libcst's
    for name, library in IDLE_SUMMARIES.items():
        idle = config.pluginmanager.get_plugin(name)
        if idle is not None and library not in sys.modules:
            config.pluginmanager.unregister(idle, name)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After pytest's own unconfigure (its first collection at the end), before its
    cleanups (the second, which then sees everything again)."""
    if config.stash.get(_FROZE, False):
        del config.stash[_FROZE]
        gc.unfreeze()
