"""The ``signature-changed`` check: a called function's parameters changed incompatibly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _index,
    _names_in_module,
    _Parsed,
    _short,
    _sides,
)

_POSITIONAL = ("positional-only", "positional")


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    kind: str  # positional-only, positional, var-positional, keyword-only, var-keyword
    default: str | None


def _params(parsed: _Parsed, function: cst.FunctionDef) -> list[_Param]:
    params = function.params

    def one(param: cst.Param, kind: str) -> _Param:
        default = parsed.code(param.default) if param.default is not None else None
        return _Param(param.name.value, kind, default)

    found = [one(p, "positional-only") for p in params.posonly_params]
    found += [one(p, "positional") for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(one(params.star_arg, "var-positional"))
    found += [one(p, "keyword-only") for p in params.kwonly_params]
    if params.star_kwarg is not None:
        found.append(one(params.star_kwarg, "var-keyword"))
    return found


#: Kind changes every existing call survives.
_COMPATIBLE_KINDS = frozenset({("positional-only", "positional"), ("keyword-only", "positional")})


def _signature_problems(old: list[_Param], new: list[_Param]) -> list[str]:
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    old_pos = [p.name for p in old if p.kind in _POSITIONAL]
    new_pos = [p.name for p in new if p.kind in _POSITIONAL]
    problems: list[str] = []
    renamed_to: set[str] = set()
    lost = False
    for p in old:
        q = new_by.get(p.name)
        if q is None:
            lost = True
            index = old_pos.index(p.name) if p.name in old_pos else -1
            if 0 <= index < len(new_pos) and new_pos[index] not in old_by:
                renamed_to.add(new_pos[index])
                problems.append(f"'{p.name}' renamed to '{new_pos[index]}'")
            else:
                problems.append(f"'{p.name}' removed")
            continue
        if p.kind != q.kind and (p.kind, q.kind) not in _COMPATIBLE_KINDS:
            problems.append(f"'{p.name}' made {q.kind}")
        if p.default is not None and q.default != p.default:
            problems.append(
                f"'{p.name}' lost its default `{_short(p.default, 30)}`"
                if q.default is None
                else f"default of '{p.name}' changed from `{_short(p.default, 30)}` "
                f"to `{_short(q.default, 30)}`"
            )
    common_old = [n for n in old_pos if n in new_pos]
    common_new = [n for n in new_pos if n in old_pos]
    if common_old != common_new:
        problems.append(
            f"positional parameters reordered ({', '.join(common_old)} -> {', '.join(common_new)})"
        )
    elif not lost:
        for name in common_old:
            before, after = old_pos.index(name), new_pos.index(name)
            if before != after:
                problems.append(f"'{name}' moved from position {before + 1} to {after + 1}")
                break
    for q in new:
        if (
            q.name not in old_by
            and q.name not in renamed_to
            and q.default is None
            and q.kind in ("positional-only", "positional", "keyword-only")
        ):
            problems.append(f"new required parameter '{q.name}'")
    return problems


def _call_names(qualname: str) -> frozenset[str]:
    parts = qualname.split(".")
    if parts[-1] in ("__init__", "__new__"):
        return frozenset(parts[-2:-1])  # constructing the class calls it
    if parts[-1].startswith("__") and parts[-1].endswith("__"):
        return frozenset()  # protocols and operators call these, never a visible call site
    return frozenset(parts[-1:])


def _callers(
    repo_sources: Mapping[str, str], names: frozenset[str], own_path: str, own_lines: range
) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for path in sorted(repo_sources):
        index = _index(path, repo_sources[path]) if names else None
        if index is None:
            continue
        for name in names:
            found += [
                (path, line)
                for line in index.calls.get(name, ())
                if not (path == own_path and line in own_lines)
            ]
    return sorted(found)


def _touched_functions(changes: Sequence[FileChange]) -> list[tuple[str, str]]:
    touched: list[tuple[str, str]] = []
    for change, base, patched in _sides(changes):
        for parsed, lines in ((base, change.removed_lines), (patched, change.added_lines)):
            if parsed is None:
                continue
            for qualname, function in parsed.functions.items():
                if function.span & lines:
                    touched.append((change.path, qualname))
    return touched


def _validate_signature_changed(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    if len(args) > 1:
        return (
            f"the check takes at most one argument, a function's qualified name (got {len(args)})"
        )
    if args and not any(_names_in_module(args[0], q, p) for p, q in _touched_functions(changes)):
        return f"argument {args[0]!r} names no function the edit touches"
    return None


def _run_signature_changed(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if base is None or patched is None:
            continue
        for qualname, new in patched.functions.items():
            old = base.functions.get(qualname)
            if old is None or (args and not _names_in_module(args[0], qualname, change.path)):
                continue
            if not (old.span & change.removed_lines or new.span & change.added_lines):
                continue
            problems = _signature_problems(_params(base, old.node), _params(patched, new.node))
            if not problems:
                continue
            own = range(new.first, new.last + 1)
            callers = _callers(repo_sources, _call_names(qualname), change.path, own)
            if not callers:
                continue
            header_added = sorted(set(new.header) & change.added_lines)
            path, line = callers[0]
            more = f" and {len(callers) - 1} more" if len(callers) > 1 else ""
            hits.append(
                Hit(
                    "signature-changed",
                    change.path,
                    header_added[0] if header_added else new.def_line,
                    f"the signature of '{qualname}' changed ({'; '.join(problems)}) while it is "
                    f"still called at {path}:{line}{more}",
                )
            )
    return hits


# --- the check and its examples --------------------------------------------------------------

_INVENTORY = """\
class Inventory:
    def __init__(self):
        self.stock = {}

    def remove(self, sku, qty):
        self.stock[sku] -= qty
"""

_INVENTORY_APP = {
    "app.py": """\
from mod import Inventory

inventory = Inventory()
inventory.stock["apple"] = 5
inventory.remove("apple", 2)
"""
}

_CONNECT_APP = {
    "client.py": """\
from mod import connect

session = connect("db.local", 5432, 10)
"""
}

_SIGNATURE_CHANGED = Check(
    name="signature-changed",
    description="a called function's parameters removed, renamed, reordered, made keyword-only "
    "or given other defaults",
    run=_run_signature_changed,
    validate_args=_validate_signature_changed,
    valid=(
        Example(
            base="""\
def total(prices, tax=0.0):
    return sum(prices) * (1 + tax)
""",
            patched="""\
def total(prices, tax=0.0, discount=0.0):
    return sum(prices) * (1 + tax) - discount
""",
            repo={"shop.py": "from mod import total\n\nprint(total([1.0, 2.0], 0.2))\n"},
        ),
        Example(
            base="""\
def _fmt(value, width):
    return str(value).rjust(width)
""",
            patched="""\
def _fmt(value, *, width):
    return str(value).rjust(width)
""",
        ),
        Example(
            base=_INVENTORY,
            patched=_INVENTORY.replace(
                "        self.stock[sku] -= qty\n",
                "        self.stock[sku] = max(0, self.stock.get(sku, 0) - qty)\n",
            ),
            args=("Inventory.remove",),
            repo=_INVENTORY_APP,
        ),
    ),
    invalid=(
        Example(
            base=_INVENTORY,
            patched=_INVENTORY.replace(
                "def remove(self, sku, qty):", "def remove(self, sku):"
            ).replace("-= qty", "= 0"),
            args=("Inventory.remove",),
            repo=_INVENTORY_APP,
        ),
        Example(
            base="""\
def connect(host, port, timeout=5):
    return (host, port, timeout)
""",
            patched="""\
def connect(host, port, *, timeout=5):
    return (host, port, timeout)
""",
            repo=_CONNECT_APP,
        ),
        Example(
            base="""\
def fetch(url, retries=3):
    return [url] * retries
""",
            patched="""\
def fetch(url, retries=0):
    return [url] * retries
""",
            args=("mod.fetch",),
            repo={"jobs.py": "import mod\n\npages = mod.fetch('https://example.org')\n"},
        ),
    ),
)
