"""The ``removed-symbol`` check: a removed public name the repository still references."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import ScopeProvider

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _all_nodes,
    _index,
    _is_suffix,
    _module_parts,
    _names_in_module,
    _Parsed,
    _sides,
    _target_names,
)


@dataclass(frozen=True, slots=True)
class _Symbol:
    name: str
    kind: str  # function, class, name
    line: int


def _public_symbols(parsed: _Parsed) -> list[_Symbol]:
    found: list[_Symbol] = []
    for statement in parsed.module.body:
        if isinstance(statement, cst.FunctionDef):
            found.append(_Symbol(statement.name.value, "function", parsed.line(statement.name)))
        elif isinstance(statement, cst.ClassDef):
            found.append(_Symbol(statement.name.value, "class", parsed.line(statement.name)))
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets: list[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                for target in targets:
                    found += [
                        _Symbol(name, "name", parsed.line(small)) for name in _target_names(target)
                    ]
    return [symbol for symbol in found if not symbol.name.startswith("_")]


def _module_bindings(parsed: _Parsed) -> frozenset[str] | None:
    """Every name the module binds at module level; None when a star import may bind any."""
    for node in _all_nodes(parsed.module):
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return None
    try:
        scope = parsed.wrapper.resolve(ScopeProvider)[parsed.module]
    except Exception:  # why: scope analysis of arbitrary code must not crash a review
        return None
    if scope is None:
        return None
    return frozenset(assignment.name for assignment in scope.assignments)


def _removed_symbols(change: FileChange, base: _Parsed, patched: _Parsed | None) -> list[_Symbol]:
    bound: frozenset[str] | None = frozenset()
    if patched is not None:
        bound = _module_bindings(patched)
    if bound is None:
        return []
    return [
        symbol
        for symbol in _public_symbols(base)
        if symbol.name not in bound and symbol.line in change.removed_lines
    ]


def _references(
    repo_sources: Mapping[str, str], name: str, target_path: str
) -> list[tuple[str, int]]:
    """Where the patched tree still uses ``name`` from the module at ``target_path``.

    Counted: ``from <module> import name``, ``<module alias>.name``, and a bare ``name`` in a file
    that star-imports the module or in the module itself when nothing there binds it. A bare
    ``name`` elsewhere is not counted: it is some other object of the same name.
    """
    target = _module_parts(target_path)
    found: list[tuple[str, int]] = []
    for path in sorted(repo_sources):
        index = _index(path, repo_sources[path])
        if index is None:
            continue
        aliases = {bound for parts, bound in index.imports if _is_suffix(parts, target)}
        star = False
        for origin, imported, bound, line in index.from_imports:
            if imported == "*":
                star = star or _is_suffix(origin, target)
            elif imported == name and _is_suffix(origin, target):
                found.append((path, line))
            elif _is_suffix([*origin, imported], target):
                aliases.add(bound)
        found += [
            (path, line) for owner, line in index.attributes.get(name, ()) if owner in aliases
        ]
        if star or (path == target_path and name not in index.bound):
            found += [(path, line) for line in index.loads.get(name, ())]
    return sorted(found)


def _validate_removed_symbol(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    if len(args) > 1:
        return f"the check takes at most one argument, a symbol's name (got {len(args)})"
    if not args:
        return None
    for change, base, patched in _sides(changes):
        if base is None:
            continue
        for symbol in _removed_symbols(change, base, patched):
            if _names_in_module(args[0], symbol.name, change.path):
                return None
    return f"argument {args[0]!r} is not a public top-level symbol the edit removes"


def _run_removed_symbol(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if base is None:
            continue
        for symbol in _removed_symbols(change, base, patched):
            if args and not _names_in_module(args[0], symbol.name, change.path):
                continue
            references = _references(repo_sources, symbol.name, change.path)
            if not references:
                continue
            path, line = references[0]
            more = f" and {len(references) - 1} more" if len(references) > 1 else ""
            hits.append(
                Hit(
                    "removed-symbol",
                    change.path,
                    symbol.line,
                    f"the public {symbol.kind} '{symbol.name}' (base line {symbol.line}) is "
                    f"removed by the edit but still referenced at {path}:{line}{more}",
                )
            )
    return hits


# --- the check and its examples --------------------------------------------------------------

_SLUG = """\
import re


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def title_case(text):
    return text.title()
"""

_REMOVED_SYMBOL = Check(
    name="removed-symbol",
    description="a public top-level function, class or name the edit removes that the "
    "repository still references",
    run=_run_removed_symbol,
    validate_args=_validate_removed_symbol,
    valid=(
        Example(
            base=_SLUG,
            patched=_SLUG.replace("\n\ndef title_case(text):\n    return text.title()\n", ""),
            repo={"views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n"},
        ),
        Example(
            base="""\
def _normalize(text):
    return text.strip().lower()


def key(text):
    return _normalize(text)
""",
            patched="""\
def key(text):
    return text.strip().lower()
""",
            repo={"util.py": "def _normalize(text):\n    return text\n"},
        ),
        Example(
            base=_SLUG,
            patched="from textutil import slugify\n\n\ndef title_case(text):\n"
            "    return text.title()\n",
            repo={
                "textutil.py": _SLUG.split("\n\ndef title_case")[0] + "\n",
                "views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n",
            },
        ),
    ),
    invalid=(
        Example(
            base=_SLUG,
            patched="def title_case(text):\n    return text.title()\n",
            args=("slugify",),
            repo={"views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n"},
        ),
        Example(
            base="""\
DEFAULT_TIMEOUT = 30


def timeout_for(host):
    return DEFAULT_TIMEOUT
""",
            patched="""\
def timeout_for(host):
    return 30
""",
            repo={"client.py": "import mod\n\nprint(mod.DEFAULT_TIMEOUT)\n"},
        ),
    ),
)
