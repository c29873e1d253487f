"""The loop's deterministic parts, in-process.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_loop_logic.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.loop.compose import ComposeError, candidate_sources, compose
from pytest_critic22.apps.loop.model import ItemResult
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.execution.git import git, head_commit
from tests.helpers import diff_of
from tests.unit.test_loop_logic import item


def _repo(git_repo: Path) -> tuple[str, str]:
    patch = diff_of(
        git_repo,
        {"m.py": "def f(x):\n    if x is None:\n        raise ValueError\n    return x\n"},
        {"m.py": "def f(x):\n    return x\n"},
    )
    git(["reset", "-q", "--hard"], git_repo)
    return head_commit(git_repo), patch


REPAIR = """\
--- a/m.py
+++ b/m.py
@@ -1,2 +1,4 @@
 def f(x):
+    if x is None:
+        raise ValueError
     return x
"""


def test_compose_applies_fixes_in_order_and_skips_what_no_longer_applies(git_repo: Path) -> None:
    base, patch = _repo(git_repo)
    before = git(["status", "--porcelain"], git_repo).stdout
    composed = compose(git_repo, base, patch, [("F1", REPAIR), ("F2", REPAIR)])
    assert composed.applied == ("F1",)
    ((key, why),) = composed.skipped
    assert key == "F2" and "does not apply after the fixes before it" in why
    assert composed.diff == ""  # patch + its exact inverse: nothing changes against the base
    # the user's checkout and index are untouched, and no worktree was made
    assert git(["status", "--porcelain"], git_repo).stdout == before
    assert len(git(["worktree", "list"], git_repo).stdout.splitlines()) == 1
    sources = candidate_sources(git_repo, base, patch, ["m.py"])
    assert sources == {"m.py": "def f(x):\n    return x\n"}


def test_compose_refuses_a_candidate_that_does_not_apply(git_repo: Path) -> None:
    base, _ = _repo(git_repo)
    with pytest.raises(ComposeError):
        compose(git_repo, base, REPAIR.replace("def f(x)", "def g(x)"), [])


T = (
    "def test_f():\n    import m\n    import pytest\n"
    "    with pytest.raises(TypeError):\n        m.f(None)\n"
)


TYPE_REPAIR = REPAIR.replace("raise ValueError", "raise TypeError")


def _plan(git_repo: Path, items: list[ItemResult], replies: str = "", **kw: Any) -> Any:
    import io

    from pytest_critic22.apps.loop.fixes import FixContext, plan_fixes
    from pytest_critic22.apps.loop.steps import Reviewer, RunSpec

    base, patch = _repo(git_repo)
    opts = LoopOptions(git_repo, git_repo / "p.diff", checkpoint=bool(replies), **kw)
    out = io.StringIO()
    ctx = FixContext(opts, git_repo, base, io.StringIO(replies), out)
    reviewer = Reviewer(RunSpec(git_repo, base), git_repo / "traces")
    status, fixes, following = plan_fixes(
        ctx, reviewer, 1, items, {}, git_repo / "c.diff", patch, 2, "not ready"
    )
    return status, fixes, following, patch, reviewer.notes


def test_a_repair_applies_and_answers_its_own_scar(git_repo: Path) -> None:
    f1 = item("verified", falsification=f"test:\n{T}repair:\n{TYPE_REPAIR}")
    scar = item("verified", "scar", id="S1", procedure="scar", falsification="scar:\n" + T)
    status, fixes, following, patch, _ = _plan(git_repo, [f1, scar])
    assert status == "continue" and [(f.finding_id, f.status) for f in fixes] == [("F1", "applied")]
    assert "raise TypeError" in following and following != patch


def test_a_verified_finding_without_a_fix_stops_not_ready(git_repo: Path) -> None:
    f1 = item("verified", falsification=f"test:\n{T}repair:\n{TYPE_REPAIR}")
    f2 = item("verified", id="F2", procedure="static", falsification="static: removed-guard e1")
    status, fixes, following, patch, _ = _plan(git_repo, [f1, f2])
    assert status == "no-fix" and following == patch
    assert [(f.finding_id, f.status) for f in fixes] == [("F1", "skipped")]
    assert "no verified fix for F2" in fixes[0].reason


def test_only_existing_tests_failing_leaves_nothing_to_apply(git_repo: Path) -> None:
    group = item("verified", "validator", id="preserve[t.py]", procedure="preservation")
    status, fixes, _following, _patch, _ = _plan(git_repo, [group])
    assert (status, fixes) == ("no-fix", ())


def test_nothing_verified_reviews_the_same_candidate_again(git_repo: Path) -> None:
    status, fixes, following, patch, _ = _plan(git_repo, [item("inconclusive")])
    assert (status, fixes, following) == ("continue", (), patch)


def test_fixes_that_undo_the_whole_patch_stop_the_loop(git_repo: Path) -> None:
    f1 = item("verified", falsification=f"test:\n{T}repair:\n{REPAIR}")
    status, fixes, _following, _patch, notes = _plan(git_repo, [f1])
    assert status == "no-fix" and fixes[0].status == "applied"
    assert any("undo the whole patch" in n for n in notes)


@pytest.mark.parametrize(
    ("reply", "status", "fix"),
    [
        ("skip 1", "no-fix", "skipped"),
        ("stop", "stopped", "skipped"),
        ("go", "continue", "applied"),
    ],
)
def test_checkpoint_replies_in_the_table(git_repo: Path, reply: str, status: str, fix: str) -> None:
    f1 = item("verified", falsification=f"test:\n{T}repair:\n{TYPE_REPAIR}")
    got, fixes, _following, _patch, _ = _plan(git_repo, [f1], reply + "\n")
    assert got == status and [f.status for f in fixes] == [fix]


def test_the_checkpoint_is_offered_even_when_a_fix_is_missing(git_repo: Path) -> None:
    f2 = item("verified", id="F2", procedure="static", falsification="static: removed-guard e1")
    status, _fixes, _following, _patch, _ = _plan(git_repo, [f2], "stop\n")
    assert status == "stopped"  # the person was asked (and could have applied a fix)
