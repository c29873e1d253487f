"""One child per tree for many findings, confirmation in the same child, lean child start-up.

Real child pytest runs in tmp_path (sandboxed like every run); the merging and splitting
logic is checked on the real runs' JUnit cases, the pure parts directly.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_critic22.execution.batching import Batcher, Cancelled, RunChild, RunRequest, split
from pytest_critic22.execution.child_plugins import (
    BLOCKABLE,
    blocked_plugins,
    blocked_plugins_innocent,
    installed_plugins,
)
from pytest_critic22.execution.junit import Case
from pytest_critic22.execution.processes import allow_children
from pytest_critic22.execution.runner import run_cases, run_pytest
from pytest_critic22.model.results import Outcome, RunResult
from pytest_critic22.plugin.itembatch import ItemBatch, ResultStore
from pytest_critic22.verification.decide import confirm_failure, confirmation_runs
from pytest_critic22.verification.procedures import ExecutionContext, FindingResult, run_confirmed

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


def child(tree: Path) -> RunChild:
    def run(
        t: Path, nodeids: Sequence[str], attempts: int, merged: int
    ) -> tuple[RunResult, list[Case]]:
        extra = ["--continue-on-collection-errors"] if merged > 1 else []
        return run_cases(
            t, list(nodeids), timeout=60, pythonpath=[t], attempts=attempts, extra_args=extra
        )

    return run


# -- confirmation in the same child --------------------------------------------------------


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


def test_without_attempts_a_failure_is_one_run() -> None:
    run = RunResult("failed", "", 1, 0.1, {"t::a": "failed"})
    assert confirmation_runs(run, 3) == [run]  # the caller confirms with fresh runs then


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


def test_a_fork_server_gets_a_tree_sessions_unless_too_few_to_share_between_two() -> None:
    """A fork-server's start costs several sessions: a tree's generated requests are cut in
    side-by-side groups only when each group gets at least _MIN_SESSIONS of them, which
    leaves the other slot to another tree's (speculative) runs."""
    from pytest_critic22.execution.batching import _MIN_SESSIONS, _grouped, _Slot

    def slots(tree: str, count: int) -> list[_Slot]:
        return [
            _Slot(RunRequest(Path(tree), (f"tests/test_critic22_f{i}.py",))) for i in range(count)
        ]

    few, many = slots("/p", _MIN_SESSIONS * 2 - 1), slots("/p", _MIN_SESSIONS * 2)
    assert [len(g) for g in _grouped(few, True, 2)] == [_MIN_SESSIONS * 2 - 1]
    assert [len(g) for g in _grouped(many, True, 2)] == [_MIN_SESSIONS, _MIN_SESSIONS]
    assert len(_grouped(many, True, 1)) == 1
    # without a fork-server every generated module has a child of its own
    assert len(_grouped(few, False, 2)) == len(few)


@pytest.mark.parametrize(
    ("parallel", "pending", "spare", "groups", "left"),
    [
        # one finding: its counterfactual beside it
        (2, {"p": 1}, {"c": 1}, [("p", 1), ("c", 1)], 0),
        # 32: the counterfactuals rather than a cut, one server per tree
        (2, {"p": 32}, {"c": 32}, [("p", 32), ("c", 32)], 0),
        # a leftover speculation is no reason not to cut 32 wanted sessions in two
        (2, {"p": 32}, {"c": 1}, [("p", 16), ("p", 16)], 1),
        # repairs' small speculations wait; the big one takes the slot
        (2, {"p": 32}, {"r1": 1, "r2": 1, "c": 30}, [("p", 32), ("c", 30)], 2),
        # four slots: two each, the wanted never fewer than the speculative
        (4, {"p": 32}, {"c": 32}, [("p", 16), ("p", 16), ("c", 16), ("c", 16)], 0),
        # two wanted trees share what the speculative one leaves: no more groups than slots
        (4, {"a": 32, "b": 32}, {"c": 32}, [("a", 32), ("b", 32), ("c", 32)], 0),
    ],
)
def test_a_round_gives_free_slots_to_big_speculative_groups_then_to_cuts_then_to_small_ones(
    parallel: int,
    pending: dict[str, int],
    spare: dict[str, int],
    groups: list[tuple[str, int]],
    left: int,
) -> None:
    from pytest_critic22.execution.batching import _Slot

    def slots(trees: dict[str, int]) -> list[_Slot]:
        return [
            _Slot(RunRequest(Path(f"/{tree}"), (f"tests/test_critic22_f{i}.py",)))
            for tree, count in trees.items()
            for i in range(count)
        ]

    def never(*_: object) -> Any:
        raise AssertionError("nothing runs here")

    batcher = Batcher(never, parallel=parallel, run_forked=never)
    batcher._pending, batcher._spare = slots(pending), slots(spare)
    made = batcher._round(forked=True)
    assert sorted((g[0].request.tree.name, len(g)) for g in made) == sorted(groups)
    assert len(batcher._spare) == left and batcher._pending == []


# -- merging and splitting ---------------------------------------------------------------


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


def test_a_run_without_per_test_outcomes_leaves_every_request_to_a_run_of_its_own() -> None:
    requests = [RunRequest(Path("."), ("a.py",)), RunRequest(Path("."), ("b.py",))]
    timed_out = RunResult("error", "timed out after 5s", None, 5.0)
    assert split(timed_out, [], requests) == [None, None]
    conftest = [Case("::conftest", "error", "")]  # a collection error nobody's module names
    usage = RunResult("error", "", 1, 1.0, {"::conftest": "error"})
    assert split(usage, conftest, requests) == [None, None]


def test_a_procedure_that_raises_is_reported_and_cancel_wakes_the_waiting(
    tmp_path: Path,
) -> None:
    started, release = threading.Event(), threading.Event()

    def held_child(
        t: Path, nodeids: Sequence[str], attempts: int, merged: int
    ) -> tuple[RunResult, list[Case]]:
        started.set()
        release.wait(60)  # a child that runs until the interrupt
        return RunResult("passed", "", 0, 0.0), []

    batcher = Batcher(held_child, parallel=1)

    def boom() -> RunResult:
        raise ValueError("a bug in a kind")

    def interrupt() -> None:
        started.wait(60)
        batcher.cancel()

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        jobs = batcher.execute([boom, lambda: batcher.run(RunRequest(tmp_path, ("x.py",)))])
        assert isinstance(jobs[0].error, ValueError)
        assert isinstance(jobs[1].error, Cancelled)  # woken while its run was in flight
        with pytest.raises(Cancelled):
            batcher.run(RunRequest(tmp_path, ("x.py",)))
        stopped = run_pytest(tmp_path, ["x.py"], timeout=60, pythonpath=[tmp_path])
        assert (stopped.status, stopped.reason) == (
            "error",
            "interrupted: no new child after Ctrl-C",
        )  # no new child after an interrupt
    finally:
        release.set()
        allow_children()


# -- a counterfactual's run started beside the patched one -----------------------------------


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


# -- the items' shared results -------------------------------------------------------------


def test_items_claimed_by_another_process_are_read_not_run_again(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    held = store.claim("F2[e1]", wait=False)
    assert held is not None and store.claim("F2[e1]", wait=False) is None  # one owner
    ran: list[str] = []

    def work(name: str) -> FindingResult:
        ran.append(name)
        return FindingResult(name, Outcome("refuted", "passes"), "base")

    mine = ItemBatch(tmp_path / "results", child(tmp_path), 1)
    peers = {"F1[e1]": lambda: work("F1[e1]"), "F2[e1]": lambda: work("F2[e1]")}
    assert mine.result("F1[e1]", peers).finding_id == "F1[e1]"
    assert ran == ["F1[e1]"]  # F2 is another process's: not run here
    store.write("F2[e1]", FindingResult("F2[e1]", Outcome("verified", "fails"), "base"))
    store.release(held)
    assert mine.result("F2[e1]", peers).outcome.kind == "verified"
    assert ran == ["F1[e1]"]


def test_an_item_whose_owner_died_without_a_result_is_run_here(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "results")
    held = store.claim("F1[e1]", wait=False)
    assert held is not None
    store.release(held)  # the owner is gone (the kernel releases a dead process's lock)
    mine = ItemBatch(tmp_path / "results", child(tmp_path), 1)
    result = mine.result(
        "F1[e1]", {"F1[e1]": lambda: FindingResult("F1[e1]", Outcome("refuted", "x"), "base")}
    )
    assert result.outcome.kind == "refuted" and store.read("F1[e1]") == result


# -- lean child start-up -----------------------------------------------------------------


def test_plugins_the_project_does_not_mention_are_blocked(tmp_path: Path) -> None:
    names = {name for name, _ in installed_plugins()}
    if "hypothesispytest" not in names or "xdist" not in names:
        pytest.skip("hypothesis and xdist are this check's installed plugins")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    assert {"hypothesispytest", "xdist"} <= set(blocked_plugins(tmp_path, ["test_a.py"]))
    (tmp_path / "test_b.py").write_text("from hypothesis import given\n")
    assert "hypothesispytest" not in blocked_plugins(tmp_path, ["test_b.py"])
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -n 2\n")
    assert "xdist" not in blocked_plugins(tmp_path, ["test_a.py"])


def test_only_plugins_that_cannot_turn_an_outcome_are_ever_blocked(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    assert set(blocked_plugins(tmp_path, ["test_a.py"])) <= BLOCKABLE
    (tmp_path / "test_m.py").write_text(
        "import pytest\n\n@pytest.mark.anyio\ndef test_m():\n    pass\n"
    )
    assert "anyio" not in blocked_plugins(tmp_path, ["test_m.py"])


def test_a_project_that_implements_a_plugins_hook_or_leaves_it_out_keeps_what_it_names(
    tmp_path: Path,
) -> None:
    if "xdist" not in {name for name, _ in installed_plugins()}:
        pytest.skip("needs xdist installed")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    assert "xdist" in blocked_plugins(tmp_path, ["test_a.py"])
    # pytest refuses a hook no loaded plugin defines: xdist's, in a conftest, keeps xdist
    (tmp_path / "conftest.py").write_text("def pytest_configure_node(node):\n    pass\n")
    assert "xdist" not in blocked_plugins(tmp_path, ["test_a.py"])
    # hooks in modules this scan does not read, or named another way: xdist is kept as well
    for conftest in ('pytest_plugins = ["helpers"]\n', "@hookimpl(specname='pytest_x')\n"):
        other = tmp_path / f"other{len(conftest)}"
        other.mkdir()
        (other / "conftest.py").write_text(conftest)
        kept = blocked_plugins(other, [])
        assert "xdist" not in kept and "hypothesispytest" in kept, conftest
    # a -p no:NAME is no use of NAME, and leaves the next option alone
    addopts = 'addopts = ["-p","no:xdist","--cov=pkg"]'
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{addopts}\n")
    assert "xdist" in blocked_plugins(bare, [])
    if "pytest_cov" in {name for name, _ in installed_plugins()}:
        assert "pytest_cov" not in blocked_plugins(bare, [])


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


def test_only_errors_no_blocked_plugin_can_cause_are_left_standing() -> None:
    failed = "collection failure\nImportError while importing test module 'x'.\nE   ImportError: y"
    syntax = 'collection failure\nE     File "t.py", line 1\nE   SyntaxError: invalid syntax'

    def fixture(name: str) -> str:
        return (
            f'failed on setup with "file t.py, line 1\nE       fixture {name!r} not found\n'
            ">       available fixtures: cache, capfd\n"
        )

    blocked = ["xdist", "pytest_cov", "hypothesispytest"]

    def innocent(*cases: Case) -> bool:
        return blocked_plugins_innocent(cases, blocked)

    assert innocent(Case("::t", "error", "", text=failed))
    assert innocent(Case("::t", "error", "", text=syntax), Case("t::a", "failed", ""))
    assert innocent(Case("t::a", "error", "t.py::a", text=fixture("benchmark")))
    for theirs in ("worker_id", "testrun_uid", "cov", "no_cover"):  # xdist's, coverage's
        assert not innocent(Case("t::a", "error", "t.py::a", text=fixture(theirs))), theirs
    assert not innocent(Case("::t", "error", "", text=failed), Case("t::b", "error", ""))
    assert not innocent()  # nothing says why: a usage error, no tests
    conftest = "collection failure\nE   pytest.PytestConfigWarning: Unknown config option: x"
    assert not innocent(Case("::t", "error", "", text=conftest))
    # only the last exception counts: one raised while handling an ImportError is another
    chained = failed + "\n\nDuring handling of the above exception...\nE   RuntimeError: z"
    assert not innocent(Case("::t", "error", "", text=chained))
    # pytest's own missing-fixture report, not an exception's message that reads like one
    message = "failed on setup with RuntimeError\nE       fixture 'benchmark' not found\n"
    assert not innocent(Case("t::a", "error", "t.py::a", text=message))
    # a usage error: only "not found" lines, none of a parameter, stand
    gone = "ERROR: not found: /t/test_a.py::test_x\n(no match in any of [<Module test_a.py>])"
    assert blocked_plugins_innocent([], blocked, gone, 4, ["test_a.py::test_x"])
    assert not blocked_plugins_innocent([], blocked, gone, 4, ["test_a.py::test_x[1]"])
    assert not blocked_plugins_innocent([], blocked, "ERROR: usage: unrecognized arguments", 4)
    assert not blocked_plugins_innocent([], blocked, gone, 1)  # not a usage error
    # a plugin whose files cannot be listed may define any fixture
    assert not blocked_plugins_innocent(
        [Case("t::a", "error", "t.py::a", text=fixture("benchmark"))], ["no-such-plugin"]
    )


def test_a_plugin_whose_files_cannot_be_read_may_define_any_fixture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_critic22.execution import child_plugins as childplugins

    if "xdist" not in {name for name, _ in installed_plugins()}:
        pytest.skip("needs xdist installed")
    text = "failed on setup\nE       fixture 'benchmark' not found\n>       available fixtures: x"
    case = Case("t::a", "error", "t.py::a", text=text)
    assert blocked_plugins_innocent([case], ["xdist"])  # xdist defines no such fixture

    def unreadable(self: Path, *args: Any, **kwargs: Any) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    childplugins._plugin_source.cache_clear()
    monkeypatch.setattr(Path, "read_text", unreadable)
    try:
        assert childplugins._plugin_source("xdist") is None
        assert not blocked_plugins_innocent([case], ["xdist"])
    finally:
        monkeypatch.undo()
        childplugins._plugin_source.cache_clear()
