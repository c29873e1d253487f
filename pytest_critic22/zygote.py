"""Several pytest sessions in one sandboxed child: each a fork of a process that imported
pytest and its plugins once (``python -m pytest_critic22.zygote SPEC``), run from the runner.

Every job is a session of its own — its own fork, arguments, JUnit report, output file and
exit status — so one job's tests never share a process with another's: a module's
import-time side effects die with its fork. What the forks share is only what the parent did
before forking: start the interpreter inside the sandbox and import pytest and the plugins
the jobs will load. Each job has its own time limit; the parent writes the results file
after every job, so a kill still leaves the finished ones.

SPEC is JSON: ``{"results": PATH, "jobs": [{"timeout": SECONDS, "runs": [{"args": [...],
"output": PATH}, ...]}, ...]}``: a job's first run, then its further runs in fresh forks
while the previous one failed (exit status 1) — confirmation, each attempt a new process.
This module is loaded in the child only.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as handle:
        spec = json.load(handle)
    # What every fork would import first: pytest and its built-in plugins. Nothing pytest
    # may want to assert-rewrite (a third-party plugin, a conftest) is imported here: that
    # would warn, and a project that turns warnings into errors would fail on it.
    import gc

    import pytest  # noqa: F401
    from _pytest.config import default_plugins

    for name in default_plugins:
        with contextlib.suppress(Exception):
            importlib.import_module(f"_pytest.{name}")
    gc.freeze()  # the forks' collections skip (and do not copy) what the parent holds

    results: list[list[dict[str, Any]]] = []
    for job in spec["jobs"]:
        # A job's runs: the first, then fresh forks confirming while they fail (exit 1).
        runs = [_run(job["runs"][0], float(job["timeout"]))]
        for again in job["runs"][1:]:
            if runs[-1]["code"] != 1:
                break
            runs.append(_run(again, float(job["timeout"])))
        results.append(runs)
        partial = spec["results"] + ".partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(results, handle)
        os.replace(partial, spec["results"])
    return 0


def _run(job: dict[str, Any], timeout: float) -> dict[str, Any]:
    out = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    start = time.monotonic()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the job: a pytest session of its own
        status = 3
        try:
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.close(out)
            import pytest

            status = int(pytest.main(list(job["args"])))
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(status)
    os.close(out)
    deadline = start + timeout
    code: int | None = None
    while True:
        done, waited = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(waited)
            break
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = None
            break
        time.sleep(0.005)
    return {"code": code, "seconds": time.monotonic() - start}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
