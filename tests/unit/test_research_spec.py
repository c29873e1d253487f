"""The research spec's isolated tests for phases 1-3 (seeds: spec section 7).

Every test here also proves that no model client was imported or called.
"""

from __future__ import annotations

import json

import pytest

from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.model.packet import BLIND_CONTRACT, PACKET_ELEMENTS, build_packet
from pytest_critic22.model.patch import WHOLE_PATCH, parse_patch

pytestmark = pytest.mark.usefixtures("no_model_client")

TWO_HUNKS = (
    "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
    "@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n"
    "@@ -20,3 +20,3 @@\n t = 1\n-u = 2\n+u = 5\n v = 4\n"
)


def finding(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "location": "e1",
        "claim": "b changed.",
        "severity": "blocking",
        "evidence": "e1",
        "falsification": "test:\ndef test_b():\n    assert True\n",
        "confidence": 0.5,
    }
    base.update(kw)
    return base


# Phase 1: review-packet constructor + blinding
def test_phase1_packet_has_exactly_the_five_elements() -> None:
    packet, _ = build_packet(parse_patch(TWO_HUNKS), specification="s", root_cause="r")
    assert tuple(packet.to_dict()) == PACKET_ELEMENTS


def test_phase1_the_four_stripped_fields_are_absent_even_when_present_in_the_input() -> None:
    request = {
        "specification": "s",
        "generator_rationale": "because",
        "self_confidence": 0.99,
        "peer_votes": {"r1": "approve"},
        "provenance": {"model": "m", "run": 7},
    }
    packet, report = build_packet(parse_patch(TWO_HUNKS), request=request)
    wire = packet.canonical_json()
    for name in BLIND_CONTRACT:
        assert name not in wire
    for value in ("because", "0.99", "approve"):
        assert value not in wire
    assert {r.field for r in report.removals} == set(BLIND_CONTRACT)


# Phase 2: diff parser
def test_phase2_a_two_hunk_patch_is_two_atomic_edits_plus_a_whole_patch_view() -> None:
    patch = parse_patch(TWO_HUNKS)
    assert patch.edit_ids == ("e1", "e2")
    assert patch.edits[0].hunk != patch.edits[1].hunk
    assert patch.whole_patch == TWO_HUNKS


def test_phase2_the_location_vocabulary_is_edit_id_or_whole_patch() -> None:
    patch = parse_patch(TWO_HUNKS)
    assert patch.locations == {"e1", "e2", WHOLE_PATCH}
    for location in ("e1", "e2", WHOLE_PATCH):
        assert parse_findings(json.dumps([finding(location=location)]), patch.edit_ids).findings
    assert parse_findings(json.dumps([finding(location="e3")]), patch.edit_ids).rejected


# Phase 3: ReviewFinding schema + parser
@pytest.mark.parametrize("field", ["location", "claim"])
def test_phase3_a_finding_missing_location_or_claim_is_rejected(field: str) -> None:
    record = finding()
    del record[field]
    result = parse_findings(json.dumps([record]), ("e1", "e2"))
    assert result.findings == () and len(result.rejected) == 1


def test_phase3_a_blocking_finding_with_empty_falsification_is_downgraded() -> None:
    result = parse_findings(json.dumps([finding(falsification="")]), ("e1", "e2"))
    assert result.blocking == ()
    assert [f.severity for f in result.findings] == ["advisory"]
    assert result.downgraded[0].reason == "falsification is empty"


def test_phase3_a_severity_outside_the_set_is_rejected() -> None:
    result = parse_findings(json.dumps([finding(severity="critical")]), ("e1", "e2"))
    assert result.findings == () and "severity" in result.rejected[0].reason
