"""The ``undefined-name`` check: a name on an added line that is bound nowhere in scope."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst
from libcst.metadata import ScopeProvider

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _all_nodes,
    _Parsed,
    _sides,
    _target_names,
)

#: Bound by the import system or the class machinery rather than by the module's code.
_IMPLICIT = frozenset(
    {
        "__file__",
        "__builtins__",
        "__cached__",
        "__loader__",
        "__path__",
        "__spec__",
        "__annotations__",
        "__package__",
        "__module__",
        "__qualname__",
        "__class__",
    }
)


def _undefined(parsed: _Parsed) -> list[tuple[int, str, str]] | None:
    """(line, name, enclosing function) of every name bound nowhere; None if that is unknowable."""
    # libcst resolves the iterable of a comprehension's second and later `for` clauses in the
    # enclosing scope, so a name bound by an earlier clause looks unbound there: collect those.
    in_comprehension: set[int] = set()
    for node in _all_nodes(parsed.module):
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return None
        if isinstance(node, cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp):
            targets: set[str] = set()
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                targets.update(_target_names(clause.target))
                clause = clause.inner_for_in
            in_comprehension.update(
                id(name)
                for name in _all_nodes(node)
                if isinstance(name, cst.Name) and name.value in targets
            )
    try:
        scopes = parsed.wrapper.resolve(ScopeProvider)
    except Exception:  # why: scope analysis of arbitrary code must not crash a review
        return None
    unique = {id(scope): scope for scope in scopes.values() if scope is not None}
    found: list[tuple[int, str, str]] = []
    for scope in unique.values():
        for access in scope.accesses:
            node = access.node
            if (
                not isinstance(node, cst.Name)
                or node.value in _IMPLICIT
                or access.referents
                or id(node) in in_comprehension
            ):
                continue
            line = parsed.line(node)
            found.append((line, node.value, parsed.function_at(line)))
    return found


def _run_undefined_name(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        undefined = _undefined(patched)
        before = _undefined(base) if base is not None else []
        if undefined is None or before is None:
            continue
        already = {(name, where) for _, name, where in before}
        for line, name, where in undefined:
            if line in change.added_lines and (name, where) not in already:
                hits.append(
                    Hit(
                        "undefined-name",
                        change.path,
                        line,
                        f"the name '{name}' used in '{where or '<module>'}' is bound nowhere in "
                        "scope (no local, enclosing, module, import or builtin binding)",
                    )
                )
    return hits


# --- the check and its examples --------------------------------------------------------------

_UNDEFINED_NAME = Check(
    name="undefined-name",
    description="a name used on an added line that is bound nowhere in scope",
    run=_run_undefined_name,
    valid=(
        Example(
            base="""\
import json


def dump(data):
    return json.dumps(data)
""",
            patched="""\
import json


def dump(data, indent=None):
    keys = sorted(k for k in data)
    return json.dumps({k: data[k] for k in keys}, indent=indent)
""",
        ),
        Example(
            base="""\
def report(rows):
    return render(rows)
""",
            patched="""\
def report(rows):
    return render(sorted(rows))
""",
        ),
        Example(
            base="""\
def counter():
    count = 0

    def bump():
        return count + 1

    return bump
""",
            patched="""\
def counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    return bump
""",
        ),
    ),
    invalid=(
        Example(
            base="""\
def total(prices):
    result = sum(prices)
    return result
""",
            patched="""\
def total(prices):
    result = sum(prices)
    return reslt
""",
        ),
        Example(
            base="""\
def dump(data):
    return str(data)
""",
            patched="""\
def dump(data):
    return json.dumps(data)
""",
        ),
    ),
)
