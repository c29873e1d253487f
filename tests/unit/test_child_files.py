"""What a sandboxed child leaves behind is read and removed without trusting it.

Real runs: a child replaces its JUnit report by a FIFO (reading it must not hang the
controller), a coverage data file by a link to a host file (coverage.py must not initialise
that file as its database), and leaves links in folders it made unwritable.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_critic22.evidence.coverage import _executed_lines
from pytest_critic22.execution.child_files import make_folder, read_child_file, remove_tree
from pytest_critic22.verification.tracediff import read_trace


def test_a_link_in_place_of_the_coverage_data_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "host_file"
    victim.write_bytes(b"")
    data_file = tmp_path / ".coverage"
    data_file.symlink_to(victim)
    assert _executed_lines(data_file, tmp_path, {"m.py": [1]}) == {}
    assert victim.read_bytes() == b""


def test_files_a_child_left_are_read_only_when_regular(tmp_path: Path) -> None:
    regular = tmp_path / "trace.jsonl"
    regular.write_text('{"e": "outcome", "failed": false}\n')
    assert read_child_file(regular) == regular.read_bytes()
    assert read_child_file(regular, limit=4) is None
    secret = tmp_path / "secret"
    secret.write_text("host data")
    link = tmp_path / "link.jsonl"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for planted in (link, fifo, tmp_path / "missing"):
        assert read_child_file(planted) is None
        with pytest.raises(OSError, match="not a regular file"):
            read_trace(planted)


def test_a_folder_a_child_left_is_removed_without_touching_what_its_links_name(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    outside.chmod(0o640)
    left = tmp_path / "run"
    (left / "locked").mkdir(parents=True)
    (left / "locked" / "link").symlink_to(outside)
    (left / "locked").chmod(0o500)
    (left / "closed").mkdir()
    (left / "closed" / "file").write_text("x")
    (left / "closed").chmod(0)
    remove_tree(left)
    assert not left.exists()
    assert outside.read_text() == "keep"
    assert stat.S_IMODE(outside.stat().st_mode) == 0o640


@pytest.mark.parametrize("function", [os.open, os.scandir, os.lstat, os.rmdir, os.unlink])
def test_an_entry_another_remover_took_first_is_no_error(
    tmp_path: Path, function: Callable[..., object]
) -> None:
    """Two runs pruning one orphan folder at once: shutil.rmtree's walk finds an entry gone
    when it opens, lists, stats or removes it, and its error handler is called with the
    function that failed (CI on 2026-12-02: ``os.open`` retried with the path alone raised
    TypeError and the A/B run died)."""
    from pytest_critic22.execution.child_files import _removal_failed

    gone = tmp_path / "orphan" / "tests"
    gone.parent.mkdir()
    exc = FileNotFoundError(2, "gone", str(gone))
    _removal_failed(function, str(gone), exc, root=str(gone.parent))
    assert gone.parent.is_dir() and not gone.exists()


@pytest.mark.parametrize("function", [os.open, os.scandir, os.lstat, os.rmdir])
def test_the_folder_a_removed_tree_lies_in_is_never_changed(
    tmp_path: Path, function: Callable[..., object]
) -> None:
    """When the tree itself is what failed (another remover took it first, or it could not
    be removed), the folder it lies in — the system temp folder, for a child's — keeps its
    mode. It was made 0700: as root, /tmp itself (CI's apt then failed: "Couldn't create
    temporary file /tmp/apt.conf...")."""
    from pytest_critic22.execution.child_files import _removal_failed

    temp = tmp_path / "temp"
    temp.mkdir()
    temp.chmod(0o1777)
    gone = temp / "critic22-orphan"
    exc = FileNotFoundError(2, "gone", str(gone))
    _removal_failed(function, str(gone), exc, root=str(gone))
    assert stat.S_IMODE(temp.stat().st_mode) == 0o1777


def _removed_once_after(monkeypatch: pytest.MonkeyPatch, folder: Path, *, when: str) -> list[str]:
    """Force one interleaving with the real file system: right after ``os.mkdir`` of
    ``folder`` finds it there (``when="exists"``) or makes it (``when="made"``), another run
    removes it, once. What was removed is listed."""
    real = os.mkdir
    removed: list[str] = []

    def mkdir(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        try:
            real(path, *args, **kwargs)  # type: ignore[arg-type]
        except FileExistsError:
            if when == "exists" and Path(path) == folder and not removed:
                os.rmdir(path)
                removed.append(str(path))
            raise
        if when == "made" and Path(path) == folder and not removed:
            os.rmdir(path)
            removed.append(str(path))

    monkeypatch.setattr(os, "mkdir", mkdir)
    return removed


def test_a_shared_folder_removed_right_after_mkdir_found_it_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last run to leave removes the repository's trees folder while a starting one
    locks it: ``mkdir(exist_ok=True)`` saw it there, then checked ``is_dir()`` after it
    went, and raised FileExistsError out of the review (CI, 2026-12-03)."""
    shared = tmp_path / "critic22-trees-x"
    shared.mkdir()
    removed = _removed_once_after(monkeypatch, shared, when="exists")
    make_folder(shared)
    assert removed == [str(shared)] and shared.is_dir()


def test_a_parent_removed_between_two_mkdirs_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "critic22-trees-x"
    removed = _removed_once_after(monkeypatch, shared, when="made")
    make_folder(shared / "run-1")
    assert removed == [str(shared)] and (shared / "run-1").is_dir()


def test_a_file_where_the_folder_should_be_stays_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        make_folder(tmp_path / "file")
    with pytest.raises((FileExistsError, NotADirectoryError)):
        make_folder(tmp_path / "file" / "below")


def test_a_folder_that_could_not_be_opened_is_opened_up_and_removed(tmp_path: Path) -> None:
    from pytest_critic22.execution.child_files import _removal_failed

    closed = tmp_path / "closed"
    (closed / "inner").mkdir(parents=True)
    (closed / "inner" / "file").write_text("x")
    closed.chmod(0)
    exc = PermissionError(13, "denied", str(closed))
    _removal_failed(os.open, str(closed), exc, root=str(closed))
    assert not closed.exists()


def test_a_link_a_patch_adds_never_brings_a_host_file_into_the_evidence(tmp_path: Path) -> None:
    from pytest_critic22.evidence.gather import build_graph
    from pytest_critic22.execution.child_files import read_tree_file
    from pytest_critic22.verification.procedures import read_source

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa.py").write_text("PRIVATE_KEY = 'do not send'\n")
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_text("VALUE = 1\n")
    (tree / "pkg" / "leak.py").symlink_to(secret / "id_rsa.py")
    (tree / "linked").symlink_to(secret, target_is_directory=True)
    (tree / "pkg" / "inside.py").symlink_to(tree / "pkg" / "mod.py")  # stays in the tree
    assert read_tree_file(tree, "pkg/mod.py") == b"VALUE = 1\n"
    assert read_tree_file(tree, "pkg/inside.py") == b"VALUE = 1\n"
    for outside in ("pkg/leak.py", "linked/id_rsa.py", "../secret/id_rsa.py"):
        with pytest.raises(OSError, match="outside the tree"):
            read_tree_file(tree, outside)
        assert read_source(tree, outside) is None
    graph, _ = build_graph(tree, None, ["pkg/mod.py", "pkg/leak.py", "linked/id_rsa.py"])
    assert set(graph) == {"pkg/mod.py"}
