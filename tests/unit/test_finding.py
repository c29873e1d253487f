from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from pytest_critic22.critic.finding import FIELDS, ReviewFinding, extract_records, parse_findings

EDITS = ("e1", "e2")
TEST_SOURCE = "test:\ndef test_guard():\n    assert True\n"


def record(**overrides: Any) -> dict[str, Any]:
    base = {
        "location": "e1",
        "claim": "The guard against empty input was removed.",
        "severity": "blocking",
        "evidence": "e1 deletes `if not values: raise ValueError`",
        "falsification": TEST_SOURCE,
        "confidence": 0.8,
    }
    base.update(overrides)
    return base


def parse(*records: dict[str, Any]) -> Any:
    return parse_findings(json.dumps(list(records)), EDITS)


def test_a_review_finding_has_exactly_the_six_fields() -> None:
    assert tuple(f.name for f in fields(ReviewFinding)) == (
        "location",
        "claim",
        "severity",
        "evidence",
        "falsification",
        "confidence",
    )
    assert tuple(f.name for f in fields(ReviewFinding)) == FIELDS


def test_a_valid_blocking_finding_is_accepted_as_is() -> None:
    result = parse(record())
    assert result.findings == (ReviewFinding(**record()),)
    assert not result.rejected and not result.downgraded and not result.dropped


@pytest.mark.parametrize("missing", FIELDS)
def test_a_record_missing_any_field_is_rejected(missing: str) -> None:
    bad = record()
    del bad[missing]
    result = parse(bad)
    assert result.findings == ()
    assert f"missing field(s): {missing}" in result.rejected[0].reason


def test_an_extra_field_is_rejected() -> None:
    result = parse(record(verdict="reject"))
    assert result.rejected[0].reason == "unexpected field(s): verdict"


@pytest.mark.parametrize("location", ["e3", "E1", "", "patch", "whole patch", 1])
def test_a_location_that_is_neither_an_edit_nor_whole_patch_is_rejected(location: Any) -> None:
    assert parse(record(location=location)).rejected


def test_whole_patch_is_a_valid_location() -> None:
    assert parse(record(location="whole-patch")).findings[0].location == "whole-patch"


@pytest.mark.parametrize("severity", ["critical", "Blocking", "", None, "advisory "])
def test_a_severity_outside_the_two_values_is_rejected(severity: Any) -> None:
    assert parse(record(severity=severity)).rejected


@pytest.mark.parametrize("confidence", [-0.1, 1.01, "0.9", None, True, float("nan")])
def test_a_confidence_that_is_not_a_number_in_0_1_is_rejected(confidence: Any) -> None:
    raw = (
        json.dumps([record(confidence=confidence)])
        if confidence == confidence
        else (json.dumps([record(confidence=0.5)]).replace("0.5", "NaN"))
    )
    assert parse_findings(raw, EDITS).rejected


@pytest.mark.parametrize(
    ("falsification", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("Run the tests and see.", "does not start with"),
        ("test:\nassert 1 ==", "does not parse"),
        ("test:\nx = 1\n", "no test function"),
        ("counterfactual:", "names no test"),
        ("static:", "names no check"),
        ("trace: tests/test_a.py::test_x repeat=500", "repeat must be"),
    ],
)
def test_a_blocking_finding_without_an_executable_falsification_is_downgraded(
    falsification: str, reason: str
) -> None:
    result = parse(record(falsification=falsification))
    assert result.blocking == ()
    assert result.findings[0].severity == "advisory"
    assert reason in result.downgraded[0].reason


def test_a_validator_can_say_a_procedure_does_not_fit_the_patch() -> None:
    def validate(finding: ReviewFinding, procedure: object) -> str | None:
        return "static: argument 'x.f' names nothing in the patch"

    result = parse_findings(
        json.dumps([record(falsification="static: signature-changed x.f")]),
        EDITS,
        validate=validate,
    )
    assert result.findings[0].severity == "advisory"
    assert result.downgraded[0].reason == "static: argument 'x.f' names nothing in the patch"


def test_an_advisory_finding_needs_no_executable_falsification() -> None:
    result = parse(record(severity="advisory", falsification=""))
    assert result.findings[0].severity == "advisory" and not result.downgraded


def test_duplicates_are_dropped_and_the_cap_drops_the_rest() -> None:
    result = parse_findings(
        json.dumps([record(), record(), record(location="e2"), record(claim="Another.")]),
        EDITS,
        max_findings=2,
    )
    assert len(result.findings) == 2
    assert [d.reason.split()[0] for d in result.dropped] == ["duplicate", "beyond"]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda s: s,
        lambda s: json.dumps({"findings": json.loads(s)}),
        lambda s: f"Here you go:\n```json\n{s}\n```\nThanks.",
        lambda s: f"Sure! {s} Let me know.",
    ],
)
def test_records_are_found_in_an_array_an_object_a_fence_or_prose(wrap: Any) -> None:
    result = parse_findings(wrap(json.dumps([record()])), EDITS)
    assert len(result.findings) == 1


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("", "empty"),
        ("no json here", "no JSON"),
        ('{"verdict": "accept"}', "without a 'findings' list"),
        ("42", "not a list"),
    ],
)
def test_unusable_output_is_an_error_not_a_crash(raw: str, error: str) -> None:
    result = parse_findings(raw, EDITS)
    assert result.findings == () and error in result.error
    assert result.problems == (result.error,)


def test_an_empty_list_is_a_valid_answer() -> None:
    assert extract_records("[]") == ([], "")
    assert parse_findings("[]", EDITS).findings == ()
