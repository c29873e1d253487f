"""The ``mutable-default`` check: a new list, dict or set parameter default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _callee_name,
    _short,
    _sides,
)

_MUTABLE_FACTORIES = frozenset(
    {"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque"}
)


def _is_mutable(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.List | cst.Dict | cst.Set | cst.ListComp | cst.DictComp | cst.SetComp):
        return True
    return isinstance(node, cst.Call) and _callee_name(node.func) in _MUTABLE_FACTORIES


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _run_mutable_default(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        for qualname, function in patched.functions.items():
            old = base.functions.get(qualname) if base is not None else None
            already = (
                {
                    p.name.value
                    for p in _all_params(old.node)
                    if p.default is not None and _is_mutable(p.default)
                }
                if old is not None
                else set()
            )
            for param in _all_params(function.node):
                default = param.default
                if default is None or not _is_mutable(default):
                    continue
                line = patched.line(default)
                if line not in change.added_lines or param.name.value in already:
                    continue
                hits.append(
                    Hit(
                        "mutable-default",
                        change.path,
                        line,
                        f"the parameter '{param.name.value}' of '{qualname}' gets the mutable "
                        f"default `{_short(patched.code(default), 40)}`, one object shared by "
                        "every call",
                    )
                )
    return hits


# --- the check and its examples --------------------------------------------------------------

_MUTABLE_DEFAULT = Check(
    name="mutable-default",
    description="a new parameter default that is a list, dict or set (literal or constructor "
    "call), shared by every call",
    run=_run_mutable_default,
    valid=(
        Example(
            base="""\
def register(name, registry):
    registry.append(name)
    return registry
""",
            patched="""\
def register(name, registry=None):
    registry = [] if registry is None else registry
    registry.append(name)
    return registry
""",
        ),
        Example(
            base="""\
def add(item, bucket=[]):
    bucket.append(item)
    return bucket
""",
            patched="""\
def add(item, bucket=[], unique=False):
    if not (unique and item in bucket):
        bucket.append(item)
    return bucket
""",
        ),
        Example(
            base="""\
def tags(*names):
    return list(names)
""",
            patched="""\
def tags(*names, extra=()):
    return [*names, *extra]
""",
        ),
    ),
    invalid=(
        Example(
            base="",
            patched="""\
def register(name, handlers=[]):
    handlers.append(name)
    return handlers
""",
        ),
        Example(
            base="""\
def walk(node, seen=None):
    seen = set() if seen is None else seen
    seen.add(node)
    return seen
""",
            patched="""\
def walk(node, seen=set()):
    seen.add(node)
    return seen
""",
        ),
        Example(
            base="""\
class Request:
    def __init__(self, url):
        self.url = url
""",
            patched="""\
from collections import defaultdict


class Request:
    def __init__(self, url, *, headers=defaultdict(list)):
        self.url = url
        self.headers = headers
""",
        ),
    ),
)
