"""A small Python API over the plugin: review one patch, get a typed report back.

:func:`review` runs exactly the pipeline a user gets from ``pytest --critic22=PATCH`` — as
a ``python -m pytest --critic22-only --critic22-report=FILE ...`` subprocess in the
repository — and returns a :class:`ReviewReport`: the verdict, the findings and
preservation groups with their outcomes, the counts, and the JSON report itself (``raw``),
with the exit status and the wall time. It re-implements nothing: the packet, the
blinding, the critic, the routing, the trees and the gate are the plugin's. Harnesses
(and ``critic22 ab``) call it so that every measurement is of the pipeline that runs in
production.

This module imports no model client; a live critic is the plugin's business, inside the
child process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_critic22.report.document import ReviewReport

__all__ = ["review", "review_command"]

#: A review longer than this is stopped (its whole process group is killed).
DEFAULT_TIMEOUT = 1800.0
#: How long an interrupted review gets to remove its worktrees before it is killed.
_GRACE = 10.0


def review_command(
    patch: Path,
    report_path: Path,
    *,
    spec: Path | None = None,
    root_cause: Path | None = None,
    obligations: Path | None = None,
    request: Path | None = None,
    findings: Path | None = None,
    model: str | None = None,
    api_base: str | None = None,
    base: str | None = None,
    engage: str | None = None,
    reruns: int | None = None,
    procedure_timeout: float | None = None,
    extra_args: Sequence[str] = (),
    python: str = sys.executable,
    blocked: Sequence[str] = (),
) -> list[str]:
    """The command line :func:`review` runs (every input as a file, every path absolute);
    ``blocked`` are plugins it leaves out (``-p no:NAME``)."""
    if findings is not None and model is not None:
        raise ValueError("give recorded findings or a model, not both")
    if reruns is not None and (isinstance(reruns, bool) or reruns < 1):
        raise ValueError(f"reruns must be a whole number of at least 1, not {reruns!r}")
    if procedure_timeout is not None and not procedure_timeout > 0:
        raise ValueError(
            f"procedure_timeout must be seconds greater than 0, not {procedure_timeout!r}"
        )
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    command += [arg for name in blocked for arg in ("-p", f"no:{name}")]
    command += [f"--critic22={patch.resolve()}", "--critic22-only"]
    command.append(f"--critic22-report={report_path.resolve()}")
    for option, value in (
        ("--critic22-spec", spec),
        ("--critic22-root-cause", root_cause),
        ("--critic22-obligations", obligations),
    ):
        if value is not None:
            command.append(f"{option}=@{value.resolve()}")
    if request is not None:
        command.append(f"--critic22-request={request.resolve()}")
    if findings is not None:
        command.append(f"--critic22-findings={findings.resolve()}")
    if model is not None:
        command.append(f"--critic22-model={model}")
    if api_base is not None:
        command.append(f"--critic22-api-base={api_base}")
    if base is not None:
        command.append(f"--critic22-base={base}")
    if engage is not None:
        command.append(f"--critic22-engage={engage}")
    if reruns is not None:
        command.append(f"--critic22-reruns={reruns}")
    if procedure_timeout is not None:
        command.append(f"--critic22-procedure-timeout={procedure_timeout:g}")
    command += list(extra_args)
    return command


def review(
    repo: Path,
    patch: Path,
    *,
    spec: str | Path | None = None,
    root_cause: str | Path | None = None,
    obligations: Sequence[str] | Path = (),
    request: Path | Mapping[str, Any] | None = None,
    findings: Path | None = None,
    model: str | None = None,
    api_base: str | None = None,
    base: str | None = None,
    engage: str | None = None,
    reruns: int | None = None,
    procedure_timeout: float | None = None,
    extra_args: Sequence[str] = (),
    report_path: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    die_with_parent: bool = False,
) -> ReviewReport:
    """Review ``patch`` against the git repository ``repo`` with the plugin; return its report.

    Inputs: ``spec`` and ``root_cause`` are text (a ``str``) or a file (a ``Path``);
    ``obligations`` is a list of obligations or a file of them (a JSON list, or one per
    line); ``request`` is a harness's request JSON (``--critic22-request``): a file, or a
    mapping written to one.

    The critic is ``findings`` (a recorded critic output to replay) or ``model`` (a litellm
    model string), or neither (no critic: the deterministic gates alone, unless the
    environment or ini configures a model). ``engage`` is ``--critic22-engage`` (``never`` =
    the validator alone).

    Two different time limits:

    - ``procedure_timeout`` (``--critic22-procedure-timeout``; None: the plugin's 120 s)
      limits each test command the plugin runs in a tree;
    - ``timeout`` (default 1800 s) is the deadline of the whole review: past it the pytest
      child's process group is killed, and the result has ``exit_status`` None, no report,
      and an ``error`` that says so.

    ``reruns`` is ``--critic22-reruns``. Anything else goes in ``extra_args``
    (``--critic22-max-findings=5``, ``-o critic22_retries=0``, ...). Installed plugins the
    review's pytest does not need (it runs no project test) and that neither the repository
    nor these arguments name or hook (hypothesis', coverage's, xdist's, anyio's) are left out
    of it, by the rule the plugin's own children follow
    (:mod:`pytest_critic22.execution.child_plugins`); a usage error then is run again whole, the
    result's ``command`` and ``output`` that run's (the output says so first), its ``seconds`` both
    runs'. The report is written to ``report_path`` (default: a temporary file, removed afterwards;
    the parsed report is returned either way). Nothing is written into ``repo`` but the plugin's
    ``.critic22/``, nothing of it imported if it holds the patch (invariant 17).
    ``die_with_parent`` (Linux): the child is killed when this process dies, even by SIGKILL (the
    review loop: a resumed loop must not race an orphan; what the orphan left is pruned by the next
    run as a crashed run's).
    """
    # Imported on the call: the package's top level imports this module, and it stays cheap.
    from pytest_critic22.execution.child_files import child_tempdir, prune_orphans
    from pytest_critic22.execution.child_plugins import review_blocks

    repo = Path(repo).resolve()
    prune_orphans(_SCRATCH)  # the scratch folders of callers that are gone (a dead PID)
    with child_tempdir(f"{_SCRATCH}{os.getpid()}-") as scratch:  # children wrote in it
        folder = Path(scratch)
        inputs: dict[str, str] = {}
        spec_file = _as_file(spec, folder / "spec.md", inputs, "spec")
        cause_file = _as_file(root_cause, folder / "root_cause.md", inputs, "root_cause")
        if isinstance(obligations, Path):
            obligations_file: Path | None = obligations
        elif obligations:
            obligations_file = folder / "obligations.json"
            obligations_file.write_text(json.dumps(list(obligations)), encoding="utf-8")
            inputs["obligations"] = str(obligations_file)
        else:
            obligations_file = None
        if request is None or isinstance(request, Path):
            request_file = request
        else:
            request_file = folder / "request.json"
            request_file.write_text(json.dumps(dict(request)), encoding="utf-8")
            inputs["request"] = str(request_file)
        target = report_path if report_path is not None else folder / "report.json"
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        # a usage error comes before any review; anything later may have asked the model
        blocked = review_blocks(repo, extra_args, os.environ if env is None else env)
        deadline, seconds, note = time.monotonic() + timeout, 0.0, ""
        for block in (blocked, ()) if blocked else ((),):
            command = review_command(
                Path(patch),
                target,
                spec=spec_file,
                root_cause=cause_file,
                obligations=obligations_file,
                request=request_file,
                findings=findings,
                model=model,
                api_base=api_base,
                base=base,
                engage=engage,
                reruns=reruns,
                procedure_timeout=procedure_timeout,
                extra_args=extra_args,
                python=python,
                blocked=block,
            )
            left = deadline - time.monotonic()
            code, output, took = _run(command, repo, left, env, die_with_parent)
            report, error, seconds = *_read_report(target), seconds + took
            if report is not None or code != 4 or not block or deadline <= time.monotonic():
                break
            note = f"critic22: run again with every plugin ({', '.join(block)} left out: exit 4)\n"
        output = note + output
        if code is None:
            error = f"the review timed out after {timeout:g}s"
        elif report is None and not error:
            error = f"pytest exited with {code} and wrote no report"
        return ReviewReport.from_json(
            report,
            exit_status=code,
            seconds=seconds,
            command=command,
            cwd=str(repo),
            output=output,
            error="" if report is not None and code is not None else error,
            inputs=inputs,
        )


#: A review's scratch folder: critic22-api-<pid>-<random>, so that the next review can tell
#: the folders of a caller killed by SIGKILL (a TemporaryDirectory cannot clean up then).
_SCRATCH = "critic22-api-"


def _as_file(value: str | Path | None, path: Path, inputs: dict[str, str], key: str) -> Path | None:
    if value is None or isinstance(value, Path):
        return value
    path.write_text(value, encoding="utf-8")
    inputs[key] = str(path)
    return path


def _read_report(path: Path) -> tuple[dict[str, Any] | None, str]:
    if not path.is_file():
        return None, ""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"the report {path} is unreadable: {exc}"
    if not isinstance(document, dict):
        return None, f"the report {path} is not a JSON object"
    return document, ""


def _run(
    command: Sequence[str],
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None,
    die_with_parent: bool = False,
) -> tuple[int | None, str, float]:
    """Run in its own process group: (exit status or None on timeout, output tail, seconds).

    On a timeout the group is killed; on Ctrl-C (or another interruption) it gets SIGINT first
    (the plugin removes its worktrees), then is killed. It writes no bytecode into the checkout.
    """
    from pytest_critic22.execution.processes import drain
    from pytest_critic22.execution.runner import tail_text

    start = time.monotonic()
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env={**(os.environ if env is None else env), "PYTHONDONTWRITEBYTECODE": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent if die_with_parent else None,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return None, tail_text(drain(proc)), time.monotonic() - start
    except BaseException:
        _stop(proc)
        raise
    return proc.returncode, tail_text(out), time.monotonic() - start


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG)."""
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_GRACE)
    _signal_group(proc, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, sig)
