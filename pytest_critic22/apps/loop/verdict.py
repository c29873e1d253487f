"""A round's verdict, score and stop decision: from execution only, never from the critic.

verdict: ``not ready`` if any blocking finding or preservation group is verified;
``almost`` if none is verified but some are inconclusive; ``ready`` otherwise.
``score = max(0, 10 - 4*verified - inconclusive)``. Stop (acquit) exactly when
``score >= 6 and verdict in {ready, almost}``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_critic22.apps.loop.model import ItemResult

__all__ = ["POSITIVE_SCORE", "is_positive", "score_of", "verdict_of"]

POSITIVE_SCORE = 6
BLOCKED = "BLOCKED"


def _counts(items: Iterable[ItemResult]) -> tuple[int, int]:
    statuses = [i.status for i in items]
    return statuses.count("verified"), statuses.count("inconclusive")


def verdict_of(items: Iterable[ItemResult]) -> str:
    verified, inconclusive = _counts(items)
    if verified:
        return "not ready"
    return "almost" if inconclusive else "ready"


def score_of(items: Iterable[ItemResult]) -> int:
    verified, inconclusive = _counts(items)
    return max(0, 10 - 4 * verified - inconclusive)


def is_positive(score: int, verdict: str) -> bool:
    """The seed's POSITIVE_THRESHOLD, AND form: both must hold."""
    return score >= POSITIVE_SCORE and verdict in ("ready", "almost")
