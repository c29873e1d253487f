"""The xdist wire format: what the controller sends its workers of the review.

A worker never reviews: it receives the routed findings and the preservation groups (plain
data, in ``workerinput``) and rebuilds the same frozen :class:`Review` from them and the
inputs it read itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_critic22.pipeline.review import Inputs, Review, RoutedFinding

__all__ = ["review_from_wire", "review_to_wire"]


def review_to_wire(review: Review) -> dict[str, Any]:
    """What a worker needs of the controller's review, as JSON-able data."""
    return {
        "wrapped": [w.to_dict() for w in review.wrapped],
        "critic": dict(review.critic),
        "preservation": {k: list(v) for k, v in review.preservation.items()},
        "harness_changed": list(review.harness_changed),
        "obligations": list(review.packet.preservation_obligations),
        "test_dir": review.test_dir,
        "acceptance": review.acceptance,
        "obligation_tests": list(review.obligation_tests),
    }


def review_from_wire(data: dict[str, Any], inputs: Inputs, base_commit: str) -> Review:
    """The controller's review, rebuilt on a worker from :func:`review_to_wire`'s data."""
    return Review(
        inputs.patch_path,
        inputs.patch,
        replace(inputs.packet, preservation_obligations=tuple(data["obligations"])),
        inputs.stripped,
        base_commit,
        wrapped=tuple(RoutedFinding.from_dict(w) for w in data["wrapped"]),
        critic=dict(data["critic"]),
        preservation={k: tuple(v) for k, v in data["preservation"].items()},
        harness_changed=tuple(data.get("harness_changed", ())),
        test_dir=str(data["test_dir"]),
        acceptance=data["acceptance"],
        obligation_tests=tuple(data["obligation_tests"]),
    )
