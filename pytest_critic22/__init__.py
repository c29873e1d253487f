"""pytest-critic22: a critic proposes falsifiable findings; generated tests decide.

Importing the package is cheap on purpose: pytest loads it for every run through the
``pytest11`` entry point, and only ``--critic22`` pulls in the pipeline.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
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

#: The harness API, loaded on first use (``pytest_critic22.review``).
_API = frozenset(
    ("review", "ReviewReport", "ReviewRun", "FindingOutcome", "PreservationOutcome", "ReviewCounts")
)


#: The review loop (``pytest_critic22.loop``), loaded on first use.
_LOOP = frozenset(("loop", "LoopResult", "LoopOptions", "LoopError"))


def __getattr__(name: str) -> Any:
    # The harness API (``pytest_critic22.review``) without paying for it at plugin load.
    if name in _API:
        from pytest_critic22 import api

        return getattr(api, name)
    if name in _LOOP:
        from pytest_critic22.reviewloop import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'pytest_critic22' has no attribute {name!r}")
