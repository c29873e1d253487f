"""A small Python API over the plugin: review one patch, get the JSON report back.

:func:`review` runs exactly the pipeline a user gets from ``pytest --critic22=PATCH`` — as
a ``python -m pytest --critic22-only --critic22-report=FILE ...`` subprocess in the
repository — and returns the report the plugin wrote, with the exit status and the wall
time. It re-implements nothing: the packet, the blinding, the critic, the routing, the
trees and the gate are the plugin's. Harnesses (and ``critic22 ab``) call it so that
every measurement is of the pipeline that runs in production.

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
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_critic22.runner import drain, tail_text

__all__ = ["ReviewRun", "review", "review_command"]

#: A review longer than this is stopped (its whole process group is killed).
DEFAULT_TIMEOUT = 1800.0
#: How long an interrupted review gets to remove its worktrees before it is killed.
_GRACE = 10.0


@dataclass(frozen=True, slots=True)
class ReviewRun:
    """One run of the plugin on one patch."""

    report: dict[str, Any] | None  # the JSON the plugin wrote (--critic22-report); None: no report
    exit_status: int | None  # pytest's exit status; None when the run timed out
    seconds: float  # wall time of the whole run
    command: tuple[str, ...]  # what ran (in ``cwd``)
    cwd: str
    output: str = ""  # the tail of the run's stdout and stderr
    error: str = ""  # why there is no report, when there is none
    inputs: Mapping[str, str] = field(default_factory=dict)  # files written for the run

    @property
    def ok(self) -> bool:
        return self.report is not None

    @property
    def verdict(self) -> str | None:
        """``reject`` or ``proceed`` (the gate's), or None when the review did not finish."""
        if self.report is None:
            return None
        return str(self.report.get("disposition", {}).get("verdict") or "") or None

    def to_dict(self) -> dict[str, Any]:
        return {
            "report": self.report,
            "exit_status": self.exit_status,
            "seconds": round(self.seconds, 3),
            "command": list(self.command),
            "cwd": self.cwd,
            "output": self.output,
            "error": self.error,
        }


def review_command(
    patch: Path,
    report_path: Path,
    *,
    spec: Path | None = None,
    root_cause: Path | None = None,
    obligations: Path | None = None,
    findings: Path | None = None,
    model: str | None = None,
    api_base: str | None = None,
    base: str | None = None,
    engage: str | None = None,
    extra_args: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """The command line :func:`review` runs (every input as a file, every path absolute)."""
    if findings is not None and model is not None:
        raise ValueError("give recorded findings or a model, not both")
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    command += [f"--critic22={patch.resolve()}", "--critic22-only"]
    command.append(f"--critic22-report={report_path.resolve()}")
    for option, value in (
        ("--critic22-spec", spec),
        ("--critic22-root-cause", root_cause),
    ):
        if value is not None:
            command.append(f"{option}=@{value.resolve()}")
    if obligations is not None:
        command.append(f"--critic22-obligations={obligations.resolve()}")
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
    command += list(extra_args)
    return command


def review(
    repo: Path,
    patch: Path,
    *,
    spec: str | Path | None = None,
    root_cause: str | Path | None = None,
    obligations: Sequence[str] | Path = (),
    findings: Path | None = None,
    model: str | None = None,
    api_base: str | None = None,
    base: str | None = None,
    engage: str | None = None,
    extra_args: Sequence[str] = (),
    report_path: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> ReviewRun:
    """Review ``patch`` against the git repository ``repo`` with the plugin; return its report.

    ``spec`` and ``root_cause`` are text (a ``str``) or a file (a ``Path``); ``obligations``
    is a list of obligations or a file of them. The critic is ``findings`` (a recorded critic
    output to replay) or ``model`` (a litellm model string), or neither (no critic: the
    deterministic gates alone, unless the environment or ini configures a model).
    ``engage`` is ``--critic22-engage`` (``never`` = the validator alone). Anything else goes
    in ``extra_args`` (``--critic22-reruns=1``, ``--critic22-timeout=60``, ...). The report
    is written to ``report_path`` (default: a temporary file, removed afterwards; the parsed
    report is returned either way). Nothing is written into ``repo`` but the plugin's own
    ``.critic22/`` state folder.
    """
    repo = Path(repo).resolve()
    with tempfile.TemporaryDirectory(prefix="critic22-api-") as scratch:
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
        target = report_path if report_path is not None else folder / "report.json"
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        command = review_command(
            Path(patch),
            target,
            spec=spec_file,
            root_cause=cause_file,
            obligations=obligations_file,
            findings=findings,
            model=model,
            api_base=api_base,
            base=base,
            engage=engage,
            extra_args=extra_args,
            python=python,
        )
        code, output, seconds = _run(command, repo, timeout, env)
        report, error = _read_report(target)
        if code is None:
            error = f"the review timed out after {timeout:g}s"
        elif report is None and not error:
            error = f"pytest exited with {code} and wrote no report"
        return ReviewRun(
            report=report,
            exit_status=code,
            seconds=seconds,
            command=tuple(command),
            cwd=str(repo),
            output=output,
            error="" if report is not None and code is not None else error,
            inputs=inputs,
        )


def _as_file(value: str | Path | None, path: Path, inputs: dict[str, str], key: str) -> Path | None:
    if value is None:
        return None
    if isinstance(value, Path):
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
    command: Sequence[str], cwd: Path, timeout: float, env: Mapping[str, str] | None
) -> tuple[int | None, str, float]:
    """Run in its own process group: (exit status or None on timeout, output tail, seconds).

    On a timeout the group is killed. On Ctrl-C (or any other interruption of this process)
    the run gets SIGINT first, so that the plugin removes its worktrees, then is killed.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
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
