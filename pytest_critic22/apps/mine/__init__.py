"""``critic22 mine``: a labelled population from the repository's own history.

Every small commit that changes code and a test that fails before it and passes after (a bug
fix or a feature alike) is a good patch with tests that prove it; a small wrong variant of it
that the old tests still accept is a defective patch whose defect is known. The stages, pure
ones apart from I/O:
:mod:`~pytest_critic22.apps.mine.select` (which commits are candidates; pure),
:mod:`~pytest_critic22.apps.mine.mutants` (operator mutants of a fix's added lines; pure),
:mod:`~pytest_critic22.apps.mine.outcomes` (per-test outcomes as node ids; pure),
:mod:`~pytest_critic22.apps.mine.assemble` (the population document and the oracle; pure),
:mod:`~pytest_critic22.apps.mine.probe` (one commit in sandboxed worktrees; I/O),
:mod:`~pytest_critic22.apps.mine.driver` (the history, the cache and the pool; I/O),
:mod:`~pytest_critic22.apps.mine.output` (the files and the summary; I/O) and
:mod:`~pytest_critic22.apps.mine.cli` (``critic22 mine``'s arguments and :func:`main`).
"""

from __future__ import annotations

from pytest_critic22.apps.mine.cli import main

__all__ = ["main"]
