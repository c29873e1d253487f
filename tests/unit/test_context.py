"""What the packet shows a test writer: touched source, callees, fixtures, usage examples, and
the deterministic cut that keeps it within the packet size limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.evidence import gather as evidence_module
from pytest_critic22.evidence.bounding import bound_evidence
from pytest_critic22.evidence.codeblocks import definitions
from pytest_critic22.evidence.context import (
    BUILTIN_FIXTURES,
    available_fixtures,
    choose_usage_example,
    conftest_chain,
    conftest_fixtures,
    signature_of,
    symbol_source,
    unit_of,
)
from pytest_critic22.evidence.gather import fixture_evidence
from tests.helpers import write

STORE = '''\
"""Counts of items in stock."""

from __future__ import annotations

import functools


@functools.total_ordering
class Inventory(
    dict,
):
    """A stock of items."""

    limit = 10

    def __init__(self) -> None:
        self._items: dict[str, int] = {}

    def add(self, item: str, qty: int = 1) -> None:
        self._items[item] = self._items.get(item, 0) + qty

    @staticmethod
    def remove(
        items: dict[str, int],
        item: str,
        qty: int = 1,
    ) -> None:
        """Take ``qty`` of ``item`` out."""
        if item not in items:
            raise KeyError(item)
        items[item] -= qty
        if items[item] == 0:
            del items[item]

    def count(self, item: str) -> int:
        return self._items.get(item, 0)
'''


REMOVE = '''\
    @staticmethod
    def remove(
        items: dict[str, int],
        item: str,
        qty: int = 1,
    ) -> None:
        """Take ``qty`` of ``item`` out."""
        if item not in items:
            raise KeyError(item)
        items[item] -= qty
        if items[item] == 0:
            del items[item]
'''


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_method_touched_in_the_middle_is_shown_whole_under_its_class_header() -> None:
    blocks = definitions(STORE)
    middle = line_of(STORE, "items[item] -= qty")
    unit = unit_of(blocks, "Inventory.remove", middle)
    assert unit is not None and unit.qualname == "Inventory.remove"
    shown = symbol_source(STORE, unit.qualname, blocks, unit.line)
    assert shown is not None
    start, end, text = shown
    assert (start, end) == (line_of(STORE, "@staticmethod"), line_of(STORE, "del items[item]"))
    header = "@functools.total_ordering\nclass Inventory(\n    dict,\n):\n"
    gap = f"    # ... (lines 12-{start - 1} not shown)\n"
    assert text == header + gap + REMOVE  # decorators, multi-line signature, every body line


def test_a_nested_function_is_shown_inside_its_outermost_function() -> None:
    source = (
        "class A:\n"
        "    def outer(self):\n"
        "        def inner():\n"
        "            return 1\n"
        "        return inner()\n"
    )
    blocks = definitions(source)
    unit = unit_of(blocks, "A.outer.inner", 4)
    assert unit is not None and unit.qualname == "A.outer"
    shown = symbol_source(source, unit.qualname, blocks)
    assert shown is not None and shown[2] == source  # the header needs no gap marker


def test_signature_and_docstring_as_written() -> None:
    blocks = definitions(STORE)
    assert signature_of(STORE, "Inventory.remove", blocks) == (
        "@staticmethod\ndef remove(\n    items: dict[str, int],\n    item: str,\n"
        "    qty: int = 1,\n) -> None:",
        "Take ``qty`` of ``item`` out.",
    )
    # A class: its header, then its __init__'s; the class docstring.
    assert signature_of(STORE, "Inventory", blocks) == (
        "@functools.total_ordering\nclass Inventory(\n    dict,\n):\n"
        "    def __init__(self) -> None:",
        "A stock of items.",
    )
    assert signature_of(STORE, "missing", blocks) is None
    assert definitions("def broken(:\n") == ()


def test_a_property_getter_and_setter_are_told_apart_by_line() -> None:
    source = (
        "class C:\n"
        "    @property\n"
        "    def x(self):\n"
        "        return 1\n"
        "\n"
        "    @x.setter\n"
        "    def x(self, value):\n"
        "        pass\n"
    )
    blocks = definitions(source)
    getter = symbol_source(source, "C.x", blocks, line=4)
    setter = symbol_source(source, "C.x", blocks, line=8)
    assert getter is not None and "return 1" in getter[2] and "setter" not in getter[2]
    assert setter is not None and "@x.setter" in setter[2] and "return 1" not in setter[2]


ROOT_CONFTEST = '''\
import pytest


@pytest.fixture(scope="session")
def database():
    """The root's database: replaced by the tests' own."""


@pytest.fixture
def clock():
    """A frozen clock at 2024-01-01T00:00:00.

    Later lines of the docstring are not shown.
    """
'''


TESTS_CONFTEST = '''\
from datetime import datetime

import pytest
from pytest import fixture


@pytest.fixture(name="database", scope="module")
def _database_fixture() -> dict[str, int]:
    """An in-memory database, empty."""
    return {}


@fixture
def stamp() -> datetime:
    """A fixed timestamp."""
    return datetime(2024, 1, 1)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def helper():
    """Not a fixture."""


class Helpers:
    @pytest.fixture
    def not_module_level(self):
        """Not collected: only module-level fixtures of a conftest."""
'''


def test_conftest_fixtures_honour_name_scope_and_autouse() -> None:
    found = {f.name: f for f in conftest_fixtures(TESTS_CONFTEST)}
    assert sorted(found) == ["_isolated", "database", "stamp"]
    assert found["database"].scope == "module" and found["database"].function == (
        "_database_fixture"
    )
    assert found["database"].doc == "An in-memory database, empty."
    assert found["database"].returns == "dict[str, int]"
    assert found["stamp"].scope == "function" and found["stamp"].returns == "datetime"
    assert found["_isolated"].autouse and found["_isolated"].doc == ""
    assert conftest_fixtures("def broken(:\n") == ()


def test_the_conftest_chain_of_a_test_folder() -> None:
    assert conftest_chain("tests/unit") == [
        "conftest.py",
        "tests/conftest.py",
        "tests/unit/conftest.py",
    ]
    assert conftest_chain("") == ["conftest.py"]


def test_fixtures_available_in_the_test_folder_come_from_its_conftest_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    write(
        tree,
        {
            "conftest.py": ROOT_CONFTEST,
            "tests/conftest.py": TESTS_CONFTEST,
            "tests/deeper/conftest.py": "import pytest\n\n@pytest.fixture\ndef below(): ...\n",
            "tests/test_x.py": "import pytest\n\n@pytest.fixture\ndef module_only(): ...\n",
            "other/conftest.py": "import pytest\n\n@pytest.fixture\ndef elsewhere(): ...\n",
        },
    )
    cache = tmp_path / "cache"
    found = fixture_evidence(tree, "tests", cache)
    assert found["directory"] == "tests"
    assert found["test_file"] == "tests/test_critic22_<finding id>.py"
    assert found["conftests"] == ["conftest.py", "tests/conftest.py"]
    assert found["available"] == [
        {"name": "_isolated", "scope": "function", "doc": "", "conftest": "tests/conftest.py:20",
         "autouse": True},
        {"name": "clock", "scope": "function", "doc": "A frozen clock at 2024-01-01T00:00:00.",
         "conftest": "conftest.py:10"},
        # The closest conftest's fixture of a name wins, as in pytest.
        {"name": "database", "scope": "module", "doc": "An in-memory database, empty.",
         "conftest": "tests/conftest.py:8", "returns": "dict[str, int]"},
        {"name": "stamp", "scope": "function", "doc": "A fixed timestamp.",
         "conftest": "tests/conftest.py:14", "returns": "datetime"},
    ]  # fmt: skip
    for name in ("tmp_path", "monkeypatch", "capsys"):
        assert name in found["builtin"] and name in BUILTIN_FIXTURES

    # Cached by content: the same files are not parsed again ...
    def no_parsing(source: str) -> Any:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(evidence_module, "conftest_fixtures", no_parsing)
    assert fixture_evidence(tree, "tests", cache) == found
    # ... and a changed file is.
    monkeypatch.undo()
    write(tree, {"tests/conftest.py": TESTS_CONFTEST.replace("def stamp", "def moment")})
    names = [f["name"] for f in fixture_evidence(tree, "tests", cache)["available"]]
    assert names == ["_isolated", "clock", "database", "moment"]


def test_available_fixtures_closest_wins() -> None:
    root = conftest_fixtures("import pytest\n@pytest.fixture\ndef a():\n    '''root'''\n")
    near = conftest_fixtures("import pytest\n@pytest.fixture\ndef a():\n    '''near'''\n")
    (only,) = available_fixtures([("conftest.py", root), ("tests/conftest.py", near)])
    assert only["doc"] == "near" and only["conftest"] == "tests/conftest.py:3"


def test_the_usage_example_is_the_first_test_by_node_id_that_exists_on_the_base() -> None:
    on_base = {"tests/test_a.py::test_b", "tests/test_a.py::test_c"}
    tests = ["tests/test_a.py::test_c", "tests/test_a.py::test_a", "tests/test_a.py::test_b"]
    for order in (tests, list(reversed(tests))):
        assert choose_usage_example(order, on_base.__contains__) == "tests/test_a.py::test_b"
    assert choose_usage_example(tests, lambda nodeid: False) is None


def canonical_size(value: dict[str, Any]) -> int:
    return len(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def rich_evidence() -> dict[str, Any]:
    return {
        "edits": {
            "e1": {"symbols": [{"name": "m.f", "callers": [f"a.py:{i}" for i in range(30)]}]}
        },
        "blast_radius": {"edits": 1},
        "preservation_tests": [],
        "touched_source": [
            {"symbol": f"m.f{i}", "file": "m.py", "lines": [1, 9], "source": "x = 1\n" * 12}
            for i in range(3)
        ],
        "callees": [
            {"name": f"m.g{i}", "signature": f"def g{i}():", "docstring": "Doc. " * 8}
            for i in range(3)
        ],
        "usage_examples": [
            {"test": f"tests/t.py::test_{i}", "source": "assert True\n" * 6} for i in range(3)
        ],
        "fixtures": {
            "directory": "tests",
            "available": [{"name": f"fx{i}", "doc": "A fixture. " * 4} for i in range(3)],
            "builtin": "pytest's builtin fixtures are available too: tmp_path",
        },
    }


def test_the_cut_follows_the_documented_order_and_is_the_same_every_time() -> None:
    evidence = rich_evidence()
    full = canonical_size(evidence)
    seen: list[str] = []
    previous = ""
    for budget in range(full, 0, -1):
        cut, note = bound_evidence(evidence, budget)
        if budget % 10 == 0:  # the same input gives the same cut
            assert (cut, note) == bound_evidence(json.loads(json.dumps(evidence)), budget)
        assert canonical_size(cut) <= budget or note.startswith("per-edit detail dropped")
        if note and note != previous:
            seen.append(note)
            previous = note
    # Each stage keeps what the later stages cut: the order of first appearance is the order.
    stages = [
        "callers and tests cut to at most 20",
        "usage examples dropped (1 of 3): tests/t.py::test_2",
        "usage examples dropped (3 of 3)",
        "fixture docstrings dropped",
        "callee docstrings dropped",
        "callees dropped (1 of 3): m.g2",
        "callees dropped (3 of 3)",
        "callers and tests cut to at most 0",
        "fixture list dropped (3)",
        "touched source dropped (1 of 3): m.f2",
        "touched source dropped (3 of 3)",
        "per-edit detail dropped",
    ]
    firsts = [next(i for i, note in enumerate(seen) if stage in note) for stage in stages]
    assert firsts == sorted(firsts), seen

    # Mid-way: callers and tests went to 5 each, then usage examples; the touched source is whole.
    budget = full - canonical_size({"x": evidence["usage_examples"][1:]})
    cut, note = bound_evidence(evidence, budget)
    assert "usage examples dropped" in note and cut["truncated"] == note
    assert cut["touched_source"] == evidence["touched_source"]
    assert cut["edits"]["e1"]["symbols"][0]["callers_omitted"] == 25
