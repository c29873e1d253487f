"""Helpers for end-to-end runs: a sample repository as a real git repository in pytester."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir, case_options
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.report.formats.github import md


def make_sample(pytester: pytest.Pytester, sample: str) -> Path:
    """Copy a sample repository into pytester's folder and commit it."""
    shutil.copytree(SAMPLES_DIR / sample / "repo", pytester.path, dirs_exist_ok=True)
    init_repo(pytester.path)
    # pytester's own files (runpytest-current, stdout, stderr) are not the user's work, and
    # .coverage is what the user's own session writes when its addopts say --cov (projenv).
    with open(pytester.path / ".git" / "info" / "exclude", "a") as fh:
        fh.write("runpytest-current\nstdout\nstderr\n.coverage\n")
    return pytester.path


def case_args(sample: str, case: str) -> list[str]:
    return case_options(case_dir(sample, case))


def expected(sample: str, case: str) -> dict[str, Any]:
    return json.loads((case_dir(sample, case) / "expected.json").read_text())


def repo_state(repo: Path) -> tuple[str, str, str]:
    """What must not change: registered worktrees, status, and the branch."""
    return (
        git(["worktree", "list", "--porcelain"], repo).stdout,
        git(["status", "--porcelain", "--untracked-files=all"], repo).stdout,
        git(["rev-parse", "--abbrev-ref", "HEAD"], repo).stdout,
    )


def check_github(outlines: Sequence[str], summary: Path, sarif_path: Path) -> None:
    """The issue's end-to-end check, of median-drops-guard's run as under GitHub Actions
    (tests/test_e2e_samples.py runs it with --critic22-reruns=2): its annotations, and the job
    summary that links the SARIF report."""
    lines = [line for line in outlines if line.startswith("::")]
    assert (
        "::error file=textstats/stats.py,line=9,endLine=9,title=critic22 F1 verified::"
        "mean() no longer raises ValueError on empty input; it returns 0.0. (F1 verified: "
        "fails on patched (2/2 runs) and passes on the without-e2 tree)"
    ) in lines
    assert sum(line.startswith("::error ") for line in lines) == 3  # F1, F2, preservation
    assert sum(line.startswith("::notice ") for line in lines) == 2  # F4, F5
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## critic22: REJECT\n")
    assert f"- SARIF report (--critic22-sarif): {md(str(sarif_path))}\n" in text
