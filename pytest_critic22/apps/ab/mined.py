"""The ground-truth run of a mined case (I/O): the fix's own tests, and the old tests.

A mined case (``critic22 mine``) names its hidden tests as files at the fix commit with the
node ids that tell good from defective. They are written at their own paths in a scratch
copy of the base (replacing the base's versions, beside the project's conftest files), run
on the base and on the patched tree; then the base's own test files are put back and the
project's suite runs on the patched tree, where every existing test (those passing at the
base) must still pass. Every run is sandboxed; node ids are checked as data.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from pytest_critic22.apps.ab.population import Case

__all__ = ["run_mined_ground_truth"]

_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}  # a mutant is often as long as the fix: no stale .pyc


def run_mined_ground_truth(case: Case, repo: Path, timeout: float) -> dict[str, Any]:
    from pytest_critic22.apps.mine.outcomes import as_nodeids, collection_problem
    from pytest_critic22.execution.git import git
    from pytest_critic22.execution.runner import detect_pythonpath, run_pytest
    from pytest_critic22.model.nodeids import as_pytest_args

    pythonpath = detect_pythonpath(repo)
    nodes = as_pytest_args([n for test in case.ground_truth for n in test.nodes])
    paths = [test.path for test in case.ground_truth if test.path is not None]
    for test in case.ground_truth:
        if test.path is not None:
            target = repo / test.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(test.source, encoding="utf-8")

    def run(args: list[str]) -> Any:
        return run_pytest(repo, args, timeout=timeout, pythonpath=pythonpath, extra_env=_ENV)

    on_base = run(nodes)
    applied = git(["apply", "--whitespace=nowarn", str(case.patch)], repo, check=False)
    if applied.returncode != 0:
        return {
            "patched": "error",
            "base": on_base.status,
            "tests": {},
            "seconds": on_base.seconds,
            "error": f"the patch does not apply: {applied.stderr.strip()[:200]}",
        }
    on_patched = run(nodes)
    record: dict[str, Any] = {
        "patched": on_patched.status,
        "base": on_base.status,
        "tests": dict(on_patched.tests),
        "reason": on_patched.reason,
    }
    seconds = on_base.seconds + on_patched.seconds
    if case.existing_tests:
        tracked = set(git(["ls-files", "-z", "--", *paths], repo).stdout.split("\0"))
        for path in paths:
            if path in tracked:
                git(["checkout", "-q", "HEAD", "--", path], repo)
            else:
                with contextlib.suppress(FileNotFoundError):
                    (repo / path).unlink()
        suite = run(list(case.test_args))
        seconds += suite.seconds
        problem = collection_problem(suite.exit_code, suite.reason, suite.tests)
        if problem:
            record.update(existing="error", existing_reason=problem)
        else:
            files = [p for p in git(["ls-files", "-z", "--", "*.py"], repo).stdout.split("\0") if p]
            outcomes = as_nodeids(suite.tests, files)
            broken = [n for n in case.existing_tests if outcomes.get(n) != "passed"]
            record.update(existing="failed" if broken else "passed", existing_broken=broken)
    record["seconds"] = round(seconds, 3)
    return record
