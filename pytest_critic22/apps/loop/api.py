"""``pytest_critic22.loop``: the review loop from Python.

The driver is imported on the call: importing the package (which every pytest run with the
plugin installed does, and every sandboxed child) stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from pytest_critic22.apps.loop.options import LoopOptions, LoopResult

__all__ = ["loop"]


def loop(
    patch: str | Path,
    *,
    repo: str | Path = ".",
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    **options: Any,
) -> LoopResult:
    """``pytest_critic22.loop(patch, repo=..., findings_dir=..., max_rounds=..., ...)``: the
    review loop from Python (the fields of :class:`LoopOptions` as keywords); a typed
    :class:`LoopResult`. Usage problems raise :class:`LoopError`."""
    from pytest_critic22.apps.loop.driver import run_loop

    here = Path(repo).resolve()
    path = Path(patch)
    opts = LoopOptions(repo=here, patch=path if path.is_absolute() else here / path, **options)
    return run_loop(opts, stdin=stdin, out=out)
