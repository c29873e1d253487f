from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from pytest_critic22.model.packet import (
    BLIND_CONTRACT,
    PACKET_ELEMENTS,
    ReviewPacket,
    blind,
    build_packet,
)
from pytest_critic22.model.patch import parse_patch

PATCH = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
MAIL = (
    "From 0123456789abcdef Mon Sep 17 00:00:00 2001\n"
    "From: Agent <agent@models.example>\n"
    "Date: Mon, 1 Jan 2026 00:00:00 +0000\n"
    "Subject: [PATCH] change y\n"
    "\n"
    "Because y must be 3. I'm 85% sure this is right.\n"
    "\n"
    "Co-authored-by: model-x <m@x>\n"
    "Reviewed-by: Peer Bot <p@x>\n"
    "---\n"
    " m.py | 2 +-\n"
    "\n"
    "diff --git a/m.py b/m.py\n" + PATCH + "-- \n2.39.5\n"
)

SECRET_BITS = (
    "RATIONALE-TEXT",
    "0.93",
    "VOTE-APPROVE",
    "model-x",
    "agent@models.example",
    "85% sure",
    "Peer Bot",
)


def leaky_request() -> dict[str, Any]:
    return {
        "specification": "y must be 3.\nconfidence: 0.93",
        "diagnosed_root_cause": "test_y fails: y is 2.",
        "preservation_obligations": ["x stays 1", "I am 0.93 sure about this one"],
        "generator_rationale": "RATIONALE-TEXT",
        "self_confidence": 0.93,
        "peer_votes": ["VOTE-APPROVE"],
        "provenance": {"model": "model-x"},
        "impact_evidence": {
            "callers": ["a.py:3"],
            "meta": {"rationale": "RATIONALE-TEXT", "Peer-Votes": ["VOTE-APPROVE"]},
        },
        "harness": {"step": 4, "generator": "model-x", "notes": [{"reasoning": "RATIONALE-TEXT"}]},
    }


def test_the_packet_has_exactly_five_elements() -> None:
    packet, _ = build_packet(parse_patch(PATCH), specification="s", root_cause="r")
    assert tuple(f.name for f in fields(ReviewPacket)) == PACKET_ELEMENTS
    assert list(packet.to_dict()) == list(PACKET_ELEMENTS)
    assert set(packet.to_dict()["candidate_patch"]) == {"atomic_edits", "whole_patch"}
    assert packet.to_dict()["candidate_patch"]["atomic_edits"] == [{"edit_id": "e1", "hunk": PATCH}]
    assert packet.impact_evidence == {}


def test_the_four_stripped_fields_never_reach_the_packet_from_any_input() -> None:
    packet, report = build_packet(parse_patch(MAIL), request=leaky_request())
    wire = packet.canonical_json()
    for bit in SECRET_BITS:
        assert bit not in wire, bit
    for name in BLIND_CONTRACT:
        assert name not in wire
    assert packet.specification == "y must be 3."
    assert packet.preservation_obligations == ("x stays 1",)
    assert packet.impact_evidence == {"callers": ["a.py:3"], "meta": {}}
    assert {r.field for r in report.removals} == set(BLIND_CONTRACT)
    assert report.ignored == ("harness",)


def test_the_strip_report_says_where_each_removal_came_from() -> None:
    _, report = build_packet(parse_patch(MAIL), request=leaky_request())
    places = {(r.field, r.source, r.where) for r in report.removals}
    assert ("generator_rationale", "request", "$.generator_rationale") in places
    assert ("provenance", "request", "$.provenance") in places
    assert ("peer_votes", "request", "$.impact_evidence.meta.Peer-Votes") in places
    assert ("provenance", "patch", "line 2") in places  # From:
    assert ("peer_votes", "patch", "line 9") in places  # Reviewed-by:
    assert ("provenance", "patch", "signature") in places
    assert ("self_confidence", "request", "$.specification line 2") in places
    assert all("RATIONALE-TEXT" not in r.detail for r in report.removals)


@pytest.mark.parametrize(
    "statement",
    [
        "I am 0.9 sure",
        "I'm 90% confident",
        "confidence: 0.93",
        "Self-confidence = 0.7",
        "95% certain",
        "I am very confident",
    ],
)
def test_self_confidence_statements_are_stripped_from_text(statement: str) -> None:
    spec = f"Return 3 for y. {statement}. Keep x."
    packet, report = build_packet(parse_patch(PATCH), specification=spec)
    assert packet.specification == "Return 3 for y. Keep x."
    assert [r.field for r in report.removals] == ["self_confidence"]


def test_trailers_and_labelled_rationale_in_the_specification_are_stripped() -> None:
    spec = (
        "Return 3 for y.\n\nRationale: because the generator\nthought so.\n\n"
        "Signed-off-by: A <a@x>\nKeep x."
    )
    packet, report = build_packet(parse_patch(PATCH), specification=spec)
    assert "generator" not in packet.specification and "Signed-off-by" not in packet.specification
    assert "Keep x." in packet.specification
    assert {r.field for r in report.removals} == {"generator_rationale", "provenance"}


def test_explicit_inputs_win_over_the_request() -> None:
    packet, _ = build_packet(
        parse_patch(PATCH), specification="explicit", request={"specification": "from request"}
    )
    assert packet.specification == "explicit"


def test_blinding_is_idempotent_and_the_digest_is_canonical() -> None:
    packet, _ = build_packet(parse_patch(MAIL), request=leaky_request())
    again, report = blind(packet)
    assert again == packet and not report
    assert packet.digest == build_packet(parse_patch(MAIL), request=leaky_request())[0].digest
    assert json.loads(packet.canonical_json()) == packet.to_dict()
    assert packet.digest.startswith("sha256:") and len(packet.digest) == 7 + 64


def test_source_code_in_the_evidence_is_not_filtered_as_prose() -> None:
    from pytest_critic22.model.packet import ReviewPacket, blind

    source = "@dataclass\nclass Entry:\n    explanation: str\n    date: str\n    model: str\n"
    packet = ReviewPacket(
        specification="",
        diagnosed_root_cause="",
        preservation_obligations=(),
        impact_evidence={
            "touched_source": [{"symbol": "Entry", "source": source}],
            "note": "explanation: I wrote this because it felt right",
        },
        candidate_patch={"atomic_edits": [], "whole_patch": ""},
    )
    cleaned, report = blind(packet)
    assert cleaned.impact_evidence["touched_source"][0]["source"] == source
    # Prose elsewhere in the evidence is still filtered.
    assert "felt right" not in json.dumps(cleaned.impact_evidence)
    assert report.removals
