"""Hook specifications other plugins implement to extend pytest-critic22.

Every hook is called in the process that needs it (the controller, and each xdist worker
for the registries), once per run. Implement them in a ``conftest.py`` or a plugin module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_critic22.checks import CheckRegistry
    from pytest_critic22.critic.critic import Completion, CriticSettings
    from pytest_critic22.kinds import KindRegistry
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RunInfo
    from pytest_critic22.verification.procedures import FindingResult


@pytest.hookspec
def pytest_critic22_register_checks(registry: CheckRegistry) -> None:
    """Add ``static:`` checks for this run: call ``registry.register(Check(...))``.

    ``registry`` is a :class:`pytest_critic22.checks.CheckRegistry` holding the built-in
    checks; a check is a name, a one-line description, a ``run`` function over the located
    edits' base and patched sources, and VALID / INVALID examples. A registered check is
    listed, with its description, in the grammar section of the critic's prompt.
    """


@pytest.hookspec
def pytest_critic22_register_procedures(registry: KindRegistry) -> None:
    """Add falsification kinds for this run: call ``registry.register(kind)``.

    ``registry`` is a :class:`pytest_critic22.kinds.KindRegistry` holding the built-in kinds.
    A kind (see :class:`pytest_critic22.verification.procedures.ProcedureKind`) has a ``name`` (its
    grammar prefix), a ``grammar`` (the text the critic's prompt shows for it), ``parse(rest)``,
    ``validate(finding, procedure, scope)`` and ``execute(finding_id, finding, procedure,
    ctx)``. The router, the generated items and the prompt pick it up; nothing else changes.
    ``parse`` returns ``Procedure(name, Args((word, ...)))``: a plugin kind's payload is its
    words (:class:`pytest_critic22.extend.Args`), which is what reaches an xdist worker.
    Everything a kind runs must go through the sandbox (``ctx.sandbox``, see
    :func:`pytest_critic22.execution.runner.run_pytest`).
    """


@pytest.hookspec(firstresult=True)
def pytest_critic22_make_completion(
    config: pytest.Config, settings: CriticSettings
) -> Completion | None:
    """The model client the critic is asked through, once per run, on the controller.

    Return a :class:`pytest_critic22.critic.critic.Completion` (a callable ``(messages, *,
    timeout) -> (text, usage)``), or None to leave it to the next implementation. The
    default (``trylast``) is litellm with ``settings`` (model, api base, temperature, ...).
    """


@pytest.hookspec
def pytest_critic22_review_finished(
    review: Review,
    results: dict[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    config: pytest.Config,
) -> None:
    """The review is decided: ``review`` (the frozen
    :class:`pytest_critic22.pipeline.review.Review`), ``results`` (result id ->
    :class:`pytest_critic22.verification.procedures.FindingResult`, the preservation groups'
    ``preserve[...]`` included), the gate's ``disposition`` and ``run``
    (:class:`pytest_critic22.pipeline.review.RunInfo`: run id, ledger, notes, sandbox, timings).
    Called on the controller after the gate, before the terminal summary; an implementation may
    take any subset of these arguments. Every report format is an implementation: the JSON report
    (``--critic22-report``), SARIF, GitHub annotations, HTML.
    """
