"""Fork-servers booted before their runs are known (forkrun.prestart): taken only by a run
of the very same command, never left behind.

Real servers under bubblewrap. A booted server waits for its input; a run that takes it
reaps it, one that does not leaves it to :func:`discard_prestarted`, which kills it.
"""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import pytest

from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.forkserver import (
    discard_prestarted,
    prestart,
)
from pytest_critic22.execution.sandbox import probe_bwrap, resolve

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


TESTS = """
    def test_passes():
        assert True

    def test_fails():
        assert 1 + 1 == 3
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    folder = tmp_path / "tree"
    folder.mkdir()
    (folder / "test_it.py").write_text(textwrap.dedent(TESTS))
    return folder


@pytest.fixture(autouse=True)
def _no_server_outlives_the_test() -> object:
    yield
    discard_prestarted()


def test_only_the_main_thread_boots_one(tree: Path) -> None:
    # bubblewrap dies with the thread that started it (--die-with-parent): a worker thread's
    # server would be gone by the time its run came.
    answers: list[bool] = []
    worker = threading.Thread(
        target=lambda: answers.append(prestart(tree, pythonpath=[tree], sandbox=resolve("bwrap")))
    )
    worker.start()
    worker.join()
    assert answers == [False]
    assert forkrun._PRESTARTED == {}


def test_a_server_that_cannot_be_started_early_is_no_error(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forkrun, "spawn", refused)
    assert not prestart(tree, pythonpath=[tree], sandbox=resolve("bwrap"))
    assert forkrun._PRESTARTED == {}


def test_the_projects_own_runs_on_a_tree_do_not_keep_its_server_from_its_only_group() -> None:
    from pytest_critic22.execution.batching import RunRequest, _alone, _Slot

    tree = Path("/nowhere/tree")
    generated = [_Slot(RunRequest(tree, ("tests/test_critic22_f1.py",)))]
    preserved = [_Slot(RunRequest(tree, ("tests/test_mod.py",)))]
    other = [_Slot(RunRequest(tree, ("tests/test_critic22_f2.py",)))]
    assert _alone(generated, [generated, preserved])
    assert not _alone(generated, [generated, preserved, other])
