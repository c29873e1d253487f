"""Whether a critic is worth engaging: a pure decision over facts the run gathered.

Declining is a correct outcome (an empty L column): a small patch whose every changed
executable line is covered by preservation tests that pass on the patched tree gains
little from a critic and the deterministic gates already guard it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["EngageDecision", "Thresholds", "decide_engage"]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The largest blast radius that may still be declined (ini: critic22_max_<name>)."""

    edits: int = 3
    files: int = 2
    symbols: int = 4
    callers: int = 12
    modules: int = 3


@dataclass(frozen=True, slots=True)
class EngageDecision:
    engage: bool
    reason: str  # "covered" when declined on the blast-radius test

    def to_dict(self) -> dict[str, object]:
        return {"engage": self.engage, "reason": self.reason}


def decide_engage(
    *,
    radius: Mapping[str, int],
    uncovered: Mapping[str, Sequence[int]],
    preservation_status: str,
    thresholds: Thresholds = Thresholds(),
) -> EngageDecision:
    """The blast-radius test. Flags, CRITIC=off and "no model" are decided before this."""
    over = [
        f"{name} {radius.get(name, 0)} > {getattr(thresholds, name)}"
        for name in ("edits", "files", "symbols", "callers", "modules")
        if radius.get(name, 0) > getattr(thresholds, name)
    ]
    if over:
        return EngageDecision(True, "blast radius: " + ", ".join(over))
    if uncovered:
        spots = "; ".join(
            f"{path}:{','.join(str(n) for n in lines)}" for path, lines in sorted(uncovered.items())
        )
        return EngageDecision(True, f"changed lines not covered by preservation tests: {spots}")
    if preservation_status != "passed":
        return EngageDecision(
            True, f"preservation tests on the patched tree: {preservation_status}"
        )
    return EngageDecision(False, "covered")
