"""The run's I/O objects and registries, handed to the pipeline's stages (data only)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_critic22.critic.critic import Completion
    from pytest_critic22.execution.ledger import Ledger
    from pytest_critic22.execution.sandbox import Sandbox
    from pytest_critic22.execution.trees import TreeSet
    from pytest_critic22.kinds import KindRegistry

__all__ = ["Services"]


@dataclass(frozen=True, slots=True)
class Services:
    """The run's I/O objects and registries, handed to the pipeline."""

    repo: Path
    trees: TreeSet
    ledger: Ledger
    sandbox: Sandbox
    kinds: KindRegistry
    checks: Any
    state_dir: Callable[[], Path]  # the run's state folder, made on first use
    make_completion: Callable[[Any], Completion]  # CriticSettings -> the model client
    progress: Callable[[str], None] | None = None  # shows the model call under way
