"""Warm trees (issue 15, item 4): kept between runs in ``.critic22/critic22-trees/``, reset
instead of built anew, never shared, never wrong. Real repositories, real worktrees.

Reuse is proven by inode, never by timing: an open descriptor of a file the reset leaves
alone pins its inode (no new file can get it), and a reused tree still has that very file;
a fresh ``git worktree add`` writes a new one.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_critic22.execution.trees import (
    _LOCK,
    _repo_lock,
)

PINS: list[int] = []


@pytest.fixture(autouse=True)
def _close_pins() -> Iterator[None]:
    yield
    while PINS:
        os.close(PINS.pop())


def test_the_lock_is_taken_when_its_folder_goes_just_before_the_lock_file_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other half of that race, forced: the last run to leave removes the repository's
    folder between this run's making it and opening the lock file in it (FileNotFoundError
    out of the review, 1 in 40 runs of the test above, before the fix)."""
    folder = tmp_path / "critic22-trees-x"
    lock_file = str(folder / _LOCK)
    real = os.open
    removed: list[str] = []

    def open_(path: str | os.PathLike[str], flags: int, *args: object, **kwargs: object) -> int:
        if os.fspath(path) == lock_file and not removed:
            os.rmdir(folder)  # empty: made just now
            removed.append(str(folder))
        return real(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", open_)
    with _repo_lock(folder):
        monkeypatch.undo()
        held = _locked_by_another(folder / _LOCK)
    assert removed == [str(folder)]
    assert held, "the lock file on disk is not the one locked"
    shutil.rmtree(folder)


def _locked_by_another(lock_file: Path) -> bool:
    """Whether the file on disk is locked (by someone else: a second open file's try fails)."""
    import fcntl

    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize("target", ["nowhere/lock", "real-file"])
def test_a_link_planted_in_place_of_the_lock_file_is_an_error_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """A link in place of the lock file (a child under rlimits can plant one in the shared
    folder): never locked through, and an error at the first try. A dangling one made the
    retry above spin for ever (open's ENOENT read as "the folder went"); ``make_folder`` is
    counted, so a spin fails this test instead of hanging it."""
    import pytest_critic22.execution.trees as trees_module

    folder = tmp_path / "critic22-trees-x"
    folder.mkdir()
    (tmp_path / "real-file").write_text("")
    (folder / _LOCK).symlink_to(tmp_path / target)
    made: list[Path] = []
    real = trees_module.make_folder

    def counted(path: Path) -> None:
        made.append(path)
        assert len(made) < 1000, "the lock's retry spins"
        real(path)

    monkeypatch.setattr(trees_module, "make_folder", counted)
    with pytest.raises(OSError, match=re.escape(os.strerror(errno.ELOOP))), _repo_lock(folder):
        pass  # pragma: no cover - only when the test fails
    assert len(made) == 1
    assert (tmp_path / "real-file").read_text() == ""
