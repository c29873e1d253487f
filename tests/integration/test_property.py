"""The ``property:`` kind.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_property.py.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_critic22.apps.samples import case_dir
from pytest_critic22.critic.finding import ReviewFinding
from pytest_critic22.kinds.property import PropertyKind, parse
from pytest_critic22.model.procedure import Procedure, PropertyData
from pytest_critic22.verification.procedures import ExecutionContext, Scope
from tests.unit.test_property import propkit  # noqa: F401  (a fixture)

MAX_EXAMPLES = 40  # per search here: the sample's defects show within the first few inputs


def _finding(case: str, number: int) -> ReviewFinding:
    record = json.loads((case_dir("propkit", case) / "findings.json").read_text())[number - 1]
    return ReviewFinding(**record)


def _run(ctx: ExecutionContext, case: str, number: int, kind: PropertyKind | None = None) -> Any:
    finding = _finding(case, number)
    kind = kind or PropertyKind(max_examples=MAX_EXAMPLES)
    procedure = kind.parse(finding.falsification.split(":", 1)[1])
    assert isinstance(procedure, Procedure)
    return kind.execute(f"F{number}", finding, procedure, ctx)


def test_a_hidden_change_is_verified_with_its_frozen_counterexample(
    propkit: Any, sandbox: Any
) -> None:
    result = _run(propkit("hidden-change", sandbox), "hidden-change", 1)
    assert result.outcome.kind == "verified", result.outcome.reason
    assert result.kind == "property" and result.counterfactual == "without-e2"
    example = result.logs["counterexample"]
    assert example["call"].startswith("slugify(text=")
    assert "falsifying example: slugify(text=" in result.outcome.reason
    assert f"-> patched {example['patched']}, counterfactual {example['counterfactual']}" in (
        result.outcome.reason
    )
    assert example["example"].startswith("@example(text=") and "_" in example["example"]
    assert example["example"] in result.outcome.reason
    assert [r["status"] for r in result.logs["patched"]] == ["failed", "failed"]
    assert result.logs["counterfactual"]["status"] == "passed"
    assert result.logs["search"]["patched"]["examples"] == MAX_EXAMPLES
    assert "Failing explicit example" in result.logs["patched"][-1]["output"]


def test_a_broken_roundtrip_gives_the_same_counterexample_on_every_run(propkit: Any) -> None:
    first = _run(propkit("hidden-change", reruns=1), "hidden-change", 2)
    again = _run(propkit("hidden-change", reruns=1), "hidden-change", 2)
    assert first.outcome.kind == again.outcome.kind == "verified", first.outcome.reason
    assert first.logs["counterexample"] == again.logs["counterexample"]
    assert first.outcome.reason == again.outcome.reason
    assert "patched breaks roundtrip" in first.outcome.reason and "," in first.outcome.reason


def test_an_equivalent_refactor_is_refuted_with_given_and_with_type_hints(propkit: Any) -> None:
    ctx = propkit("equivalent-refactor")
    given = _run(ctx, "equivalent-refactor", 1)
    assert given.outcome.kind == "refuted", given.outcome.reason
    assert f"no difference in {MAX_EXAMPLES} derandomized examples" in given.outcome.reason
    assert "counterexample" not in given.logs
    hinted = _run(ctx, "equivalent-refactor", 3)  # no given: st.from_type(str)
    assert hinted.outcome.kind == "refuted", hinted.outcome.reason
    assert hinted.logs["given"] == {}


def test_a_given_that_names_no_parameter_is_inconclusive(propkit: Any) -> None:
    ctx = propkit("hidden-change")
    procedure = parse(" propkit.text.slugify\ngiven: txt=st.text()")
    assert isinstance(procedure, Procedure)
    elsewhere = parse(" requests.api.get")
    assert isinstance(elsewhere, Procedure)
    finding, scope = _finding("hidden-change", 1), Scope(ctx.patch, ctx.trees)
    assert PropertyKind().validate(finding, procedure, scope) is None
    assert "no module 'requests' in the project" in str(
        PropertyKind().validate(finding, elsewhere, scope)
    )
    result = PropertyKind(max_examples=5).execute(
        "F9", _finding("hidden-change", 1), procedure, ctx
    )
    assert result.outcome.kind == "inconclusive"
    assert "txt: not a parameter of slugify(text: str)" in result.outcome.reason
    assert not result.outcome.environment


def test_a_tampered_procedure_record_is_checked_again_and_never_runs(propkit: Any) -> None:
    procedure = Procedure(
        "property", PropertyData(("propkit.text.slugify", "equivalent"), "text=open('x')\n")
    )
    ctx = propkit("hidden-change")
    result = PropertyKind().execute("F1", _finding("hidden-change", 1), procedure, ctx)
    assert result.outcome.kind == "inconclusive" and "given:" in result.outcome.reason
    assert "search" not in result.logs


def test_hypothesis_missing_in_the_tree_is_inconclusive(propkit: Any) -> None:
    from pytest_critic22.execution.trees import Variant, write_in_tree

    ctx = propkit("hidden-change")
    patched = ctx.trees.get(Variant.patched(ctx.patch).for_critic())  # where property runs
    write_in_tree(patched, "hypothesis.py", "raise ImportError('no hypothesis here')\n")
    result = _run(ctx, "hidden-change", 1)
    assert result.outcome.kind == "inconclusive" and result.outcome.environment
    assert "on the patched tree: needs hypothesis installed" in result.outcome.reason
