"""The trees a review runs on: detached git worktrees in a temporary folder.

``base`` is the base commit, ``patched`` is base + the whole patch, and counterfactuals
are base + all edits but some, or patched + the critic's repair. Trees are made lazily,
once per variant per run, shared by every finding (and every xdist worker) that needs
them; creation is serialised repository-wide because concurrent ``git worktree add``
races on ``.git/config.lock``. The user's checkout (branch, index, stash, untracked
files) is only ever read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_critic22.diffparse import ParsedPatch
from pytest_critic22.gitio import GitError, git

__all__ = ["TreeError", "TreeSet", "Variant", "prune_stale", "trees_root"]

_READY = ".ready"  # beside the tree, so the tree holds only the code
_OWNER = "owner.json"


class TreeError(RuntimeError):
    """A tree could not be built; a finding that needs it is inconclusive."""


@dataclass(frozen=True, slots=True)
class Variant:
    """Which tree: a name that is also its folder, and the patches that make it."""

    name: str
    patches: tuple[str, ...]  # applied in order on the base commit

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

    def __init__(self, repo: Path, base_commit: str, run_id: str) -> None:
        self.repo = repo
        self.base_commit = base_commit
        self.root = trees_root(repo) / run_id
        self._made: dict[str, Path] = {}

    def claim(self) -> None:
        """Mark the run's folder as owned by this (controller) process."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / _OWNER).write_text(json.dumps({"pid": os.getpid()}))

    def get(self, variant: Variant) -> Path:
        if variant.name in self._made:
            return self._made[variant.name]
        path = self.root / variant.name
        with self._lock():
            if not (self.root / f"{variant.name}{_READY}").exists():
                self._build(variant, path)
        self._made[variant.name] = path
        return path

    def _build(self, variant: Variant, path: Path) -> None:
        if path.exists():  # a half-built tree from an interrupted attempt
            self._remove_tree(path)
        try:
            git(["worktree", "add", "--detach", "--force", str(path), self.base_commit], self.repo)
        except GitError as exc:
            raise TreeError(f"cannot create the {variant.name} tree: {exc}") from None
        for number, patch in enumerate(variant.patches, 1):
            if not patch:
                continue
            done = git(["apply", "--whitespace=nowarn", "-"], path, input=patch, check=False)
            if done.returncode != 0:
                first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
                self._remove_tree(path)
                what = "the repair" if number == 2 else "the patch"
                raise TreeError(f"{what} does not apply for the {variant.name} tree: {first}")
        (self.root / f"{variant.name}{_READY}").write_text(str(path))

    def check_applies(self, patch: ParsedPatch) -> str | None:
        """Why the patch does not apply to the base commit, or None when it does."""
        try:
            self.get(Variant.patched(patch))
        except TreeError as exc:
            return str(exc)
        return None

    def remove_all(self) -> None:
        """Remove every tree of this run and forget them in the repository."""
        if self.root.exists():
            for child in sorted(self.root.iterdir()):
                if child.is_dir():
                    self._remove_tree(child)
            shutil.rmtree(self.root, ignore_errors=True)
        git(["worktree", "prune"], self.repo, check=False)
        self._made.clear()

    def _remove_tree(self, path: Path) -> None:
        git(["worktree", "remove", "--force", "--force", str(path)], self.repo, check=False)
        shutil.rmtree(path, ignore_errors=True)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        # Repository-wide, not per run: two runs on one repository also race on config.lock.
        lock_path = self.root.parent / "worktree.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _flock(fd)
            yield
        finally:
            os.close(fd)


def prune_stale(repo: Path) -> list[str]:
    """Remove trees left by runs whose owner process is gone (a crash, a kill -9)."""
    removed: list[str] = []
    root = trees_root(repo)
    if root.is_dir():
        for run in sorted(root.iterdir()):
            if not run.is_dir() or _owner_alive(run):
                continue
            for tree in sorted(run.iterdir()):
                if tree.is_dir():
                    git(["worktree", "remove", "--force", "--force", str(tree)], repo, check=False)
                    removed.append(str(tree))
            shutil.rmtree(run, ignore_errors=True)
    git(["worktree", "prune"], repo, check=False)
    return removed


def _owner_alive(run: Path) -> bool:
    try:
        pid = int(json.loads((run / _OWNER).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _flock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
