"""Parsing the checks share: libcst modules with positions and function spans.

Also an ast index of one repository file (calls, loads, attributes, imports) for the checks that
look at the whole repository, and helpers over names and code text.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from pytest_critic22.checks.base import FileChange


@dataclass(frozen=True, slots=True)
class _Function:
    qualname: str  # Class.method, outer.inner
    node: cst.FunctionDef
    first: int  # first line, decorators included
    def_line: int
    header_end: int  # last line of the signature
    last: int

    @property
    def span(self) -> frozenset[int]:
        return frozenset(range(self.first, self.last + 1))

    @property
    def header(self) -> range:
        return range(self.def_line, self.header_end + 1)


@dataclass(frozen=True, slots=True)
class _Parsed:
    wrapper: MetadataWrapper
    positions: Mapping[cst.CSTNode, CodeRange]
    functions: Mapping[str, _Function]

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def span(self, node: cst.CSTNode) -> range:
        where = self.positions[node]
        return range(where.start.line, where.end.line + 1)

    def code(self, node: cst.CSTNode) -> str:
        return _normalize(self.module.code_for_node(node))

    def function_at(self, line: int) -> str:
        """The qualified name of the innermost function holding ``line``; "" for module level."""
        best: _Function | None = None
        for function in self.functions.values():
            if function.first <= line <= function.last and (
                best is None or function.first >= best.first
            ):
                best = function
        return best.qualname if best is not None else ""


def _normalize(code: str) -> str:
    # Compared texts must survive re-indentation and comment edits, which diffs show as changes.
    kept = []
    for raw in code.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            kept.append(" ".join(line.split()))
    return "\n".join(kept)


@functools.lru_cache(maxsize=64)
def _parse(source: str) -> _Parsed | None:
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
        positions = wrapper.resolve(PositionProvider)
    except Exception:  # why: the code under review is arbitrary; unreadable means "no evidence"
        return None
    indexer = _FunctionIndexer()
    wrapper.module.visit(indexer)
    functions: dict[str, _Function] = {}
    for qualname, node in indexer.found:
        where = positions[node]
        first = min([positions[d].start.line for d in node.decorators] + [where.start.line])
        header_end = where.start.line
        if isinstance(node.body, cst.IndentedBlock) and node.body.body:
            header_end = max(header_end, positions[node.body.body[0]].start.line - 1)
        # A redefinition wins, as at runtime (an @overload stub is followed by the real body).
        functions[qualname] = _Function(
            qualname, node, first, positions[node.name].start.line, header_end, where.end.line
        )
    return _Parsed(wrapper, positions, functions)


def _ast_parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _FunctionIndexer(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.found: list[tuple[str, cst.FunctionDef]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.stack.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.stack.append(node.name.value)
        self.found.append((".".join(self.stack), node))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()


def _own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Descendants of ``root`` outside nested defs and classes, which are judged on their own."""
    stack = list(root.children)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            continue
        yield node
        stack.extend(node.children)


def _sides(
    changes: Sequence[FileChange],
) -> Iterator[tuple[FileChange, _Parsed | None, _Parsed | None]]:
    """Python files with both existing sides parsed; None stands for a side that does not exist."""
    for change in changes:
        if not change.path.endswith(".py"):
            continue
        base = _parse(change.base_source) if change.base_source is not None else None
        patched = _parse(change.patched_source) if change.patched_source is not None else None
        if (change.base_source is not None and base is None) or (
            change.patched_source is not None and patched is None
        ):
            continue
        yield change, base, patched


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _module_parts(path: str) -> list[str]:
    parts = path[: -len(".py")].split("/") if path.endswith(".py") else path.split("/")
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def _is_suffix(short: Sequence[str], long: Sequence[str]) -> bool:
    return 0 < len(short) <= len(long) and list(long[len(long) - len(short) :]) == list(short)


def _names_in_module(arg: str, name: str, path: str) -> bool:
    """Whether the critic's ``arg`` names ``name`` (a qualified name) defined in ``path``.

    Accepted spellings: ``name``, its last component, ``pkg.mod.name`` (module named by a suffix
    of its path, so ``src/`` layouts work) and ``pkg/mod.py::name``.
    """
    if "::" in arg:
        where, _, rest = arg.partition("::")
        in_file = where == path or path.endswith("/" + where)
        return in_file and "::" not in rest and rest in (name, name.rsplit(".", 1)[-1])
    if arg in (name, name.rsplit(".", 1)[-1]):
        return True
    if arg.endswith("." + name):
        return _is_suffix(arg[: -len(name) - 1].split("."), _module_parts(path))
    return False


def _short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _all_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [name for element in target.elements for name in _target_names(element.value)]
    return []


def _import_origin(path: str, node: ast.ImportFrom) -> list[str]:
    named = node.module.split(".") if node.module else []
    if node.level == 0:
        return named
    package = path.split("/")[:-1]
    up = node.level - 1
    if up > len(package):
        return []
    return package[: len(package) - up] + named


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


@dataclass(frozen=True, slots=True)
class _FileIndex:
    """What the repository-wide checks read from one file, gathered in one walk of its tree."""

    calls: Mapping[str, list[int]]  # called function or method name -> lines
    loads: Mapping[str, list[int]]  # bare name read -> lines
    attributes: Mapping[str, list[tuple[str, int]]]  # attribute -> (dotted owner, line)
    imports: list[tuple[list[str], str]]  # import a.b [as m] -> (module parts, name bound)
    from_imports: list[tuple[list[str], str, str, int]]  # (origin parts, name, bound, line)
    bound: frozenset[str]  # every name bound anywhere in the file


@functools.lru_cache(maxsize=4096)
def _index(path: str, source: str) -> _FileIndex | None:
    tree = _ast_parse(source)
    if tree is None:
        return None
    calls: dict[str, list[int]] = {}
    loads: dict[str, list[int]] = {}
    attributes: dict[str, list[tuple[str, int]]] = {}
    imports: list[tuple[list[str], str]] = []
    from_imports: list[tuple[list[str], str, str, int]] = []
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                calls.setdefault(func.id, []).append(node.lineno)
            elif isinstance(func, ast.Attribute):
                calls.setdefault(func.attr, []).append(node.lineno)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.setdefault(node.id, []).append(node.lineno)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner is not None:
                attributes.setdefault(node.attr, []).append((owner, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((alias.name.split("."), alias.asname or alias.name))
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            origin = _import_origin(path, node)
            for alias in node.names:
                from_imports.append((origin, alias.name, alias.asname or alias.name, node.lineno))
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return _FileIndex(calls, loads, attributes, imports, from_imports, frozenset(bound))
