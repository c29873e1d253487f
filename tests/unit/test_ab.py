"""The A/B driver: metrics and decision pinned by hand, the sample population, real runs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps import ab
from pytest_critic22.apps.ab import (
    CaseResult,
    Claim,
    ReviewSummary,
    arm_case,
    arm_metrics,
    build_report,
    compare,
    decide,
    load_population,
    mcnemar,
    mean_interval,
    render,
    t_quantile,
    wilson,
)
from pytest_critic22.apps.samples import SAMPLES_DIR
from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.model.patch import parse_patch

POPULATION = SAMPLES_DIR / "population.json"


def review(
    verdict: str,
    claims: tuple[tuple[str, float], ...],
    preservation: str,
    *,
    calls: int = 1,
    tokens: int = 0,
    seconds: float = 0.0,
) -> ReviewSummary:
    return ReviewSummary(
        verdict=verdict,  # type: ignore[arg-type]
        claims=tuple(Claim(status, confidence) for status, confidence in claims),
        preservation=(preservation,),
        calls=calls,
        tokens=tokens,
        seconds=seconds,
    )


def tiny() -> list[CaseResult]:
    """Three defective cases and two good ones.

    case  label      validator (a)        critic (b): claims            unblinded (c)
    D1    defective  proceed, pres ok     reject: verified .9, refuted .8   proceed, no claims
    D2    defective  reject, pres verified reject: verified .4             reject (pres), no claims
    D3    defective  proceed, pres ok     proceed: inconclusive .7          proceed: inconclusive .7
    G1    good       proceed, pres ok     proceed: refuted .6               proceed, no claims
    G2    good       proceed, pres incon. proceed: none                     proceed, no claims
    """
    return [
        CaseResult(
            "D1",
            "defective",
            "failed",
            review("proceed", (), "refuted", calls=0, seconds=2),
            review(
                "reject", (("verified", 0.9), ("refuted", 0.8)), "refuted", tokens=100, seconds=5
            ),
            review("proceed", (), "refuted", seconds=4),
        ),
        CaseResult(
            "D2",
            "defective",
            "failed",
            review("reject", (), "verified", calls=0, seconds=4),
            review("reject", (("verified", 0.4),), "verified", tokens=200, seconds=7),
            review("reject", (), "verified", seconds=4),
        ),
        CaseResult(
            "D3",
            "defective",
            "failed",
            review("proceed", (), "refuted", calls=0, seconds=6),
            review("proceed", (("inconclusive", 0.7),), "refuted", tokens=0, seconds=9),
            review("proceed", (("inconclusive", 0.7),), "refuted", seconds=4),
        ),
        CaseResult(
            "G1",
            "good",
            "passed",
            review("proceed", (), "refuted", calls=0, seconds=2),
            review("proceed", (("refuted", 0.6),), "refuted", tokens=50, seconds=3),
            review("proceed", (), "refuted", seconds=4),
        ),
        CaseResult(
            "G2",
            "good",
            "passed",
            review("proceed", (), "inconclusive", calls=0, seconds=4),
            review("proceed", (), "inconclusive", tokens=0, seconds=6),
            review("proceed", (), "inconclusive", seconds=4),
        ),
    ]


def rate(metrics: ab.Rate) -> tuple[int, int, float, float]:
    return metrics.k, metrics.n, metrics.low, metrics.high


def interval(mean: ab.MeanInterval | None) -> tuple[float | None, ...]:
    assert mean is not None
    return mean.mean, mean.low, mean.high


def approx(*values: float) -> Any:
    """Equal to the hand computation's five decimals."""
    return pytest.approx(values, abs=1e-5)


# Wilson 95% intervals, worked out by hand (z = 1.959964):
#   centre = (p + z²/2n) / (1 + z²/n),  half = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
W = {
    (0, 0): (0.0, 1.0),
    (0, 1): (0.0, 0.79345),
    (0, 2): (0.0, 0.65762),
    (1, 2): (0.09453, 0.90547),
    (1, 3): (0.06149, 0.79234),
    (2, 3): (0.20766, 0.93851),
    (3, 3): (0.43850, 1.0),
    (1, 5): (0.03622, 0.62447),
    (2, 5): (0.11762, 0.76928),
    (2, 6): (0.09677, 0.70001),
    (2, 10): (0.05668, 0.50984),
}


def w(k: int, n: int) -> Any:
    return approx(k, n, *W[(k, n)])


def test_every_metric_of_every_arm_matches_the_hand_computation() -> None:
    results = tiny()
    a, b, c, d, e = (arm_metrics(arm, results) for arm in ab.ARMS)
    # a: only D2's preservation regression rejects; no claims; G2's group is inconclusive.
    assert (rate(a.recall), a.agree) == (w(1, 3), 1)
    assert rate(a.over_veto) == w(0, 0)
    assert rate(a.false_rejection) == w(0, 2)
    assert rate(a.inconclusive) == w(1, 5)
    assert interval(a.calls) == approx(0.0, 0.0, 0.0)
    assert interval(a.tokens) == approx(0.0, 0.0, 0.0)
    # wall [2, 4, 6, 2, 4]: mean 3.6, sd sqrt(2.8), t(0.975, 4) = 2.776445 -> ±2.07770
    assert interval(a.wall) == approx(3.6, 1.5223, 5.6777)
    # b: D1 and D2 rejected; 5 claims, 2 refuted; 10 items executed, 2 inconclusive.
    assert (rate(b.recall), b.agree) == (w(2, 3), 2)
    assert rate(b.over_veto) == w(2, 5)
    assert rate(b.false_rejection) == w(0, 2)
    assert rate(b.inconclusive) == w(2, 10)
    assert interval(b.calls) == approx(1.0, 1.0, 1.0)
    # tokens [100, 200, 0, 50, 0]: mean 70, sd sqrt(6750) -> ±102.00 (sd 82.158 / sqrt 5 · t)
    assert interval(b.tokens) == approx(70.0, -33.88506, 173.88506)
    assert interval(b.wall) == approx(6.0, 3.22356, 8.77644)
    # c: only D2 (its preservation regression); one claim, not killed; 6 executed, 2 inconclusive.
    assert (rate(c.recall), c.agree) == (w(1, 3), 1)
    assert rate(c.over_veto) == w(0, 1)
    assert rate(c.false_rejection) == w(0, 2)
    assert rate(c.inconclusive) == w(2, 6)
    assert interval(c.wall) == approx(4.0, 4.0, 4.0)
    # d: every emitted claim is a verdict: D3 and G1 are rejected too; only preservation runs.
    assert (rate(d.recall), d.agree) == (w(3, 3), 3)
    assert rate(d.over_veto) == w(2, 5)
    assert rate(d.false_rejection) == w(1, 2)
    assert rate(d.inconclusive) == w(1, 5)
    assert d.wall is None
    # e: confidence >= 0.5 rejects: D1 (.9), D3 (.7), G1 (.6); D2 by its preservation item.
    assert (rate(e.recall), e.agree) == (w(3, 3), 3)
    assert rate(e.over_veto) == w(2, 5)
    assert rate(e.false_rejection) == w(1, 2)
    assert rate(e.inconclusive) == w(2, 10)
    assert e.wall is None


def test_the_paired_comparison_and_the_decision_match_the_hand_computation() -> None:
    results = tiny()
    recall, false_rejection = compare("b", "a", results)
    # D1 is caught only with the critic; D2 by both; D3 by neither: one discordant case.
    assert (recall.n, recall.first_only, recall.second_only) == (3, 1, 0)
    assert (recall.p_two_sided, recall.p_first_more, recall.p_second_more) == (1.0, 0.5, 1.0)
    assert (false_rejection.n, false_rejection.first_only, false_rejection.second_only) == (2, 0, 0)
    report = build_report(
        population="tiny", critic="recorded:x", rule="all", held_out=5, tuning=0, results=results
    )
    # b - a wall per case [3, 3, 3, 1, 2]: mean 2.4, sd sqrt(0.8) -> ±1.11058
    assert interval(report.wall_difference) == approx(2.4, 1.28942, 3.51058)
    # recall 2/3 > 1/3 and no good patch rejected, but one discordant case is noise (p = 0.5);
    # and with 3 defective cases no recall gain could be beyond noise: no decision (issue 43).
    assert [clause.holds for clause in report.decision.clauses] == [True, True, False]
    assert report.decision.keep is None
    assert report.decision.headline == "not enough data: 3 defective, 2 good measured"
    blinding, routing, gate = report.ablations
    assert (blinding.recall.first_only, blinding.recall.second_only) == (0, 1)  # type: ignore[union-attr]
    assert (routing.false_rejection.first_only, routing.false_rejection.p_first_more) == (1, 0.5)  # type: ignore[union-attr]
    assert gate.degraded == () and routing.degraded == () and blinding.degraded == ()


def test_the_exact_mcnemar_test_is_the_binomial_on_discordant_cases() -> None:
    assert mcnemar(0, 0) == (1.0, 1.0, 1.0)
    assert mcnemar(6, 0) == (2 / 64, 1 / 64, 1.0)  # 6 of 6 one way: 2 · 0.5⁶
    two, first, second = mcnemar(3, 1)  # n = 4: P(X <= 1) = 5/16
    assert (two, first, second) == (10 / 16, 5 / 16, 15 / 16)
    assert mcnemar(1, 3) == (10 / 16, 15 / 16, 5 / 16)


def test_the_intervals_are_wilson_for_rates_and_student_t_for_means() -> None:
    for (k, n), (low, high) in W.items():
        got = wilson(k, n)
        assert (got.low, got.high) == approx(low, high)
    # Student's t quantiles from the table of any statistics textbook.
    for df, value in ((1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)):
        assert math.isclose(t_quantile(0.975, df), value, abs_tol=1e-4)
    assert math.isclose(t_quantile(0.025, 4), -2.7764, abs_tol=1e-4)
    assert mean_interval([]).mean is None
    single = mean_interval([3.0])
    assert (single.mean, single.low, single.high) == (3.0, None, None)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(3, 2)


def decision_for(on: tuple[int, int], off: tuple[int, int], fr_on: int, fr_off: int) -> bool:
    """keep? for a critic arm and a validator arm on 12 defective and 6 good cases, where the
    critic catches a superset of what the validator catches and rejects fr_on good patches."""
    results = []
    for i in range(12):
        caught_on, caught_off = i < on[0], i < off[0]
        results.append(
            CaseResult(
                f"D{i}",
                "defective",
                "failed",
                review("reject" if caught_off else "proceed", (), "refuted", calls=0),
                review("reject" if caught_on else "proceed", (("verified", 0.9),), "refuted"),
            )
        )
    for i in range(6):
        results.append(
            CaseResult(
                f"G{i}",
                "good",
                "passed",
                review("reject" if i < fr_off else "proceed", (), "refuted", calls=0),
                review("reject" if i < fr_on else "proceed", (), "refuted"),
            )
        )
    a, b = arm_metrics("a", results), arm_metrics("b", results)
    recall, false_rejection = compare("b", "a", results)
    return decide(b, a, recall, false_rejection).keep is True  # 12 and 6 cases: it decides


def test_the_rule_keeps_a_critic_only_when_it_strictly_dominates_beyond_noise() -> None:
    assert decision_for((9, 12), (3, 12), 0, 0)  # 6 more caught, p = 1/64: keep
    assert not decision_for((5, 12), (3, 12), 0, 0)  # 2 more caught: noise
    assert not decision_for((3, 12), (3, 12), 0, 0)  # no gain: an empty L column
    assert not decision_for((12, 12), (3, 12), 1, 0)  # one more good patch rejected: worse


def test_recall_and_over_veto_are_always_reported_together() -> None:
    report = build_report(
        population="tiny", critic="recorded:x", rule="all", held_out=5, tuning=0, results=tiny()
    )
    document = report.to_dict()
    for arm in ab.ARMS:
        assert {"recall", "over_veto"} <= set(document["arms"][arm])
    text = render(report)
    rows = [line.split("  ")[0] for line in text.splitlines()]
    assert rows.index("verified-defect recall") + 2 == rows.index("over-veto (killed/emitted)")
    assert "decision (spec §9.6): not enough data: 3 defective, 2 good measured" in text
    for title in ("a validator", "b critic+validator", "c blinding off", "d routing off"):
        assert title in text
    assert "e gate off" in text
    blind = build_report(
        population="tiny",
        critic="model:m",
        rule="all",
        held_out=5,
        tuning=0,
        results=tiny(),
        c_note="not available with a live model yet",
    )
    assert "c blinding off: n/a — not available with a live model yet" in render(blind)
    assert blind.to_dict()["arms"]["c"] == {
        "arm": "c",
        "available": False,
        "note": "not available with a live model yet",
    }


def test_a_case_without_an_unblinded_run_leaves_the_blinding_arm_unmeasured() -> None:
    results = [
        CaseResult(r.case_id, r.label, r.ground_truth, r.validator, r.critic) for r in tiny()
    ]
    assert arm_case("c", results[0]) is None
    metrics = arm_metrics("c", results)
    assert not metrics.available and "not run for 5 of 5" in metrics.note


def test_the_sample_population_has_the_composition_the_issue_asks_for() -> None:
    population = load_population(POPULATION)
    cases = population.cases
    defective = [c for c in cases if c.label == "defective"]
    assert len(cases) >= 24 and 2 * len(defective) >= len(cases)
    assert len({c.repo for c in cases}) >= 3
    assert {"test", "counterfactual", "static", "trace"} <= {k for c in defective for k in c.kinds}
    assert any(c.caught_by_existing_tests for c in defective)
    assert all(c.ground_truth for c in defective)
    held_out = population.held_out()
    assert 0 < len(held_out) < len(cases)
    assert set(held_out) | set(population.tuning()) == set(cases)
    # The rule is deterministic and declared: a fresh load splits the same way.
    assert load_population(POPULATION).held_out() == held_out


@pytest.mark.parametrize("name", ["useful", "noisy", "silent"])
def test_every_recorded_set_parses_for_every_case(name: str) -> None:
    population = load_population(POPULATION)
    critic = ab.choose_critic(population, f"recorded:{name}", None, None)
    blocking = 0
    for case in population.cases:
        edits = parse_patch(case.patch.read_text()).edit_ids
        for unblinded in (False, True):
            recording = critic.recording(case, unblinded=unblinded)
            if recording is None:
                assert unblinded, f"{name} has no output for {case.id}"
                continue
            parsed = parse_findings(recording.read_text(), edits)
            assert not parsed.error and not parsed.rejected, (case.id, parsed)
            blocking += sum(1 for f in parsed.findings if f.severity == "blocking")
            if name == "silent":
                assert all(f.severity == "advisory" for f in parsed.findings)
    if name == "noisy":
        assert blocking >= 4 * len(population.cases)
    kinds = set()
    assert critic.folder is not None
    for path in critic.folder.glob("*.json"):
        document = json.loads(path.read_text())
        for record in document if isinstance(document, list) else document["findings"]:
            if record["severity"] == "blocking":
                kinds.add(record["falsification"].split(":")[0])
    if name == "useful":
        assert {"test", "counterfactual", "static", "trace"} <= kinds
    if name == "noisy":
        assert {"test", "counterfactual", "static"} <= kinds


def test_no_ground_truth_text_is_in_any_plugin_input_of_the_sample_population() -> None:
    population = load_population(POPULATION)
    secrets: dict[str, list[str]] = {}
    for case in population.cases:
        secrets[case.id] = [test.source for test in case.ground_truth] + [
            line.strip()
            for test in case.ground_truth
            for line in test.source.splitlines()
            if line.strip().startswith("def test_")
        ]
    for name in ("useful", "noisy", "silent"):
        critic = ab.choose_critic(population, f"recorded:{name}", None, None)
        for case_id, kind, text in ab.plugin_input_texts(population.cases, critic):
            for secret in secrets[case_id]:
                assert secret not in text, (case_id, kind, secret)
            assert "ground_truth" not in text and "test_hidden_" not in text, (case_id, kind)


def test_a_bad_population_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In this process: `python -m pytest_critic22.apps.ab` itself runs in the driver test above.
    from pytest_critic22.apps.ab.cli import main

    bad = tmp_path / "population.json"
    bad.write_text(json.dumps({"cases": [{"id": "x"}]}))
    assert main([str(bad), "--critic", "recorded:useful"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("critic22 ab: error: ") and "held_out" in err
    assert main([str(POPULATION), "--critic", "recorded:nope"]) == 2
    assert "no recorded critic set 'nope'" in capsys.readouterr().err


def test_a_review_report_is_summarized_from_the_plugins_own_fields() -> None:
    report = {
        "disposition": {"verdict": "reject"},
        "findings": [
            {
                "finding": {"severity": "blocking", "confidence": 0.3},
                "outcome": {"status": "verified"},
            },
            {
                "finding": {"severity": "advisory", "confidence": 0.9},
                "outcome": {"status": "advisory"},
            },
            {
                "finding": {"severity": "blocking", "confidence": 0.8},
                "outcome": {"status": "refuted"},
            },
        ],
        "preservation": [{"group": "tests/t.py", "outcome": "refuted"}],
        "critic": {"engaged": True, "source": "model", "calls": 2, "tokens": {"total_tokens": 240}},
    }
    summary = ab.summarize({"report": report, "seconds": 3.5})
    assert summary == ReviewSummary(
        "reject",
        (Claim("verified", 0.3), Claim("refuted", 0.8)),
        ("refuted",),
        calls=2,
        tokens=240,
        seconds=3.5,
    )
    assert ab.summarize({"report": None, "error": "boom"}) is None
