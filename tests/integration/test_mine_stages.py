"""The pure stages of ``critic22 mine``.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_mine_stages.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_critic22.apps.mine.assemble import unified_diff
from pytest_critic22.execution.git import git


def test_the_repair_diff_applies_with_git(tmp_path: Path) -> None:
    git(["init", "-q"], tmp_path)
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    diff = unified_diff("a.py", "x = 1\ny = 2\n", "x = 1\ny = 3\n")
    subprocess.run(["git", "apply", "-"], input=diff.encode(), cwd=tmp_path, check=True)
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3\n"
