"""Helpers for end-to-end runs: a sample repository as a real git repository in pytester."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.gitio import git, init_repo
from pytest_critic22.samples import SAMPLES_DIR, case_dir, case_options


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
