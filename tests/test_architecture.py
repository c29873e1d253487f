"""The package's shape: no import circle, no oversized module (walked with ``ast``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_critic22

PACKAGE = Path(pytest_critic22.__file__).parent
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    """The package's own modules (the bundled sample projects are data, not modules)."""
    data = PACKAGE / "sample_repos"
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if data not in p.parents}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:`` (never executed)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        lines.add(inner.lineno)
    return lines


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (function-local and TYPE_CHECKING ones too:
    a circle of annotations is a circle of knowledge, and one lazy import away from a real one)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip: set[int] = set()
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, node.module] if node.module else base)
                else:
                    module = node.module or ""
                targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_circle_among_the_package_modules() -> None:
    graph = import_graph()
    # A package's __init__ importing its submodules is the package itself, not a circle:
    # drop the implicit edge submodule -> parent that importing a submodule implies.
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_graph_walker_sees_a_circle_when_there_is_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_much_over_500_lines() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in _modules().items()
    }
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}
