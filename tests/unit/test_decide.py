"""The research spec's isolated tests for phases 5-6 (routing and the verification gate).

No model client is imported or called in any of them.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.kinds.grammar import KINDS, parse_procedure, route
from pytest_critic22.model.results import Outcome, RunResult
from pytest_critic22.verification.decide import confirm_failure, decide, gate

pytestmark = pytest.mark.usefixtures("no_model_client")

PASS = RunResult("passed", "", 0, 0.1)
FAIL = RunResult("failed", "", 1, 0.1)
ERROR = RunResult("error", "timed out after 5s", None, 5.0)

SPEC_ROUTING = [
    (
        "This edit removes the null check the contract requires.",
        "test:\nfrom m import f\n\ndef test_none_is_rejected():\n    assert f(None) is None\n",
        "test",
    ),
    ("The patch makes f return str where callers expect int.", "static: type-errors", "static"),
    (
        "Removing the lock makes concurrent increments race.",
        "trace: tests/test_counter.py::test_concurrent_increments repeat=50",
        "trace",
    ),
    (
        "The patch changes the behaviour the existing tests pin.",
        "counterfactual: tests/test_m.py::test_f",
        "counterfactual",
    ),
]


@pytest.mark.parametrize(("claim", "falsification", "kind"), SPEC_ROUTING)
def test_phase5_each_finding_routes_to_exactly_one_procedure_by_its_prefix(
    claim: str, falsification: str, kind: str
) -> None:
    parsed = parse_procedure(falsification)
    assert parsed.kind == kind  # type: ignore[union-attr]
    # The claim's wording never changes the route: swap claims, same procedure.
    for other_claim, _, _ in SPEC_ROUTING:
        assert parse_procedure(falsification) == parsed, other_claim


def test_phase5_all_four_kinds_route_to_an_executable_procedure() -> None:
    routes = {kind: route(f) for _, f, kind in SPEC_ROUTING}
    assert set(routes) == set(KINDS)
    assert all(r.executable for r in routes.values())
    assert {r.procedure.kind for r in routes.values() if r.procedure} == set(KINDS)


def test_phase6_a_claim_that_survives_marks_the_patch_broken() -> None:
    outcome = decide([FAIL, FAIL, FAIL], PASS, counterfactual_name="without-e1")
    assert outcome.kind == "verified"
    assert gate([("F1", "blocking", outcome)]).verdict == "reject"


def test_phase6_a_killed_claim_is_discarded() -> None:
    outcome = decide([PASS], None, counterfactual_name="without-e1")
    assert outcome == Outcome("refuted", "the procedure passes on the patched tree")
    assert gate([("F1", "blocking", outcome)]).verdict == "proceed"


def test_phase6_one_verified_defect_rejects_regardless_of_the_others() -> None:
    verified = Outcome("verified", "")
    others = [Outcome("refuted", ""), Outcome("inconclusive", ""), Outcome("refuted", "")]
    for order in itertools.permutations([verified, *others]):
        rows = [(f"F{i}", "blocking", o) for i, o in enumerate(order, 1)]
        assert gate(rows).verdict == "reject"
    assert gate([("F1", "advisory", verified)]).verdict == "proceed"


@pytest.mark.parametrize(
    ("patched", "counter", "acceptance", "kind", "why"),
    [
        ([FAIL, PASS, FAIL], None, None, "inconclusive", "flaky: failed 2 of 3"),
        ([FAIL, FAIL, FAIL], FAIL, None, "inconclusive", "fails on both"),
        ([FAIL, FAIL, FAIL], ERROR, None, "inconclusive", "timed out"),
        ([ERROR], None, None, "inconclusive", "timed out"),
        ([FAIL, FAIL, FAIL], PASS, FAIL, "inconclusive", "acceptance test"),
        ([FAIL, FAIL, FAIL], PASS, PASS, "verified", "passes on the without-e1 tree"),
    ],
)
def test_phase6_outcome_rules(
    patched: list[RunResult],
    counter: RunResult | None,
    acceptance: RunResult | None,
    kind: str,
    why: str,
) -> None:
    if counter is None and confirm_failure(patched) is None:
        pytest.fail("a consistent failure needs a counterfactual")
    outcome = decide(patched, counter, counterfactual_name="without-e1", acceptance=acceptance)
    assert outcome.kind == kind and why in outcome.reason


def test_phase6_confidence_is_never_read_permuting_it_changes_nothing() -> None:
    records = [
        {
            "location": loc,
            "claim": f"claim {i}",
            "severity": sev,
            "evidence": "e",
            "falsification": fals,
            "confidence": conf,
        }
        for i, (loc, sev, fals, conf) in enumerate(
            [
                ("e1", "blocking", "counterfactual: tests/t.py::test_a", 0.99),
                ("e1", "blocking", "test:\ndef test_x():\n    pass\n", 0.51),
                ("e2", "blocking", "static: removed-guard", 0.2),
                ("whole-patch", "advisory", "", 0.0),
            ]
        )
    ]
    outcomes = [Outcome("verified", ""), Outcome("refuted", ""), Outcome("inconclusive", "")]

    def pipeline(recs: list[dict[str, object]]) -> tuple[object, ...]:
        parsed = parse_findings(json.dumps(recs), ("e1", "e2"))
        routes = tuple((f.location, f.severity, route(f.falsification)) for f in parsed.findings)
        rows = [(f"F{i}", f.severity, outcomes[i % 3]) for i, f in enumerate(parsed.findings)]
        return routes, gate(rows)

    reference = pipeline(records)
    rng = random.Random(22)
    for _ in range(20):
        confidences = [r["confidence"] for r in records]
        rng.shuffle(confidences)
        permuted = [dict(r, confidence=c) for r, c in zip(records, confidences, strict=True)]
        assert pipeline(permuted) == reference
