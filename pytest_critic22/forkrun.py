"""Several requests' pytest sessions in one sandboxed child (:mod:`pytest_critic22.zygote`).

Each request keeps everything a child of its own would give it: its own session (a fork of
a process that imported pytest and the plugins once), exit status, JUnit report and output,
read by the same :func:`pytest_critic22.junit.interpret`. Only the sandbox's start-up, the
interpreter's and the imports are shared. A request whose run errored while plugins were
blocked, and every request the child did not get to (a crash, a kill), is left to a run of
its own (None).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_critic22.junit import Case, interpret, read_cases
from pytest_critic22.runner import pytest_args, scrubbed_tail, spawn_python
from pytest_critic22.sandbox import Sandbox
from pytest_critic22.verify import RunResult

__all__ = ["run_forked"]


def run_forked(
    tree: Path,
    requests: Sequence[Sequence[str]],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    attempts: int = 1,
    sandbox: Sandbox | None = None,
    scratch: Path | None = None,
) -> list[tuple[RunResult, list[Case]] | None]:
    """Run each request's (checked) pytest arguments as a session of its own, in one child;
    ``timeout`` is each session's. ``attempts`` > 1: a session whose tests failed runs again
    in a fresh fork, up to that many times in all, while it fails (its ``attempts``)."""
    from pytest_critic22.childplugins import blocked_plugins

    for args in requests:
        if any(arg.startswith("@") for arg in args):
            return [None for _ in requests]  # run_pytest refuses it, with its reason
    files = [a for args in requests for a in args if not a.startswith("-")]
    blocked = blocked_plugins(tree, files)
    folder = None if scratch is None else str(_made(scratch))
    with tempfile.TemporaryDirectory(prefix="critic22-fork-", dir=folder) as tmp:
        root = Path(tmp)
        runs = max(1, attempts)
        jobs = [
            {
                "timeout": timeout,
                "runs": [
                    {
                        "args": pytest_args(root / f"junit-{i}-{k}.xml", (), blocked, 1, args),
                        "output": str(root / f"out-{i}-{k}.txt"),
                    }
                    for k in range(runs)
                ],
            }
            for i, args in enumerate(requests)
        ]
        spec = root / "spec.json"
        results = root / "results.json"
        spec.write_text(json.dumps({"results": str(results), "jobs": jobs}))
        spawn_python(  # its exit says little: each session's results are in the file
            tree,
            ["-m", "pytest_critic22.zygote", str(spec)],
            timeout=timeout * runs * len(requests) + 30,
            pythonpath=pythonpath,
            sandbox=sandbox,
            writable=[root],
            scratch=scratch,
        )
        try:
            done = json.loads(results.read_text())
        except (OSError, ValueError):
            done = []
        parts: list[tuple[RunResult, list[Case]] | None] = []
        for i in range(len(requests)):
            job = done[i] if i < len(done) and isinstance(done[i], list) and done[i] else None
            part = _read_job(root, i, job, timeout, blocked) if job is not None else None
            parts.append(part)
        return parts


def _read_job(
    root: Path, i: int, runs: list[dict[str, Any]], timeout: float, blocked: Sequence[str]
) -> tuple[RunResult, list[Case]] | None:
    """A job's first run, with the later runs' outcomes of the tests that failed in it as
    its attempts (each a fresh fork); None where a run of its own must decide."""
    results: list[tuple[RunResult, list[Case]]] = []
    for k, run in enumerate(runs):
        output = scrubbed_tail(_read(root / f"out-{i}-{k}.txt"), os.environ)
        code, seconds = run.get("code"), float(run.get("seconds") or 0.0)
        if code is None:
            reason = f"timed out after {timeout:g}s"
            results.append((RunResult("error", reason, None, seconds, output=output), []))
            continue
        cases = read_cases(root / f"junit-{i}-{k}.xml")
        results.append((interpret(int(code), cases, output, seconds), cases))
    first, cases = results[0]
    if first.status == "error" and first.exit_code is not None and blocked:
        return None  # maybe a blocked plugin's doing: a run of its own decides
    if first.status != "failed" or len(results) == 1:
        return first, cases
    later = [dict(run.tests) for run, _ in results[1:]]
    attempts = {
        key: ("failed", *(tests.get(key, "error") for tests in later))
        for key, status in first.tests.items()
        if status == "failed"
    }
    return replace(first, attempts=attempts, fresh_attempts=True), cases


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
