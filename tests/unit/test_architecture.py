"""The package's shape, walked with ``ast``: the layers import downwards only, no import
circle, one public surface (``pytest_critic22`` and ``pytest_critic22.extend``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_critic22

PACKAGE = Path(pytest_critic22.__file__).parent

#: The subpackages, lowest first. A module may import from its own layer and the layers
#: below it, never above: ``model`` is importable by every stage, ``apps`` by none. The child
#: side is apart: it imports nothing of the package but :mod:`pytest_critic22.child.protocol`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("child",),
    ("model",),
    ("execution",),
    ("evidence",),
    ("verification",),
    ("kinds", "checks"),
    ("critic",),
    ("config",),
    ("pipeline",),
    ("report",),
    ("plugin",),
    ("apps",),
    ("extend", "pytest_critic22"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


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


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes upwards, or out of the child side, as ``a -> b``."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if _layer(module) == "child" and target not in (
                "pytest_critic22",
                "pytest_critic22.child",
                "pytest_critic22.child.protocol",
            ):
                found.append(f"{module} -> {target} (the child side imports only its protocol)")
            elif RANK[_layer(module)] < RANK[_layer(target)]:
                found.append(f"{module} -> {target}")
    return found


def test_every_module_belongs_to_a_layer() -> None:
    assert {_layer(m) for m in import_graph()} <= set(RANK)


def test_the_layers_import_downwards_only() -> None:
    """``TYPE_CHECKING`` imports and function-local ones count: an annotation that names a
    higher layer is a dependency on it, one lazy import away from a real one."""
    assert layer_violations(import_graph()) == []


def test_the_layer_walker_sees_an_upward_import() -> None:
    graph = {
        "pytest_critic22.model.patch": {"pytest_critic22.execution.git"},
        "pytest_critic22.apps.cli": {"pytest_critic22.model.patch"},
        "pytest_critic22.child.rerun": {"pytest_critic22.config.optiontable"},
    }
    assert layer_violations(graph) == [
        "pytest_critic22.child.rerun -> pytest_critic22.config.optiontable"
        " (the child side imports only its protocol)",
        "pytest_critic22.model.patch -> pytest_critic22.execution.git",
    ]


def test_the_harness_api_is_the_function_after_every_submodule_is_imported() -> None:
    """No submodule shadows a name of the public surface: ``import pytest_critic22.x.y``
    binds ``x`` on the package, so no top-level submodule may share a public name."""
    import importlib
    import inspect

    for name in sorted(_modules()):
        if not name.endswith("__main__"):
            importlib.import_module(name)
    assert inspect.isfunction(pytest_critic22.review)
    assert pytest_critic22.review.__module__ == "pytest_critic22.apps.api"
    assert inspect.isfunction(pytest_critic22.loop)
    for public in pytest_critic22.__all__:
        assert not inspect.ismodule(getattr(pytest_critic22, public)), public


def test_the_example_extension_imports_only_the_extension_surface() -> None:
    """A third-party plugin needs ``pytest_critic22.extend`` and nothing else of ours."""
    path = Path(__file__).parents[1] / "plugins" / "critic22_extension.py"
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    ours = {m for m in imported if m.split(".")[0] == "pytest_critic22"}
    assert ours == {"pytest_critic22.extend"}


def test_the_extension_surface_exports_what_it_names() -> None:
    from pytest_critic22 import extend

    assert all(hasattr(extend, name) for name in extend.__all__)
    defined = {n for n in vars(extend) if n[0] not in "_@" and n != "annotations"}
    assert defined == set(extend.__all__)


def test_a_unit_test_cannot_start_a_process() -> None:
    """The unit tier's rule holds by construction (tests/unit/conftest.py), not by care."""
    import os
    import subprocess

    with pytest.raises(AssertionError, match="move it to tests/integration"):
        subprocess.run(["true"], check=False)
    with pytest.raises(AssertionError, match="move it to tests/integration"):
        os.fork()
