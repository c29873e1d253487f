"""Both sandbox modes for tests, and a way to see which processes of a run are alive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_critic22.execution.sandbox import Sandbox, probe_bwrap, resolve


def bwrap_or_skip() -> Sandbox:
    """bubblewrap, which CI installs: there its absence fails the test instead of skipping."""
    problem = probe_bwrap()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test the real sandbox, but bubblewrap cannot run: {problem}")
        pytest.skip(f"bubblewrap cannot run here: {problem}")
    return resolve("bwrap")


def pids_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose environment or command line holds ``marker``."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
            blob = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in blob:
            found.append(int(entry.name))
    return found
