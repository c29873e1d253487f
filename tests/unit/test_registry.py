"""The seams in process: the registry of procedure kinds, typed results across the xdist
boundary, routes decided once by the parser."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_critic22.checks import REGISTRY
from pytest_critic22.critic.critic import system_prompt
from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.kinds import KindRegistry, builtin_kinds
from pytest_critic22.model.procedure import Args, NotExecutable, Procedure, TestData
from pytest_critic22.model.results import Outcome
from pytest_critic22.pipeline.review import RoutedFinding, preservation_id, route_findings
from pytest_critic22.verification.procedures import FindingResult


class _Kind:
    grammar = "  odd:             TEXT  a kind of a test plugin\n"

    def __init__(self, name: str = "odd", parse: Any = None, validate: Any = None) -> None:
        self.name = name
        self._parse = parse or (lambda rest: Procedure(self.name, Args((rest.strip(),))))
        self._validate = validate or (lambda *a: None)

    def parse(self, rest: str) -> Procedure | NotExecutable:
        result: Procedure | NotExecutable = self._parse(rest)
        return result

    def validate(self, finding: Any, procedure: Procedure, scope: Any) -> str | None:
        result: str | None = self._validate(finding, procedure, scope)
        return result

    def execute(self, finding_id: str, finding: Any, procedure: Procedure, ctx: Any) -> Any:
        return FindingResult(finding_id, Outcome("refuted", "fine"), "base", {}, "preservation")


def test_the_router_and_the_prompt_come_from_the_registry() -> None:
    registry = builtin_kinds()
    assert registry.names() == [
        "test",
        "counterfactual",
        "static",
        "trace",
        "property",
        "preservation",
        "collection",
        "scar",
    ]
    assert [k.name for k in registry.offered()] == [
        "test",
        "counterfactual",
        "static",
        "trace",
        "property",
    ]
    registry.register(_Kind())
    assert registry.route("odd: x").procedure == Procedure("odd", Args(("x",)))
    assert registry.route("ODD : y").procedure == Procedure("odd", Args(("y",)))
    assert "odd:" in registry.route("nope: z").reason  # the reason lists every prefix
    assert registry.route("preservation: tests/t.py").procedure is None  # not the critic's
    assert registry.route("scar:\ndef test_x():\n    pass\n").procedure is None  # the loop's
    grammar = registry.grammar(REGISTRY)
    assert "  odd:             TEXT" in grammar and "removed-guard:" in grammar
    assert "{checks}" not in system_prompt(grammar) and "odd:" in system_prompt(grammar)


@pytest.mark.parametrize("name", ["", "Odd", "o d", "1st", "o:d", None])
def test_a_kind_name_must_be_a_grammar_prefix(name: Any) -> None:
    with pytest.raises(ValueError, match="grammar prefix"):
        KindRegistry().register(_Kind(name))


def test_a_kind_registers_once() -> None:
    registry = builtin_kinds()
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_Kind("static"))


def test_a_plugin_kind_that_fails_downgrades_its_finding_instead_of_breaking_the_run() -> None:
    def boom(rest: str) -> Procedure:
        raise RuntimeError("bad parser")

    registry = KindRegistry()
    registry.register(_Kind("boom", parse=boom))
    registry.register(_Kind("liar", parse=lambda rest: Procedure("test", TestData("x"))))
    registry.register(_Kind("picky", validate=lambda *a: 1 / 0))
    assert "parser failed" in registry.route("boom: x").reason
    assert "parsed into a 'test' procedure" in registry.route("liar: x").reason
    reason = registry.validate(None, Procedure(kind="picky"), None)  # type: ignore[arg-type]
    assert reason is not None and "validator failed" in reason


def test_a_result_is_the_registry_kind_whatever_the_kind_says() -> None:
    registry = KindRegistry()
    registry.register(_Kind())
    result = registry.execute("F1", None, Procedure(kind="odd"), None)  # type: ignore[arg-type]
    assert result.kind == "odd"  # it claimed "preservation": the gate never sees that
    missing = registry.execute("F2", None, Procedure(kind="gone"), None)  # type: ignore[arg-type]
    assert missing.outcome.kind == "inconclusive" and missing.outcome.environment


def test_a_result_crosses_the_xdist_boundary_unchanged() -> None:
    result = FindingResult("F1", Outcome("verified", "why", True), "without-e2", {"a": [1]}, "test")
    assert FindingResult.from_record(json.loads(json.dumps(result.to_record()))) == result


@pytest.mark.parametrize(
    "record",
    [
        [],
        {"id": "F1", "reason": "", "counterfactual": ""},
        {"id": "F1", "outcome": "approved", "reason": "", "counterfactual": ""},
        {"id": "F1", "outcome": "verified", "reason": 3, "counterfactual": ""},
        {"id": "F1", "outcome": "verified", "reason": "", "counterfactual": "", "logs": "ab"},
        {"id": "", "outcome": "verified", "reason": "", "counterfactual": ""},
    ],
)
def test_a_malformed_result_record_is_refused(record: Any) -> None:
    with pytest.raises(ValueError, match=r"record|outcome"):
        FindingResult.from_record(record)


def test_each_finding_is_routed_once_by_the_parser_and_numbered_in_order() -> None:
    calls: list[str] = []
    registry = builtin_kinds()

    def counting(text: str) -> Any:
        calls.append(text)
        return registry.route(text)

    records = [
        {
            "location": "e1",
            "claim": "c",
            "severity": s,
            "evidence": "e",
            "falsification": f,
            "confidence": 0.5,
        }
        for s, f in [
            ("blocking", "static: mutable-default"),
            ("advisory", "trace: t.py::x"),
            ("blocking", "think about it"),
        ]
    ]
    parsed = parse_findings(json.dumps(records), ["e1"], route=counting)
    assert len(calls) == 3  # every finding, advisory ones too (the report shows their route)
    routed = route_findings(parsed)
    assert [r.finding_id for r in routed] == ["F1", "F2", "F3"]
    assert [r.procedure.kind if r.procedure else None for r in routed] == ["static", "trace", None]
    assert [r.blocking for r in routed] == [True, False, False]  # F3 was downgraded
    assert RoutedFinding.from_dict(json.loads(json.dumps(routed[0].to_dict()))) == routed[0]
    assert (
        routed[0].item_name == "F1[e1]" and preservation_id("tests/t.py") == "preserve[tests/t.py]"
    )
