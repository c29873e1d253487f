from __future__ import annotations

import pytest

from pytest_critic22.kinds.grammar import parse_procedure, route
from pytest_critic22.model.procedure import NotExecutable, Procedure

REPAIR = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def test_test_procedure_keeps_the_source_and_an_optional_repair() -> None:
    text = f"test:\n    def test_x():\n        assert True\nrepair:\n{REPAIR}"
    parsed = parse_procedure(text)
    assert parsed == Procedure(
        kind="test", source="def test_x():\n    assert True\n", repair=REPAIR
    )


def test_test_source_in_a_markdown_fence_is_accepted() -> None:
    parsed = parse_procedure("test:\n```python\ndef test_x():\n    pass\n```\n")
    assert isinstance(parsed, Procedure) and "```" not in parsed.source


def test_a_repair_that_is_not_a_diff_is_not_executable() -> None:
    parsed = parse_procedure("test:\ndef test_x(): pass\nrepair:\nmake it better\n")
    assert isinstance(parsed, NotExecutable) and "repair" in parsed.reason


def test_counterfactual_takes_node_ids_inside_the_repository() -> None:
    parsed = parse_procedure("counterfactual: tests/test_a.py::test_x tests/test_b.py")
    assert parsed == Procedure(
        kind="counterfactual", nodeids=("tests/test_a.py::test_x", "tests/test_b.py")
    )
    escaped = parse_procedure("counterfactual: ../elsewhere/test_a.py::test_x")
    assert isinstance(escaped, NotExecutable)


def test_static_and_trace_parse_into_typed_procedures() -> None:
    assert parse_procedure("static: signature-changed pkg.mod.f") == Procedure(
        kind="static", check="signature-changed", args=("pkg.mod.f",)
    )
    assert parse_procedure("trace: tests/t.py::test_race repeat=50") == Procedure(
        kind="trace", nodeids=("tests/t.py::test_race",), repeat=50
    )
    assert parse_procedure("trace: tests/t.py::test_race").repeat == 20  # type: ignore[union-attr]
    assert isinstance(parse_procedure("trace: tests/t.py::t repeat=500"), NotExecutable)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("test:\ndef test_x(): pass", "test"),
        ("Counterfactual: tests/t.py::test_x", "counterfactual"),
        ("static: mutable-default", "static"),
        ("trace: tests/t.py::test_x", "trace"),
    ],
)
def test_the_prefix_alone_decides_the_kind(text: str, kind: str) -> None:
    parsed = parse_procedure(text)
    assert isinstance(parsed, Procedure) and parsed.kind == kind


def test_every_kind_of_the_grammar_routes_to_an_executable_procedure() -> None:
    for text in (
        "static: removed-guard",
        "trace: tests/t.py::test_x repeat=3",
        "counterfactual: tests/t.py::test_x",
        "test:\ndef test_x(): pass",
    ):
        assert route(text).executable, text
    assert route("static:").reason == "static: names no check"
