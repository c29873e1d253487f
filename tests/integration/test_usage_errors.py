"""Bad input and unwritable outputs.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_usage_errors.py.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.execution.trees import trees_root
from tests.unit.test_usage_errors import PATCH

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


as_root = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def repo(pytester: pytest.Pytester) -> Path:
    """A one-module git repository with a patch beside it, in pytester's folder."""
    (pytester.path / "m.py").write_text("x = 1\ny = 2\n")
    (pytester.path / "test_m.py").write_text("def test_ok():\n    assert True\n")
    init_repo(pytester.path)
    with open(pytester.path / ".git" / "info" / "exclude", "a") as fh:
        fh.write("runpytest-current\nstdout\nstderr\np.diff\n")
    (pytester.path / "p.diff").write_bytes(PATCH)
    return pytester.path


PYTESTER_FILES = {"runpytest-current", "stdout", "stderr"}


def state(repo: Path) -> tuple[str, str, set[str]]:
    """What a refused run must not change: the registered worktrees, the status, and the
    files in the repository (ignored ones too; pytester's own output files aside)."""
    return (
        git(["worktree", "list", "--porcelain"], repo).stdout,
        git(["status", "--porcelain", "--untracked-files=all"], repo).stdout,
        {
            str(p.relative_to(repo))
            for p in repo.rglob("*")
            if p.relative_to(repo).parts[0] not in {".git", *PYTESTER_FILES}
            and not p.relative_to(repo).parts[0].startswith("runpytest-")  # its --basetemp
        },
    )


def refused(pytester: pytest.Pytester, repo: Path, *args: str, words: tuple[str, ...]) -> str:
    """Run pytest; assert it stops with exactly one ERROR line, and return that line."""
    before = state(repo)
    result = pytester.runpytest_subprocess(*args)
    output = result.stdout.str() + "\n" + result.stderr.str()
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert len(errors) == 1, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    for word in words:
        assert word in errors[0], errors[0]
    assert state(repo) == before
    assert git(["worktree", "list"], repo).stdout.count("\n") == 1
    assert not trees_root(repo).exists()
    return errors[0]


@pytest.mark.skipif(as_root, reason="root writes into a read-only folder anyway")
def test_a_read_only_state_folder_is_one_error(pytester: pytest.Pytester, repo: Path) -> None:
    folder = repo / ".critic22"
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n")
    folder.chmod(0o555)
    try:
        refused(
            pytester,
            repo,
            "--critic22=p.diff",
            words=("the state folder", "Permission denied", "--critic22-ledger"),
        )
    finally:
        folder.chmod(0o755)


def test_the_sandbox_is_resolved_after_the_probe_ended_never_beside_it(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runconfig.resolve_sandbox waits for the probe the configuration started: a second
    probe beside a slow first one would run bubblewrap twice, and could decide the run's
    sandbox on one answer while the cache keeps the other."""
    from pytest_critic22.execution import sandbox

    lock, inside, calls = threading.Lock(), [0], []
    controller_probed = threading.Event()

    def probe() -> str:
        with lock:
            inside[0] += 1
            calls.append((threading.current_thread().name, inside[0]))
        if threading.current_thread() is threading.main_thread():
            controller_probed.set()
        else:  # slow: the controller would probe beside it were it not waiting
            controller_probed.wait(timeout=1)
        with lock:
            inside[0] -= 1
        return "a probe that says no"

    monkeypatch.setattr(sandbox, "probe_bwrap", probe)
    pytester.parseconfigure("--critic22=p.diff")
    assert calls == [("critic22-probe", 1), ("MainThread", 1)]
