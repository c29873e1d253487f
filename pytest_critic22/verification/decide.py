"""The deterministic verification gate: run results -> outcome -> disposition.

Pure functions. The critic's confidence is never read here (nor anywhere that decides).

verified     -- the procedure fails on ``patched`` (confirmed by reruns) and passes on the
                counterfactual (and the acceptance test passes there, when there is one)
refuted      -- the procedure passes on ``patched``
inconclusive -- anything else: flaky, fails on both trees, a tree that cannot be built,
                a timeout, a usage or internal error, no tests collected

A patch without its located edit that is not a working program (another edit removed a name
it uses: :func:`broken_program` reads that from the run's output) is no counterfactual: the
kinds compare against the base instead
(:func:`pytest_critic22.verification.procedures.fallback_to_base`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_critic22.model.results import Disposition, Outcome, RunResult, RunStatus

__all__ = [
    "Crash",
    "broken_program",
    "confirm_failure",
    "confirmation_runs",
    "crashes",
    "decide",
    "decisive_line",
    "error_summary",
    "gate",
    "import_failure",
]

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
        lines = [
            f"{label}: {line}"
            for label, run in (("patched", patched_runs[0]), (counterfactual_name, counterfactual))
            if (line := decisive_line(run.output))
        ]
        return Outcome(
            "inconclusive",
            f"fails on both the patched and the {counterfactual_name} tree: the claim is "
            "not shown to be caused by the located edit"
            + (f" ({'; '.join(lines)})" if lines else ""),
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


# -- what a failing run's output says about how its tests died ---------------------------------


@dataclass(frozen=True, slots=True)
class Crash:
    """An exception a test of a child run died of, as the run's output shows it."""

    error: str  # the exception's type ("NameError"); "" where the output names none
    message: str  # its message's first line, or the first E line when it names no type
    path: str  # the innermost frame's file as the output names it; "" when it shows none
    line: int
    chained: bool = False  # another exception followed it (raised from it or while handling)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.path else "an unknown place"

    @property
    def text(self) -> str:
        """The failure's decisive line: ``NameError: name 'x' is not defined``."""
        return f"{self.error}: {self.message}" if self.error and self.message else self.message

    def same(self, other: Crash | None) -> bool:
        """The same error with the same message in the same file (lines move between trees)."""
        mine = (self.error, self.message, self.path)
        return other is not None and (other.error, other.message, other.path) == mine


# pytest's tracebacks (--tb=auto/long, short, line, native), on the terminal or in a JUnit
# report: a section per failing test; long style puts the innermost frame's location after
# the E lines ("m.py:5: NameError"), short style before them ("m.py:5: in f"), line style
# on one line ("/t/m.py:5: NameError: msg"), native as Python prints it.
_HEADER = re.compile(r"^_{3,} .* _{3,}$")
_CAPTURED = re.compile(r"^-{3,} Captured .* -{3,}$")
_LOCATION = re.compile(r"^(\S[^:]*?\.py):(\d+): ([A-Za-z_][\w.]*)(?:: (.*))?$")
_SHORT_FRAME = re.compile(r"^(\S[^:]*?):(\d+): in \S")
_NATIVE_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_E = re.compile(r"^E(?:\s|$)")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*): (.*)$")
_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")
_SYNTAX = ("SyntaxError", "IndentationError", "TabError")
_NOT_A_PROGRAM = frozenset(
    ("NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError", *_SYNTAX)
)
_MODULE_ATTRIBUTE = re.compile(r"^(?:partially initialized )?module '[^']+' has no attribute ")


def crashes(output: str) -> list[Crash]:
    """Every exception the output shows a test dying of, in order, each at its innermost
    frame (frames of generated code, ``<frozen importlib…>``, skipped)."""
    found: list[Crash] = []
    frame: tuple[str, int] | None = None
    block: list[str] = []  # the E lines being read
    pending: list[str] = []  # an E block whose location may still follow (long style)
    native = captured = False

    def settle(location: tuple[str, int] | None, error: str = "", message: str = "") -> None:
        nonlocal pending, frame
        lines, pending = pending, []
        if lines or error:
            crash = _crash(lines, location, error, message)
            if crash is not None:
                found.append(crash)
        frame = None

    for raw in (output or "").splitlines():
        line = raw.rstrip()
        if _CAPTURED.match(line) or _HEADER.match(line) or line.startswith("==="):
            captured = _CAPTURED.match(line) is not None  # what a test printed is not ours
        elif captured:
            continue
        if _E.match(line):
            if not block and pending:  # a second E block: the first had no location after it
                settle(frame)
            block.append(line[1:].strip())
            continue
        if block:
            pending, block = block, []
        if not line.strip():
            continue
        if line.startswith(_CHAINED):
            settle(frame)
            if found:
                found[-1] = replace(found[-1], chained=True)
            continue
        located = _LOCATION.match(line)
        if located is not None:
            where = (located.group(1), int(located.group(2)))
            settle(where, located.group(3), located.group(4) or "")
            continue
        framed = _NATIVE_FRAME.match(line)
        if framed is not None:
            frame, native = _frame(framed.group(1), framed.group(2), frame), True
            continue
        if line[0].isspace():  # source, or a message's next line (line style)
            continue
        if pending:  # short style: the location came before the E lines
            settle(frame)
        if _HEADER.match(line):
            frame, native = None, False
        elif (short := _SHORT_FRAME.match(line)) is not None:
            frame = _frame(short.group(1), short.group(2), frame)
        elif native and (exception := _EXCEPTION.match(line)) is not None:
            path, number = frame or ("", 0)
            found.append(Crash(exception.group(1), exception.group(2).strip(), path, number))
            frame, native = None, False
    if block:
        pending = block
    settle(frame)
    return found


def _frame(path: str, line: str, current: tuple[str, int] | None) -> tuple[str, int] | None:
    return current if path.startswith("<") else (path, int(line))


def _crash(
    lines: Sequence[str], location: tuple[str, int] | None, error: str, message: str
) -> Crash | None:
    """One crash from its E lines and the location the output gives it (or None)."""
    named = [m for m in map(_EXCEPTION.match, lines) if m is not None and " " not in m.group(1)]
    chosen = next((m for m in named if m.group(1) == error), named[0] if named else None)
    if chosen is not None:
        error, message = error or chosen.group(1), message or chosen.group(2)
    message = message or next((ln for ln in lines if ln), "")
    if not error and not message:
        return None
    path, number = location or ("", 0)
    if error.rsplit(".", 1)[-1] in _SYNTAX:  # the file that does not parse, not its importer
        for ln in lines:
            syntax = _NATIVE_FRAME.match(ln)
            if syntax is not None:
                path, number = syntax.group(1), int(syntax.group(2))
    return Crash(error, message.strip(), path, number)


def decisive_line(output: str, limit: int = 160) -> str:
    """The line that says why a run failed: the exception its first failing test died of
    (``AssertionError: assert 3 == 4``), else the one-line summary of its errors."""
    final = [crash for crash in crashes(output) if not crash.chained and crash.text]
    line = final[0].text if final else error_summary(output)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def broken_program(output: str, roots: Sequence[str], own: Sequence[str]) -> Crash | None:
    """The crash that shows a tree is not a working program, or None: a test died of a
    NameError, an ImportError, a SyntaxError or an AttributeError on a module, raised in a
    frame of the project's own code — a file inside the tree (``roots``: its folder, as
    given and resolved) that is not one of the procedure's own tests (``own``, relative to
    the tree). The crash's path comes back relative to the tree. An exception raised in
    the procedure's own test, in an installed library, or caught and replaced by another
    says nothing about the program."""
    for crash in crashes(output):
        kind = crash.error.rsplit(".", 1)[-1]
        module = kind == "AttributeError" and _MODULE_ATTRIBUTE.match(crash.message)
        if crash.chained or not (kind in _NOT_A_PROGRAM or module):
            continue
        path = _inside(crash.path, roots)
        if path and path not in {posixpath.normpath(p) for p in own}:
            return replace(crash, path=path)
    return None


def _inside(path: str, roots: Sequence[str]) -> str:
    """``path`` relative to the tree when it is a file inside it, else ""."""
    if not path or path.startswith("<"):
        return ""
    if posixpath.isabs(path):
        for root in roots:
            prefix = root.rstrip("/") + "/"
            if path.startswith(prefix):
                return posixpath.normpath(path[len(prefix) :])
        return ""
    relative = posixpath.normpath(path)
    return "" if relative == ".." or relative.startswith("../") else relative
