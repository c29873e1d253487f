"""Everything an extension of pytest-critic22 needs, in one module.

A plugin adds a falsification kind (``pytest_critic22_register_procedures``), a static check
(``pytest_critic22_register_checks``), a model client (``pytest_critic22_make_completion``)
or a report (``pytest_critic22_review_finished``); the hook specifications are
:mod:`pytest_critic22.plugin.hooks`. It imports its types from here and from nowhere else in
the package: the layout behind these names may change, these names do not.
"""

from __future__ import annotations

from pytest_critic22.checks import Check, CheckRegistry, Example, FileChange, Hit
from pytest_critic22.critic.critic import Completion, CriticSettings
from pytest_critic22.execution.trees import TreeError, TreeSet, Variant
from pytest_critic22.kinds import KindRegistry
from pytest_critic22.model.patch import ParsedPatch
from pytest_critic22.model.procedure import Args, FindingLike, NotExecutable, Procedure, Route
from pytest_critic22.model.results import Disposition, Outcome, RunResult
from pytest_critic22.pipeline.review import Review, RunInfo
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    ProcedureKind,
    Scope,
    counterfactual_variant,
    read_source,
)

__all__ = [
    "Args",
    "Check",
    "CheckRegistry",
    "Completion",
    "CriticSettings",
    "Disposition",
    "Example",
    "ExecutionContext",
    "FileChange",
    "FindingLike",
    "FindingResult",
    "Hit",
    "KindRegistry",
    "NotExecutable",
    "Outcome",
    "ParsedPatch",
    "Procedure",
    "ProcedureKind",
    "Review",
    "Route",
    "RunInfo",
    "RunResult",
    "Scope",
    "TreeError",
    "TreeSet",
    "Variant",
    "counterfactual_variant",
    "read_source",
]
