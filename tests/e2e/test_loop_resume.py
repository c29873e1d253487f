"""Resuming the loop from what earlier invocations left on disk.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/integration/test_loop_resume.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.driver import run_loop
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.execution.git import git
from tests.integration.test_loop_resume import (
    CASE,
    repo,  # noqa: F401  (a fixture)
)


@pytest.mark.e2e
def test_a_legacy_state_without_run_id_gets_one_and_starts_over(repo: Path, tmp_path: Path) -> None:
    stage = repo / state.STAGE
    stage.mkdir(parents=True)
    legacy = {"round": 1, "status": "in_progress", "timestamp": state.iso_z(state.utc_now())}
    (stage / state.STATE_FILE).write_text(json.dumps(legacy))
    rounds = tmp_path / "rounds"
    rounds.mkdir()
    (rounds / "round-1.json").write_text("[]")
    out = io.StringIO()
    result = run_loop(
        LoopOptions(
            repo,
            CASE / "patch.diff",
            findings_dir=rounds,
            max_rounds=1,
            plugin_args=("--critic22-reruns=1",),
        ),
        out=out,
    )
    text = out.getvalue()
    assert f"No run_id in legacy state file; assigned {result.run_id} for this resume." in text
    assert "starting at Round 1" in text
    assert [r.round for r in result.rounds] == [1]
    assert git(["status", "--porcelain"], repo).stdout == ""
