"""The trees a review runs on: detached git worktrees in a temporary folder.

``base`` is the base commit, ``patched`` is base + the whole patch, and counterfactuals
are base + all edits but some, or patched + the critic's repair. Trees are made lazily,
once per variant per run, shared by every finding (and every xdist worker) that needs
them; creation is serialised repository-wide because concurrent ``git worktree add``
races on ``.git/config.lock``. The user's checkout (branch, index, stash, untracked
files) is only ever read.

With ``warm=True`` (the default; ``--critic22-fresh-trees`` is ``warm=False``) a tree comes
from the repository's pool of warm trees (:mod:`pytest_critic22.execution.warmtrees`), reset to the
base commit, and back to it at the end; the run's folder holds a link ``<variant> -> the pool's
tree``, and :meth:`TreeSet.get` returns the pool's folder (the sandbox binds real paths).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_critic22.execution.child_files import make_folder, remove_tree
from pytest_critic22.execution.git import GitError, git
from pytest_critic22.execution.runowner import OWNER, identity, owner_alive, young
from pytest_critic22.execution.sandbox import PROBE_PREFIX
from pytest_critic22.execution.statedir import STATE_DIR
from pytest_critic22.execution.warmtrees import FAILURES, WarmPool
from pytest_critic22.model.patch import ParsedPatch

__all__ = [
    "TreeError",
    "TreeSet",
    "TreeSetupError",
    "Variant",
    "prune_deleted_repositories",
    "prune_stale",
    "trees_root",
    "write_in_tree",
]

_READY = ".ready"  # beside the tree, so the tree holds only the code
_LOCK = "worktree.lock"
_LOCK_TRIES = 100  # the lock's folder removed under us this often: the error
_NOT_TREES = ("scratch", "slots")  # a run's folders that are not worktrees
_REPOSITORY = "repository"  # in a repository's trees folder: the repository's path
_ORPHAN_AGE = 3600.0  # seconds without a change before a deleted repository's folder goes


class TreeError(RuntimeError):
    """A tree could not be built; a finding that needs it is inconclusive."""


class TreeSetupError(TreeError):
    """critic22_tree_setup failed in a tree: the review cannot look (INCOMPLETE), which is
    not the same as a patch that does not apply (a usage error)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """Which tree: a name that is also its folder, and the patches that make it."""

    name: str
    patches: tuple[str, ...]  # applied in order on the base commit
    # A view where critic-written code runs: its own folder, so nothing that code does can
    # change what preservation, collection or the obligations see in the pristine trees.
    critic: bool = False

    @property
    def folder(self) -> str:
        """The tree's folder name: the variant's, set apart for a critic's view."""
        return f"critic-{self.name}" if self.critic else self.name

    def for_critic(self) -> Variant:
        """The same files in a tree of their own, for code the critic wrote."""
        return Variant(self.name, self.patches, critic=True)

    @staticmethod
    def base() -> Variant:
        return Variant("base", ())

    @staticmethod
    def patched(patch: ParsedPatch) -> Variant:
        return Variant("patched", (patch.whole_patch,))

    @staticmethod
    def without(patch: ParsedPatch, edit_ids: tuple[str, ...]) -> Variant:
        return Variant("without-" + "-".join(edit_ids), (patch.without(edit_ids),))

    @staticmethod
    def repaired(patch: ParsedPatch, repair: str) -> Variant:
        digest = hashlib.sha256(repair.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return Variant(f"repair-{digest}", (patch.whole_patch, repair))


def trees_root(repo: Path) -> Path:
    """Per-repository folder under the system temp dir that holds every run's trees."""
    key = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"critic22-trees-{key}"


class TreeSet:
    """The trees of one run. Every process of the run (xdist workers too) shares the folder."""

    def __init__(self, repo: Path, base_commit: str, run_id: str, *, warm: bool = False) -> None:
        self.repo = repo
        self.base_commit = base_commit
        self.root = trees_root(repo) / run_id
        self._made: dict[str, Path] = {}
        self._made_lock = threading.Lock()  # get() is called from several threads at once
        self.setup = TreeSetup()
        self.pool = WarmPool(repo, owner_alive) if warm else None

    @property
    def scratch(self) -> Path:
        """The run's temporary folders (JUnit reports, homes, traces): pruned with its trees."""
        return self.root / "scratch"

    @property
    def slots(self) -> Path:
        """The run's CPU slots (lock files) shared by its xdist workers."""
        return self.root / "slots"

    def claim(self) -> None:
        """Mark the run's folder as owned by this (controller) process, and the repository's
        folder with the repository's path (see :func:`prune_deleted_repositories`)."""
        make_folder(self.root)
        (self.root / OWNER).write_text(json.dumps(identity(os.getpid())))
        named = self.root.parent / _REPOSITORY
        if not named.exists():
            named.write_text(str(self.repo.resolve()), encoding="utf-8")

    def get(self, variant: Variant) -> Path:
        """The variant's tree, built by the first caller of the run (thread, process or xdist
        worker: the repository-wide file lock serialises them all, one open file each)."""
        with self._made_lock:
            made = self._made.get(variant.folder)
        if made is not None:
            return made
        if variant.name != "base" and not any(variant.patches):
            # The base's files (a counterfactual without a one-edit patch's only edit): its tree.
            tree = self.get(Variant("base", (), critic=variant.critic))
            with self._made_lock:
                self._made[variant.folder] = tree
            return tree
        ready = self.root / f"{variant.folder}{_READY}"
        with self._lock():
            if not ready.exists():
                self._build(variant, self.root / variant.folder)
            tree = Path(ready.read_text())  # a warm tree is the pool's folder
        with self._made_lock:
            self._made[variant.folder] = tree
        return tree

    def _build(self, variant: Variant, path: Path) -> None:
        if os.path.lexists(path):  # a half-built tree from an interrupted attempt
            self._drop(path)
        tree = self._warm(variant, path) if self.pool is not None else None
        if tree is None:
            tree = path
            try:
                git(
                    ["worktree", "add", "--detach", "--force", str(path), self.base_commit],
                    self.repo,
                )
            except GitError as exc:
                raise TreeError(f"cannot create the {variant.name} tree: {exc}") from None
        for number, patch in enumerate(variant.patches, 1):
            if not patch:
                continue
            # Applied as given: a repair was recounted once, when its procedure was parsed
            # (diffparse.mend_diff); git's --recount would read a second file's ---/+++ lines
            # as lines of the hunk before them.
            done = git(["apply", "--whitespace=nowarn", "-"], tree, input=patch, check=False)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
                self._drop(path)
                what = "the repair" if number == 2 else "the patch"
                raise TreeError(f"{what} does not apply for the {variant.name} tree: {first}")
        try:
            self.setup.prepare(self.repo, tree, variant.folder, scratch=self.scratch)
        except TreeError:
            self._drop(path)
            raise
        (self.root / f"{variant.folder}{_READY}").write_text(str(tree))

    def _warm(self, variant: Variant, path: Path) -> Path | None:
        """A warm tree at the base commit, linked from ``path``; None when the pool cannot
        give one (the caller builds a fresh tree: any failure here, never a wrong tree)."""
        assert self.pool is not None
        try:
            tree = self.pool.take(variant.folder, self.base_commit, self.root)
        except FAILURES:
            return None
        try:
            os.symlink(tree, path)
        except OSError:
            self.pool.give_back([tree], self.root)
            return None
        return tree

    def _drop(self, path: Path) -> None:
        """Take a tree out of the run: a warm one back to the pool, a fresh one removed."""
        if path.is_symlink():
            self._pool().give_back([Path(os.readlink(path))], self.root)
            path.unlink()
        else:
            self._remove_tree(path)

    def _pool(self) -> WarmPool:
        return self.pool if self.pool is not None else WarmPool(self.repo, owner_alive)

    def check_applies(self, patch: ParsedPatch) -> str | None:
        """Why the patch does not apply to the base commit, or None when it does."""
        try:
            self.get(Variant.patched(patch))
        except TreeSetupError:
            return None  # it applies; each item will say the tree could not be set up
        except TreeError as exc:
            return str(exc)
        return None

    def remove_all(self) -> None:
        """Remove every tree of this run and forget them in the repository (warm ones go back
        to the pool); remove the repository's folder too when no other run uses it."""
        if self.root.exists():
            _remove_run(self.repo, self.root, self._pool())
        with _repo_lock(self.root.parent):  # never while the pool moves a tree's .git file
            git(["worktree", "prune"], self.repo, check=False)
        self._made.clear()
        _remove_if_unused(self.root.parent)

    def _remove_tree(self, path: Path) -> None:
        git(["worktree", "remove", "--force", "--force", str(path)], self.repo, check=False)
        remove_tree(path)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        make_folder(self.root)
        # Repository-wide, not per run: two runs on one repository also race on config.lock.
        with _repo_lock(self.root.parent):
            yield


@contextlib.contextmanager
def _repo_lock(folder: Path) -> Iterator[None]:
    """The repository-wide lock. The lock file and its folder are removed by the last run to
    leave, even between our making the folder and opening the file (then both again), so
    after locking we check that the file we hold is still the one on disk (else lock again)."""
    lock_path = folder / _LOCK
    gone = 0
    while True:
        make_folder(folder)
        try:  # never through a link: one planted there (dangling, say) is an error
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except FileNotFoundError:  # the last run to leave removed the folder just now
            gone += 1
            if gone < _LOCK_TRIES:
                continue
            raise
        _flock(fd)
        try:
            same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _remove_if_unused(folder: Path) -> None:
    """Remove the repository's trees folder (lock file included) when no run is left in it."""
    if not folder.is_dir():
        return
    with contextlib.suppress(OSError), _repo_lock(folder):
        entries = list(folder.iterdir())  # once: a lock file made after this is not ours
        if any(child.is_dir() for child in entries):
            return
        for child in entries:
            child.unlink()
        folder.rmdir()


@dataclass(frozen=True, slots=True)
class TreeSetup:
    """What makes a fresh worktree look like the user's checkout to the project's code:
    untracked or ignored files copied in (ini ``critic22_copy``, e.g. the ``src/*/_version.py``
    that hatch-vcs or setuptools-scm write), then a command run once in the new tree, inside
    the sandbox (ini ``critic22_tree_setup``); then ``ready``, told of the tree."""

    copy: tuple[str, ...] = ()  # globs relative to the repository root
    command: tuple[str, ...] = ()  # argv, no shell
    timeout: float = 120.0
    sandbox: Any = None  # a sandbox.Sandbox; None: the default
    pythonpath: tuple[str, ...] = ()
    ready: Callable[[Path], None] | None = None  # runconfig boots a fork-server there

    def prepare(self, source: Path, tree: Path, name: str, scratch: Path | None = None) -> None:
        for pattern in self.copy:
            for found in sorted(source.glob(pattern)):
                relative = found.relative_to(source)
                if not found.is_file() or found.is_symlink() or ".git" in relative.parts:
                    continue  # never a link out of the user's checkout, never git's files
                if relative.parts[0] == STATE_DIR:
                    continue  # nor the state folder: ``**`` would find the warm trees in it
                # Never a tracked file's content, and never through a link the patch added
                # (``_version.py -> /anywhere``): a dangling link does not "exist".
                try:
                    write_in_tree(tree, relative, found.read_bytes(), replace=False)
                except TreeError as exc:
                    raise TreeError(f"critic22_copy {relative}: {exc}") from None
        if self.command:
            self._run(tree, name, scratch)
        if self.ready is not None:
            self.ready(tree)

    def _run(self, tree: Path, name: str, scratch: Path | None = None) -> None:
        from pytest_critic22.execution.runner import detect_pythonpath, spawn_python

        code, out, _ = spawn_python(
            tree,
            ["-c", "import os, sys; os.execvp(sys.argv[1], sys.argv[1:])", *self.command],
            timeout=self.timeout,
            pythonpath=detect_pythonpath(tree, self.pythonpath),
            sandbox=self.sandbox,
            scratch=scratch,  # the run's: pruned with it, even after a kill -9
        )
        if code != 0:
            last = (out.strip().splitlines() or ["no output"])[-1]
            why = "timed out" if code is None else f"exited {code}"
            raise TreeSetupError(
                f"critic22_tree_setup {shlex.join(self.command)!r} {why} in the {name} tree: {last}"
            )


def write_in_tree(
    tree: Path, relative: str | os.PathLike[str], data: str | bytes, *, replace: bool = True
) -> bool:
    """Write ``tree/relative`` without following a symbolic link anywhere below ``tree``.

    The controller writes into trees (the critic's test, copied files) outside every
    sandbox, while the trees are writable by the sandboxed children that ran there before —
    and, under xdist, by children running there now. A child that replaced a folder, or the
    file about to be written, by a link to the user's checkout must not get the controller
    to write there. Every folder is opened relative to its parent with ``O_NOFOLLOW`` (no
    check-then-use race), and the file is created with ``O_EXCL | O_NOFOLLOW`` after
    unlinking whatever stood in its place (a planted link is replaced, never written
    through). Missing folders are created. ``replace=False`` leaves an existing entry
    alone and returns False. Raises TreeError when a folder on the way is a link or not a
    folder, or the path leaves the tree.
    """
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise TreeError(f"not a path inside the tree: {str(relative)!r}")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    directory = getattr(os, "O_DIRECTORY", 0)
    fd = os.open(tree, os.O_RDONLY | directory)
    try:
        for name in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=fd)
            try:
                child = os.open(name, os.O_RDONLY | directory | nofollow, dir_fd=fd)
            except OSError as exc:
                raise TreeError(
                    f"{Path(relative)}: {name!r} is not a folder of the tree (a link?): "
                    f"{exc.strerror}"
                ) from None
            os.close(fd)
            fd = child
        name = parts[-1]
        for _ in range(5):  # a concurrent child may plant a link between unlink and open
            try:
                out = os.open(
                    name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o644, dir_fd=fd
                )
            except FileExistsError:
                if not replace:
                    return False
                try:
                    os.unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    pass
                except OSError as exc:  # a folder stands there
                    why = exc.strerror
                    raise TreeError(f"{Path(relative)}: cannot replace it: {why}") from None
                continue
            with os.fdopen(out, "wb") as fh:
                fh.write(payload)
            return True
        raise TreeError(f"{Path(relative)}: something keeps taking its place")
    finally:
        os.close(fd)


def prune_stale(repo: Path, *, keep: str | None = None) -> list[str]:
    """Remove the trees and folders left by runs whose owner is gone (a crash, a kill -9):
    a dead PID, a zombie not yet reaped, or a PID reused by another process all count as
    gone. ``keep`` is a run id never pruned (the caller's own, claimed or not)."""
    removed: list[str] = []
    root = trees_root(repo)
    try:
        runs = sorted(root.iterdir())
    except FileNotFoundError:  # no run yet, or the last one to leave removed the folder
        runs = []
    for run in runs:
        if run.is_dir() and run.name != keep and not owner_alive(run):
            removed += _remove_run(repo, run, WarmPool(repo, owner_alive))
    with _repo_lock(root):  # never while the pool moves a tree's .git file
        git(["worktree", "prune"], repo, check=False)
    _remove_if_unused(root)
    return removed


def _remove_run(repo: Path, run: Path, pool: WarmPool) -> list[str]:
    """Remove a run's trees (its warm ones go back to the pool) and its folder; what was
    removed. Two reviews pruning one crashed run at once: whoever comes first removes it."""
    removed: list[str] = []
    with contextlib.suppress(FileNotFoundError):  # the other review got there first
        entries = sorted(run.iterdir())
        links = [tree for tree in entries if tree.is_symlink()]
        if links:  # warm trees: back to the pool, for the next run to reuse
            with _repo_lock(run.parent):
                pool.give_back([Path(os.readlink(link)) for link in links], run)
            removed += [str(link) for link in links]
        for tree in entries:
            if tree.is_dir() and not tree.is_symlink() and tree.name not in _NOT_TREES:
                git(["worktree", "remove", "--force", "--force", str(tree)], repo, check=False)
                remove_tree(tree)
                removed.append(str(tree))
    remove_tree(run)
    return removed


def prune_deleted_repositories() -> list[str]:
    """Remove the trees folders (only this user's, naming their repository) of deleted
    repositories, which no :func:`prune_stale` will come for: when no run's owner is alive
    and nothing changed for an hour (an owner in another PID namespace looks dead here)."""
    removed: list[str] = []
    for root in sorted(Path(tempfile.gettempdir()).glob("critic22-trees-*")):
        try:
            if root.is_symlink() or not root.is_dir() or root.lstat().st_uid != os.getuid():
                continue
            repo = (root / _REPOSITORY).read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        if not os.path.isabs(repo) or os.path.lexists(repo) or young(root, _ORPHAN_AGE):
            continue
        with contextlib.suppress(OSError), _repo_lock(root):
            runs = [run for run in root.iterdir() if run.is_dir()]
            if any(owner_alive(run) or young(run, _ORPHAN_AGE) for run in runs):
                continue
            remove_tree(root)
            removed.append(str(root))
    removed += _prune_probes()
    return removed


def _prune_probes() -> list[str]:
    """Remove the bubblewrap probe's folders a killed run left (this user's, untouched for
    an hour: a probe takes a minute at most)."""
    removed: list[str] = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(f"{PROBE_PREFIX}*")):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.lstat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        if young(folder, _ORPHAN_AGE):
            continue
        remove_tree(folder)
        removed.append(str(folder))
    return removed


def _flock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
