"""pytest-critic22: a critic proposes falsifiable findings; generated tests decide.

The harness API, imported explicitly (no submodule can shadow a name here):
:func:`review` runs one review and returns a typed :class:`ReviewReport`; :func:`loop` runs
review -> repair -> re-review. An extension (a procedure kind, a static check, a report
format) imports what it needs from :mod:`pytest_critic22.extend`, and nothing else.

The package is laid out by the stages the data flows through, lowest first: ``child`` (runs
inside the sandbox), ``model``, ``execution``, ``evidence``, ``verification``,
``kinds`` and ``checks``, ``critic``, ``config``, ``pipeline``, ``report``, ``plugin``
(pytest's entry point) and ``apps``; each imports only from the layers below it.
"""

from __future__ import annotations

from pytest_critic22.apps.api import review
from pytest_critic22.apps.loop.api import loop
from pytest_critic22.apps.loop.options import LoopError, LoopOptions, LoopResult
from pytest_critic22.report.document import (
    FindingOutcome,
    PreservationOutcome,
    ReviewCounts,
    ReviewReport,
    ReviewRun,
)

__version__ = "0.1.0"  # as pyproject.toml says; the SARIF test checks they agree

__all__ = [
    "FindingOutcome",
    "LoopError",
    "LoopOptions",
    "LoopResult",
    "PreservationOutcome",
    "ReviewCounts",
    "ReviewReport",
    "ReviewRun",
    "__version__",
    "loop",
    "review",
]
