"""The run's options, read from pytest's config once into one frozen, typed value.

The pipeline (:mod:`pytest_critic22.pipeline.review`) and the executions read this, never the
config: what a stage depends on is visible in its signature.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_critic22.critic.critic import CriticSettings
    from pytest_critic22.critic.engage import Thresholds

__all__ = ["ReviewOptions", "configured_model"]


def configured_model(config: pytest.Config) -> str | None:
    """--critic22-model, else $CRITIC22_MODEL, else the ini value critic22_model."""
    value = config.getoption("critic22_model") or os.environ.get("CRITIC22_MODEL")
    if not value:
        value = str(config.getini("critic22_model") or "")
    return value.strip() or None


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    patch: str
    invocation_dir: Path
    rootpath: Path
    spec: str | None = None
    root_cause: str | None = None
    obligations: tuple[str, ...] | None = None
    request: str | None = None
    base: str = "HEAD"
    engage: str = "auto"
    findings_file: str | None = None
    model: str | None = None
    api_base: str | None = None
    temperature: float = 0.2
    max_tokens: int | None = None
    critic_timeout: float = 120.0
    retries: int = 2
    fresh: bool = False
    max_findings: int = 20
    timeout: float = 120.0  # one procedure run
    reruns: int = 3
    rerun_mode: str = "inprocess"  # inprocess | fresh-last | process
    fresh_trees: bool = False  # --critic22-fresh-trees
    pythonpath: tuple[str, ...] = ()  # folders relative to a tree (empty: detect)
    acceptance: str | None = None
    max_packet_chars: int = 60000
    preservation: str = "auto"
    impact_budget: float = 120.0  # seconds (ini critic22_impact_budget)
    testpaths: tuple[str, ...] = ()
    thresholds: tuple[tuple[str, int], ...] = ()
    only: bool = False
    allow_incomplete: bool = False
    reviewer_memory: str | None = None  # a file (critic22 loop)
    full_source: bool = False
    scar: str | None = None  # a file (critic22 loop)
    # Why the controller did not trust the working tree (no conftest.py of it imported):
    # "already has the patch applied", ...; empty when it did (options.UNTRUSTED_TREE).
    untrusted_tree: str = ""

    @classmethod
    def from_config(cls, config: pytest.Config) -> ReviewOptions:
        from pytest_critic22.config.options import (
            UNTRUSTED_TREE,
            check_ini,
            critic_tuning,
            impact_budget,
        )

        limits = check_ini(config)
        option = config.getoption
        tuning = critic_tuning(config)
        obligations = option("critic22_obligations")
        return cls(
            patch=option("critic22_patch"),
            invocation_dir=config.invocation_params.dir,
            rootpath=config.rootpath,
            spec=option("critic22_spec"),
            root_cause=option("critic22_root_cause"),
            obligations=tuple(obligations) if obligations else None,
            request=option("critic22_request"),
            base=option("critic22_base"),
            engage=option("critic22_engage"),
            findings_file=option("critic22_findings"),
            model=configured_model(config),
            api_base=option("critic22_api_base"),
            temperature=tuning.temperature,
            max_tokens=tuning.max_tokens,
            critic_timeout=option("critic22_critic_timeout"),
            retries=tuning.retries,
            fresh=option("critic22_fresh"),
            max_findings=option("critic22_max_findings"),
            timeout=option("critic22_timeout"),
            reruns=option("critic22_reruns"),
            rerun_mode=option("critic22_rerun_mode"),
            fresh_trees=option("critic22_fresh_trees"),
            pythonpath=_dirs(option("critic22_pythonpath")),
            acceptance=option("critic22_acceptance"),
            max_packet_chars=option("critic22_max_packet_chars"),
            preservation=option("critic22_preservation"),
            impact_budget=impact_budget(config),
            testpaths=tuple(str(p) for p in (config.getini("testpaths") or [])),
            thresholds=tuple(limits.items()),
            only=option("critic22_only"),
            allow_incomplete=option("critic22_allow_incomplete"),
            reviewer_memory=option("critic22_reviewer_memory"),
            full_source=option("critic22_full_source"),
            scar=option("critic22_scar"),
            untrusted_tree=config.stash.get(UNTRUSTED_TREE, ""),
        )

    def critic_settings(self) -> CriticSettings:
        from pytest_critic22.critic.critic import CriticSettings

        return CriticSettings(
            model=self.model or "",
            api_base=self.api_base,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            timeout=self.critic_timeout,
            retries=self.retries,
            fresh=self.fresh,
        )

    def engage_thresholds(self) -> Thresholds:
        from pytest_critic22.critic.engage import Thresholds

        return Thresholds(**dict(self.thresholds))

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        data = asdict(self)
        data["invocation_dir"] = str(self.invocation_dir)
        data["rootpath"] = str(self.rootpath)
        return data


def _dirs(value: str | None) -> tuple[str, ...]:
    """--critic22-pythonpath as folders relative to a tree (empty: detect src/ and root)."""
    return tuple(p.strip() for p in (value or "").split(",") if p.strip())
