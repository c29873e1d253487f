"""Files and folders a sandboxed child could write, handled by the controller (I/O).

The controller runs outside every sandbox, so what a child left behind is read and removed
without trusting it: a JUnit report, a trace or a coverage data file may have been replaced
by a link to a file of the host (read through it, or written: coverage.py initialises a
database it opens), or by a FIFO (an ``open`` that never returns); a folder may hold links
and folders a child made unwritable, and Python's own ``TemporaryDirectory`` cleanup then
``chmod``\\ s through a link on some versions (CPython gh-91133).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_CHILD_FILE",
    "child_tempdir",
    "make_folder",
    "private_copy",
    "prune_orphans",
    "read_child_file",
    "read_tree_file",
    "remove_tree",
]

MAX_CHILD_FILE = 64 << 20  # bytes: a report larger than this is not read
_MAKE_TRIES = 100  # a shared folder removed under make_folder this often: the error


def read_child_file(path: str | os.PathLike[str], limit: int = MAX_CHILD_FILE) -> bytes | None:
    """The bytes of a regular file a child wrote (no link followed, no FIFO or device
    opened), or None when it is missing, not a regular file or larger than ``limit``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def read_tree_file(tree: str | os.PathLike[str], relative: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file of ``tree`` whose real path stays inside it. A patch can
    add a link (``x.py -> ~/.ssh/id_rsa``, or a linked folder): its target's text must never
    reach a packet, a report or the model. OSError otherwise."""
    root = os.path.realpath(tree)
    path = os.path.realpath(os.path.join(tree, relative))
    if path != root and not path.startswith(root + os.sep):
        raise OSError(f"{os.fspath(relative)} leads outside the tree")
    data = read_child_file(path)
    if data is None:
        raise OSError(f"{os.fspath(relative)} is not a regular file of the tree")
    return data


@contextlib.contextmanager
def child_tempdir(prefix: str, folder: str | os.PathLike[str] | None = None) -> Iterator[str]:
    """A temporary folder a child may write, removed with :func:`remove_tree`."""
    path = tempfile.mkdtemp(prefix=prefix, dir=folder)
    try:
        yield path
    finally:
        remove_tree(path)


def make_folder(path: str | os.PathLike[str]) -> None:
    """``mkdir -p`` that a concurrent removal cannot fail: a folder shared by runs (the
    repository's trees folder) is removed by the last run to leave, and ``exist_ok`` checks
    that the path is a folder only after ``mkdir`` found it there, so a removal in between
    raised FileExistsError, and one between two of ``-p``'s mkdirs
    FileNotFoundError. Both are tried again; a path that is a file stays an error."""
    for _ in range(_MAKE_TRIES):
        try:
            os.makedirs(path, exist_ok=True)
        except (FileExistsError, FileNotFoundError):
            if os.path.lexists(path) and not os.path.isdir(path):
                raise
            continue  # it was there and went, or a parent went: again
        return
    os.makedirs(path, exist_ok=True)  # removed under us every time: the error, as it is


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a folder a child wrote: no link is ever followed, and a folder the child made
    unwritable or unreadable is given back its owner's permissions (itself, never what a
    link names) before its entries are removed again. Another process removing the same
    folder at the same time (two runs pruning one orphan) is no error."""
    if not os.path.lexists(path):
        return
    handler = functools.partial(_removal_failed, root=os.path.abspath(path))
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=handler)
    else:  # pragma: no cover - the 3.11 spelling
        shutil.rmtree(path, onerror=handler)
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def _removal_failed(function: Callable[..., Any], failed: str, *_: object, root: str) -> None:
    """``shutil.rmtree``'s error handler: ``function`` (``os.open``, ``os.scandir``,
    ``os.lstat``, ``os.rmdir``, ``os.unlink``...) failed on ``failed``, in the tree ``root``
    (an absolute path) being removed. Only a removal is retried with the path alone; a folder
    that could not be opened or listed is made accessible and removed again; an entry that
    is gone (removed by someone else) is left. Only ``root`` and the folders in it are ever
    made accessible: when ``failed`` is ``root`` itself (another remover took it first), its
    parent is the system temp folder or the user's, never ours to change."""
    for folder in (failed, os.path.dirname(failed)):
        if not _within(os.path.abspath(folder), root):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(folder).st_mode):
                os.chmod(folder, 0o700)
    with contextlib.suppress(OSError):
        if function in (os.rmdir, os.unlink, os.remove):
            function(failed)
        elif stat.S_ISDIR(os.lstat(failed).st_mode):
            shutil.rmtree(failed, ignore_errors=True)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def private_copy(source: str | os.PathLike[str], folder: Path, name: str) -> Path | None:
    """A copy, in a folder no child can write, of a regular file a child wrote."""
    data = read_child_file(source)
    if data is None:
        return None
    target = folder / name
    target.write_bytes(data)
    return target


def prune_orphans(prefix: str, before: Callable[[Path], None] | None = None) -> bool:
    """Remove the temp folders ``<prefix><pid>-*`` of processes that are gone (``before``
    first sees each one): a process killed by SIGKILL cleans up nothing, so each names its
    folders by its PID. True when one was removed."""
    removed = False
    for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            if before is not None:
                before(folder)
            remove_tree(folder)
            removed = True
        except OSError:  # alive, someone else's
            continue
    return removed
