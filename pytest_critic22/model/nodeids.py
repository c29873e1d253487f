"""Test node ids: parsed (not split on spaces), and checked as data before pytest sees them.

Pure. A node id taken from a finding or an obligation is data: it names a test file inside
the repository and never becomes a pytest option or a path outside the tree.

Parsing a list of node ids: a JSON list (``["a.py::t[x y]", "b.py::u"]``), quoted ids
(``"a.py::t[1, 2]" 'b.py::u'``), or plain text, where a node id runs to the next
whitespace-separated ``path.py`` start (``tests/…::`` or ``x.py``) or the end of the line,
so ``tests/test_fmt.py::test_units[[1, 'Hz']-1.00 Hz]`` stays one id.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

__all__ = [
    "NodeIdError",
    "as_pytest_args",
    "check_in_tree",
    "check_nodeid",
    "find_nodeids",
    "is_nodeid",
    "looks_like_nodeid",
    "split_nodeids",
]


# Where a new node id starts inside a line: a path ending in .py at a token boundary,
# followed by ``::``, whitespace or the end.
_START = re.compile(r"(?:(?<=\s)|^)(?=[^\s\"'\[\]]+\.py(?:::|\s|$))")
_PATH = re.compile(r"^[^\s\x00]+\.py$")
# A node id embedded in prose (a root cause that names its failing test).
_EMBEDDED = re.compile(r"(?<![\w/.-])([\w./-]+\.py::[\w\[\]./:-]+)")


class NodeIdError(ValueError):
    """Why a string cannot be used as a test node id."""


def split_nodeids(text: str) -> list[str]:
    """The node ids in ``text`` (one line or several), in order; see the module docstring."""
    stripped = text.strip()
    if not stripped:
        return []
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [v.strip() for v in value if v.strip()]
    out: list[str] = []
    for line in stripped.splitlines():
        out.extend(_split_line(line.strip()))
    return out


def _split_line(line: str) -> list[str]:
    out: list[str] = []
    rest = line
    while rest:
        rest = rest.lstrip()
        if not rest:
            break
        if rest[0] in "\"'":
            end = rest.find(rest[0], 1)
            if end > 0:
                out.append(rest[1:end])
                rest = rest[end + 1 :]
                continue
        starts = [m.start() for m in _START.finditer(rest) if m.start() > 0]
        cut = starts[0] if starts else len(rest)
        out.append(rest[:cut].rstrip())
        rest = rest[cut:]
    return [n for n in out if n]


def check_nodeid(nodeid: str) -> str | None:
    """Why ``nodeid`` is not a safe test node id (None: it is): a relative ``.py`` path inside
    the repository, never an option, never absolute, no ``..``, no control characters."""
    if not nodeid or nodeid != nodeid.strip():
        return f"not a test node id: {nodeid!r}"
    if nodeid.startswith("-"):
        return f"looks like an option, not a test node id: {nodeid!r}"
    if nodeid.startswith("@"):
        return f"pytest would read it as a file of arguments, not a test node id: {nodeid!r}"
    if any(ord(ch) < 32 for ch in nodeid):
        return f"control characters in a test node id: {nodeid!r}"
    path = nodeid.split("::", 1)[0]
    if not _PATH.match(path):
        return f"not a test node id (a path ending in .py, then ::name): {nodeid!r}"
    if path.startswith("/") or "\\" in path or re.match(r"^[A-Za-z]:", path):
        return f"not a path inside the repository: {nodeid!r}"
    if ".." in PurePosixPath(path).parts:
        return f"not a path inside the repository: {nodeid!r}"
    if "::" in nodeid and not nodeid.split("::", 1)[1]:
        return f"not a test node id: {nodeid!r}"
    return None


def looks_like_nodeid(text: str) -> bool:
    """Written as a test rather than prose (one token naming a ``.py`` file): what the user
    meant as a node id, which must then pass :func:`check_nodeid` or be refused."""
    stripped = text.strip()
    head = stripped.split("::", 1)[0]
    return ("::" in stripped or stripped.endswith(".py")) and " " not in head


def is_nodeid(text: str) -> bool:
    """The one predicate for "this text is a test node id (or test file) we may run"."""
    return check_nodeid(text.strip()) is None


def check_in_tree(nodeid: str, tree: Path) -> str | None:
    """Why ``nodeid`` cannot run in ``tree`` (None: it can): its file must exist there, be a
    regular file, and resolve inside the tree (a symlink out of it does not count)."""
    problem = check_nodeid(nodeid)
    if problem:
        return problem
    path = nodeid.split("::", 1)[0]
    target = tree / path
    root = os.path.realpath(tree)
    real = os.path.realpath(target)
    if not (real == root or real.startswith(root + os.sep)):
        return f"{path} resolves outside the repository"
    if not os.path.isfile(real):
        return f"{path} is not a test file in the repository"
    return None


def find_nodeids(text: str) -> list[str]:
    """Node ids named in prose (a diagnosed root cause), checked like any other."""
    return [m for m in _EMBEDDED.findall(text or "") if check_nodeid(m) is None]


def as_pytest_args(nodeids: Sequence[str]) -> list[str]:
    """Node ids as pytest's positional arguments, each checked again at the last moment.

    pytest does not honour ``--`` as the end of its options (``pytest -- -k x`` still reads
    ``-k``), so what keeps a node id from being an option is this check, not a separator.
    """
    for nodeid in nodeids:
        problem = check_nodeid(nodeid)
        if problem:
            raise NodeIdError(problem)
    return list(nodeids)
