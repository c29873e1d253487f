"""Impact evidence: a libcst code graph of what the patch touches.

Pure: sources in, facts out. Each file is scanned on its own into :class:`FileFacts`
(definitions, imports, references; :mod:`pytest_critic22.evidence.codefacts`,
:mod:`pytest_critic22.evidence.codescan`), which depend only on the file's path and text, so they
can be cached by content digest; the graph is then resolved across files (here).

References are resolved through imports (``import a.b as c``, ``from a import b as c``),
through ``self`` inside a class, and through local instances (``x = Cls(...)`` then
``x.method()``) — not by bare name matching alone. A module's own top-level functions and
classes are known before its body is read, so a call to one defined further down resolves.

Star imports (``from .core import *``) cannot be expanded from one file: the facts keep the
star-imported modules and the module's literal ``__all__``, and the names are expanded when the
graph is resolved (``__all__`` when the source defines one, else its public top-level names).

Cutting the evidence to the packet's size budget is :mod:`pytest_critic22.evidence.bounding`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_critic22.evidence.codefacts import (
    Definition,
    FileFacts,
    is_test_path,
    module_name,
)

__all__ = [
    "SymbolImpact",
    "blast_radius",
    "callees",
    "edit_impact",
    "file_tests",
    "module_tests",
    "statement_lines",
]


@dataclass(frozen=True, slots=True)
class SymbolImpact:
    name: str  # fully qualified
    kind: str
    signature: str
    signature_before: str
    public: bool
    callers: tuple[str, ...] = ()  # "path:line"
    tests: tuple[str, ...] = ()  # test node ids

    @property
    def signature_changed(self) -> bool:
        return bool(self.signature_before) and self.signature != self.signature_before

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "signature": self.signature,
            "signature_changed": self.signature_changed,
            "public": self.public,
            "callers": list(self.callers),
            "tests": list(self.tests),
        }


def enclosing(facts: FileFacts, lines: Iterable[int]) -> list[Definition]:
    """The innermost function (or else class) around each line, in first-seen order."""
    found: dict[str, Definition] = {}
    for line in sorted(set(lines)):
        around = [d for d in facts.definitions if d.start <= line <= d.end]
        if not around:
            continue
        functions = [d for d in around if d.kind == "function"]
        pool = functions or around
        innermost = max(pool, key=lambda d: (d.start, -d.end))
        found.setdefault(innermost.qualname, innermost)
    return list(found.values())


def edit_impact(
    path: str,
    base: FileFacts | None,
    patched: FileFacts | None,
    removed_lines: Sequence[int],
    added_lines: Sequence[int],
    graph: Mapping[str, FileFacts],
) -> list[SymbolImpact]:
    """The symbols one edit touches, with callers and tests across the (patched) repository."""
    before = {d.qualname: d for d in (enclosing(base, removed_lines) if base else [])}
    after = {d.qualname: d for d in (enclosing(patched, added_lines) if patched else [])}
    all_before = {d.qualname: d for d in base.definitions} if base else {}
    all_after = {d.qualname: d for d in patched.definitions} if patched else {}
    known = patched or base
    module = known.module if known is not None else module_name(path)
    out = []
    for qualname in list(after) + [q for q in before if q not in after]:
        now = after.get(qualname) or all_after.get(qualname)
        then = before.get(qualname) or all_before.get(qualname)
        definition = now or then
        assert definition is not None
        full = f"{module}.{qualname}" if module else qualname
        callers, tests = _callers(full, definition.kind, graph, exclude=(path, definition))
        out.append(
            SymbolImpact(
                name=full,
                kind=definition.kind,
                signature=now.signature if now else "(removed)",
                signature_before=then.signature if then else "",
                public=_is_public(module, qualname),
                callers=tuple(callers),
                tests=tuple(tests),
            )
        )
    return out


def callees(
    graph: Mapping[str, FileFacts], sites: Sequence[tuple[str, Iterable[int]]]
) -> list[list[tuple[str, str, Definition]]]:
    """Per site (a file and lines of it), the repository's functions and classes that the
    references on those lines name — calls and names, resolved like callers are (imports,
    re-exports, ``self``, local instances); imports themselves are not uses.

    Each entry is (fully qualified name, path, definition), in line order, each name once per
    site; a name defined outside the repository (the standard library, a dependency) is not
    listed.
    """
    by_module = _by_module(graph)
    exports = _exports(graph, by_module)
    modules = sorted(by_module, key=len, reverse=True)
    out: list[list[tuple[str, str, Definition]]] = []
    for path, lines in sites:
        wanted = set(lines)
        found: dict[str, tuple[str, str, Definition]] = {}
        facts = graph.get(path)
        references = sorted(
            (r for r in (facts.references if facts else ()) if r.line in wanted),
            key=lambda r: (r.line, r.target),
        )
        for ref in references:
            if ref.kind == "import":
                continue
            target = _canonical(ref.target, exports)
            if target in found:
                continue
            for module in modules:
                if not module or not target.startswith(module + "."):
                    continue
                qualname = target[len(module) + 1 :]
                owner = by_module[module]
                definition = next(
                    (d for d in reversed(owner.definitions) if d.qualname == qualname), None
                )
                if definition is not None:
                    found[target] = (target, owner.path, definition)
                break
        out.append(list(found.values()))
    return out


def blast_radius(
    impacts: Mapping[str, Sequence[SymbolImpact]], files: int, edited: Iterable[str] = ()
) -> dict[str, int]:
    """Counts of what the patch reaches; ``modules`` are the edited and the calling files."""
    symbols = {s.name for items in impacts.values() for s in items}
    callers = {c for items in impacts.values() for s in items for c in s.callers}
    modules = {p for p in edited if p.endswith(".py")} | {c.split(":", 1)[0] for c in callers}
    return {
        "edits": len(impacts),
        "files": files,
        "symbols": len(symbols),
        "callers": len(callers),
        "modules": len(modules),
    }


def statement_lines(source: str) -> dict[int, int]:
    """Each line -> the first line of the innermost statement holding it.

    Coverage reports a multi-line statement at its first line; an added line in the
    middle of one is covered when that first line is.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    mapping: dict[int, int] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                body_start = _body_start(child)
                last = (body_start - 1) if body_start else (child.end_lineno or child.lineno)
                for line in range(child.lineno, max(child.lineno, last) + 1):
                    mapping[line] = child.lineno
            visit(child)

    visit(tree)
    return mapping


def _body_start(node: ast.stmt) -> int | None:
    bodies = [getattr(node, name, None) for name in ("body", "handlers", "orelse", "finalbody")]
    starts = [b[0].lineno for b in bodies if isinstance(b, list) and b and hasattr(b[0], "lineno")]
    return min(starts) if starts else None


def _is_public(module: str, qualname: str) -> bool:
    parts = [*module.split("."), *qualname.split(".")]
    return not any(p.startswith("_") and not p.startswith("__") for p in parts if p) and not any(
        is_test_path(p) for p in [module.replace(".", "/") + ".py"]
    )


def _callers(
    full: str, kind: str, graph: Mapping[str, FileFacts], exclude: tuple[str, Definition]
) -> tuple[list[str], list[str]]:
    path, definition = exclude
    by_module = _by_module(graph)
    exports = _exports(graph, by_module)
    callers: list[str] = []
    tests: list[str] = []

    def reaches(target: str) -> bool:
        target = _canonical(target, exports)
        return target == full or (kind == "class" and target.startswith(full + "."))

    for other_path in sorted(graph):
        facts = graph[other_path]
        lines: set[int] = set()
        for ref in facts.references:
            if not reaches(ref.target):
                continue
            if other_path == path and definition.start <= ref.line <= definition.end:
                continue  # its own body (recursion, self-references) is not a caller
            lines.add(ref.line)
            if is_test_path(other_path) and ref.scope:
                test = _test_nodeid(other_path, ref.scope)
                if test and test not in tests:
                    tests.append(test)
        # A star import that brings the symbol in counts like ``from M import name`` would.
        own = _own_names(facts)
        for star, line in facts.stars:
            names = _star_names(star, by_module) - own
            if any(reaches(f"{star}.{name}") for name in names):
                lines.add(line)
        callers.extend(f"{other_path}:{line}" for line in sorted(lines))
    return callers, tests


def _by_module(graph: Mapping[str, FileFacts]) -> dict[str, FileFacts]:
    # Two files can claim one module name (``pkg/`` and ``src/pkg/``): the first path wins, so
    # the choice does not depend on the mapping's order.
    out: dict[str, FileFacts] = {}
    for path in sorted(graph):
        out.setdefault(graph[path].module, graph[path])
    return out


def _own_names(facts: FileFacts) -> set[str]:
    """Module-level names a module binds itself (imports by name, functions, classes)."""
    own = {local for local, _ in facts.exports}
    own.update(d.qualname for d in facts.definitions if "." not in d.qualname)
    return own


def _star_names(
    module: str, by_module: Mapping[str, FileFacts], seen: frozenset[str] = frozenset()
) -> set[str]:
    """The names ``from module import *`` binds: its ``__all__``, else its public top-level names
    (its functions, classes, imported names and what its own star imports bring)."""
    facts = by_module.get(module)
    if facts is None or module in seen:  # outside the repository, or an import cycle
        return set()
    if facts.dunder_all is not None:
        return set(facts.dunder_all)
    names = _own_names(facts)
    for star, _ in facts.stars:
        names |= _star_names(star, by_module, seen | {module})
    return {n for n in names if not n.startswith("_")}


def _exports(
    graph: Mapping[str, FileFacts], by_module: Mapping[str, FileFacts] | None = None
) -> dict[str, str]:
    """Names a module re-exports (``from .stats import mean`` or ``from .stats import *`` in
    ``pkg/__init__.py``)."""
    by_module = _by_module(graph) if by_module is None else by_module
    out: dict[str, str] = {}
    for facts in graph.values():
        own = _own_names(facts)
        for star, _ in facts.stars:
            if not facts.module or star == facts.module:
                continue
            for name in sorted(_star_names(star, by_module)):
                # A name the module binds itself wins over a star's; a later star over an
                # earlier one, as at import time (close enough: the order of binding is lost).
                if name not in own:
                    out[f"{facts.module}.{name}"] = f"{star}.{name}"
        for local, target in facts.exports:
            name = f"{facts.module}.{local}" if facts.module else local
            if name != target:
                out[name] = target
    return out


def _canonical(target: str, exports: Mapping[str, str]) -> str:
    """Follow re-exports, on the longest dotted prefix first, a bounded number of times."""
    for _ in range(8):
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in exports:
                target = ".".join([exports[prefix], *parts[cut:]])
                break
        else:
            return target
    return target


def module_tests(module: str, graph: Mapping[str, FileFacts]) -> list[str]:
    """Every test of the test modules that import ``module`` (or a name in it, through
    re-exports): what a module-level edit reaches, where no function or class is touched (a
    constant, an import, code that runs at import)."""
    exports = _exports(graph)
    tests: list[str] = []
    for path in sorted(graph):
        facts = graph[path]
        if not is_test_path(path) or path.rsplit("/", 1)[-1] == "conftest.py":
            continue
        targets = (_canonical(ref.target, exports) for ref in facts.references)
        if not any(t == module or t.startswith(module + ".") for t in targets):
            continue
        tests.extend(file_tests(path, facts))
    return list(dict.fromkeys(tests))


def file_tests(path: str, facts: FileFacts) -> list[str]:
    """The node ids of a test file's test functions and test methods."""
    tests = []
    for definition in facts.definitions:
        test = _test_nodeid(path, definition.qualname)
        if test and test.count("::") == definition.qualname.count(".") + 1:
            tests.append(test)
    return tests


def _test_nodeid(path: str, scope: str) -> str | None:
    parts = scope.split(".")
    # The test is the outermost test function, or a test method of a Test class.
    if parts[0].startswith("test"):
        return f"{path}::{parts[0]}"
    if len(parts) >= 2 and parts[0].startswith("Test") and parts[1].startswith("test"):
        return f"{path}::{parts[0]}::{parts[1]}"
    return None
