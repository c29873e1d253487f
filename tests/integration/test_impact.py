"""Impact evidence, preservation items and the engage decision.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_impact.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir
from pytest_critic22.evidence.gather import Impact, build_graph, gather_impact
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.model.patch import parse_patch
from tests.helpers import write

INVENTORY_CASE = case_dir("inventory", "remove-off-by-one")


@pytest.fixture(scope="module")
def inventory_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The inventory sample as base and as patched folder (shared: building it is I/O)."""
    root = tmp_path_factory.mktemp("inventory")
    base = root / "base"
    shutil.copytree(SAMPLES_DIR / "inventory" / "repo", base)
    init_repo(base)
    patched = root / "patched"
    shutil.copytree(base, patched)
    git(["apply", str(INVENTORY_CASE / "patch.diff")], patched)
    return base, patched


def test_impact_evidence_names_symbols_callers_and_tests_of_each_edit(
    inventory_trees: tuple[Path, Path],
) -> None:
    base, patched = inventory_trees
    patch = parse_patch((INVENTORY_CASE / "patch.diff").read_text())
    impact = gather_impact(patch, base, patched, None)
    assert impact.evidence["edits"]["e1"] == {
        "file": "src/inventory/store.py",
        "module": "inventory.store",
        "symbols": [
            {
                "name": "inventory.store.Inventory.remove",
                "kind": "function",
                "signature": "remove(self, item: str, qty: int=1)",
                "signature_changed": False,
                "public": True,
                "callers": [
                    "src/inventory/restock.py:10",  # source: Stock (an `import ... as` alias)
                    "src/inventory/restock.py:17",  # inv = store_mod.Inventory(); inv.remove()
                    "tests/test_store.py:15",
                    "tests/test_store.py:27",
                ],
                "tests": [
                    "tests/test_store.py::test_remove_unknown_item",
                    "tests/test_store.py::test_remove_too_many",
                ],
            }
        ],
    }
    assert impact.evidence["blast_radius"] == {
        "edits": 2,
        "files": 2,
        "symbols": 2,
        "callers": 4,
        "modules": 3,
    }
    # Only tests that exist on the base are preservation obligations: the patch adds the other.
    assert impact.preservation_tests == ("tests/test_store.py::test_remove_unknown_item",)


def package_impact(tmp_path: Path, files: dict[str, str], edited: dict[str, str]) -> Impact:
    """``files`` committed as the base tree, ``edited`` applied on a copy: the diff's impact."""
    base = tmp_path / "base"
    write(base, dict(files))
    init_repo(base)
    patched = tmp_path / "patched"
    shutil.copytree(base, patched)
    write(patched, dict(edited))
    diff = git(["diff", "--no-ext-diff"], patched).stdout
    return gather_impact(parse_patch(diff), base, patched, None)


FORWARD = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": (
        "def public(x):\n    return _helper(x)\n\n\ndef _helper(x):\n    return x + 1\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import _helper, public\n"
        "\n"
        "\n"
        "def test_public():\n"
        "    assert public(1) == 2\n"
        "\n"
        "\n"
        "def test_helper():\n"
        "    assert _helper(2) == 3\n"
    ),
}


def test_a_call_to_a_function_defined_further_down_the_module_is_a_caller(
    tmp_path: Path,
) -> None:
    core = FORWARD["src/pkg/core.py"].replace("return x + 1", "return 1 + x")
    impact = package_impact(tmp_path, FORWARD, {"src/pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core._helper"
    # core.py:2 is the call in `public`, which comes before `def _helper`.
    assert symbol.callers == ("src/pkg/core.py:2", "tests/test_core.py:1", "tests/test_core.py:9")
    assert symbol.tests == ("tests/test_core.py::test_helper",)
    assert impact.preservation_tests == ("tests/test_core.py::test_helper",)


STAR = {
    "src/pkg/__init__.py": "from .core import *\n",
    "src/pkg/core.py": (
        '__all__ = ["helper"]\n'
        "\n"
        "\n"
        "def helper(x):\n"
        "    return x * 2\n"
        "\n"
        "\n"
        "def unlisted(x):\n"
        "    return x\n"
    ),
    "tests/test_x.py": (
        "import pkg\n"
        "from pkg import helper\n"
        "\n"
        "\n"
        "def test_through_the_package():\n"
        "    assert pkg.helper(1) == 2\n"
        "\n"
        "\n"
        "def test_imported_from_the_package():\n"
        "    assert helper(2) == 4\n"
    ),
}


def test_a_relative_star_re_export_links_the_package_tests_to_the_definition(
    tmp_path: Path,
) -> None:
    core = STAR["src/pkg/core.py"].replace("x * 2", "2 * x")
    impact = package_impact(tmp_path, STAR, {"src/pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core.helper"
    assert symbol.callers == (
        "src/pkg/__init__.py:1",  # the star import itself, like `from .core import helper`
        "tests/test_x.py:2",
        "tests/test_x.py:6",  # pkg.helper(1)
        "tests/test_x.py:10",  # helper(2), imported from pkg
    )
    expected = (
        "tests/test_x.py::test_through_the_package",
        "tests/test_x.py::test_imported_from_the_package",
    )
    assert symbol.tests == expected
    assert impact.preservation_tests == expected


ABSOLUTE_STAR = {
    "pkg/__init__.py": "from pkg.core import *\n",
    "pkg/core.py": ("def helper(x):\n    return _scale(x)\n\n\ndef _scale(x):\n    return x * 2\n"),
    "tests/test_star.py": (
        "from pkg import *\n"
        "\n"
        "\n"
        "def test_star_imported():\n"
        "    result = helper(1)\n"
        "    assert result.real == 2\n"
    ),
}


def test_an_absolute_star_re_export_without_all_and_a_star_importing_test(
    tmp_path: Path,
) -> None:
    core = ABSOLUTE_STAR["pkg/core.py"].replace("return _scale(x)", "return _scale(x) + 0")
    impact = package_impact(tmp_path, ABSOLUTE_STAR, {"pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core.helper"
    # The test's bare `helper` comes from `from pkg import *`, and pkg's from pkg.core's.
    assert symbol.callers == ("pkg/__init__.py:1", "tests/test_star.py:1", "tests/test_star.py:5")
    assert symbol.tests == ("tests/test_star.py::test_star_imported",)
    assert impact.preservation_tests == ("tests/test_star.py::test_star_imported",)


def test_star_import_facts_survive_the_cache(tmp_path: Path) -> None:
    write(tmp_path, dict(STAR))
    init_repo(tmp_path)
    cache = tmp_path.parent / "star-cache"
    cold, _ = build_graph(tmp_path, cache)
    warm, hits = build_graph(tmp_path, cache)
    assert hits == 3 and warm == cold
    assert warm["src/pkg/__init__.py"].stars == (("pkg.core", 1),)
    assert warm["src/pkg/core.py"].dunder_all == ("helper",)
    assert warm["tests/test_x.py"].dunder_all is None


def test_the_graph_is_cached_by_content(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    init_repo(tmp_path)
    cache = tmp_path.parent / "graph-cache"
    cold, cold_hits = build_graph(tmp_path, cache)
    warm, warm_hits = build_graph(tmp_path, cache)
    assert (cold_hits, warm_hits) == (0, 5) and cold == warm
    (tmp_path / "m0.py").write_text("def g():\n    pass\n")
    _, hits = build_graph(tmp_path, cache)
    assert hits == 4  # only the changed file is parsed again
