"""The §9.6 decision of ``critic22 ab`` needs data: too few cases measured is "not enough
data", never a KEEP or a REMOVE (issue 43, item 6)."""

from __future__ import annotations

import pytest

from pytest_critic22.apps.ab import (
    ALPHA,
    MIN_DEFECTIVE,
    MIN_GOOD,
    CaseResult,
    Claim,
    ReviewSummary,
    build_report,
    fewest_discordant,
    mcnemar,
    render,
)

VALIDATOR_PROCEEDS = ReviewSummary("proceed", preservation=("refuted",))


CRITIC_PROCEEDS = ReviewSummary("proceed", preservation=("refuted",), calls=1)


CRITIC_REJECTS = ReviewSummary(
    "reject", claims=(Claim("verified", 0.9),), preservation=("refuted",), calls=1
)


def cases(defective: int, good: int) -> list[CaseResult]:
    """Defective cases each caught by the critic alone; good cases nobody rejects: the best a
    critic can do on this many cases."""
    return [
        CaseResult(f"D{i}", "defective", "failed", VALIDATOR_PROCEEDS, CRITIC_REJECTS)
        for i in range(defective)
    ] + [
        CaseResult(f"G{i}", "good", "passed", VALIDATOR_PROCEEDS, CRITIC_PROCEEDS)
        for i in range(good)
    ]


def report_of(results: list[CaseResult]) -> tuple[str, dict[str, object]]:
    report = build_report(
        population="p", critic="recorded:x", rule="all", held_out=len(results), tuning=0,
        results=results,
    )  # fmt: skip
    return render(report), report.to_dict()


def decision_line(text: str) -> str:
    (line,) = [x for x in text.splitlines() if x.startswith("decision (spec §9.6): ")]
    return line


def test_no_defective_case_measured_is_not_enough_data_rather_than_remove() -> None:
    text, document = report_of(cases(0, 2))
    line = decision_line(text)
    assert line.startswith("decision (spec §9.6): not enough data: 0 defective, 2 good measured")
    assert "REMOVE the critic" not in text and "KEEP the critic" not in text
    assert f"the rule needs at least {MIN_DEFECTIVE} defective cases" in text
    decision = document["decision"]
    assert isinstance(decision, dict)
    assert decision["decision"] == "not enough data" and decision["keep"] is None
    assert decision["headline"] == "not enough data: 0 defective, 2 good measured"
    assert decision["measured"] == {"defective": 0, "good": 2}
    assert decision["needs"] == {"defective": MIN_DEFECTIVE, "good": MIN_GOOD}


@pytest.mark.parametrize(
    ("defective", "good", "verdict"),
    [
        (MIN_DEFECTIVE - 1, 3, "not enough data"),  # the old rule said REMOVE: it could not keep
        (MIN_DEFECTIVE, 0, "not enough data"),  # recall without its over-veto
        (MIN_DEFECTIVE, MIN_GOOD, "keep"),  # the fewest cases that can keep a critic
    ],
)
def test_the_rule_decides_from_the_fewest_cases_that_could_keep_a_critic(
    defective: int, good: int, verdict: str
) -> None:
    text, document = report_of(cases(defective, good))
    decision = document["decision"]
    assert isinstance(decision, dict) and decision["decision"] == verdict
    if verdict == "keep":
        assert decision_line(text) == "decision (spec §9.6): KEEP the critic"
    else:
        assert "not enough data" in decision_line(text)


def test_a_critic_that_adds_nothing_on_enough_cases_is_removed() -> None:
    results = [
        CaseResult(r.case_id, r.label, r.ground_truth, r.validator, CRITIC_PROCEEDS)
        for r in cases(MIN_DEFECTIVE, MIN_GOOD)
    ]
    text, document = report_of(results)
    assert decision_line(text) == "decision (spec §9.6): REMOVE the critic — an empty L column"
    decision = document["decision"]
    assert isinstance(decision, dict)
    assert (decision["decision"], decision["keep"]) == ("remove", False)


def test_the_minimum_is_the_fewest_cases_the_exact_mcnemar_test_can_call_beyond_noise() -> None:
    assert MIN_DEFECTIVE == fewest_discordant(ALPHA) == 5
    assert mcnemar(5, 0)[1] < ALPHA <= mcnemar(4, 0)[1]  # 1/32 < 0.05 <= 1/16
    assert fewest_discordant(0.01) == 7  # 1/128 < 0.01 <= 1/64
    with pytest.raises(ValueError, match="alpha"):
        fewest_discordant(0.0)


def test_the_report_says_the_rule_and_an_empty_l_column_in_plain_words() -> None:
    text, _ = report_of(cases(0, 1))
    assert "in words: keep the critic only if it catches more defects than the validator" in text
    assert "an empty L column: no learned model in the review" in text


def test_the_critic_option_help_names_replay() -> None:
    from pytest_critic22.apps.ab.cli import _parser

    help_text = " ".join(_parser().format_help().split())
    assert "--critic recorded:NAME|replay:DIR|model" in help_text
    assert "replay:DIR, a folder of answers" in help_text
