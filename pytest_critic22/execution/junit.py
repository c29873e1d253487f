"""A child pytest's JUnit report, read: per-test cases, and the run's verdict from them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_critic22.model.results import RunResult, RunStatus

__all__ = ["NO_REPORT", "Case", "interpret", "parse_cases", "read_cases"]

from pytest_critic22.child.protocol import ATTEMPTS, NODEID

# A child that exits 0 or 1 without its JUnit report (a configuration that drops junitxml):
# its results cannot be read, which is never "passed".
NO_REPORT = "the child wrote no JUnit report (does the tree's configuration disable junitxml?)"


def interpret(code: int, cases: Sequence[Case], output: str, seconds: float) -> RunResult:
    """The run's verdict from its per-test outcomes; the exit status only where no test
    outcome says anything (a usage error, no tests, an internal error, a kill)."""
    tests = {case.key: case.status for case in cases}
    attempts = {c.key: c.attempts for c in cases if c.attempts[:1] == ("failed",)}
    statuses = {case.status for case in cases}  # two cases of one name: both count
    if code >= 0 and code not in (2, 3, 4, 5) and tests:
        note = ""
        if "failed" in statuses:
            status: RunStatus = "failed"
        elif "error" in statuses:
            return RunResult(
                "error", "errors during collection or setup", code, seconds, tests, output
            )
        else:
            status = "passed"
        if (code == 0) != (status == "passed"):
            # e.g. a coverage threshold, a plugin's session-finish hook, warnings as errors
            note = f"exit status {code} ignored: the per-test outcomes decide ({status})"
        return RunResult(status, "", code, seconds, tests, output, note=note, attempts=attempts)
    if code == 0:
        return RunResult("passed", "", code, seconds, tests, output, attempts=attempts)
    if code == 1:
        return RunResult("error", "errors during collection or setup", code, seconds, tests, output)
    reasons = {
        2: "the run was interrupted (errors during collection?)",
        3: "pytest internal error",
        4: "pytest usage error (unknown test or option?)",
        5: "no tests were collected",
    }
    if code < 0:
        reason = f"killed by signal {-code} (resource limit?)"
    else:
        reason = reasons.get(code, f"pytest exited with {code}")
    return RunResult("error", reason, code, seconds, tests, output)


@dataclass(frozen=True, slots=True)
class Case:
    """One testcase of a child's JUnit report."""

    key: str  # classname::name, as RunResult.tests names it
    status: str  # passed | failed | error | skipped
    nodeid: str  # "" where the report does not say (a collection error)
    attempts: tuple[str, ...] = ()  # in-process confirmation (childrerun)
    text: str = ""  # the failure's or error's message and text


def read_cases(path: Path) -> list[Case]:
    """The cases of a child's report: read as a regular file only (a child may have put a
    link or a FIFO in its place, see :mod:`pytest_critic22.execution.child_files`)."""
    from pytest_critic22.execution.child_files import read_child_file

    return parse_cases(read_child_file(path) or b"")


def parse_cases(text: str | bytes) -> list[Case]:
    """The cases of a report's text (a fork-server session sends it); [] when it is none."""
    if not text:
        return []
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return []
    return _cases(root)


def _cases(root: ET.Element) -> list[Case]:
    cases = []
    for case in root.iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        status, text = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                status = "failed" if tag == "failure" else tag
                text = f"{found.get('message', '')}\n{found.text or ''}".strip()
                break
        props: dict[str, str] = {}
        for prop in case.iter("property"):  # the child plugin's come first: a test's own
            name = prop.get("name", "")  # record_property cannot override them
            if name.startswith("critic22_"):
                props.setdefault(name, prop.get("value", ""))
        attempts = tuple(a for a in props.get(ATTEMPTS, "").split(",") if a)
        cases.append(Case(key, status, props.get(NODEID, ""), attempts, text))
    return cases
