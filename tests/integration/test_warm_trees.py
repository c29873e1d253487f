"""Warm trees.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_warm_trees.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_critic22.execution.git import commit_all, git, init_repo
from pytest_critic22.execution.sandbox import resolve
from pytest_critic22.execution.trees import (
    _READY,
    TreeSet,
    TreeSetup,
    Variant,
    prune_deleted_repositories,
    prune_stale,
    trees_root,
    write_in_tree,
)
from pytest_critic22.execution.warmtrees import POOL, WarmPool
from pytest_critic22.model.patch import parse_patch
from tests.unit.test_warm_trees import (
    PINS,
    _close_pins,  # noqa: F401  (a fixture)
)

PATCH = """\
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def double(x):
-    return x * 2
+    return x * 2 + 1
--- /dev/null
+++ b/pkg/added.py
@@ -0,0 +1 @@
+ADDED = True
"""


class Repo:
    """A committed repository in tmp_path and every TreeSet a test makes on it; the finalizer
    leaves no tree, registration, pool or /tmp folder behind (and checks it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "pkg").mkdir(parents=True)
        (path / "pkg" / "__init__.py").write_text("")
        (path / "pkg" / "mod.py").write_text("def double(x):\n    return x * 2\n")
        (path / "pkg" / "other.py").write_text("VALUE = 1\n")
        (path / ".gitignore").write_text("*.pyc\n__pycache__/\nbuild/\n_version.py\n")
        self.base = init_repo(path)
        self.made: list[TreeSet] = []

    @property
    def pool(self) -> Path:
        return self.path / ".critic22" / POOL

    def trees(self, run: str, *, warm: bool = True, base: str | None = None) -> TreeSet:
        trees = TreeSet(self.path, base or self.base, run, warm=warm)
        self.made.append(trees)
        return trees

    def registered(self) -> int:
        return git(["worktree", "list", "--porcelain"], self.path).stdout.count("worktree ")

    def close(self) -> None:
        for trees in self.made:
            trees.remove_all()
        shutil.rmtree(self.path / ".critic22", ignore_errors=True)
        git(["worktree", "prune"], self.path, check=False)
        assert self.registered() == 1
        assert not trees_root(self.path).exists()


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    made = Repo(tmp_path / "repo")
    yield made
    made.close()


def inode(path: Path) -> int:
    return os.stat(path).st_ino


def pin(tree: Path) -> int:
    """An open descriptor of a file that no reset rewrites: while it is open no new file can
    get its inode (a hard link would do that too, but would change the file's ctime, and git
    rewrites a file whose ctime moved)."""
    fd = os.open(tree / ".gitignore", os.O_RDONLY)
    PINS.append(fd)
    return fd


def same_tree(tree: Path, pinned: int) -> bool:
    here, there = os.stat(tree / ".gitignore"), os.fstat(pinned)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def snapshot(tree: Path) -> dict[str, bytes]:
    """Every file and folder of a tree but git's own ``.git`` file, with its bytes (a link,
    its target)."""
    out: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(tree):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            path = Path(folder, name)
            relative = str(path.relative_to(tree))
            if relative == ".git":
                continue
            out[relative] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        out.update({str(Path(folder, d).relative_to(tree)) + "/": b"" for d in dirs})
    return out


def test_a_second_run_on_the_same_base_reuses_the_first_runs_tree(repo: Repo) -> None:
    first = repo.trees("run-1")
    tree = first.get(Variant.base())
    assert tree.parent == repo.pool and tree.name.startswith("base-")  # names its variant
    assert (first.root / "base").is_symlink()  # the run's record of what it holds
    pinned = pin(tree)
    first.remove_all()
    # Between runs: not registered, not in the user's status, reset to the base commit.
    assert repo.registered() == 1
    assert git(["status", "--porcelain", "--untracked-files=all"], repo.path).stdout == ""
    assert not (tree / ".git").exists()

    second = repo.trees("run-2")
    again = second.get(Variant.base())
    assert again != tree and again.parent == repo.pool
    assert same_tree(again, pinned)
    assert repo.registered() == 2
    assert git(["rev-parse", "HEAD"], again).stdout.strip() == repo.base


@pytest.mark.parametrize("warm", [True, False])
def test_a_counterfactual_that_leaves_out_every_edit_is_the_base_tree(
    repo: Repo, warm: bool
) -> None:
    patch = parse_patch(PATCH)
    assert patch.edit_ids == ("e1", "e2")
    trees = repo.trees("run-1", warm=warm)
    base = trees.get(Variant.base())
    # The base's files under another name: no second tree is built or reset for it.
    assert trees.get(Variant.without(patch, ("e1", "e2"))) == base
    assert sorted(p.name for p in trees.root.iterdir() if p.name.startswith(("base", "w"))) == [
        "base",
        f"base{_READY}",
    ]
    without_one = trees.get(Variant.without(patch, ("e1",)))
    assert without_one != base and (without_one / "pkg" / "added.py").is_file()
    trees.remove_all()
    assert repo.registered() == 1


def test_a_reused_tree_has_nothing_left_of_the_previous_run(repo: Repo) -> None:
    first = repo.trees("run-1")
    patched = first.get(Variant("patched", (PATCH,)))
    assert (patched / "pkg" / "added.py").exists()
    write_in_tree(patched, "tests/test_critic22_F1.py", "def test_x():\n    assert False\n")
    (patched / "untracked.txt").write_text("left")
    (patched / "stale.pyc").write_bytes(b"\0ignored")
    (patched / "pkg" / "__pycache__").mkdir()
    (patched / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (patched / "build").mkdir()
    (patched / "build" / "artefact.so").write_bytes(b"\0")
    (patched / "pkg" / "other.py").write_text("VALUE = 'modified'\n")
    (patched / "pkg" / "__init__.py").unlink()
    subprocess.run(["git", "init", "-q", str(patched / "nested")], check=True)
    os.symlink("/etc", patched / "link-out")
    pinned = pin(patched)
    first.remove_all()

    second = repo.trees("run-2")
    base = second.get(Variant.base())
    assert same_tree(base, pinned)  # the same tree, reset
    fresh = repo.trees("run-3", warm=False).get(Variant.base())
    assert snapshot(base) == snapshot(fresh)
    status = ["status", "--porcelain", "--ignored", "--untracked-files=all"]
    assert git(status, base).stdout == ""


def test_a_tree_kept_at_another_commit_is_reset_to_this_runs_base(repo: Repo) -> None:
    first = repo.trees("run-1")
    first.get(Variant.base())
    first.remove_all()
    (repo.path / "pkg" / "other.py").write_text("VALUE = 2\n")
    (repo.path / "pkg" / "new.py").write_text("NEW = 1\n")
    newer = commit_all(repo.path, "newer")
    tree = repo.trees("run-2", base=newer).get(Variant.base())
    assert (tree / "pkg" / "other.py").read_text() == "VALUE = 2\n"
    assert (tree / "pkg" / "new.py").exists()
    assert git(["rev-parse", "HEAD"], tree).stdout.strip() == newer
    entries = WarmPool(repo.path, lambda _: True).entries()
    assert [meta["base"] for meta in entries.values()] == [newer]


def test_two_holders_at_once_never_share_a_tree(repo: Repo) -> None:
    warm = repo.trees("run-0")
    pinned = pin(warm.get(Variant.base()))
    warm.remove_all()
    one, two = repo.trees("run-1"), repo.trees("run-2")
    first, second = one.get(Variant.base()), two.get(Variant.base())
    assert first != second and inode(first) != inode(second)
    assert same_tree(first, pinned) and not same_tree(second, pinned)  # the first took it
    assert len(WarmPool(repo.path, lambda _: True).entries()) == 2


def test_threads_of_one_run_build_each_tree_once(repo: Repo) -> None:
    trees = repo.trees("run-1")
    variants = [Variant.base(), Variant("patched", (PATCH,))] * 4
    got: list[Path] = []
    errors: list[BaseException] = []

    def worker(variant: Variant) -> None:
        try:
            got.append(trees.get(variant))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(v,)) for v in variants]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(got)) == 2
    assert len(WarmPool(repo.path, lambda _: True).entries()) == 2


HOLDER = """\
import sys, time
from pathlib import Path
from pytest_critic22.execution.trees import TreeSet, Variant
trees = TreeSet(Path(sys.argv[1]), sys.argv[2], sys.argv[3], warm=True)
trees.claim()
print(trees.get(Variant.base()), flush=True)
time.sleep(600)
"""


def test_a_live_holders_tree_is_never_taken_and_a_dead_ones_is_reused(repo: Repo) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(repo.path), repo.base, "run-held"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        held = Path(holder.stdout.readline().strip())
        assert held.parent == repo.pool
        (held / "written-by-the-killed-run.txt").write_text("x")
        live = repo.trees("run-live")
        other = live.get(Variant.base())
        assert other != held and inode(other) != inode(held)
        live.remove_all()
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    pinned = pin(held)
    removed = prune_stale(repo.path)  # what a review does first: the dead run's trees come back
    assert removed == [str(trees_root(repo.path) / "run-held" / "base")]
    assert repo.registered() == 1
    # Both trees are free now, at the same base; the most recently used is taken first.
    reused = repo.trees("run-after").get(Variant.base())
    assert same_tree(reused, pinned)
    assert not (reused / "written-by-the-killed-run.txt").exists()


def test_two_runs_pruning_the_same_crashed_runs_at_once_both_go_on(repo: Repo) -> None:
    """Two reviews starting side by side after crashes both find the same stale runs: each
    run is removed once, by whichever gets there first, and no review fails. (A race: a run
    another had just removed raised FileNotFoundError out of the review in 4 of 6 runs of
    this test before it was fixed; once fixed, no interleaving can fail it.)"""
    for number in range(8):
        crashed = repo.trees(f"run-crashed-{number}", warm=number % 4 == 0)
        crashed.claim()
        crashed.get(Variant.base())
        (crashed.root / "scratch" / "deep").mkdir(parents=True)
        for name in range(50):
            (crashed.root / "scratch" / "deep" / f"file{name}").write_text("x")
        (crashed.root / "owner.json").write_text(json.dumps({"pid": 2**22 + 1, "start": "0"}))
    failures: list[BaseException] = []
    together = threading.Barrier(4)

    def review_start() -> None:
        together.wait()
        try:
            prune_stale(repo.path)
        except BaseException as exc:  # pragma: no cover - only when the test fails
            failures.append(exc)

    reviews = [threading.Thread(target=review_start) for _ in range(4)]
    for review in reviews:
        review.start()
    for review in reviews:
        review.join()
    assert failures == []
    assert not list(trees_root(repo.path).glob("run-crashed-*"))
    assert repo.registered() == 1  # the warm ones are back in the pool, unregistered


def test_a_killed_runs_folder_goes_once_its_repository_is_deleted(tmp_path: Path) -> None:
    # Three repositories, each with a run that claimed its folder and built a tree.
    repos = {name: Repo(tmp_path / name) for name in ("deleted", "kept", "running")}
    runs = {name: repo.trees(f"run-{name}", warm=False) for name, repo in repos.items()}
    for name, run in runs.items():
        run.claim()
        run.get(Variant.base())
        if name != "running":  # killed: its owner is a PID no process can have
            (run.root / "owner.json").write_text(json.dumps({"pid": 2**22 + 1, "start": "0"}))
    roots = {name: trees_root(repo.path) for name, repo in repos.items()}
    try:
        shutil.rmtree(repos["deleted"].path)
        shutil.rmtree(repos["running"].path)  # deleted under a run that is still alive
        prune_deleted_repositories()
        assert roots["deleted"].is_dir()  # changed within the hour: an owner elsewhere may live
        an_hour_ago = time.time() - 3601
        for name in ("deleted", "running"):
            for path in [roots[name], *roots[name].iterdir()]:
                os.utime(path, (an_hour_ago, an_hour_ago), follow_symlinks=False)
        prune_deleted_repositories()  # (another worker's review may prune it first: the same end)
        assert not roots["deleted"].exists()
        # A repository that exists prunes its own (prune_stale); a live run keeps its folder.
        assert roots["kept"].is_dir() and roots["running"].is_dir()
        assert prune_stale(repos["kept"].path) == [str(runs["kept"].root / "base")]
        assert not roots["kept"].exists()
    finally:
        for name in ("deleted", "running"):
            shutil.rmtree(roots[name], ignore_errors=True)
        shutil.rmtree(repos["kept"].path / ".critic22", ignore_errors=True)


def test_a_dead_holders_tree_is_freed_by_the_next_take_without_a_prune(repo: Repo) -> None:
    dead = repo.trees("run-dead")
    held = dead.get(Variant.base())
    (dead.root / "owner.json").write_text(json.dumps({"pid": 2**22 + 1, "start": "0"}))
    (held / ".git").unlink()  # and its .git file lost: the registration names the tree
    pinned = pin(held)
    tree = repo.trees("run-2").get(Variant.base())
    assert same_tree(tree, pinned)
    assert git(["rev-parse", "HEAD"], tree).stdout.strip() == repo.base


def test_the_pool_keeps_the_most_recent_trees_and_none_too_old(repo: Repo) -> None:
    runs = [repo.trees(f"run-{n}") for n in range(3)]
    for trees in runs:
        trees.pool = WarmPool(repo.path, lambda _: True, max_trees=2)
        trees.get(Variant.base())
    kept = [Path(os.readlink(trees.root / "base")).name for trees in runs]
    for trees in runs:
        trees.remove_all()
    pool = WarmPool(repo.path, lambda _: True, max_trees=2)
    entries = pool.entries()
    assert sorted(entries) == sorted(kept[1:])  # the first given back is the oldest
    assert len(list(repo.pool.iterdir())) == 6  # two folders, their records and indexes
    assert repo.registered() == 1

    old = sorted(entries, key=lambda name: entries[name]["used"])[0]
    meta = json.loads((repo.pool / f"{old}.json").read_text())
    meta["used"] -= 8 * 24 * 3600
    (repo.pool / f"{old}.json").write_text(json.dumps(meta))
    pool.sweep()
    assert list(pool.entries()) == [name for name in entries if name != old]
    assert not (repo.pool / old).exists() and not (repo.pool / f"{old}.index").exists()


def test_a_broken_warm_tree_gives_way_to_a_fresh_one(repo: Repo) -> None:
    first = repo.trees("run-1")
    tree = first.get(Variant.base())
    first.remove_all()
    (tree.parent / f"{tree.name}.index").write_bytes(b"not an index")
    (tree / "pkg" / "other.py").write_text("VALUE = 'would be wrong'\n")
    pinned = pin(tree)
    fresh = repo.trees("run-2").get(Variant.base())
    assert not same_tree(fresh, pinned) and not tree.exists()  # discarded, not reused
    assert (fresh / "pkg" / "other.py").read_text() == "VALUE = 1\n"
    assert git(["status", "--porcelain", "--ignored"], fresh).stdout == ""


def test_a_tampered_git_folder_in_a_held_tree_is_discarded(repo: Repo) -> None:
    first = repo.trees("run-1")
    tree = first.get(Variant.base())
    (tree / ".git").unlink()
    (tree / ".git").mkdir()  # what a child could make of it: another repository
    first.remove_all()
    assert WarmPool(repo.path, lambda _: True).entries() == {}
    assert repo.registered() == 1


def test_no_pool_at_all_falls_back_to_todays_tree(repo: Repo) -> None:
    (repo.path / ".critic22").write_text("a file where the state folder would be")
    trees = repo.trees("run-1")
    tree = trees.get(Variant.base())
    assert tree == trees.root / "base" and not tree.is_symlink()
    (repo.path / ".critic22").unlink()


def test_fresh_trees_are_todays_trees(repo: Repo) -> None:
    trees = repo.trees("run-1", warm=False)
    tree = trees.get(Variant("patched", (PATCH,)))
    assert tree == trees.root / "patched" and tree.is_dir() and not tree.is_symlink()
    assert (tree / "pkg" / "added.py").exists()
    trees.remove_all()
    assert not (repo.path / ".critic22").exists()
    assert repo.registered() == 1


def test_the_tree_setup_runs_again_in_a_reused_tree(repo: Repo) -> None:
    (repo.path / "pkg" / "_version.py").write_text("VERSION = '1'\n")  # ignored, not tracked
    setup = TreeSetup(
        copy=("pkg/_version.py",),
        command=(sys.executable, "-c", "open('setup-ran', 'a').write('x')"),
        sandbox=resolve("rlimits"),
    )
    first = repo.trees("run-1")
    first.setup = setup
    tree = first.get(Variant.base())
    inode_pin = pin(tree)
    assert (tree / "setup-ran").read_text() == "x"
    first.remove_all()
    (repo.path / "pkg" / "_version.py").write_text("VERSION = '2'\n")
    second = repo.trees("run-2")
    second.setup = setup
    again = second.get(Variant.base())
    assert same_tree(again, inode_pin)
    assert (again / "setup-ran").read_text() == "x"  # ran anew, in a clean tree
    assert (again / "pkg" / "_version.py").read_text() == "VERSION = '2'\n"


def test_a_patch_that_does_not_apply_returns_the_tree_to_the_pool(repo: Repo) -> None:
    trees = repo.trees("run-1")
    bad = PATCH.replace("return x * 2\n", "return x * 3\n", 1)
    with pytest.raises(Exception, match="does not apply"):
        trees.get(Variant("patched", (bad,)))
    assert not os.path.lexists(trees.root / "patched")
    (entry,) = WarmPool(repo.path, lambda _: True).entries().values()
    assert entry["holder"] is None
    assert repo.registered() == 1


def test_a_copy_glob_never_brings_in_the_warm_trees_of_the_state_folder(repo: Repo) -> None:
    (repo.path / "pkg" / "_version.py").write_text("VERSION = '1'\n")
    holding = repo.trees("run-1")
    holding.setup = TreeSetup(copy=("**/_version.py",))
    held = holding.get(Variant.base())
    assert (held / "pkg" / "_version.py").exists()  # one is in the pool now, in use
    other = repo.trees("run-2")
    other.setup = TreeSetup(copy=("**/_version.py",))
    tree = other.get(Variant.base())
    assert (tree / "pkg" / "_version.py").exists()
    assert not (tree / ".critic22").exists()


def test_files_under_folders_named_git_are_not_left_for_the_next_run(repo: Repo) -> None:
    """git neither lists nor cleans a path named ``.git``: what a child's test put under one
    (or a link named so) would outlive every reset of a kept tree."""
    first = repo.trees("run-1")
    patched = first.get(Variant("patched", (PATCH,)))
    (patched / "pkg" / ".git").mkdir()
    (patched / "pkg" / ".git" / "planted.txt").write_text("left by a critic's test")
    (patched / "build").mkdir()
    os.symlink("/etc/passwd", patched / "build" / ".git")
    pinned = pin(patched)
    first.remove_all()

    base = repo.trees("run-2").get(Variant.base())
    assert same_tree(base, pinned)  # the same tree, reset
    assert not (base / "pkg" / ".git").exists() and not (base / "build").exists()
    fresh = repo.trees("run-3", warm=False).get(Variant.base())
    assert snapshot(base) == snapshot(fresh)
