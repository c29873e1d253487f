"""Which installed pytest plugins a child pytest leaves out, so it starts fast.

A child pytest autoloads every installed ``pytest11`` plugin, and some cost more than the
tests it runs (hypothesis' plugin imports all of hypothesis in every child). The rule:
a plugin is blocked (``-p no:NAME``) unless the project could need it, and a plugin counts
as needed when one of its names — entry point, top-level module, distribution, distribution
without its ``pytest-`` prefix — appears as a word in the project's pytest configuration
(``pytest.ini``, ``.pytest.ini``, ``pyproject.toml``, ``tox.ini``, ``setup.cfg`` at the
tree's root), in any ``conftest.py`` of the tree, or in the test files the child runs.
xdist also counts as needed when the configuration passes ``-n``/``--dist``. Only plugins on a
short list (:data:`BLOCKABLE`) are ever blocked: those whose absence cannot turn a test's
outcome when the project never names them. A run that still ends in an error with plugins
blocked is run again with every plugin (the caller does that), unless its errors cannot be
theirs (:func:`blocked_plugins_innocent`): test modules that failed to import (none of those
plugins changes what a module imports or how it parses), fixtures none of them defines, tests
that are not there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_critic22.execution.junit import Case

__all__ = ["blocked_plugins", "blocked_plugins_innocent", "installed_plugins", "review_blocks"]

_INI = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".tox", ".nox", ".venv", "venv", ".eggs"}
_XDIST_OPTS = re.compile(r"(?:^|\s)(?:-n\s*\S|--numprocesses\b|--dist\b|--tx\b)")
NEVER_BLOCKED = frozenset({"critic22"})  # blocked by the runner itself (-p no:critic22)
# Only plugins whose absence cannot turn an outcome when the project does not name them:
# hypothesis' (tests that do not import hypothesis cannot use it), measurement (coverage:
# the runner passes --no-cov anyway), distribution (xdist: a child never fans out), anyio's
# (a test cannot use it without naming it, but for its fixtures: a missing one is run again
# whole, see blocked_plugins_innocent). A project that implements a hook one of them defines
# (xdist's pytest_configure_node) keeps it. Any other plugin may supply a fixture, run async
# tests, rerun or skip: it is always loaded.
BLOCKABLE = frozenset({"hypothesispytest", "pytest_cov", "xdist", "xdist.looponfail", "anyio"})
_LEFT_OUT = re.compile(r"\bno:[\w.]+")
_HOOK_DEFINED = re.compile(r"\bdef (pytest_\w+)\s*\(")
# Plugin modules this scan does not read (pytest_plugins, -p MODULE, a registration) or a hook
# named another way (specname=): every blockable plugin with hooks of its own is then kept.
_UNREAD_HOOKS = re.compile(
    r"\bpytest_plugins\b|\bspecname\s*=|pluginmanager\.register\b|(?:^|\s)-p\s*(?!no:)[\w.]"
)
# A node id that is not there, as pytest reports it (exit status 4).
_NOT_FOUND = re.compile(r"ERROR: not found: \S")
# A missing fixture, as pytest reports it in a test's setup error.
_MISSING_FIXTURE = re.compile(
    r"^E +fixture '([A-Za-z_]\w*)' not found\n> +available fixtures:", re.M
)
# How a plugin's source defines a fixture: a function of its name, or name="..." given.
_DEFINES = r"\bdef {0}\s*\(|\bname\s*=\s*['\"]{0}['\"]"
# The last line of a collection failure's traceback when importing the test module raised.
_IMPORT_FAILED = re.compile(
    r"E +(?:ImportError|ModuleNotFoundError|SyntaxError|IndentationError|TabError)\b"
)


@functools.cache
def installed_plugins() -> tuple[tuple[str, frozenset[str]], ...]:
    """(entry-point name, the words that say a project uses it) for every pytest11 plugin."""
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group="pytest11"):
        if ep.name in NEVER_BLOCKED:
            continue
        words = {ep.name, ep.value.split(":")[0].split(".")[0]}
        dist = getattr(ep, "dist", None)
        if dist is not None and dist.name:
            name = dist.name.lower()
            words |= {name, name.replace("-", "_")}
            for prefix in ("pytest-", "pytest_"):
                if name.startswith(prefix):
                    words |= {name[len(prefix) :], name[len(prefix) :].replace("-", "_")}
        words = {w for w in words if len(w) >= 3 and w not in ("pytest", "plugin")}
        found.append((ep.name, frozenset(words)))
    return tuple(found)


def blocked_plugins(tree: Path, test_files: Sequence[str], also: str = "") -> tuple[str, ...]:
    """The entry-point names to block in a child that runs ``test_files`` in ``tree``;
    ``also`` is more text read as the project's configuration (a command's arguments)."""
    plugins = installed_plugins()
    if not plugins:
        return ()
    stamp = 0  # a tree reset or changed at its root since is read afresh
    for path in (tree, tree / ".git"):
        with contextlib.suppress(OSError):
            stamp += path.stat().st_mtime_ns
    text = "\n".join([_project_text(str(tree), stamp), _read_all(tree, test_files), also])
    unread = bool(_UNREAD_HOOKS.search(text))
    text = _LEFT_OUT.sub(" ", text)  # -p no:NAME leaves a plugin out: that is no use of it
    words = set(re.findall(r"[A-Za-z0-9_.-]+", text))
    words |= {w.strip("-.") for w in words}
    words |= set(re.findall(r"[A-Za-z0-9]+", text))  # asyncio_mode, pytest.mark.anyio
    hooks = {h for h in _HOOK_DEFINED.findall(text) if not h.startswith("pytest_critic22_")}
    hooks -= _pytest_hooks()  # what remains are other plugins' hooks
    blocked = []
    for name, names in plugins:
        if name not in BLOCKABLE or names & words:
            continue
        if name.startswith("xdist") and _XDIST_OPTS.search(text):
            continue
        if (hooks or unread) and _defines_a_hook(name, hooks, unread):
            continue  # without it pytest refuses the project's hook (unknown hook)
        blocked.append(name)
    return tuple(blocked)


@functools.cache
def _pytest_hooks() -> frozenset[str]:
    from _pytest import hookspec

    return frozenset(name for name in vars(hookspec) if name.startswith("pytest_"))


def _defines_a_hook(plugin: str, hooks: set[str], unread: bool) -> bool:
    source = _plugin_source(plugin)
    if source is None or (unread and "add_hookspecs" in source):
        return True
    return any(re.search(rf"\bdef {h}\s*\(", source) for h in hooks)


def review_blocks(repo: Path, args: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """What a review's own pytest (:func:`pytest_critic22.apps.api.review`) leaves out: it runs
    with ``--critic22-only``, so no project test runs in it, and the same rule holds, its
    arguments, ``PYTEST_ADDOPTS`` and ``PYTEST_PLUGINS`` read as configuration too."""
    words = [*args, environ.get("PYTEST_ADDOPTS", ""), environ.get("PYTEST_PLUGINS", "")]
    _project_text.cache_clear()  # the user's checkout, edited in place between reviews maybe
    return blocked_plugins(repo, [], also=" ".join(words))


def blocked_plugins_innocent(
    cases: Sequence[Case],
    blocked: Sequence[str],
    output: str = "",
    code: int | None = None,
    requested: Sequence[str] = (),
) -> bool:
    """True when a run's errors cannot come from the ``blocked`` plugins, so a run with every
    plugin would fail the same way: each error is a test module whose import raised
    ImportError (or ModuleNotFoundError) or that does not parse (the critic's test importing
    a name the tree lacks, a tree without a generated file: no plugin on :data:`BLOCKABLE`
    hooks imports or parsing), or a missing fixture that no blocked plugin's distribution
    defines in its source (``def NAME(`` or ``name="NAME"``: a plugin that is not installed,
    say). So is a usage error (exit ``code`` 4) whose every error line in the ``output``
    says a test is not found, when no ``requested`` node id names a parameter (a plugin can
    parametrize: anyio's backends; pytest reports the function's id either way). Any other
    error (an unknown option or marker, an error in a conftest or in setup) may be, and is
    run again."""
    errors = [case for case in cases if case.status == "error"]
    if not errors and code == 4:
        said = [line for line in output.splitlines() if line.startswith("ERROR:")]
        missing = [line for line in said if _NOT_FOUND.match(line)]
        return bool(said) and len(missing) == len(said) and not any("[" in r for r in requested)
    return bool(errors) and all(_innocent(case.text, blocked) for case in errors)


def _innocent(text: str, blocked: Sequence[str]) -> bool:
    raised = [line for line in text.splitlines() if line.startswith("E ")][-1:]  # the last
    if text.startswith("collection failure") and raised and _IMPORT_FAILED.match(raised[0]):
        return True
    missing = _MISSING_FIXTURE.findall(text)
    return bool(missing) and all(
        (source := _plugin_source(name)) is not None
        and not re.search(_DEFINES.format(re.escape(fixture)), source)
        for fixture in missing
        for name in blocked
    )


@functools.cache
def _plugin_source(name: str) -> str | None:
    """Every Python file of the distribution that installs plugin ``name``, or None when they
    cannot all be read, the entry point's own module among them (then it may define any
    fixture or hook)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="pytest11", name=name):
        files = [f for f in (getattr(ep.dist, "files", None) or ()) if f.suffix == ".py"]
        module = ep.value.split(":")[0].replace(".", "/")
        if not {f"{module}.py", f"{module}/__init__.py"} & {f.as_posix() for f in files}:
            return None
        try:  # installed files, links followed (uv, Nix): not the project's text
            return "\n".join(Path(str(f.locate())).read_text("utf-8", "replace") for f in files)
        except OSError:
            return None
    return None


@functools.lru_cache(maxsize=64)
def _project_text(tree: str, stamp: int) -> str:
    """The tree's pytest configuration and every conftest.py (read once per tree)."""
    root = Path(tree)
    parts = [_read(root / name) for name in _INI]
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".")]
        if "conftest.py" in files:
            parts.append(_read(Path(folder) / "conftest.py"))
    return "\n".join(parts)


def _read_all(tree: Path, test_files: Sequence[str]) -> str:
    parts = []
    for name in test_files:
        path = tree / name.split("::")[0]
        if path.is_dir():
            for file in sorted(path.rglob("*.py"))[:2000]:
                parts.append(_read(file))
        else:
            parts.append(_read(path))
    return "\n".join(parts)


def _read(path: Path) -> str:
    try:
        if path.is_symlink() or not path.is_file():
            return ""  # a link planted in the tree is not the project's text
        return path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return ""
