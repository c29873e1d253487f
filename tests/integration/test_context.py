"""What the packet shows a test writer.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_context.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_critic22.evidence.gather import Impact, gather_impact
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.model.patch import parse_patch
from tests.helpers import write
from tests.unit.test_context import STORE, TESTS_CONFTEST

HELPERS = '''\
"""Helpers."""


def normalise(
    name: str,
    *,
    upper: bool = False,
) -> str:
    """Strip and lower-case ``name``.

    With ``upper``, upper-case it instead.
    """
    return name.strip().upper() if upper else name.strip().lower()


class Ledger:
    """An append-only list of entries."""

    def __init__(self, owner: str) -> None:
        self.entries: list[str] = []
'''


PROJECT: dict[str, str | bytes] = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "src/shop/__init__.py": "from shop.store import Inventory\n",
    "src/shop/helpers.py": HELPERS,
    "src/shop/store.py": STORE.replace(
        "import functools\n", "import functools\n\nfrom shop import helpers as h\n"
    ),
    "tests/conftest.py": TESTS_CONFTEST,
    "tests/test_store.py": (
        "import pytest\n"
        "\n"
        "from shop import Inventory\n"
        "\n"
        "\n"
        "class TestRemove:\n"
        "    def test_unknown_item(self):\n"
        "        with pytest.raises(KeyError):\n"
        '            Inventory.remove({}, "pear")\n'
        "\n"
        "\n"
        "def test_remove_all():\n"
        '    items = {"apple": 1}\n'
        '    Inventory.remove(items, "apple")\n'
        "    assert items == {}\n"
    ),
}


def project_impact(tmp_path: Path, edited: dict[str, str | bytes]) -> Impact:
    base = tmp_path / "base"
    write(base, dict(PROJECT))
    init_repo(base)
    patched = tmp_path / "patched"
    shutil.copytree(base, patched)
    write(patched, dict(edited))
    diff = git(["diff", "--no-ext-diff"], patched).stdout
    return gather_impact(parse_patch(diff), base, patched, tmp_path / "cache")


def test_the_evidence_shows_touched_source_callees_fixtures_and_a_usage_example(
    tmp_path: Path,
) -> None:
    store = str(PROJECT["src/shop/store.py"])
    edited = store.replace(
        "        items[item] -= qty\n",
        "        item = h.normalise(item, upper=False)\n"
        "        h.Ledger(item).entries.append(item)\n"
        "        items[item] -= max(qty, len(item))\n",
    ).replace("    limit = 10\n", "    limit = 20\n")
    test_file = str(PROJECT["tests/test_store.py"]) + (
        "\n\ndef test_added_by_the_patch():\n    assert Inventory.remove\n"
    )
    impact = project_impact(
        tmp_path, {"src/shop/store.py": edited, "tests/test_store.py": test_file}
    )
    evidence = impact.evidence

    touched = {t["symbol"]: t for t in evidence["touched_source"]}
    # e1 edits the class body (limit), e2 the method: the class is shown once, whole.
    assert list(touched) == ["shop.store.Inventory", "tests.test_store.test_added_by_the_patch"]
    whole = touched["shop.store.Inventory"]
    assert whole["edits"] == ["e1", "e2"] and whole["file"] == "src/shop/store.py"
    assert "    limit = 20\n" in whole["source"]
    assert "        item = h.normalise(item, upper=False)\n" in whole["source"]
    assert "    def count(self, item: str) -> int:\n" in whole["source"]

    # Callees: repository definitions the added lines use (not max, len or str methods).
    callees = {c["name"]: c for c in evidence["callees"]}
    assert list(callees) == ["shop.helpers.normalise", "shop.helpers.Ledger"]
    assert callees["shop.helpers.normalise"] == {
        "name": "shop.helpers.normalise",
        "kind": "function",
        "file": "src/shop/helpers.py:4",
        "signature": "def normalise(\n    name: str,\n    *,\n    upper: bool = False,\n) -> str:",
        "docstring": "Strip and lower-case ``name``.\n\nWith ``upper``, upper-case it instead.",
        "edits": ["e2"],
    }
    assert callees["shop.helpers.Ledger"]["signature"] == (
        "class Ledger:\n    def __init__(self, owner: str) -> None:"
    )

    # One usage example per touched symbol: the first test by node id that exists on the base.
    (example,) = evidence["usage_examples"]
    assert example["test"] == "tests/test_store.py::TestRemove::test_unknown_item"
    assert example["exercises"] == ["shop.store.Inventory", "shop.store.Inventory.remove"]
    assert example["imports"] == "import pytest\nfrom shop import Inventory\n"
    assert example["source"].startswith("class TestRemove:\n    def test_unknown_item(self):\n")

    fixtures = evidence["fixtures"]
    assert fixtures["directory"] == "tests" and fixtures["conftests"] == ["tests/conftest.py"]
    assert [f["name"] for f in fixtures["available"]] == ["_isolated", "database", "stamp"]


def test_a_module_level_edit_outside_any_definition_adds_no_source(tmp_path: Path) -> None:
    store = str(PROJECT["src/shop/store.py"])
    impact = project_impact(
        tmp_path, {"src/shop/store.py": store.replace('"""Counts', '"""All counts')}
    )
    assert impact.evidence["touched_source"] == []
    assert impact.evidence["callees"] == [] and impact.evidence["usage_examples"] == []
