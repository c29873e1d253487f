"""Measured test impact (issue 44): preservation finds the tests that *execute* the touched
code, where the code graph cannot see the call (a fixture-set attribute, a base class reached
through a subclass's construction), from coverage.py's ``test_function`` contexts recorded
once per base commit and cached."""

from __future__ import annotations

import json

from pytest_critic22.evidence.codescan import scan_file
from pytest_critic22.evidence.measured import (
    ImpactMap,
    _as_map,
    _insertion_points,
    base_lines,
    measured_tests,
)
from pytest_critic22.model.patch import parse_patch

# Shaped like arrow and marshmallow: tests reach the code through ``self.arrow``, which a
# conftest fixture sets (``request.cls.arrow = ...``), and through ``Schema()``, a subclass
# whose base class holds the touched ``__init__``. The graph sees neither call.
PACKAGE = {
    "clockwork/__init__.py": "from .arrow import Arrow\n",
    "clockwork/arrow.py": (
        "class Arrow:\n"
        "    def __init__(self, value):\n"
        "        self.value = value\n"
        "\n"
        "    def span(self, width):\n"
        "        start = self.value - self.value % width\n"
        "        return (start, start + width)\n"
        "\n"
        "    def floor(self, width):\n"
        "        return self.span(width)[0]\n"
    ),
    "clockwork/schema.py": (
        "class BaseSchema:\n"
        "    def __init__(self, fields=None):\n"
        "        self.fields = dict(fields or {})\n"
        "        self.fields.setdefault('id', int)\n"
        "\n"
        "\n"
        "class Schema(BaseSchema):\n"
        "    pass\n"
    ),
    "tests/conftest.py": (
        "import pytest\n"
        "from clockwork import Arrow\n\n"
        "@pytest.fixture(scope='class')\n"
        "def arrow_cls(request):\n"
        "    request.cls.arrow = Arrow(17)\n"
    ),
    "tests/test_arrow.py": (
        "import pytest\n\n"
        "@pytest.mark.usefixtures('arrow_cls')\n"
        "class TestArrow:\n"
        "    def test_span(self):\n"
        "        assert self.arrow.span(5) == (15, 20)\n\n"
        "    def test_floor(self):\n"
        "        assert self.arrow.floor(5) == 15\n\n"
        "    def test_value(self):\n"
        "        assert self.arrow.value == 17\n"
    ),
    "tests/test_schema.py": (
        "from clockwork.schema import Schema\n\n"
        "def test_schema_has_an_id():\n"
        "    assert Schema().fields == {'id': int}\n\n"
        "def test_nothing_else():\n"
        "    assert True\n"
    ),
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n',
}


SPAN = "        start = self.value - self.value % width\n"


def test_contexts_become_node_ids_of_test_files() -> None:
    contexts = {
        "pkg/mod.py": {
            3: ["tests.test_mod.TestA.test_one", "tests.test_mod.test_two"],
            4: ["test_mod.test_two", "pkg.mod.testing_helper", "tests.test_mod.helper"],
            9: ["tests.unit.test_x.test_deep"],
        }
    }
    files = ["tests/test_mod.py", "tests/unit/test_x.py"]
    found = _as_map(contexts, files, 1.0, "passed")
    assert found.tests_for("pkg/mod.py", [3]) == [
        "tests/test_mod.py::TestA::test_one",
        "tests/test_mod.py::test_two",
    ]
    # a shorter module name (rootdir import mode) is the same test; a source function named
    # test* and a helper of a test module are no tests
    assert found.tests_for("pkg/mod.py", [4]) == ["tests/test_mod.py::test_two"]
    assert found.tests_for("pkg/mod.py", [9]) == ["tests/unit/test_x.py::test_deep"]
    assert found.tests_for("pkg/other.py", [3]) == []
    assert ImpactMap.from_dict(json.loads(json.dumps(found.to_dict()))) == found


def test_a_touched_line_reaches_the_lines_of_its_function_on_the_base() -> None:
    source = PACKAGE["clockwork/arrow.py"]
    changed = source.replace(SPAN, "        start = self.value - width\n")
    diff = _diff("clockwork/arrow.py", source, changed)
    (edit,) = parse_patch(diff).edits
    facts = scan_file("clockwork/arrow.py", source)
    assert base_lines(edit, facts) == [5, 6, 7]  # the whole of span, not only line 6
    inserted = source.replace(SPAN, SPAN + "        start = max(start, 0)\n")
    (insertion,) = parse_patch(_diff("clockwork/arrow.py", source, inserted)).edits
    assert _insertion_points(insertion) == [6, 7]
    assert base_lines(insertion, facts) == [5, 6, 7]


def test_measured_tests_skip_edits_of_test_files() -> None:
    mapped = ImpactMap(("tests/test_a.py::test_a",), {"tests/test_a.py": {1: (0,)}}, 0.0, "")
    diff = _diff("tests/test_a.py", "x = 1\n", "x = 2\n")
    assert measured_tests(parse_patch(diff), mapped, {}) == []


def _diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def test_all_is_every_test_function_and_method_of_the_base() -> None:
    from pytest_critic22.evidence.measured import every_test

    graph = {
        path: scan_file(path, PACKAGE[path])
        for path in ("tests/conftest.py", "tests/test_arrow.py", "tests/test_schema.py")
    }
    graph["clockwork/arrow.py"] = scan_file("clockwork/arrow.py", PACKAGE["clockwork/arrow.py"])
    assert every_test(graph) == [
        "tests/test_arrow.py::TestArrow::test_span",
        "tests/test_arrow.py::TestArrow::test_floor",
        "tests/test_arrow.py::TestArrow::test_value",
        "tests/test_schema.py::test_schema_has_an_id",
        "tests/test_schema.py::test_nothing_else",
    ]
