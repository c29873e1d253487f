"""The unit tier's rule, enforced: a unit test starts no process (tests/README.md).

Every way this interpreter makes a child is refused while a unit test runs (``subprocess``
and ``multiprocessing`` reach ``_posixsubprocess.fork_exec``, ``os.posix_spawn`` or ``os.fork``),
so a unit test that runs git or a child pytest fails here and says where it belongs.
"""

from __future__ import annotations

import _posixsubprocess
import os
import subprocess
from typing import Any

import pytest

_WHERE = "a unit test starts no process: move it to tests/integration/ (tests/README.md)"


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(_WHERE)


@pytest.fixture(autouse=True)
def _no_child_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_posixsubprocess, "fork_exec", _refuse)
    if hasattr(subprocess, "_fork_exec"):  # bound at import on Python 3.11 and later
        monkeypatch.setattr(subprocess, "_fork_exec", _refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse)
