"""Measured test impact.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_measured_impact.py.
"""

from __future__ import annotations

from pathlib import Path

from pytest_critic22.evidence.measured import (
    map_key,
)
from pytest_critic22.execution.git import git
from tests.helpers import pytester_repo, write
from tests.unit.test_measured_impact import PACKAGE


def make_repo(path: Path) -> Path:
    return pytester_repo(path, PACKAGE)


def test_the_map_key_follows_the_test_files_not_the_code(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = map_key(repo, git(["rev-parse", "HEAD"], repo).stdout.strip())
    write(repo, {"clockwork/arrow.py": "x = 1\n"})
    git(["commit", "-qam", "code"], repo)
    code = git(["rev-parse", "HEAD"], repo).stdout.strip()
    write(repo, {"tests/test_arrow.py": "def test_x():\n    pass\n"})
    git(["commit", "-qam", "tests"], repo)
    tests = git(["rev-parse", "HEAD"], repo).stdout.strip()
    assert len({first, map_key(repo, code), map_key(repo, tests)}) == 3
