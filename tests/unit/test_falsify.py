from __future__ import annotations

import json

import pytest

from pytest_critic22.kinds.grammar import parse_procedure, route
from pytest_critic22.model.procedure import (
    Args,
    NodeIds,
    NotExecutable,
    Procedure,
    PropertyData,
    StaticData,
    TestData,
    TraceData,
)

REPAIR = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def test_test_procedure_keeps_the_source_and_an_optional_repair() -> None:
    text = f"test:\n    def test_x():\n        assert True\nrepair:\n{REPAIR}"
    parsed = parse_procedure(text)
    assert parsed == Procedure("test", TestData("def test_x():\n    assert True\n", repair=REPAIR))


def test_test_source_in_a_markdown_fence_is_accepted() -> None:
    parsed = parse_procedure("test:\n```python\ndef test_x():\n    pass\n```\n")
    assert isinstance(parsed, Procedure) and "```" not in parsed.payload(TestData).source


def test_a_repair_that_is_not_a_diff_is_not_executable() -> None:
    parsed = parse_procedure("test:\ndef test_x(): pass\nrepair:\nmake it better\n")
    assert isinstance(parsed, NotExecutable) and "repair" in parsed.reason


def test_counterfactual_takes_node_ids_inside_the_repository() -> None:
    parsed = parse_procedure("counterfactual: tests/test_a.py::test_x tests/test_b.py")
    assert parsed == Procedure(
        "counterfactual", NodeIds(("tests/test_a.py::test_x", "tests/test_b.py"))
    )
    escaped = parse_procedure("counterfactual: ../elsewhere/test_a.py::test_x")
    assert isinstance(escaped, NotExecutable)


def test_static_and_trace_parse_into_typed_procedures() -> None:
    assert parse_procedure("static: signature-changed pkg.mod.f") == Procedure(
        "static", StaticData("signature-changed", ("pkg.mod.f",))
    )
    assert parse_procedure("trace: tests/t.py::test_race repeat=50") == Procedure(
        "trace", TraceData("tests/t.py::test_race", 50)
    )
    default = parse_procedure("trace: tests/t.py::test_race")
    assert isinstance(default, Procedure) and default.payload(TraceData).repeat == 20
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


_FLAT = {
    "source": "",
    "repair": "",
    "repair_given": "",
    "nodeids": [],
    "check": "",
    "args": [],
    "repeat": 0,
}


@pytest.mark.parametrize(
    ("procedure", "fields"),
    [
        (
            Procedure("test", TestData("def test_x(): pass\n", REPAIR, "given")),
            {"source": "def test_x(): pass\n", "repair": REPAIR, "repair_given": "given"},
        ),
        (Procedure("scar", TestData("def test_x(): pass\n")), {"source": "def test_x(): pass\n"}),
        (
            Procedure("counterfactual", NodeIds(("t.py::a", "t.py"))),
            {"nodeids": ["t.py::a", "t.py"]},
        ),
        (Procedure("preservation", NodeIds(("t.py::a",))), {"nodeids": ["t.py::a"]}),
        (Procedure("collection", NodeIds()), {}),
        (
            Procedure("static", StaticData("removed-guard", ("f",))),
            {"check": "removed-guard", "args": ["f"]},
        ),
        (Procedure("trace", TraceData("t.py::r", 7)), {"nodeids": ["t.py::r"], "repeat": 7}),
        (
            Procedure("property", PropertyData(("m.f", "equivalent"), "x=st.integers()\n")),
            {"source": "x=st.integers()\n", "args": ["m.f", "equivalent"]},
        ),
        (Procedure("mentions", Args(("raise ValueError",))), {"args": ["raise ValueError"]}),
    ],
    ids=lambda value: value.kind if isinstance(value, Procedure) else "",
)
def test_a_procedure_is_one_flat_record_and_reads_back_into_its_kinds_payload(
    procedure: Procedure, fields: dict[str, object]
) -> None:
    """The ledger, the loop's state and the xdist hand-over hold this record: its keys, their
    order and their defaults are the same for every kind, a plugin's included."""
    record = procedure.to_dict()
    assert record == {"kind": procedure.kind, **_FLAT, **fields}
    assert list(record) == ["kind", *_FLAT]
    assert Procedure.from_dict(json.loads(json.dumps(record))) == procedure


def test_a_payload_of_another_type_than_the_kind_reads_is_a_type_error() -> None:
    procedure = Procedure("static", NodeIds(("t.py",)))
    with pytest.raises(TypeError, match="a static procedure carries NodeIds, not StaticData"):
        procedure.payload(StaticData)
