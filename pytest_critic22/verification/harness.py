"""The harness that judges is the base's (invariant 16): which of the patch's files change
the test harness, and the tree that runs the patched source under the base's harness.

A patch can rewire how pytest judges its own tests: a ``conftest.py`` whose report hook
marks every test passed, ``addopts`` that drop a plugin, a ``pytest11`` plugin of its own.
Such files are found here (pure: file texts in, paths out), reported as
``harness_changed``, and preservation runs the project's tests once more on the patched
source with the base's versions of them.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from pytest_critic22.model.patch import ParsedPatch

if TYPE_CHECKING:
    from pytest_critic22.execution.trees import TreeSet, Variant

__all__ = ["HARNESS_TREE", "base_harness", "harness_changed", "harness_files", "without_harness"]

HARNESS_TREE = "patched-base-harness"  # the variant's name: patched source, base harness

# ini files and the sections pytest reads from them ("*": the whole file is pytest's)
_INI_SECTIONS = {"pytest.ini": ("pytest",), ".pytest.ini": ("pytest",), "tox.ini": ("pytest",)}
_SETUP_CFG_SECTIONS = ("tool:pytest", "options.entry_points")


def harness_files(patch: ParsedPatch, read: Callable[[str, str], str | None]) -> tuple[str, ...]:
    """The patch's files that change the test harness, in patch order.

    ``read(tree, path)`` gives a file's text on ``"base"`` or ``"patched"`` (None: absent).
    A ``conftest.py`` anywhere, ``pytest.ini`` and the pytest parts of ``pyproject.toml``,
    ``setup.cfg`` and ``tox.ini`` at any depth (their pytest tables and ``pytest11`` entry
    points), a ``setup.py`` whose changed lines name ``pytest11``, the module a ``pytest11``
    entry point of the base names, and a module at the root (or ``src/``) that would shadow
    the harness itself (``pytest.py``, ``_pytest/``, ``pluggy/``, ``sitecustomize.py``, …).
    """
    paths = list(dict.fromkeys(p for e in patch.edits for p in (e.old_path, e.new_path) if p))
    plugins = _plugin_modules(read("base", "pyproject.toml") or "")
    out: list[str] = []
    for path in paths:
        name = PurePosixPath(path).name
        changed: bool
        if name == "conftest.py" or path in plugins or _shadows_the_harness(path):
            changed = True
        elif name in _INI_SECTIONS:  # at any depth: pytest takes the nearest to its arguments
            changed = _ini_part(read("base", path), _INI_SECTIONS[name]) != _ini_part(
                read("patched", path), _INI_SECTIONS[name]
            )
        elif name == "setup.cfg":
            changed = _ini_part(read("base", path), _SETUP_CFG_SECTIONS) != _ini_part(
                read("patched", path), _SETUP_CFG_SECTIONS
            )
        elif name == "pyproject.toml":
            changed = _toml_part(read("base", path)) != _toml_part(read("patched", path))
        elif name == "setup.py":
            changed = any(
                "pytest11" in line
                for e in patch.edits
                if e.new_path == path or e.old_path == path
                for line in e.hunk.splitlines()
                if line[:1] in "+-"
            )
        else:
            changed = False
        if changed:
            out.append(path)
    return tuple(out)


def harness_changed(patch: ParsedPatch, trees: TreeSet) -> tuple[str, ...]:
    """:func:`harness_files`, read from the run's base and patched trees (text only)."""
    from pytest_critic22.execution.trees import TreeError, Variant
    from pytest_critic22.verification.procedures import read_source

    try:
        made = {"base": trees.get(Variant.base()), "patched": trees.get(Variant.patched(patch))}
    except TreeError:
        return ()
    return harness_files(patch, lambda tree, path: read_source(made[tree], path))


# Modules that, first on the import path (a tree's root or src/), would be imported in
# place of the test harness itself: ``python -m pytest`` would run the patch's pytest.
_HARNESS_MODULES = frozenset(
    {"pytest", "_pytest", "pluggy", "py", "sitecustomize", "usercustomize", "xdist", "iniconfig"}
)


def _shadows_the_harness(path: str) -> bool:
    parts = PurePosixPath(path).parts
    if parts[:1] == ("src",):
        parts = parts[1:]
    if not parts:
        return False
    top = parts[0].removesuffix(".py") if len(parts) == 1 else parts[0]
    return top in _HARNESS_MODULES or (len(parts) == 1 and parts[0].endswith(".pth"))


def without_harness(patch: ParsedPatch, files: tuple[str, ...]) -> str:
    """The patch without its edits to the harness files: the patched source, base harness."""
    leave_out = [e.edit_id for e in patch.edits if {e.old_path, e.new_path} & set(files)]
    return patch.without(leave_out)


def base_harness(patch: ParsedPatch, files: tuple[str, ...]) -> Variant:
    """The tree of the patched source under the base's harness files."""
    from pytest_critic22.execution.trees import Variant

    return Variant(HARNESS_TREE, (without_harness(patch, files),))


def _ini_part(text: str | None, sections: tuple[str, ...]) -> object:
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ("unparsable", text)  # changed text that cannot be read: assume it matters
    return {s: dict(parser.items(s)) for s in sections if parser.has_section(s)}


def _toml_part(text: str | None) -> object:
    if text is None:
        return None
    data = _load_toml(text)
    if data is None:
        # No TOML reader (Python 3.10 without tomli): any line naming pytest counts.
        return [line for line in text.splitlines() if "pytest" in line]
    tool = data.get("tool") if isinstance(data.get("tool"), Mapping) else {}
    project = data.get("project") if isinstance(data.get("project"), Mapping) else {}
    points = project.get("entry-points") if isinstance(project, Mapping) else None
    poetry = tool.get("poetry") if isinstance(tool, Mapping) else None
    return (
        tool.get("pytest") if isinstance(tool, Mapping) else None,
        points.get("pytest11") if isinstance(points, Mapping) else None,
        (poetry.get("plugins") or {}).get("pytest11") if isinstance(poetry, Mapping) else None,
    )


def _load_toml(text: str) -> Mapping[str, Any] | None:
    import importlib

    try:  # tomllib: Python 3.11 and later (mypy checks as 3.10)
        tomllib = importlib.import_module("tomllib")
    except ImportError:  # pragma: no cover - Python 3.10
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {"unparsable": text}
    return data if isinstance(data, dict) else None


_MODULE = re.compile(r"^\s*([A-Za-z_][\w.]*)")


def _plugin_modules(pyproject: str) -> set[str]:
    """The files of the base's own ``pytest11`` plugins (``pkg.plugin`` -> ``pkg/plugin.py``,
    ``src/pkg/plugin.py`` and the package forms)."""
    data = _load_toml(pyproject) if pyproject else None
    if not data:
        return set()
    project = data.get("project")
    points = project.get("entry-points") if isinstance(project, Mapping) else None
    plugins = points.get("pytest11") if isinstance(points, Mapping) else None
    out: set[str] = set()
    for value in (plugins or {}).values() if isinstance(plugins, Mapping) else ():
        found = _MODULE.match(str(value).split(":")[0])
        if not found:
            continue
        stem = found.group(1).replace(".", "/")
        for root in ("", "src/"):
            out |= {f"{root}{stem}.py", f"{root}{stem}/__init__.py"}
    return out
