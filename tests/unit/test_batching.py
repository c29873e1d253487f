"""One child per tree for many findings, confirmation in the same child, lean child start-up.

Real child pytest runs in tmp_path (sandboxed like every run); the merging and splitting
logic is checked on the real runs' JUnit cases, the pure parts directly.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
from pytest_critic22.verification.decide import confirmation_runs
from pytest_critic22.verification.procedures import FindingResult


def child(tree: Path) -> RunChild:
    def run(
        t: Path, nodeids: Sequence[str], attempts: int, merged: int
    ) -> tuple[RunResult, list[Case]]:
        extra = ["--continue-on-collection-errors"] if merged > 1 else []
        return run_cases(
            t, list(nodeids), timeout=60, pythonpath=[t], attempts=attempts, extra_args=extra
        )

    return run


def test_without_attempts_a_failure_is_one_run() -> None:
    run = RunResult("failed", "", 1, 0.1, {"t::a": "failed"})
    assert confirmation_runs(run, 3) == [run]  # the caller confirms with fresh runs then


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
