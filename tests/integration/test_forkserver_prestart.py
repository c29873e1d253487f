"""Fork-servers booted before their runs are known (forkserver.prestart).

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_forkserver_prestart.py.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.forkserver import (
    ForkRequest,
    discard_prestarted,
    prestart,
    run_forked,
)
from pytest_critic22.execution.sandbox import probe_bwrap, resolve
from tests.unit.test_forkserver_prestart import (
    _no_server_outlives_the_test,  # noqa: F401  (a fixture)
    tree,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


REQUESTS = [
    ForkRequest(("test_it.py::test_passes",)),
    ForkRequest(("test_it.py::test_fails",), runs=2),
]


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
