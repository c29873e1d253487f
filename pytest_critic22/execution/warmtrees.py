"""Warm trees: worktrees kept between runs and reset, rather than built anew.

``git worktree add`` writes every file of the repository (seconds on a big one); a tree kept
from an earlier run is brought to the base commit by a git-level reset that rewrites only
what differs (a tenth of a second). ``--critic22-fresh-trees`` opts out.

**Where.** ``<repository>/.critic22/critic22-trees/``: the repository's state folder, which
``.critic22/.gitignore`` (``*``) hides from ``git status``. Not the system temp folder: a
run leaves nothing there (a tmpfs would keep the trees in memory, and systemd-tmpfiles ages
files out of it), and a pool dies with its repository instead of outliving it in ``/tmp``.

**States of an entry** ``NAME`` (a folder, ``NAME.json``; ``NAME.index`` while free):

- *held* by a run: registered as a worktree of the repository; ``holder`` is the run's folder
  (``trees_root/<run id>``), which holds a link ``<variant> -> entry`` to it. A holder is
  gone when that folder's owner is (:func:`runowner.owner_alive`: a dead, zombie or reused
  PID): its entries are free again at the next sweep, so a run killed with SIGKILL loses
  nothing. Not a lock held by one process: under xdist the process that builds a tree may be
  a worker, which exits (or is replaced) before the run ends.
- *free*: reset to its base commit, and **not** registered (no ``.git`` file in it and no
  ``.git/worktrees`` entry; its index kept beside it), so between runs ``git worktree list``
  shows only the user's own worktrees and no code a critic wrote stays on disk.

Taking a free entry registers it again (``git worktree add --no-checkout`` at its path, then
its kept index: no file is rewritten) and resets it: ``git clean -ffdx`` (``-x``: what a
previous run's children wrote, ignored or not, caches and build output included, is not in
a fresh tree either; ``-ff``: nor a nested repository), ``git checkout --detach --force
BASE``, ``clean`` again, then ``git status --ignored`` must be empty and ``HEAD`` the base.
Anything else discards the entry and the caller builds a fresh tree: never a wrong tree.
At most ``max_trees`` free entries are kept, the most recently used, none unused for
longer than ``max_age``. Every method runs under the repository-wide lock
(:func:`trees._repo_lock`), which the caller holds.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytest_critic22.execution.child_files import remove_tree
from pytest_critic22.execution.git import GitError, git
from pytest_critic22.execution.ledger import ensure_state_dir
from pytest_critic22.execution.runner import usable_cpus
from pytest_critic22.execution.statedir import STATE_DIR

__all__ = ["FAILURES", "MAX_AGE", "MAX_TREES", "POOL", "WarmError", "WarmPool"]

POOL = "critic22-trees"
MAX_TREES = 6  # base, patched, their critic views, a counterfactual, the base harness
MAX_AGE = 7 * 24 * 3600.0

_META = ".json"
_INDEX = ".index"
_HOLD = ".hold"
# The index moves in and out of the registration as one file: no shared or cached parts.
_ONE_FILE_INDEX = ("-c", "core.splitIndex=false", "-c", "core.untrackedCache=false")


class WarmError(RuntimeError):
    """A warm tree cannot be used as it is; the caller builds a fresh one."""


# What the warm path may fail with; every one of them means "build a fresh tree instead".
FAILURES: tuple[type[BaseException], ...] = (
    OSError,
    GitError,
    WarmError,
    ValueError,
    KeyError,
    TypeError,
    subprocess.SubprocessError,
)


class WarmPool:
    """The warm trees of one repository."""

    def __init__(
        self,
        repo: Path,
        alive: Callable[[Path], bool],
        *,
        max_trees: int = MAX_TREES,
        max_age: float = MAX_AGE,
    ) -> None:
        self.repo = repo
        self.folder = repo / STATE_DIR / POOL
        self.alive = alive  # is the run whose folder this is still running?
        self.max_trees = max_trees
        self.max_age = max_age

    # -- what the trees of a run use --------------------------------------------------------

    def take(self, name: str, base: str, holder: Path) -> Path:
        """A tree at ``base``, clean, registered and held by ``holder``: a free one reset (the
        same base first, then the most recently used), else a new one made in the pool.
        Raises one of :data:`FAILURES` when neither can be had."""
        ensure_state_dir(self.folder.parent)  # its .gitignore hides the pool from git status
        self.folder.mkdir(exist_ok=True)
        self.sweep()
        for entry in self._free(base):
            try:
                return self._reuse(entry, name, base, holder)
            except FAILURES:
                continue  # discarded; try the next one
        return self._create(name, base, holder)

    def give_back(self, trees: Iterable[Path], holder: Path) -> int:
        """Reset ``holder``'s trees to their base, unregister them and keep them (within the
        bounds); a tree that is not ``holder``'s is left alone. Returns how many came back."""
        held: list[tuple[str, dict[str, Any]]] = []
        for tree in trees:
            if tree.parent != self.folder:
                continue
            meta = self._read(tree.name)
            if meta is None or meta.get("holder") != str(holder):
                continue
            held.append((tree.name, meta))
        count = len(held)
        if count > 1:  # each reset is git in a worktree of its own: side by side
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(count, usable_cpus())) as pool:
                list(pool.map(lambda entry: self._release(*entry), held))
        elif held:
            self._release(*held[0])
        if count:
            _forget_missing(self.repo)
            self._bound()
        return count

    def sweep(self) -> None:
        """Free the entries of runs that are gone, remove what an interrupted change left
        (a folder without its record, a record without its folder), then apply the bounds."""
        if not self.folder.is_dir():
            return
        names = {p.name for p in self.folder.iterdir() if p.is_dir() and not p.is_symlink()}
        for child in sorted(self.folder.iterdir()):
            name = child.name
            if child.is_dir() and not child.is_symlink():
                if name.endswith(_HOLD) or self._read(name) is None:
                    self._discard(name.removesuffix(_HOLD))
            elif not (name.endswith((_META, _INDEX)) and name.rsplit(".", 1)[0] in names):
                child.unlink(missing_ok=True)  # a record of a folder that is gone, a stray file
        released = False
        for name, meta in self._entries():
            holder = meta.get("holder")
            if holder is not None and not self._holder_alive(str(holder)):
                self._release(name, meta)
                released = True
        if released:
            _forget_missing(self.repo)
        self._bound()

    def entries(self) -> dict[str, dict[str, Any]]:
        """The pool's records by entry name (for tests and diagnostics)."""
        return dict(self._entries())

    # -- the steps --------------------------------------------------------------------------

    def _reuse(self, old: str, name: str, base: str, holder: Path) -> Path:
        new = self._new_name(name)
        tree = self.folder / new
        self._hold(new, base, holder, None)
        try:
            # Renamed, so the folder names the variant in tracebacks and reports.
            os.rename(self.folder / old, tree)
            kept = self.folder / (old + _INDEX)
            if kept.exists():
                os.rename(kept, self.folder / (new + _INDEX))
            (self.folder / (old + _META)).unlink(missing_ok=True)
            admin = self._register(new, base)
            self._hold(new, base, holder, admin)
            index = self.folder / (new + _INDEX)
            if index.exists():
                shutil.copy2(index, admin / "index")  # the times too: git's racy-entry check
                index.unlink()
            _reset(tree, base)
        except FAILURES:
            self._discard(old)
            self._discard(new)
            raise
        return tree

    def _create(self, name: str, base: str, holder: Path) -> Path:
        new = self._new_name(name)
        tree = self.folder / new
        self._hold(new, base, holder, None)
        try:
            git(["worktree", "add", "--detach", "--force", str(tree), base], self.repo)
            admin = _admin_of(tree)
        except FAILURES:
            self._discard(new)
            raise
        self._hold(new, base, holder, admin)
        return tree

    def _register(self, name: str, base: str) -> Path:
        """Register the free entry ``name`` as a worktree at its own path without writing a
        file of it: ``worktree add --no-checkout`` needs an empty folder, so the entry waits
        beside it and gets the new ``.git`` file. Returns the registration's folder."""
        tree, hold = self.folder / name, self.folder / (name + _HOLD)
        os.rename(tree, hold)
        git(["worktree", "add", "--no-checkout", "--detach", "--force", str(tree), base], self.repo)
        admin = _admin_of(tree)
        os.replace(tree / ".git", hold / ".git")  # whatever stood there (a folder fails)
        os.rmdir(tree)
        os.rename(hold, tree)
        return admin

    def _release(self, name: str, meta: dict[str, Any]) -> None:
        """Held -> free: reset to its base, its index kept, its ``.git`` file gone (the caller
        then has git forget the registration). Else discarded."""
        tree = self.folder / name
        try:
            admin = Path(str(meta["admin"]))
            if (admin / "gitdir").read_text().strip() != str(tree / ".git"):
                raise WarmError(f"{admin} is not the registration of {tree}")
            # The tree was writable by the run's children: its .git file is rewritten, so
            # git works on this registration and no other.
            dotgit = tree / ".git"
            if dotgit.is_dir() and not dotgit.is_symlink():
                raise WarmError(f"{dotgit} is a folder")
            dotgit.unlink(missing_ok=True)
            dotgit.write_text(f"gitdir: {admin}\n")
            _reset(tree, str(meta["base"]), verify=False)  # verified when it is taken again
            shutil.copy2(admin / "index", self.folder / (name + _INDEX))
            dotgit.unlink()
        except FAILURES:
            # Unregistered by the caller's prune, once every tree is released: a prune here
            # could catch another tree released beside this one between its two .git writes.
            self._discard(name, registered=False)
            return
        self._write(name, {"base": meta["base"], "used": time.time(), "holder": None})

    def _discard(self, name: str, *, registered: bool = True) -> None:
        """Remove an entry whatever its state; git forgets its registration (a free entry,
        ``registered=False``, has none)."""
        for leftover in (self.folder / name, self.folder / (name + _HOLD)):
            _remove(leftover)
        for suffix in (_META, _INDEX):
            (self.folder / (name + suffix)).unlink(missing_ok=True)
        if registered:
            _forget_missing(self.repo)

    def _bound(self) -> None:
        now = time.time()
        free = [(name, meta) for name, meta in self._entries() if meta.get("holder") is None]
        free.sort(key=lambda item: -float(item[1].get("used", 0.0)))
        for number, (name, meta) in enumerate(free):
            if number >= self.max_trees or now - float(meta.get("used", 0.0)) > self.max_age:
                self._discard(name, registered=False)

    # -- records ----------------------------------------------------------------------------

    def _free(self, base: str) -> list[str]:
        free = [(name, meta) for name, meta in self._entries() if meta.get("holder") is None]
        free.sort(key=lambda item: (item[1].get("base") != base, -float(item[1].get("used", 0))))
        return [name for name, _ in free]

    def _entries(self) -> list[tuple[str, dict[str, Any]]]:
        if not self.folder.is_dir():
            return []
        out = []
        for child in sorted(self.folder.iterdir()):
            if child.is_dir() and not child.is_symlink():
                meta = self._read(child.name)
                if meta is not None:
                    out.append((child.name, meta))
        return out

    def _read(self, name: str) -> dict[str, Any] | None:
        try:
            meta = json.loads((self.folder / (name + _META)).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or not isinstance(meta.get("base"), str):
            return None
        return meta

    def _hold(self, name: str, base: str, holder: Path, admin: Path | None) -> None:
        """Record ``name`` as held; written before each step, so a crash leaves a record."""
        meta = {"base": base, "used": time.time(), "holder": str(holder)}
        if admin is not None:
            meta["admin"] = str(admin)
        self._write(name, meta)

    def _write(self, name: str, meta: dict[str, Any]) -> None:
        path = self.folder / (name + _META)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(meta))
        os.replace(temporary, path)

    def _new_name(self, variant: str) -> str:
        return f"{variant}-{secrets.token_hex(4)}"

    def _holder_alive(self, holder: str) -> bool:
        folder = Path(holder)
        return folder.is_dir() and self.alive(folder)


def _reset(tree: Path, base: str, *, verify: bool = True) -> None:
    """Make ``tree`` what a fresh worktree at ``base`` is; with ``verify``, prove it (HEAD is
    the base, and nothing is modified, untracked or ignored) or raise WarmError."""

    def run(*args: str) -> str:
        return git([*_ONE_FILE_INDEX, *args], tree).stdout

    _drop_nested_git(tree)
    checkout = ("checkout", "--detach", "--force", "-q", base)
    try:
        run(*checkout)
    except GitError:  # an untracked folder where the base has a file: clear the way first
        run("clean", "-ffdxq")
        run(*checkout)
    run("clean", "-ffdxq")
    if not verify:
        return
    status = ("status", "--porcelain=v2", "-z", "--branch", "--ignored=matching", "-uall")
    records = [r for r in run(*status).split("\0") if r]
    head = [r.removeprefix("# branch.oid ") for r in records if r.startswith("# branch.oid ")]
    left = [r for r in records if not r.startswith("# ")]
    if head != [base] or left:
        raise WarmError(f"{tree} is not a clean checkout of {base[:10]}: {head} {left[:5]}")


def _drop_nested_git(tree: Path) -> None:
    """Remove every entry named ``.git`` below the tree's root (links not followed): git
    neither lists nor cleans such a path, so what a child put there would outlive every
    reset. A fresh worktree has none (submodules are not checked out)."""
    for folder, dirs, files in os.walk(tree):
        if ".git" in dirs or ".git" in files:
            if Path(folder) != tree:
                _remove(Path(folder) / ".git")
            dirs[:] = [d for d in dirs if d != ".git"]


def _forget_missing(repo: Path) -> None:
    """Have git forget the registrations whose tree has no ``.git`` file any more."""
    git(["worktree", "prune"], repo, check=False)


def _admin_of(tree: Path) -> Path:
    """The registration folder (``.git/worktrees/X``) a new worktree's ``.git`` file names."""
    text = (tree / ".git").read_text().strip()
    if not text.startswith("gitdir: "):
        raise WarmError(f"{tree / '.git'} names no git folder")
    admin = Path(text.removeprefix("gitdir: "))
    if not admin.is_absolute() or not admin.is_dir():
        raise WarmError(f"{tree / '.git'} names {admin}, not a folder")
    return admin


def _remove(path: Path) -> None:
    """Remove a file or a whole folder, links not followed; folders a child made unreadable
    or read-only are given back their owner's bits first (root ignores the bits, everyone
    else does not): :func:`pytest_critic22.execution.child_files.remove_tree`."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    remove_tree(path)
