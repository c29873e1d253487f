"""Changed-line coverage (I/O): the preservation tests run on the patched tree under
coverage.py, in the sandbox, counted the way diff-cover counts."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_critic22.evidence.codefacts import is_test_path
from pytest_critic22.evidence.impact import statement_lines
from pytest_critic22.execution.child_files import child_tempdir, private_copy, read_tree_file
from pytest_critic22.execution.runner import run_pytest
from pytest_critic22.execution.sandbox import Sandbox
from pytest_critic22.model.nodeids import as_pytest_args, is_nodeid
from pytest_critic22.model.patch import ParsedPatch

__all__ = ["changed_line_coverage"]


def changed_line_coverage(
    patch: ParsedPatch,
    patched_tree: Path,
    tests: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None = None,
    scratch: Path | None = None,
) -> tuple[dict[str, list[int]], dict[str, list[int]], str]:
    """Run ``tests`` on the patched tree under coverage.py, the way diff-cover counts:
    added executable lines by new-file number, a multi-line statement as a whole.

    Returns (covered, uncovered, status) where status is the tests' run status
    ("passed", "failed", "error: ...").
    """
    executable: dict[str, list[int]] = {}
    for edit in patch.edits:
        if not edit.new_path or not edit.new_path.endswith(".py") or is_test_path(edit.new_path):
            continue
        try:
            source = read_tree_file(patched_tree, edit.new_path).decode("utf-8", "replace")
        except OSError:
            continue  # a link out of the tree, or no file: nothing to measure there
        starts = statement_lines(source)
        lines = sorted({starts[ln] for ln in edit.added_lines if ln in starts})
        if lines:
            executable.setdefault(edit.new_path, [])
            executable[edit.new_path] = sorted(set(executable[edit.new_path]) | set(lines))
    if not executable:
        return {}, {}, "passed"
    if not tests:
        return {}, executable, "no preservation tests"
    try:
        import coverage  # noqa: F401  # a runtime dependency; the child imports it too
    except ImportError:  # pragma: no cover - declared as a dependency
        return {}, executable, "error: coverage.py is not installed"
    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    with child_tempdir("critic22-cov-", scratch) as tmp:
        data_file = Path(tmp) / ".coverage"
        include = ",".join(str(patched_tree / p) for p in executable)
        result = run_pytest(
            patched_tree,
            as_pytest_args([t for t in tests if is_nodeid(t)]),
            timeout=timeout,
            pythonpath=pythonpath,
            module=["coverage", "run", f"--data-file={data_file}", f"--include={include}", "-m"],
            sandbox=sandbox,
            writable=[Path(tmp)],
            scratch=scratch,
        )
        executed = _executed_lines(data_file, patched_tree, executable)
    covered: dict[str, list[int]] = {}
    uncovered: dict[str, list[int]] = {}
    for path, lines in executable.items():
        hit = [ln for ln in lines if ln in executed.get(path, set())]
        miss = [ln for ln in lines if ln not in executed.get(path, set())]
        if hit:
            covered[path] = hit
        if miss:
            uncovered[path] = miss
    status = result.status if result.status != "error" else f"error: {result.reason}"
    return covered, uncovered, status


def _executed_lines(
    data_file: Path, tree: Path, paths: Mapping[str, list[int]]
) -> dict[str, set[int]]:
    from coverage import CoverageData

    # The child wrote it and could have put a link to a host file in its place, which
    # coverage.py would initialise as its database: read a private copy of a regular file.
    with tempfile.TemporaryDirectory(prefix="critic22-covdata-") as private:
        copy = private_copy(data_file, Path(private), ".coverage")
        if copy is None:
            return {}
        data = CoverageData(basename=str(copy))
        data.read()
        out: dict[str, set[int]] = {}
        measured = {os.path.realpath(f): f for f in data.measured_files()}
        for path in paths:
            real = os.path.realpath(tree / path)
            if real in measured:
                out[path] = set(data.lines(measured[real]) or ())
        return out
