"""Hook specifications other plugins implement to extend pytest-critic22."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_critic22_register_checks(registry: Any) -> None:
    """Add ``static:`` checks for this run: call ``registry.register(Check(...))``.

    ``registry`` is a :class:`pytest_critic22.checks.CheckRegistry` holding the built-in
    checks; a check is a name, a one-line description, a ``run`` function over the located
    edits' base and patched sources, and VALID / INVALID examples.
    """
