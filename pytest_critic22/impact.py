"""Impact evidence: a libcst code graph of what the patch touches.

Pure: sources in, facts out. Each file is scanned on its own into :class:`FileFacts`
(definitions, imports, references), which depend only on the file's path and text, so
they can be cached by content digest; the graph is then resolved across files.

References are resolved through imports (``import a.b as c``, ``from a import b as c``),
through ``self`` inside a class, and through local instances (``x = Cls(...)`` then
``x.method()``) — not by bare name matching alone. A module's own top-level functions and
classes are known before its body is read, so a call to one defined further down resolves.

Star imports (``from .core import *``) cannot be expanded from one file: the facts keep the
star-imported modules and the module's literal ``__all__``, and the names are expanded when the
graph is resolved (``__all__`` when the source defines one, else its public top-level names).
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = [
    "FACTS_VERSION",
    "Definition",
    "FileFacts",
    "Reference",
    "SymbolImpact",
    "blast_radius",
    "bound_evidence",
    "callees",
    "edit_impact",
    "facts_digest",
    "facts_from_dict",
    "facts_to_dict",
    "is_test_path",
    "module_name",
    "scan_file",
    "statement_lines",
]

# Part of every cache key: bump it whenever the facts (or how a file is scanned) change, so a
# cache written by an older version is never read as current.
FACTS_VERSION = 3

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True, slots=True)
class Definition:
    qualname: str  # within the module: "f", "Cls", "Cls.method"
    kind: str  # "function" | "class"
    start: int
    end: int
    signature: str  # "f(a, b=1, *, c)"; "" for classes


@dataclass(frozen=True, slots=True)
class Reference:
    target: str  # a fully qualified name, best effort: "pkg.mod.Cls.method"
    line: int
    scope: str  # qualname of the enclosing function/class ("" at module level)
    kind: str  # "call" | "attribute" | "name" | "import"


@dataclass(frozen=True, slots=True)
class FileFacts:
    path: str
    module: str
    definitions: tuple[Definition, ...] = ()
    references: tuple[Reference, ...] = ()
    parse_error: str = ""
    exports: tuple[tuple[str, str], ...] = ()  # module-level imports: (local name, target)
    stars: tuple[tuple[str, int], ...] = ()  # ``from M import *``: (absolute M, line)
    # A literal ``__all__`` (list/tuple of strings); None when absent or not a literal.
    dunder_all: tuple[str, ...] | None = None


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


def module_name(path: str) -> str:
    """``src/pkg/mod.py`` -> ``pkg.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = path.replace("\\", "/").split("/")
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts[-1].endswith(".py"):
        parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def is_test_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or "/tests/" in f"/{path}"
        or "/test/" in f"/{path}"
    )


def facts_digest(path: str, source: str) -> str:
    material = f"{FACTS_VERSION}\0{path}\0{source}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(material).hexdigest()


def scan_file(path: str, source: str) -> FileFacts:
    """Definitions, and references resolved as far as this one file allows."""
    module = module_name(path)
    try:
        tree = cst.parse_module(source)
    except Exception as exc:  # libcst raises its own ParserSyntaxError; any failure: list it
        first = (str(exc).strip().splitlines() or ["parse error"])[0]
        return FileFacts(path, module, parse_error=first[:200])
    wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
    collector = _Collector(module, path)
    wrapper.visit(collector)
    # One node can be seen as a call, an attribute and a name: keep one reference per place.
    unique: dict[tuple[str, int, str], Reference] = {}
    for ref in collector.references:
        unique.setdefault((ref.target, ref.line, ref.scope), ref)
    return FileFacts(
        path,
        module,
        tuple(collector.definitions),
        tuple(unique.values()),
        exports=tuple(sorted(collector.exports.items())),
        stars=tuple(collector.stars),
        dunder_all=collector.dunder_all_names(),
    )


def facts_to_dict(facts: FileFacts) -> dict[str, Any]:
    return {
        "path": facts.path,
        "module": facts.module,
        "parse_error": facts.parse_error,
        "definitions": [
            [d.qualname, d.kind, d.start, d.end, d.signature] for d in facts.definitions
        ],
        "references": [[r.target, r.line, r.scope, r.kind] for r in facts.references],
        "exports": [list(e) for e in facts.exports],
        "stars": [list(s) for s in facts.stars],
        "dunder_all": list(facts.dunder_all) if facts.dunder_all is not None else None,
    }


def facts_from_dict(data: Mapping[str, Any]) -> FileFacts:
    return FileFacts(
        path=data["path"],
        module=data["module"],
        parse_error=data.get("parse_error", ""),
        definitions=tuple(Definition(*d) for d in data["definitions"]),
        references=tuple(Reference(*r) for r in data["references"]),
        exports=tuple((a, b) for a, b in data.get("exports", [])),
        stars=tuple((m, int(line)) for m, line in data.get("stars", [])),
        dunder_all=None if data.get("dunder_all") is None else tuple(data["dunder_all"]),
    )


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


def _test_nodeid(path: str, scope: str) -> str | None:
    parts = scope.split(".")
    # The test is the outermost test function, or a test method of a Test class.
    if parts[0].startswith("test"):
        return f"{path}::{parts[0]}"
    if len(parts) >= 2 and parts[0].startswith("Test") and parts[1].startswith("test"):
        return f"{path}::{parts[0]}::{parts[1]}"
    return None


@dataclass
class _Scope:
    qualname: str
    kind: str  # "module" | "class" | "function"
    instances: dict[str, str] = field(default_factory=dict)  # local name -> class target
    bound: set[str] = field(default_factory=set)  # parameters and assigned local names


class _Collector(cst.CSTVisitor):
    """One pass: definitions with positions, imports as aliases, resolved references."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: str, path: str) -> None:
        super().__init__()
        self.module = module
        self.path = path
        self.package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        self.aliases: dict[str, str] = {}
        self.local_defs: dict[str, str] = {}
        self.definitions: list[Definition] = []
        self.references: list[Reference] = []
        self.scopes: list[_Scope] = [_Scope("", "module")]
        self.exports: dict[str, str] = {}
        self.stars: list[tuple[str, int]] = []
        self.dunder_all: list[str] | None = None
        self.dunder_all_opaque = False  # assigned or extended with something not a literal
        self.has_star = False

    def visit_Module(self, node: cst.Module) -> None:
        # Names are looked up when the code runs, not when it is read: a function may call one
        # defined below it. Bind the module's own functions, classes and star imports first.
        defs, self.has_star = _module_level(node)
        for name in defs:
            self.local_defs[name] = f"{self.module}.{name}" if self.module else name

    def dunder_all_names(self) -> tuple[str, ...] | None:
        if self.dunder_all is None or self.dunder_all_opaque:
            return None  # a star import then takes every public name: better too many than none
        return tuple(dict.fromkeys(self.dunder_all))

    # -- positions --------------------------------------------------------------------
    def _range(self, node: Any) -> tuple[int, int]:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line, pos.end.line

    def _line(self, node: Any) -> int:
        return int(self.get_metadata(PositionProvider, node).start.line)

    # -- definitions --------------------------------------------------------------------
    def visit_ClassDef(self, node: Any) -> None:
        qual = self._qual(node.name.value)
        start, end = self._range(node)
        self.definitions.append(Definition(qual, "class", start, end, ""))
        if len(self.scopes) == 1:
            self.local_defs[node.name.value] = f"{self.module}.{qual}"
        else:
            self.scopes[-1].bound.add(node.name.value)
        self.scopes.append(_Scope(qual, "class"))

    def leave_ClassDef(self, original_node: Any) -> None:
        self.scopes.pop()

    def visit_FunctionDef(self, node: Any) -> None:
        qual = self._qual(node.name.value)
        start, end = self._range(node)
        self.definitions.append(
            Definition(qual, "function", start, end, f"{node.name.value}({_params(node.params)})")
        )
        if len(self.scopes) == 1:
            self.local_defs[node.name.value] = f"{self.module}.{qual}"
        else:
            self.scopes[-1].bound.add(node.name.value)
        scope = _Scope(qual, "function")
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            scope.bound.add(param.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bound.add(star.name.value)
        # A parameter annotated with a class is an instance of it: ``def f(inv: Stock)``.
        for param in [*node.params.params, *node.params.kwonly_params]:
            if param.annotation is not None:
                target = self._resolve(param.annotation.annotation)
                if target and target.rpartition(".")[2][:1].isupper():
                    scope.instances[param.name.value] = target
        self.scopes.append(scope)

    def leave_FunctionDef(self, original_node: Any) -> None:
        self.scopes.pop()

    def _qual(self, name: str) -> str:
        outer = self.scopes[-1].qualname
        return f"{outer}.{name}" if outer else name

    # -- imports --------------------------------------------------------------------------
    def visit_Import(self, node: Any) -> None:
        for alias in node.names:
            target = _dotted(alias.name)
            if alias.asname is not None:
                self.aliases[_dotted(alias.asname.name)] = target
            else:
                head = target.split(".")[0]
                self.aliases[head] = head
            if alias.asname is not None and len(self.scopes) == 1:
                self.exports[_dotted(alias.asname.name)] = target

    def visit_ImportFrom(self, node: Any) -> bool:
        base = _dotted(node.module) if node.module is not None else ""
        level = len(node.relative)
        if level:
            package = self.package.split(".") if self.package else []
            package = package[: len(package) - (level - 1)] if level > 1 else package
            base = ".".join([*package, base] if base else package)
        if isinstance(node.names, cst.ImportStar):
            # Python allows a star import only at module level; the names are expanded later.
            if base and len(self.scopes) == 1:
                self.stars.append((base, self._line(node)))
            return False
        for alias in node.names:
            name = _dotted(alias.name)
            local = _dotted(alias.asname.name) if alias.asname is not None else name
            target = f"{base}.{name}" if base else name
            self.aliases[local] = target
            if len(self.scopes) == 1:
                self.exports[local] = target
            self.references.append(Reference(target, self._line(node), self._scope(), "import"))
        # Its children only spell what was just recorded; the dotted module name is no use of
        # anything (and in a star-importing module its head would pass for a global).
        return False

    # -- local bindings and __all__ --------------------------------------------------------
    def _bind(self, target: cst.BaseExpression) -> None:
        # Only inside functions and classes: at module level an unresolved name *is* a global
        # of this module, which is what a star import may supply.
        if len(self.scopes) > 1:
            self.scopes[-1].bound.update(_target_names(target))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)
        if node.value is not None:
            self._set_all(node.target, node.value, extend=False)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)
        if isinstance(node.operator, cst.AddAssign):
            self._set_all(node.target, node.value, extend=True)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        # Bound in the enclosing scope, a little wider than Python's: it only keeps such a
        # name from passing for a star-imported global.
        for param in [*node.params.posonly_params, *node.params.params]:
            self._bind(param.name)

    def _set_all(self, target: cst.BaseExpression, value: cst.BaseExpression, extend: bool) -> None:
        is_all = isinstance(target, cst.Name) and target.value == "__all__"
        if len(self.scopes) != 1 or not is_all:
            return
        names = _literal_strings(value)
        if names is None:
            self.dunder_all_opaque = True
        elif extend:
            self.dunder_all = [*(self.dunder_all or []), *names]
        else:
            self.dunder_all = names

    # -- references ------------------------------------------------------------------------
    def visit_Assign(self, node: Any) -> None:
        value = node.value
        for assign in node.targets:
            self._set_all(assign.target, value, extend=False)
        if isinstance(value, cst.Call):
            target = self._resolve(value.func)
            if target and target.rpartition(".")[2][:1].isupper():
                for assign in node.targets:
                    if isinstance(assign.target, cst.Name):
                        self.scopes[-1].instances[assign.target.value] = target

    def visit_Call(self, node: Any) -> None:
        func = node.func
        if (  # __all__.extend([...]) / __all__.append("name") at module level
            len(self.scopes) == 1
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "__all__"
            and func.attr.value in ("extend", "append")
        ):
            arg = node.args[0].value if len(node.args) == 1 else None
            if func.attr.value == "append" and arg is not None:
                arg = cst.List([cst.Element(arg)])
            if arg is None:
                self.dunder_all_opaque = True
            else:
                self._set_all(func.value, arg, extend=True)
        target = self._resolve(func)
        if target:
            self.references.append(Reference(target, self._line(node), self._scope(), "call"))

    def visit_Attribute(self, node: Any) -> None:
        target = self._resolve(node)
        if target and target.count(".") >= 1:
            self.references.append(Reference(target, self._line(node), self._scope(), "attribute"))

    def visit_Name(self, node: Any) -> None:
        name = node.value
        if name in self.aliases and self.aliases[name] != name:
            self.references.append(
                Reference(self.aliases[name], self._line(node), self._scope(), "name")
            )

    def _scope(self) -> str:
        for scope in reversed(self.scopes):
            if scope.kind in ("function", "class"):
                return scope.qualname
        return ""

    def _resolve(self, expr: Any) -> str | None:
        if isinstance(expr, cst.Name):
            name = expr.value
            for scope in reversed(self.scopes):
                if name in scope.instances:
                    return scope.instances[name]
            if name in self.aliases:
                return self.aliases[name]
            if name in self.local_defs:
                return self.local_defs[name]
            if self.has_star and self.module and name not in _BUILTINS and not self._is_local(name):
                # Perhaps bound by the star import: name it as this module's global, which the
                # graph maps to its source (``tests.test_x.helper`` -> ``pkg.core.helper``).
                return f"{self.module}.{name}"
            return None
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                cls = self._enclosing_class()
                return f"{self.module}.{cls}.{expr.attr.value}" if cls else None
            owner = self._resolve(expr.value)
            return f"{owner}.{expr.attr.value}" if owner else None
        if isinstance(expr, cst.Call):
            owner = self._resolve(expr.func)  # Cls().method: an instance of Cls
            return owner
        return None

    def _is_local(self, name: str) -> bool:
        return any(name in scope.bound for scope in self.scopes[1:])

    def _enclosing_class(self) -> str | None:
        for scope in reversed(self.scopes):
            if scope.kind == "class":
                return scope.qualname
        return None


def _module_level(module: cst.Module) -> tuple[list[str], bool]:
    """Names of the functions and classes bound at module level (also inside a top-level
    ``if``/``try``/``with``/loop), and whether the module has a star import."""
    names: list[str] = []
    has_star = False
    stack: list[cst.CSTNode] = list(module.children)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            names.append(node.name.value)
            continue  # what they hold is not module level
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            has_star = True
        if not isinstance(node, cst.BaseExpression):  # expressions hold no statements
            stack.extend(node.children)
    return names, has_star


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [n for element in target.elements for n in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _literal_strings(value: cst.BaseExpression) -> list[str] | None:
    """The strings of a literal list or tuple of strings; None for anything else."""
    if not isinstance(value, cst.List | cst.Tuple):
        return None
    out: list[str] = []
    for element in value.elements:
        item = element.value
        text = (
            item.evaluated_value
            if isinstance(item, cst.SimpleString | cst.ConcatenatedString)
            else None
        )
        if isinstance(element, cst.StarredElement) or not isinstance(text, str):
            return None
        out.append(text)
    return out


def _dotted(node: Any) -> str:
    if isinstance(node, cst.Name):
        return str(node.value)
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _params(params: Any) -> str:
    def one(param: Any, prefix: str = "") -> str:
        text = prefix + str(param.name.value)
        if param.annotation is not None:
            text += ": " + cst.Module([]).code_for_node(param.annotation.annotation)
        if param.default is not None:
            text += "=" + cst.Module([]).code_for_node(param.default)
        return text

    parts = [one(p) for p in params.posonly_params]
    if params.posonly_params:
        parts.append("/")
    parts += [one(p) for p in params.params]
    star = params.star_arg
    if isinstance(star, cst.Param):
        parts.append(one(star, "*"))
    elif params.kwonly_params:
        parts.append("*")
    parts += [one(p) for p in params.kwonly_params]
    if params.star_kwarg is not None:
        parts.append(one(params.star_kwarg, "**"))
    return ", ".join(parts)


def bound_evidence(evidence: Mapping[str, Any], budget: int) -> tuple[dict[str, Any], str]:
    """Shrink evidence to ``budget`` characters of canonical JSON, deterministically.

    What is cut, in this fixed order (the first cut first). Each step applies on top of the
    ones before it, and the first result that fits — its note included — is returned, so the
    same evidence and budget always give the same cut:

    1. callers and tests per symbol, and the preservation tests: at most 20, then 10, then 5;
    2. ``usage_examples``: one at a time, the last first;
    3. the docstrings of the ``fixtures``, then those of the ``callees``;
    4. ``callees``: one at a time, the last first;
    5. callers and tests per symbol, and the preservation tests: at most 2, then none;
    6. the fixture list (the test folder, the test file's name and the builtin note stay);
    7. ``touched_source``: one symbol's source at a time, the last first (its name, file and
       lines stay);
    8. everything but the blast radius.

    Returns the evidence and a note of what was cut ("" when nothing was); the note is also the
    cut evidence's ``truncated`` value.
    """
    if _size(evidence) <= budget:
        return dict(evidence), ""
    for candidate, note in _cuts(evidence):
        cut = {**candidate, "truncated": note}
        if _size(cut) <= budget:
            return cut, note
    slim = {
        "blast_radius": evidence.get("blast_radius", {}),
        "truncated": "per-edit detail dropped to fit the packet size limit",
    }
    return slim, slim["truncated"]


def _size(value: Mapping[str, Any]) -> int:
    import json

    return len(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


_Step = tuple[dict[str, Any], str]
_Drop = Callable[[list[Any], int], list[Any]]


def _cuts(evidence: Mapping[str, Any]) -> Iterable[_Step]:
    """Every step of the cut, in order: (the evidence so far, the note of what is cut)."""
    current = dict(evidence)
    notes: dict[str, str] = {}

    def step(changed: dict[str, Any], slot: str, note: str) -> _Step | None:
        nonlocal current
        if changed == current:
            return None  # nothing to cut here: no step, no note
        current = changed
        notes[slot] = note
        return dict(current), "; ".join(notes.values())

    def caps(values: Sequence[int]) -> Iterable[_Step]:
        for cap in values:
            note = f"callers and tests cut to at most {cap} per symbol"
            done = step(_cap_lists(current, cap), "callers", note)
            if done:
                yield done

    def one_by_one(key: str, label: str, name: str, drop: _Drop) -> Iterable[_Step]:
        items = list(current.get(key) or [])
        total = len(items)
        dropped: list[str] = []
        for index in range(total - 1, -1, -1):
            shorter = drop(items, index)
            if shorter == items:
                continue
            dropped.insert(0, str(items[index].get(name, index)))
            items = shorter
            note = f"{label} dropped ({len(dropped)} of {total}): {_names(dropped)}"
            done = step({**current, key: items}, key, note)
            if done:
                yield done

    def remove(items: list[Any], index: int) -> list[Any]:
        return items[:index]

    def without_source(items: list[Any], index: int) -> list[Any]:
        return [
            {k: v for k, v in item.items() if k != "source"} if i == index else item
            for i, item in enumerate(items)
        ]

    def without_key(records: Any, key: str) -> list[Any]:
        return [{k: v for k, v in r.items() if k != key} for r in records]

    yield from caps((20, 10, 5))
    yield from one_by_one("usage_examples", "usage examples", "test", remove)
    fixtures = current.get("fixtures")
    if isinstance(fixtures, Mapping) and fixtures.get("available"):
        plain = {**fixtures, "available": without_key(fixtures["available"], "doc")}
        done = step({**current, "fixtures": plain}, "fixture-docs", "fixture docstrings dropped")
        if done:
            yield done
    if current.get("callees"):
        plain_callees = without_key(current["callees"], "docstring")
        done = step(
            {**current, "callees": plain_callees}, "callee-docs", "callee docstrings dropped"
        )
        if done:
            yield done
    yield from one_by_one("callees", "callees", "name", remove)
    yield from caps((2, 0))
    fixtures = current.get("fixtures")
    if isinstance(fixtures, Mapping) and fixtures.get("available"):
        count = len(fixtures["available"])
        kept = {k: v for k, v in fixtures.items() if k != "available"}
        done = step(
            {**current, "fixtures": kept}, "fixture-list", f"fixture list dropped ({count})"
        )
        if done:
            yield done
    yield from one_by_one("touched_source", "touched source", "symbol", without_source)


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _cap_lists(evidence: Mapping[str, Any], cap: int) -> dict[str, Any]:
    out = dict(evidence)
    edits = {}
    for edit_id, detail in evidence.get("edits", {}).items():
        symbols = []
        for symbol in detail.get("symbols", []):
            trimmed = dict(symbol)
            for key in ("callers", "tests"):
                items = list(symbol.get(key, []))
                if len(items) > cap:
                    trimmed[key] = items[:cap]
                    omitted = int(symbol.get(f"{key}_omitted", 0))
                    trimmed[f"{key}_omitted"] = omitted + len(items) - cap
            symbols.append(trimmed)
        edits[edit_id] = {**detail, "symbols": symbols}
    if "edits" in evidence:
        out["edits"] = edits
    tests = list(evidence.get("preservation_tests", []))
    if len(tests) > cap:
        out["preservation_tests"] = tests[:cap]
    return out
