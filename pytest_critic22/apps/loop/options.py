"""What :func:`pytest_critic22.loop` takes and gives back: its options, its typed result, its
usage error. Kept apart from the round records so that importing the package stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_critic22.apps.loop.model import RoundRecord

__all__ = ["MAX_ROUNDS", "LoopError", "LoopOptions", "LoopResult"]

MAX_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class LoopOptions:
    repo: Path
    patch: Path
    max_rounds: int = MAX_ROUNDS
    checkpoint: bool = False
    difficulty: str = "medium"
    findings_dir: Path | None = None  # round-1.json, round-2.json, ... (a recorded critic)
    model: str | None = None
    api_base: str | None = None
    second_model: str | None = None  # nightmare (default: the model)
    fixer_model: str | None = None
    author_model: str | None = None
    base: str = "HEAD"
    engage: str | None = None  # default: always (a loop exists to ask its critic)
    plugin_args: tuple[str, ...] = ()
    timeout: float = 1800.0  # one review
    env: Mapping[str, str] | None = None


class LoopError(ValueError):
    """A usage problem: one line, said before any review runs."""


@dataclass(frozen=True, slots=True)
class LoopResult:
    run_id: str
    status: str  # acquitted | max-rounds | no-fix | blocked | stopped
    verdict: str
    score: int
    rounds: tuple[RoundRecord, ...]
    stage: Path
    final_diff: Path | None
    messages: tuple[str, ...] = ()

    @property
    def acquitted(self) -> bool:
        return self.status == "acquitted"
