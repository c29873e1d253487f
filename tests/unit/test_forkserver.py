"""The fork-server (zygote.py, forkrun.py): sessions of one child that cannot reach each other.

Real runs under bubblewrap: a job leaves processes, files, IPC objects and a listening port
behind, tries to forge another job's result, or kills the zygote; the next job must see a
sandbox like a fresh child's and get its own result, or none (run alone), never a wrong one.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from pytest_critic22.execution.forkserver import ForkRequest, run_forked
from pytest_critic22.execution.sandbox import probe_bwrap, resolve

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for name, text in files.items():
        (tree / name).write_text(textwrap.dedent(text))
    return tree


def test_without_bubblewrap_every_request_runs_alone(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"test_b.py": "def test_ok():\n    pass\n"})
    parts = run_forked(
        tree,
        [ForkRequest(("test_b.py",))],
        timeout=60,
        pythonpath=[tree],
        sandbox=resolve("rlimits"),
    )
    assert parts == [None]
    assert os.listdir(tree) == ["test_b.py"]


def test_results_out_of_order_are_credited_to_nobody() -> None:
    from pytest_critic22.execution.forkserver import _in_order

    def line(job: object, run: int, code: int | None = 0) -> str:
        return json.dumps({"job": job, "run": run, "code": code, "seconds": 0.1})

    ready = json.dumps({"ready": True})
    good = [ready, line(0, 0, 1), line(0, 1, 1), line(1, 0, 0)]
    assert _in_order(good, [2, 3]) == {
        0: [json.loads(x) for x in good[1:3]],
        1: [json.loads(good[3])],
    }
    assert _in_order([*good[:2], '{"job": 0, "run"'], [2, 3]) == {0: [json.loads(good[1])]}
    for forged in (
        [ready, line(1, 0)],  # a job skipped
        [ready, line(0, 0, 0), line(0, 1, 1)],  # a confirmation of a run that passed
        [ready, line(0, 0, 1), line(0, 1, 1), line(0, 2, 1)],  # more runs than asked
        [ready, line(True, 0)],  # a bool is not a job number
        [ready, line(0, 0), line(0, 0)],  # the same session twice
        [ready, '{"job": 0, "run": 0, "code": 0, "seconds": "soon"}'],
        [ready, "[1]"],
    ):
        assert _in_order(forged, [2, 3]) is None, forged
