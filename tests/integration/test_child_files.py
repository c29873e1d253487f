"""What a sandboxed child leaves behind is read and removed without trusting it.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_child_files.py.
"""

from __future__ import annotations

import os
import textwrap
import threading
from pathlib import Path

from pytest_critic22.execution.child_files import remove_tree
from pytest_critic22.execution.runner import run_pytest
from pytest_critic22.execution.sandbox import resolve


def test_a_fifo_in_place_of_the_junit_report_does_not_hang_the_controller(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "test_fifo.py").write_text(
        textwrap.dedent(
            """
            import atexit, os, sys

            def test_swaps_its_report_for_a_fifo():
                junit = [a for a in sys.argv if a.startswith("--junitxml=")][0].split("=", 1)[1]
                atexit.register(lambda: (os.unlink(junit), os.mkfifo(junit), os._exit(0)))
            """
        )
    )
    done: list[object] = []

    def review() -> None:
        sandbox = resolve("auto")
        done.append(
            run_pytest(tree, ["test_fifo.py"], timeout=60, pythonpath=[tree], sandbox=sandbox)
        )

    worker = threading.Thread(target=review, daemon=True)
    worker.start()
    worker.join(timeout=180)  # the run itself takes about a second
    assert done, "reading the child's report hung"
    run = done[0]
    assert getattr(run, "status", None) == "passed" or getattr(run, "status", None) == "error"
    assert not getattr(run, "tests", {}), "a FIFO is no report"


def test_folders_of_processes_killed_by_sigkill_are_pruned_by_the_next_run() -> None:
    import subprocess
    import tempfile

    from pytest_critic22.execution.child_files import prune_orphans

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = Path(tempfile.mkdtemp(prefix=f"critic22-ab-{gone.pid}-"))
    (dead / "repo").mkdir()
    alive = Path(tempfile.mkdtemp(prefix=f"critic22-ab-{os.getppid()}-"))
    try:
        prune_orphans("critic22-ab-")
        assert not dead.exists()
        assert alive.exists()
    finally:
        remove_tree(dead)
        remove_tree(alive)
