"""One child per tree for many findings, confirmation in the same child, lean child start-up.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_batching.py.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_critic22.execution.batching import Batcher, RunChild, RunRequest, split
from pytest_critic22.execution.child_plugins import (
    blocked_plugins,
    installed_plugins,
)
from pytest_critic22.execution.junit import Case
from pytest_critic22.execution.runner import run_cases, run_pytest
from pytest_critic22.model.results import RunResult
from pytest_critic22.verification.decide import confirm_failure, confirmation_runs
from pytest_critic22.verification.procedures import ExecutionContext, run_confirmed
from tests.unit.test_batching import child

FLAKY = """\
import pathlib

def test_flaky(tmp_path_factory):
    marker = pathlib.Path("seen")
    first = not marker.exists()
    marker.write_text("x")
    assert not first  # fails the first time only
"""


FRESH = """\
import pytest

made = []

@pytest.fixture
def box():
    made.append(1)
    return []

def test_fixture_is_fresh_each_attempt(box):
    box.append(1)
    # attempt 1: the fixture ran once, so this fails; attempt 2 (same process: made is kept)
    # passes only if the fixture ran again and gave a new list
    assert len(made) == 2 and len(box) == 1, (made, box)
"""


ALWAYS = "def test_always():\n    assert 1 == 2\n"


def test_a_failing_test_is_attempted_again_in_the_same_child_until_it_passes(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_f.py").write_text(FLAKY)
    first = run_pytest(tmp_path, ["test_f.py"], timeout=60, pythonpath=[tmp_path], attempts=3)
    assert first.status == "failed"
    assert first.attempts == {"test_f::test_flaky": ("failed", "passed")}
    runs = confirmation_runs(first, 3)
    assert [r.status for r in runs] == ["failed", "passed"]
    outcome = confirm_failure(runs)
    assert outcome is not None and outcome.reason == "flaky: failed 1 of 2 runs on the patched tree"


def test_each_attempt_gets_fresh_function_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_f.py").write_text(FRESH)
    (tmp_path / "test_g.py").write_text(ALWAYS)
    run = run_pytest(tmp_path, ["test_g.py"], timeout=60, pythonpath=[tmp_path], attempts=3)
    assert run.attempts == {"test_g::test_always": ("failed", "failed", "failed")}
    runs = confirmation_runs(run, 3)
    assert [r.status for r in runs] == ["failed"] * 3 and confirm_failure(runs) is None
    assert [r.attempt for r in runs] == [0, 2, 3]
    fresh = run_pytest(tmp_path, ["test_f.py"], timeout=60, pythonpath=[tmp_path], attempts=3)
    assert fresh.attempts == {"test_f::test_fixture_is_fresh_each_attempt": ("failed", "passed")}


STICKY = """\
import pathlib

CALLS = []

def test_sticky():
    CALLS.append(1)
    marker = pathlib.Path("failed-once")
    first = not marker.exists()
    marker.write_text("x")
    # fails the first time ever, and again in a process where it ran before (state it left)
    assert not first and len(CALLS) == 1
"""


@pytest.mark.parametrize(
    ("mode", "statuses"),
    [
        ("inprocess", ["failed", "failed", "failed"]),  # every attempt in the first child
        ("fresh-last", ["failed", "failed", "passed"]),  # the last a fresh child: clean
        ("process", ["failed", "passed"]),  # a fresh child each
    ],
)
def test_the_rerun_mode_decides_where_a_failure_is_confirmed(
    tmp_path: Path, mode: str, statuses: list[str]
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_s.py").write_text(STICKY)
    (tmp_path / "slots").mkdir()
    ctx = ExecutionContext(
        patch=cast(Any, None),
        trees=cast(Any, None),
        timeout=60,
        reruns=3,
        slots=1,
        slot_dir=tmp_path / "slots",
        pythonpath=(str(tree),),
        rerun_mode=mode,
    )
    runs = run_confirmed(ctx, tree, ["test_s.py"])
    assert [r.status for r in runs] == statuses, [r.output for r in runs]
    outcome = confirm_failure(runs)
    if mode == "inprocess":  # what a failed attempt left behind fails the next one too
        assert outcome is None
    else:
        assert outcome is not None and outcome.reason.startswith("flaky")


def test_requests_on_one_tree_merge_into_one_child_and_split_by_node_id(tmp_path: Path) -> None:
    (tmp_path / "test_p1.py").write_text(ALWAYS)
    (tmp_path / "test_p2.py").write_text("def test_ok():\n    pass\n")
    (tmp_path / "test_p3.py").write_text("import no_such_module\n")
    batcher = Batcher(child(tmp_path), parallel=2)

    def work(name: str, times: int) -> RunResult:
        return batcher.run(RunRequest(tmp_path, (name,), times))

    jobs = batcher.execute(
        [
            lambda: work("test_p1.py", 2),
            lambda: work("test_p2.py", 2),
            lambda: work("test_p3.py", 2),
        ]
    )
    f1, f2, f3 = (job.value for job in jobs)
    assert f1 is not None and f2 is not None and f3 is not None
    assert (f1.status, f1.merged, f1.attempts) == (
        "failed",
        3,
        {"test_p1::test_always": ("failed", "failed")},
    )
    assert f1.tests == {"test_p1::test_always": "failed"}
    assert "assert 1 == 2" in f1.output
    assert (f2.status, f2.tests) == ("passed", {"test_p2::test_ok": "passed"})
    # A collection error is run again alone: its reason is exactly a run of its own's.
    alone = run_pytest(tmp_path, ["test_p3.py"], timeout=60, pythonpath=[tmp_path])
    assert (f3.status, f3.reason, f3.merged) == ("error", alone.reason, 0)
    assert batcher.stats.children == 1 and batcher.stats.alone == 1


def test_a_generated_module_never_shares_a_child(tmp_path: Path) -> None:
    # F1's module changes a global at import; merged, F2's verdict would be F1's doing.
    (tmp_path / "shared.py").write_text("LIMIT = 10\n")
    (tmp_path / "test_critic22_f1.py").write_text(
        "import shared\nshared.LIMIT = 5\n\ndef test_a():\n    pass\n"
    )
    (tmp_path / "test_critic22_f2.py").write_text(
        "import shared\n\ndef test_b():\n    assert shared.LIMIT == 10\n"
    )
    (tmp_path / "test_project.py").write_text("def test_c():\n    pass\n")
    batcher = Batcher(child(tmp_path), parallel=1)
    jobs = batcher.execute(
        [
            lambda: batcher.run(RunRequest(tmp_path, ("test_critic22_f1.py",))),
            lambda: batcher.run(RunRequest(tmp_path, ("test_critic22_f2.py",))),
            lambda: batcher.run(RunRequest(tmp_path, ("test_project.py",))),
        ]
    )
    assert [job.value.status for job in jobs if job.value] == ["passed"] * 3
    assert batcher.stats.children == 3 and batcher.stats.groups == [1, 1, 1]


SEEING_CONFTEST = """\
import os

def pytest_collect_file(file_path, parent):
    # what the project's own collection hook is shown, one file a line
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "seen.txt"), "a") as seen:
        seen.write(f"{file_path.name}\\n")
"""


@pytest.mark.parametrize("how", ["fork-server", "child"])
def test_a_session_of_named_files_never_collects_another_findings_module(
    tmp_path: Path, how: str
) -> None:
    """As in a tree of its own: pytest makes no node of another finding's module beside the
    one named, and the project's collection hooks never see it; its own files they see as
    pytest shows them. A session that collects a folder gets everything there."""
    from pytest_critic22.execution.forkserver import ForkRequest, run_forked
    from pytest_critic22.execution.sandbox import probe_bwrap, resolve

    if how == "fork-server" and probe_bwrap() is not None:
        pytest.skip("needs bubblewrap")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(SEEING_CONFTEST)
    for name in ("test_critic22_f1", "test_critic22_f2", "test_critic22_f3", "test_project"):
        (tests / f"{name}.py").write_text("def test_it():\n    pass\n")
    seen = tmp_path / "seen.txt"

    def run(*args: str) -> list[str]:
        seen.write_text("")
        if how == "child":
            result = run_pytest(tmp_path, list(args), timeout=60, pythonpath=[tmp_path])
        else:
            (found,) = run_forked(
                tmp_path,
                [ForkRequest(tuple(args))],
                timeout=60,
                pythonpath=[tmp_path],
                sandbox=resolve("bwrap"),
            )
            assert found is not None
            result = found[0]
        assert result.status == "passed", result.output
        return sorted(set(seen.read_text().split()))  # each file once

    everything = ["conftest.py", *(f"test_critic22_f{n}.py" for n in (1, 2, 3)), "test_project.py"]
    assert run("tests/test_critic22_f2.py") == [
        "conftest.py",
        "test_critic22_f2.py",
        "test_project.py",
    ]
    assert run("tests/test_critic22_f1.py::test_it", "tests/test_project.py") == [
        "conftest.py",
        "test_critic22_f1.py",
        "test_project.py",
    ]
    assert run("tests") == everything


def two_trees(tmp_path: Path) -> tuple[Path, Path, list[tuple[str, ...]], RunChild]:
    """A patched tree whose test fails, a counterfactual whose test passes, and a child
    that records the node ids of every real run it makes."""
    patched, counter = tmp_path / "patched", tmp_path / "counter"
    for tree, body in ((patched, "assert 1 == 2"), (counter, "pass")):
        tree.mkdir()
        (tree / "test_claim.py").write_text(f"def test_claim():\n    {body}\n")
    runs: list[tuple[str, ...]] = []
    lock = threading.Lock()

    def run(
        t: Path, nodeids: Sequence[str], attempts: int, merged: int
    ) -> tuple[RunResult, list[Case]]:
        with lock:
            runs.append((t.name, *nodeids))
        return run_cases(t, list(nodeids), timeout=60, pythonpath=[t], attempts=attempts)

    return patched, counter, runs, run


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_speculative_run_starts_only_on_a_free_slot_and_is_read_when_claimed(
    tmp_path: Path, parallel: int
) -> None:
    patched, counter, runs, run = two_trees(tmp_path)
    batcher = Batcher(run, parallel=parallel)
    seen: list[str] = []

    def procedure() -> RunResult:
        early = batcher.speculate(RunRequest(counter, ("test_claim.py",)))
        first = batcher.run(RunRequest(patched, ("test_claim.py",)))
        seen.append(f"{first.status}, then claimed")
        return batcher.claim(early)

    (job,) = batcher.execute([procedure])
    assert job.error is None and job.value is not None and job.value.status == "passed"
    assert seen == ["failed, then claimed"]
    # Two slots: the counterfactual ran in the patched run's round, claiming it ran nothing
    # more. One slot: it waited for the claim, then ran as an ordinary request.
    assert sorted(runs) == [("counter", "test_claim.py"), ("patched", "test_claim.py")]
    assert batcher.stats.children == 2
    assert batcher.stats.speculative == (1 if parallel == 2 else 0)
    assert batcher.stats.requests == 2 and batcher.stats.wasted == 0


@pytest.mark.parametrize("parallel", [1, 2])
def test_a_dropped_speculative_run_is_never_started_late(tmp_path: Path, parallel: int) -> None:
    patched, counter, runs, run = two_trees(tmp_path)
    (patched / "test_claim.py").write_text("def test_claim():\n    pass\n")  # refuted
    batcher = Batcher(run, parallel=parallel)

    def procedure() -> RunResult:
        early = batcher.speculate(RunRequest(counter, ("test_claim.py",)))
        first = batcher.run(RunRequest(patched, ("test_claim.py",)))
        batcher.drop(early)  # the patched run passed: the counterfactual says nothing
        return first

    (job,) = batcher.execute([procedure])
    assert job.value is not None and job.value.status == "passed"
    if parallel == 2:  # started beside the patched run, then not wanted
        assert sorted(runs) == [("counter", "test_claim.py"), ("patched", "test_claim.py")]
        assert (batcher.stats.speculative, batcher.stats.wasted) == (1, 1)
    else:  # no free slot in that round: never run
        assert runs == [("patched", "test_claim.py")]
        assert (batcher.stats.speculative, batcher.stats.wasted) == (0, 0)


@pytest.mark.parametrize("parallel", [2, 4])
def test_a_free_slot_goes_to_speculative_runs_before_a_tree_s_sessions_are_cut(
    tmp_path: Path, parallel: int
) -> None:
    """Enough findings to cut each tree's sessions in four, each with a speculative
    counterfactual. Two slots: the other slot takes the counterfactuals instead of a cut, so
    each tree's runs are one group, its tree's only one (alone: it may take the tree's booted
    fork-server), and no run waits for a later round; cut first, the patched tree would need
    two fork-servers and the counterfactual tree more, in rounds as the patched groups ended.
    Four slots: two each, never more for the speculative runs than for the wanted ones."""
    from pytest_critic22.execution.batching import _MIN_SESSIONS

    patched, counter = tmp_path / "patched", tmp_path / "counter"
    names = [f"test_critic22_f{i}.py" for i in range(_MIN_SESSIONS * 4)]
    for tree, body in ((patched, "assert 1 == 2"), (counter, "pass")):
        tree.mkdir()
        for name in names:
            (tree / name).write_text(f"def test_claim():\n    {body}\n")
    groups: list[tuple[str, int, bool]] = []
    lock = threading.Lock()

    def forked(
        tree: Path, requests: Sequence[RunRequest], alone: bool
    ) -> list[tuple[RunResult, list[Case]] | None]:
        with lock:
            groups.append((tree.name, len(requests), alone))
        nodeids = [n for request in requests for n in request.nodeids]
        merged, cases = run_cases(tree, nodeids, timeout=60, pythonpath=[tree])
        return [(part, []) if part else None for part in split(merged, cases, requests)]

    batcher = Batcher(child(tmp_path), parallel=parallel, run_forked=forked)

    def procedure(name: str) -> RunResult:
        early = batcher.speculate(RunRequest(counter, (name,)))
        first = batcher.run(RunRequest(patched, (name,)))
        assert first.status == "failed", first.output
        return batcher.claim(early)

    jobs = batcher.execute([lambda name=name: procedure(name) for name in names])
    assert [job.value.status for job in jobs if job.value] == ["passed"] * len(names)
    cut = parallel // 2
    each = [(tree, len(names) // cut, cut == 1) for tree in ("counter", "patched")]
    assert sorted(groups) == sorted(each * cut)
    assert batcher.stats.speculative == len(names) and batcher.stats.alone == 0


def test_a_run_that_errors_with_plugins_blocked_is_run_again_with_all(tmp_path: Path) -> None:
    names = {name for name, _ in installed_plugins()}
    if "hypothesispytest" not in names:
        pytest.skip("needs hypothesis' pytest plugin installed")
    # --hypothesis-show-statistics is an option of the blocked plugin: a usage error without it.
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    assert "hypothesispytest" in blocked_plugins(tmp_path, ["test_a.py"])  # so the first errs
    result = run_pytest(
        tmp_path, ["test_a.py", "--hypothesis-show-statistics"], timeout=60, pythonpath=[tmp_path]
    )
    assert result.status == "passed"


# Every child pytest that starts in the tree counts itself in a file beside this conftest.
COUNTING = (
    "import pathlib\n\ndef pytest_sessionstart(session):\n"
    "    with open(pathlib.Path(__file__).with_name('children.n'), 'a') as f:\n"
    "        f.write('x')\n"
)


def _children(tree: Path) -> int:
    counted = tree / "children.n"
    return len(counted.read_text()) if counted.exists() else 0


@pytest.mark.parametrize(
    ("body", "status", "children"),
    [
        ("from os import no_such_name", "error", 1),  # the critic's test imports what is not
        ("import no_such_module_anywhere", "error", 1),
        ("def broken(:", "error", 1),  # does not parse
        # worker_id is xdist's fixture: the run with every plugin has it, and decides
        ("def test_f(worker_id):\n    pass", "passed", 2),
        # no installed plugin defines this one: every plugin in would not help
        ("def test_f(no_plugin_defines_this):\n    pass", "error", 1),
    ],
    ids=[
        "ImportError",
        "ModuleNotFoundError",
        "SyntaxError",
        "a blocked plugin's fixture",
        "a fixture of no installed plugin",
    ],
)
def test_a_blocked_run_is_run_again_whole_unless_its_modules_failed_to_import(
    tmp_path: Path, body: str, status: str, children: int
) -> None:
    if "xdist" not in blocked_plugins(tmp_path, []):
        pytest.skip("needs xdist installed (and so blocked here)")
    (tmp_path / "conftest.py").write_text(COUNTING)
    (tmp_path / "test_a.py").write_text(body + "\n")
    result, _ = run_cases(tmp_path, ["test_a.py"], timeout=60, pythonpath=[tmp_path])
    assert result.status == status
    assert _children(tmp_path) == children


@pytest.mark.parametrize(
    ("nodeid", "children"),
    [
        ("test_a.py::test_no_such_test", 1),  # the critic names a test that is not there
        ("test_a.py::test_p[asyncio]", 2),  # parametrized: a plugin's parameters, maybe
    ],
    ids=["not there", "a parameter not there"],
)
def test_a_test_that_is_not_there_is_run_again_whole_only_if_a_plugin_could_add_it(
    tmp_path: Path, nodeid: str, children: int
) -> None:
    if "xdist" not in blocked_plugins(tmp_path, []):
        pytest.skip("needs xdist installed (and so blocked here)")
    (tmp_path / "conftest.py").write_text(COUNTING)
    (tmp_path / "test_a.py").write_text("def test_present():\n    pass\n")
    result, _ = run_cases(tmp_path, [nodeid], timeout=60, pythonpath=[tmp_path])
    assert result.status == "error" and result.exit_code == 4
    assert _children(tmp_path) == children
