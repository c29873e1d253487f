"""Scanning one Python file with libcst into :class:`~pytest_critic22.evidence.codefacts.FileFacts`.

Pure: a path and its source in, facts out; references are resolved as far as the one file
allows, and :mod:`pytest_critic22.evidence.impact` resolves them across the graph.

References are resolved through imports (``import a.b as c``, ``from a import b as c``),
through ``self`` inside a class, and through local instances (``x = Cls(...)`` then
``x.method()``) — not by bare name matching alone. A module's own top-level functions and
classes are known before its body is read, so a call to one defined further down resolves.

Star imports (``from .core import *``) cannot be expanded from one file: the facts keep the
star-imported modules and the module's literal ``__all__``, for the graph to expand.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from pytest_critic22.evidence.codefacts import Definition, FileFacts, Reference, module_name

__all__ = ["scan_file"]

_BUILTINS = frozenset(dir(builtins))


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
