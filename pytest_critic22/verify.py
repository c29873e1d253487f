"""The deterministic verification gate: run results -> outcome -> disposition.

Pure functions. The critic's confidence is never read here (nor anywhere that decides).

verified     -- the procedure fails on ``patched`` (confirmed by reruns) and passes on the
                counterfactual (and the acceptance test passes there, when there is one)
refuted      -- the procedure passes on ``patched``
inconclusive -- anything else: flaky, fails on both trees, a tree that cannot be built,
                a timeout, a usage or internal error, no tests collected
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "Disposition",
    "Outcome",
    "OutcomeKind",
    "RunResult",
    "RunStatus",
    "confirm_failure",
    "confirmation_runs",
    "decide",
    "error_summary",
    "gate",
    "import_failure",
]

OutcomeKind = Literal["verified", "refuted", "inconclusive"]
RunStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True, slots=True)
class RunResult:
    status: RunStatus  # passed: every selected test passed; failed: >= 1 test failed
    reason: str  # for "error": why the run says nothing about the claim
    exit_code: int | None
    seconds: float
    tests: Mapping[str, str] = field(default_factory=dict)  # name -> passed|failed|skipped|error
    output: str = ""  # the tail of the child's output, for the report
    note: str = ""  # what a person should know: an exit status the outcomes overruled
    # Per test that failed: the outcomes of its attempts in the same child (first included),
    # when the child confirmed failures in process (--critic22-rerun-mode=inprocess).
    attempts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    merged: int = 0  # > 1: this run's tests ran in one child with other requests' (a batch)
    attempt: int = 0  # > 1: this "run" is attempt N of a test in the child of the first run
    # Fresh runs, each a process of its own, that went on confirming this failing one (a
    # fork-server session's confirmations: pytest_critic22.forkrun); not part of the record.
    then: tuple[RunResult, ...] = ()

    def to_dict(self) -> dict[str, object]:
        record: dict[str, object] = {
            "status": self.status,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "tests": dict(self.tests),
            "output": self.output,
        }
        if self.note:
            record["note"] = self.note
        if self.merged > 1:
            record["merged"] = self.merged
        if self.attempt > 1:
            record["attempt"] = self.attempt
        return record


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    reason: str
    # inconclusive because the review could not look: a tree could not be built, or could
    # not import the code under test. Unlike flaky or fails-on-both-trees, this is no
    # answer about the claim at all, and the gate says INCOMPLETE rather than PROCEED.
    environment: bool = False


Verdict = Literal["reject", "incomplete", "proceed"]


@dataclass(frozen=True, slots=True)
class Disposition:
    verdict: Verdict
    verified: tuple[str, ...]  # ids of verified blocking findings
    reason: str
    problems: tuple[str, ...] = ()  # why the review could not look (INCOMPLETE)
    interrupted: bool = False


_FIXTURE = re.compile(r"fixture '([^']+)' not found")
_E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_ERROR_LINE = re.compile(r"^(?:ERROR: |\w+Error: )(.+)$", re.MULTILINE)


def error_summary(output: str) -> str:
    """One line that says why a child's tests errored at collection or setup: the missing
    fixture, the import error, the syntax error — what the critic and a person need."""
    found = _FIXTURE.search(output or "")
    if found:
        return f"fixture {found.group(1)!r} not found"
    e_lines = [m.group(1).strip() for m in _E_LINE.finditer(output or "")]
    named = [line for line in e_lines if re.match(r"^[\w.]+(Error|Exception)\b", line)]
    if named or e_lines:
        return (named or e_lines)[0][:200]
    line = _ERROR_LINE.search(output or "")
    return line.group(0).strip()[:200] if line else ""


def explain_error(run: RunResult) -> str:
    """A run's error reason, with the one-line cause from its output when there is one."""
    detail = error_summary(run.output) if run.status == "error" else ""
    return f"{run.reason}: {detail}" if detail and detail not in run.reason else run.reason


def confirmation_runs(first: RunResult, times: int) -> list[RunResult]:
    """The runs a failing run's in-process attempts stand for, as if each attempt had been
    a run of its own: run k holds every test's k-th attempt (a test that stopped failing
    keeps its last outcome). Stops after the first run that does not fail, like fresh runs.
    """
    runs = [first]
    if first.status != "failed" or times <= 1 or not first.attempts:
        return runs
    for k in range(1, times):
        tests = dict(first.tests)
        for name, outcomes in first.attempts.items():
            if name in tests and outcomes:
                tests[name] = _as_status(outcomes[min(k, len(outcomes) - 1)])
        statuses = set(tests.values())
        status: RunStatus = (
            "failed" if "failed" in statuses else "error" if "error" in statuses else "passed"
        )
        reason = "errors during collection or setup" if status == "error" else ""
        code = 0 if status == "passed" else 1
        again = RunResult(status, reason, code, 0.0, tests, first.output, attempt=k + 1)
        runs.append(again)
        if status != "failed":
            break
    return runs


def _as_status(attempt: str) -> str:
    return attempt if attempt in ("passed", "failed", "error", "skipped") else "error"


def confirm_failure(runs: Sequence[RunResult]) -> Outcome | None:
    """None when every run on ``patched`` failed; otherwise the outcome those runs give."""
    if not runs:
        return Outcome("inconclusive", "the procedure did not run")
    first = runs[0]
    if first.status == "error":
        return Outcome("inconclusive", f"on the patched tree: {explain_error(first)}")
    if first.status == "passed":
        return Outcome("refuted", "the procedure passes on the patched tree")
    failures = sum(1 for r in runs if r.status == "failed")
    if failures != len(runs):
        return Outcome(
            "inconclusive",
            f"flaky: failed {failures} of {len(runs)} runs on the patched tree",
        )
    return None


def decide(
    patched_runs: Sequence[RunResult],
    counterfactual: RunResult | None,
    *,
    counterfactual_name: str,
    acceptance: RunResult | None = None,
    obligations: RunResult | None = None,
    counterfactual_error: str = "",
) -> Outcome:
    """The outcome of one finding from its runs (``counterfactual`` None: not built)."""
    early = confirm_failure(patched_runs)
    if early is not None:
        return early
    n = len(patched_runs)
    if counterfactual is None:
        why = counterfactual_error or "it could not be built"
        return Outcome("inconclusive", f"fails on patched ({n}/{n}); counterfactual: {why}")
    if counterfactual.status == "error":
        return Outcome(
            "inconclusive",
            f"fails on patched ({n}/{n}); on the {counterfactual_name} tree: "
            f"{explain_error(counterfactual)}",
        )
    if counterfactual.status == "failed":
        return Outcome(
            "inconclusive",
            f"fails on both the patched and the {counterfactual_name} tree: the claim is "
            "not shown to be caused by the located edit",
        )
    if acceptance is not None and acceptance.status != "passed":
        return Outcome(
            "inconclusive",
            f"the {counterfactual_name} tree fails the specification's acceptance test: "
            "the counterfactual is not a valid fix",
        )
    if obligations is not None and obligations.status != "passed":
        return Outcome(
            "inconclusive",
            f"the {counterfactual_name} tree breaks a preservation obligation",
        )
    return Outcome(
        "verified",
        f"fails on patched ({n}/{n} runs) and passes on the {counterfactual_name} tree",
    )


def gate(
    outcomes: Sequence[tuple[str, str, Outcome]],
    *,
    problems: Sequence[str] = (),
    interrupted: bool = False,
) -> Disposition:
    """The verdict. ``outcomes`` holds (finding id, severity, outcome); ``problems`` are what
    kept the review from doing what was asked (a required critic gave nothing usable, items
    that never ran), decided by the caller.

    reject      iff at least one BLOCKING finding (or preservation group) is verified,
                whatever the others did;
    incomplete  iff nothing is verified and the review could not look: a problem above,
                an interruption, or an inconclusive outcome caused by the environment;
    proceed     otherwise. "Could not look" is never reported as "looked, found nothing".
    """
    verified = tuple(
        fid for fid, severity, o in outcomes if severity == "blocking" and o.kind == "verified"
    )
    if verified:
        return Disposition(
            "reject",
            verified,
            f"{len(verified)} verified blocking defect{'s' if len(verified) != 1 else ''}: "
            + ", ".join(verified),
            interrupted=interrupted,
        )
    counts: dict[str, int] = {}
    for _, severity, outcome in outcomes:
        if severity == "blocking":
            counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
    detail = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "no blocking findings"
    blind = [
        f"{fid}: {o.reason}"
        for fid, severity, o in outcomes
        if severity == "blocking" and o.kind == "inconclusive" and o.environment
    ]
    reasons = tuple(problems) + tuple(blind)
    if interrupted and not any(r.startswith("interrupted") for r in reasons):
        reasons = ("interrupted before the review finished", *reasons)
    if reasons:
        return Disposition(
            "incomplete",
            (),
            f"the review could not look ({detail}): " + "; ".join(reasons),
            reasons,
            interrupted,
        )
    return Disposition("proceed", (), f"no verified blocking defect ({detail})")


_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'")
_FRAME = re.compile(r"^(\S+\.py):\d+: in ", re.MULTILINE)


def import_failure(output: str) -> tuple[str, str] | None:
    """(missing module, the file that imported it) from a child pytest's output, when the
    run failed to import a module; the file is "" when the output shows no frame."""
    found = _MISSING_MODULE.search(output or "")
    if found is None:
        return None
    frames = _FRAME.findall(output[: found.start()])
    return found.group(1), (frames[-1] if frames else "")
