"""Fork-servers booted before their runs are known (forkrun.prestart): taken only by a run
of the very same command, never left behind.

Real servers under bubblewrap. A booted server waits for its input; a run that takes it
reaps it, one that does not leaves it to :func:`discard_prestarted`, which kills it.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR
from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.forkserver import (
    ForkRequest,
    discard_prestarted,
    prestart,
    run_forked,
)
from pytest_critic22.execution.sandbox import probe_bwrap, resolve
from pytest_critic22.execution.trees import trees_root
from tests.runs import make_sample

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")

TESTS = """
    def test_passes():
        assert True

    def test_fails():
        assert 1 + 1 == 3
"""
REQUESTS = [
    ForkRequest(("test_it.py::test_passes",)),
    ForkRequest(("test_it.py::test_fails",), runs=2),
]


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


def _booted() -> subprocess.Popen[bytes]:
    (proc,) = forkrun._PRESTARTED.values()
    return proc


def _outcomes(results: list) -> list[tuple[str, dict[str, str], int]]:
    return [(r.status, r.tests, len(r.then)) for r, _cases in results]


def _gone(proc: subprocess.Popen[bytes]) -> bool:
    """Reaped, and nothing of its process group left (bubblewrap and the server in it)."""
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return proc.returncode is not None
    return False


def test_a_booted_server_is_taken_and_gives_what_a_fresh_one_gives(tree: Path) -> None:
    box = resolve("bwrap")
    fresh = run_forked(tree, REQUESTS, timeout=60, pythonpath=[tree], sandbox=box)
    assert prestart(tree, pythonpath=[tree], sandbox=box)
    booted = _booted()
    taken = run_forked(tree, REQUESTS, timeout=60, pythonpath=[tree], sandbox=box)
    assert _outcomes(taken) == _outcomes(fresh)
    assert [s for s, _, _ in _outcomes(taken)] == ["passed", "failed"]
    assert forkrun._PRESTARTED == {}
    assert _gone(booted)  # it ran the requests and ended: the run took it


def test_a_run_of_another_command_or_told_not_to_leaves_it_to_the_discard(tree: Path) -> None:
    box = resolve("bwrap")
    assert prestart(tree, pythonpath=[tree], sandbox=box)
    assert not prestart(tree, pythonpath=[tree], sandbox=box)  # one per command
    booted = _booted()
    other = run_forked(tree, REQUESTS, timeout=60, pythonpath=[tree, tree / "src"], sandbox=box)
    told = run_forked(tree, REQUESTS, timeout=60, pythonpath=[tree], sandbox=box, booted=False)
    assert [s for s, _, _ in _outcomes(other)] == ["passed", "failed"]
    assert _outcomes(told) == _outcomes(other)
    assert booted.poll() is None  # still waiting for its input
    discard_prestarted()
    assert forkrun._PRESTARTED == {}
    assert _gone(booted)


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


def _processes_in(folders: list[Path]) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if any(cwd == str(f) or cwd.startswith(f"{f}/") for f in folders):
            found.append(int(name))
    return found


def test_a_review_whose_findings_never_run_a_session_leaves_no_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A static finding reads the trees but runs no test: the servers booted for the two trees
    # the review built are never taken, and the run's end kills them.
    repo = make_sample(pytester, "textstats")
    booted: list[bool] = []
    real = forkrun.prestart
    monkeypatch.setattr(forkrun, "prestart", lambda *a, **k: booted.append(real(*a, **k)))
    findings = pytester.path.parent / "static.json"
    record = {
        "location": "e1",
        "claim": "mean() lost its guard.",
        "severity": "blocking",
        "evidence": "the diff of e1",
        "falsification": "static: removed-guard",
        "confidence": 0.5,
    }
    findings.write_text(json.dumps([record]))
    patch = SAMPLES_DIR / "textstats/cases/median-drops-guard"
    result = pytester.runpytest_inprocess(
        f"--critic22={patch / 'patch.diff'}",
        f"--critic22-findings={findings}",
        "--critic22-only",
        "--critic22-preservation=off",
    )
    assert result.ret in (0, 1), result.stdout.str()
    assert booted == [True, True]  # the patched and the base tree
    assert forkrun._PRESTARTED == {}
    assert _processes_in([repo, trees_root(repo)]) == []


def test_a_tree_whose_runs_are_cut_in_two_groups_takes_no_booted_server(tmp_path: Path) -> None:
    # Of two groups side by side, one on a booted server would finish first and its tree's
    # next runs would come in more, smaller rounds: a booted server is for a tree's only group.
    # Four slots, two trees: each tree is cut in at most two (its share), "two" in two.
    from pytest_critic22.execution.batching import Batcher, RunRequest

    box = resolve("bwrap")
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, count in ((one, 1), (two, 16)):
        (folder / "tests").mkdir(parents=True)
        for i in range(count):
            (folder / "tests" / f"test_critic22_f{i}.py").write_text("def test_it():\n    pass\n")
    calls: list[tuple[str, int, bool]] = []
    lock = threading.Lock()

    def forked(tree: Path, requests: list, alone: bool) -> list:
        with lock:
            calls.append((tree.name, len(requests), alone))
        asked = [ForkRequest(tuple(r.nodeids)) for r in requests]
        return run_forked(tree, asked, timeout=60, pythonpath=[tree], sandbox=box, booted=alone)

    def never(*args: object) -> object:
        raise AssertionError("every request is a fork-server's")

    batcher = Batcher(never, parallel=4, run_forked=forked)

    def procedure(tree: Path, i: int) -> object:
        return batcher.run(RunRequest(tree, (f"tests/test_critic22_f{i}.py",)))

    assert prestart(one, pythonpath=[one], sandbox=box)
    booted_one = _booted()
    assert prestart(two, pythonpath=[two], sandbox=box)
    (booted_two,) = [p for p in forkrun._PRESTARTED.values() if p is not booted_one]
    works = [lambda: procedure(one, 0)] + [lambda i=i: procedure(two, i) for i in range(16)]
    jobs = batcher.execute(works)
    assert all(job.error is None and job.value.status == "passed" for job in jobs)
    assert sorted(calls) == [("one", 1, True), ("two", 8, False), ("two", 8, False)]
    assert _gone(booted_one)  # taken by the only group of its tree
    assert booted_two.poll() is None  # two groups side by side: neither took it
    discard_prestarted()
    assert _gone(booted_two)


def test_a_server_limits_its_own_cpu_time_as_its_input_says_once_it_reads_it(
    tree: Path,
) -> None:
    # Booted with the boot's limit (forkrun._BOOT_CPU), it takes the run's: int(overall) + 5,
    # overall = timeout * (runs + 1) + 30 = 150 here. The server is PID 1 of its sandbox.
    (tree / "test_limit.py").write_text(
        "def test_limit():\n"
        "    rows = [r.split() for r in open('/proc/1/limits') if r.startswith('Max cpu time')]\n"
        "    assert rows[0][3] == '155', rows\n"
    )
    box = resolve("bwrap")
    assert forkrun._BOOT_CPU != 155
    for booted in (True, False):
        if booted:
            assert prestart(tree, pythonpath=[tree], sandbox=box)
        ((result, _),) = run_forked(
            tree, [ForkRequest(("test_limit.py",))], timeout=60, pythonpath=[tree], sandbox=box
        )
        assert result.status == "passed", result.output
        assert forkrun._PRESTARTED == {}


def test_a_server_booted_before_the_controller_changed_what_children_inherit_is_not_taken(
    tree: Path,
) -> None:
    # The user's own tests run in the controller between the boot and the generated items:
    # a limit (or umask, priority, affinity) they changed reaches a fresh server, not a booted one.
    import resource

    box = resolve("bwrap")
    assert prestart(tree, pythonpath=[tree], sandbox=box)
    booted = _booted()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))
    try:
        results = run_forked(tree, REQUESTS, timeout=60, pythonpath=[tree], sandbox=box)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [s for s, _, _ in _outcomes(results)] == ["passed", "failed"]
    assert booted.poll() is None  # not taken: it still waits
    discard_prestarted()
    assert _gone(booted)


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
