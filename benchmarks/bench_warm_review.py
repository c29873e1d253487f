"""A review costs what its tests cost (issue 44, item 5): one finding's review, warm and cold,
against the raw runs it needs, and where the rest of its time goes.

    python benchmarks/bench_warm_review.py [--quick] [--repeat N] [--samples NAME,...]

Subjects:

- a generated repository of pyparsing's shape: one 7,800-line module (a base class and 60
  subclasses of 14 methods each, a star-importing ``__init__``), 250 tests that use it (200
  methods of one test class in a 4,000-line file, as pyparsing keeps them, and 50 functions
  in a second file), and a patch that changes one line of the method every test calls;
  the recorded finding is a ``test:`` that fails on the patched tree and passes on the base;
- the bundled samples (``sample_repos/``): for each sample, its first case whose expected
  outcomes (``expected.json``) have a ``test:`` finding verified; that finding alone is the
  recorded critic output.

Arms, per subject and repetition, whole processes timed with ``time.perf_counter()``:

- cold: ``python -m pytest --critic22=PATCH --critic22-findings=ONE --critic22-only
  --critic22-preservation=off -p no:cacheprovider -q`` after the state folder is emptied
  (``.critic22/`` removed with the warm trees it keeps, the run's tree folder removed);
- warm: the same command again at once: the code graph, the context and the trees as the
  cold run left them;
- raw runs: the finding's own pytest runs, timed directly: its test file run once on a
  patched worktree and once on the counterfactual one (the patch without the finding's
  edit; with a ``repair:``, the patched tree plus the repair), both made here with ``git
  worktree add`` and ``git apply``, the two runs' seconds summed. Each is the command line
  the review gives its child (``python -m pytest -p no:critic22 -p no:cacheprovider``, the
  installed plugins the test does not use left out: ``childplugins.blocked_plugins``),
  without the sandbox, the JUnit report and the in-process confirmation attempts: the
  ratios' denominator. Beside it, the same runs as typed by hand (``python -m pytest -p
  no:cacheprovider -q FILE``, every installed plugin loaded).

Preservation is off so the review runs the finding alone, as the raw runs do. Each arm runs
once untimed first (bytecode in a cache of the benchmark's own, ``PYTHONPYCACHEPREFIX``; the
page cache). The table shows medians and the ratios of those medians, all measured in this
one run; the targets in the header quote the issue and assert nothing. In a repetition the
cold review runs first, then the warm one, then the raw runs.

Where the time goes: every plugin run loads a small timing plugin (written to the
benchmark's temporary folder, ``-p``) that records, in the reviewing process, when each of
these was running: ``evidence.build_graph`` (graph); ``evidence``'s ``touched_source``,
``callee_evidence``, ``usage_examples`` and ``fixture_evidence`` (context); ``TreeSet.get``
and ``TreeSet.remove_all`` (trees); ``procedures.run_child`` and ``procedures.run_sessions``
(runs: waiting for the finding's child pytest runs). An instant is counted once, in the
first of those columns that covers it; other is the rest of the process's wall time
(Python's and pytest's start-up, collection, the packet, the report, the ledger).

Last, the packet's context alone, in this process, on the generated repository (its code
graph cached first): ``gather_impact`` with every file's context read by libcst, as before
issue 44 (``codeblocks.source_context`` told nothing of the file), then by Python's parser
and tokenizer (an empty context cache), then again (the cache filled); the seconds its
context functions took, medians of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.apps.samples import SAMPLES_DIR, materialize, sample_names
from pytest_critic22.execution.child_plugins import blocked_plugins
from pytest_critic22.execution.trees import trees_root
from pytest_critic22.model.patch import parse_patch

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
GIT_IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
COLUMNS = ("graph", "context", "trees", "runs")
REPAIR = re.compile(r"^repair:\s*$", re.MULTILINE)

# The timing plugin: what the reviewing process was doing, as intervals per column.
TIMERS = """\
import functools, json, os, threading, time

import pytest_critic22.evidence.gather as evidence
import pytest_critic22.verification.procedures as procedures
import pytest_critic22.execution.trees as trees

START = time.perf_counter()
SPANS = {"graph": [], "context": [], "trees": [], "runs": []}
LOCK = threading.Lock()


def timed(column, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        begin = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            with LOCK:
                SPANS[column].append((begin - START, time.perf_counter() - START))
    return wrapper


for column, owner, names in (
    ("graph", evidence, ("build_graph",)),
    ("context", evidence, ("touched_source", "callee_evidence", "usage_examples",
                           "fixture_evidence")),
    ("trees", trees.TreeSet, ("get", "remove_all")),
    ("runs", procedures, ("run_child", "run_sessions")),
):
    for name in names:
        setattr(owner, name, timed(column, getattr(owner, name)))


def pytest_unconfigure(config):
    with open(os.environ["CRITIC22_BENCH_SPANS"], "w") as out:
        json.dump({"spans": SPANS, "end": time.perf_counter() - START}, out)
"""


def git(args: Sequence[str], cwd: Path, *, input: str | None = None) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=cwd, input=input, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


# -- the subjects ------------------------------------------------------------------------------

CLASSES, METHODS, TESTS_IN_CLASS, TEST_FUNCTIONS = 60, 13, 200, 50
BROKEN = (
    "        tokens = self._parse(text.strip())\n",
    "        tokens = self._parse(text.strip())[:-1] if len(text) > 9 "
    "else self._parse(text.strip())\n",
)
GENERATED_FINDING = (
    "import bigparse as bp\n\n\n"
    "def test_parse_string_keeps_every_token() -> None:\n"
    '    assert bp.ParserElement("p").parse_string("alpha beta") == ["alpha", "beta"]\n'
)


def core_module() -> str:
    """One big module: a base class with the method every test calls, and many subclasses."""
    names = [f"Element{c}" for c in range(CLASSES)]
    out = [
        '"""A parsing library of pyparsing\'s shape, generated: one big module."""',
        "",
        "from __future__ import annotations",
        "",
        "__all__ = [",
        *[f'    "{n}",' for n in names],
        '    "ParserElement",',
        '    "parse_all",',
        "]",
        "",
        "",
        "class ParserElement:",
        '    """The base of every element."""',
        "",
        "    def __init__(self, name: str = '') -> None:",
        "        self.name = name",
        "",
        "    def parse_string(self, text: str, parse_all: bool = False) -> list[str]:",
        '        """Parse ``text``; with ``parse_all``, all of it must match."""',
        BROKEN[0].rstrip("\n"),
        "        if parse_all and not tokens:",
        "            raise ValueError(text)",
        "        return tokens",
        "",
        "    def _parse(self, text: str) -> list[str]:",
        "        return [t for t in text.split() if t]",
        "",
    ]
    for c, name in enumerate(names):
        out += [
            "",
            f"class {name}(ParserElement):",
            f'    """Element number {c}: matches words of a kind.',
            "",
            "    A longer description, as real code has it.",
            '    """',
            "",
            f"    kind = {c}",
            "",
        ]
        for m in range(METHODS):
            out += [
                f"    def method{m}(self, value: int, *, scale: int = {m + 1}) -> int:",
                f'        """Method {m} of {name}: scales ``value``."""',
                "        total = value * scale",
                f"        if total > {100 * (m + 1)}:",
                f"            total -= {m}",
                "        for step in range(3):",
                "            total += step",
                "        return total + len(self.parse_string('a b'))",
                "",
            ]
        peer = names[(c * 7 + 3) % CLASSES]
        out += [f"    def helper(self) -> {peer}:", f"        return {peer}('{name}')", ""]
    out += [
        "",
        "def parse_all(text: str) -> list[str]:",
        '    """Every token of ``text``."""',
        "    return ParserElement().parse_string(text, parse_all=True)",
    ]
    return "\n".join(out) + "\n"


def test_module(first: int, count: int, in_class: bool) -> str:
    pad = "    " if in_class else ""
    out = [
        '"""The library\'s tests, generated."""',
        "",
        "from __future__ import annotations",
        "",
        "import bigparse as bp",
        "from bigparse.core import parse_all",
        "",
    ]
    if in_class:
        out += ["", "class TestCore:", '    """Tests of the core, in one class."""', ""]
    for t in range(first, first + count):
        c = t % CLASSES
        body = [
            f"def test_element{c}_case{t}({'self' if in_class else ''}) -> None:",
            f'    """Case {t}."""',
            f"    element = bp.Element{c}('e{t}')",
            "    parser = bp.ParserElement('p')",
            "    tokens = parser.parse_string('x y z')",
            "    assert tokens == ['x', 'y', 'z']",
            f"    assert element.method{t % METHODS}(1) > 0",
            "    assert parse_all('a b') == ['a', 'b']",
            "    for word in tokens:",
            "        assert word.isalpha()",
            f"    other = bp.Element{(c + 7) % CLASSES}('o{t}')",
            "    assert other.parse_string('p q') == ['p', 'q']",
            f"    assert other.method{(t + 3) % METHODS}(2, scale=3) >= 6",
            "    if element.kind % 2:",
            "        assert element.helper() is not None",
            "    else:",
            "        assert isinstance(element.name, str)",
            "    assert len(tokens) == 3",
        ]
        out += ["", *[pad + line for line in body], ""]
    return "\n".join(out)


@dataclass(slots=True)
class Subject:
    name: str
    repo: Path
    patch: Path
    findings: Path
    location: str  # the finding's edit
    test_source: str  # the finding's test, for the raw runs
    repair: str = ""  # the finding's repair: the counterfactual is the patched tree plus it


def generated_subject(tmp: Path) -> Subject:
    repo = tmp / "pyparsing-shape"
    (repo / "bigparse").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "bigparse" / "__init__.py").write_text(
        '"""bigparse."""\n\nfrom bigparse.core import *  # noqa: F403\n'
        "from bigparse.core import __all__\n"
    )
    (repo / "bigparse" / "core.py").write_text(core_module())
    (repo / "tests" / "test_core.py").write_text(test_module(0, TESTS_IN_CLASS, True))
    (repo / "tests" / "test_simple.py").write_text(
        test_module(TESTS_IN_CLASS, TEST_FUNCTIONS, False)
    )
    (repo / "tests" / "conftest.py").write_text(
        'import pytest\n\n\n@pytest.fixture\ndef words():\n    """Some words."""\n'
        "    return ['a', 'b']\n"
    )
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    git(["init", "-q", "-b", "main"], repo)
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "base"], repo)
    core = repo / "bigparse" / "core.py"
    original = core.read_text()
    core.write_text(original.replace(*BROKEN))
    patch = tmp / "pyparsing-shape.diff"
    patch.write_text(git(["diff", "--no-ext-diff"], repo))
    core.write_text(original)
    finding = {
        "location": "e1",
        "claim": "parse_string drops the last token of a text longer than nine characters.",
        "severity": "blocking",
        "evidence": "e1 cuts the last token.",
        "falsification": "test:\n" + GENERATED_FINDING,
        "confidence": 0.5,
    }
    findings = tmp / "pyparsing-shape-finding.json"
    findings.write_text(json.dumps([finding], indent=2))
    return Subject("generated, pyparsing's shape", repo, patch, findings, "e1", GENERATED_FINDING)


def sample_subjects(tmp: Path, wanted: Sequence[str] | None) -> tuple[list[Subject], list[str]]:
    """One verified ``test:`` finding per sample, alone in a findings file."""
    subjects: list[Subject] = []
    skipped: list[str] = []
    for sample in sample_names():
        if wanted is not None and sample not in wanted:
            continue
        chosen = None
        for case in sorted((SAMPLES_DIR / sample / "cases").iterdir()):
            expected_file, findings_file = case / "expected.json", case / "findings.json"
            if not expected_file.is_file() or not findings_file.is_file():
                continue
            expected = json.loads(expected_file.read_text()).get("findings", {})
            for index, finding in enumerate(json.loads(findings_file.read_text()), 1):
                procedure = str(finding.get("falsification", ""))
                if (
                    expected.get(f"F{index}") == "verified"
                    and procedure.startswith("test:")
                    and finding.get("location") != "whole-patch"
                ):
                    chosen = (case, finding)
                    break
            if chosen:
                break
        if chosen is None:
            skipped.append(sample)
            continue
        case, finding = chosen
        repo = materialize(sample, tmp / f"sample-{sample}")
        findings = tmp / f"sample-{sample}-finding.json"
        findings.write_text(json.dumps([finding], indent=2))
        name = f"sample {sample} ({case.name}, {finding['location']})"
        rest = str(finding["falsification"]).split("\n", 1)[1]
        split = REPAIR.search(rest)  # as kinds/test.py reads it
        source = rest[: split.start()] if split else rest
        repair = rest[split.end() :].lstrip("\n") if split else ""
        subjects.append(
            Subject(name, repo, case / "patch.diff", findings, finding["location"], source, repair)
        )
    return subjects, skipped


# -- the arms ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Sample:
    seconds: float
    columns: dict[str, float] = field(default_factory=dict)
    outcome: str = ""
    child_runs: int = 0


def spans_breakdown(document: Any, total: float) -> dict[str, float]:
    """Each column's seconds, an instant counted once (in the first column covering it);
    ``other``: the rest of ``total``."""
    claimed: list[tuple[float, float]] = []
    out: dict[str, float] = {}
    for column in COLUMNS:
        spans = union(document["spans"].get(column, []))
        out[column] = sum(length(minus(span, claimed)) for span in spans)
        claimed = union([*claimed, *spans])
    out["other"] = max(0.0, total - sum(e - b for b, e in claimed))
    return out


def union(spans: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for begin, end in sorted((float(b), float(e)) for b, e in spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def minus(
    span: tuple[float, float], taken: Sequence[tuple[float, float]]
) -> list[tuple[float, float]]:
    pieces = [span]
    for begin, end in taken:
        pieces = [
            piece
            for b, e in pieces
            for piece in ((b, min(e, begin)), (max(b, end), e))
            if piece[1] > piece[0]
        ]
    return pieces


def length(pieces: Sequence[tuple[float, float]]) -> float:
    return sum(e - b for b, e in pieces)


def empty_state(repo: Path) -> None:
    """The first run's state: no .critic22/ (code graph, context, warm trees), no run trees."""
    shutil.rmtree(repo / ".critic22", ignore_errors=True)
    git(["worktree", "prune"], repo)
    shutil.rmtree(trees_root(repo), ignore_errors=True)


def review(subject: Subject, tmp: Path, env: dict[str, str]) -> Sample:
    report = tmp / "report.json"
    spans = tmp / "spans.json"
    report.unlink(missing_ok=True)
    spans.unlink(missing_ok=True)
    command = [
        *PYTEST,
        "-p",
        "critic22_bench_timers",
        f"--critic22={subject.patch}",
        f"--critic22-findings={subject.findings}",
        "--critic22-only",
        "--critic22-preservation=off",
        f"--critic22-report={report}",
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=subject.repo,
        env={**env, "CRITIC22_BENCH_SPANS": str(spans)},
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    try:
        document = json.loads(report.read_text())
        timing = json.loads(spans.read_text())
    except (OSError, ValueError):
        raise SystemExit(
            f"{subject.name}: no report (exit {done.returncode})\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        ) from None
    outcomes = [f["outcome"]["status"] for f in document.get("findings", [])]
    return Sample(
        seconds,
        spans_breakdown(timing, seconds),
        "/".join(outcomes) or "none",
        count_child_runs(document),
    )


def count_child_runs(document: Any) -> int:
    """How many child pytest runs the report logs (records shaped like a RunResult)."""
    found = 0

    def walk(node: Any) -> None:
        nonlocal found
        if isinstance(node, dict):
            if {"status", "exit_code", "seconds", "tests"} <= node.keys():
                found += 1
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document.get("findings", []))
    return found


def raw_trees(subject: Subject, tmp: Path) -> tuple[Path, Path]:
    """A patched and a counterfactual worktree with the finding's test written in."""
    text = subject.patch.read_text()
    patches = {"patched": [text]}
    if subject.repair:
        patches["counterfactual"] = [text, subject.repair]
    else:
        patches["counterfactual"] = [parse_patch(text).without([subject.location])]
    made = []
    for name, applied in patches.items():
        tree = tmp / f"raw-{name}"
        git(["worktree", "add", "-q", "--detach", "--force", str(tree), "HEAD"], subject.repo)
        for patch in applied:
            if patch.strip():
                git(["apply", "--recount", "--whitespace=nowarn", "-"], tree, input=patch)
        folder = tree / "tests" if (tree / "tests").is_dir() else tree
        (folder / "test_critic22_f1.py").write_text(subject.test_source)
        made.append(tree)
    return made[0], made[1]


def raw_run(tree: Path, env: dict[str, str], *, as_child: bool) -> float:
    test = "tests/test_critic22_f1.py" if (tree / "tests").is_dir() else "test_critic22_f1.py"
    plugins: list[str] = []
    if as_child:
        blocked = ["critic22", *blocked_plugins(tree, [test])]
        plugins = [arg for name in blocked for arg in ("-p", f"no:{name}")]
    start = time.perf_counter()
    subprocess.run([*PYTEST, *plugins, test], cwd=tree, env=env, capture_output=True)
    return time.perf_counter() - start


@dataclass(slots=True)
class Result:
    subject: Subject
    cold: list[Sample] = field(default_factory=list)
    warm: list[Sample] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)  # as the review's children run
    typed: list[float] = field(default_factory=list)  # as typed, every plugin loaded


def context_seconds(subject: Subject, tmp: Path, repeat: int) -> dict[str, float]:
    """The context's seconds in ``gather_impact``: read by libcst (as before), by ast and
    tokenize into an empty cache, and from the filled cache."""
    import pytest_critic22.evidence.gather as evidence

    work = tmp / "context"
    work.mkdir()
    patched, _ = raw_trees(subject, work)
    patch = parse_patch(subject.patch.read_text())
    names = ("touched_source", "callee_evidence", "usage_examples", "fixture_evidence")
    reader_name = "source_context"  # what reads a file's blocks, swapped per arm
    originals = {name: getattr(evidence, name) for name in (*names, reader_name)}
    spent = [0.0]

    def timed(function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - begin

        return wrapper

    def by_libcst(source: str, parses: bool | None = None) -> Any:
        return originals[reader_name](source, None if parses else parses)

    graph = work / "graph"
    evidence.build_graph(subject.repo, graph)
    evidence.build_graph(patched, graph)
    out: dict[str, list[float]] = {"libcst": [], "fast": [], "cached": []}
    try:
        for name in names:
            setattr(evidence, name, timed(originals[name]))
        for number in range(repeat):
            cache = work / f"cache-{number}"
            for arm in out:
                if arm != "cached":
                    shutil.rmtree(cache, ignore_errors=True)
                    shutil.copytree(graph, cache)
                reader = by_libcst if arm == "libcst" else originals[reader_name]
                setattr(evidence, reader_name, reader)
                spent[0] = 0.0
                evidence.gather_impact(patch, subject.repo, patched, cache)
                out[arm].append(spent[0])
    finally:
        for name, function in originals.items():
            setattr(evidence, name, function)
        git(["worktree", "remove", "--force", "--force", str(patched)], subject.repo)
        git(
            ["worktree", "remove", "--force", "--force", str(work / "raw-counterfactual")],
            subject.repo,
        )
    return {arm: statistics.median(seconds) for arm, seconds in out.items()}


def measure(subject: Subject, tmp: Path, repeat: int, env: dict[str, str]) -> Result:
    result = Result(subject)
    work = tmp / f"work-{subject.repo.name}"
    work.mkdir()
    patched, counterfactual = raw_trees(subject, work)
    try:
        for number in range(repeat + 1):  # the first round is not timed
            label = "untimed" if number == 0 else f"{number}/{repeat}"
            print(f"  [{subject.name} {label}] ...", file=sys.stderr, flush=True)
            empty_state(subject.repo)
            cold = review(subject, work, env)
            warm = review(subject, work, env)
            trees = (patched, counterfactual)
            raw = sum(raw_run(tree, env, as_child=True) for tree in trees)
            typed = sum(raw_run(tree, env, as_child=False) for tree in trees)
            print(
                f"      cold {cold.seconds:.2f} s, warm {warm.seconds:.2f} s, "
                f"raw {raw:.2f} s, as typed {typed:.2f} s",
                file=sys.stderr,
                flush=True,
            )
            if number:
                result.cold.append(cold)
                result.warm.append(warm)
                result.raw.append(raw)
                result.typed.append(typed)
    finally:
        for tree in (patched, counterfactual):
            git(["worktree", "remove", "--force", "--force", str(tree)], subject.repo)
        empty_state(subject.repo)
    return result


# -- the table --------------------------------------------------------------------------------


def median_columns(samples: Sequence[Sample]) -> dict[str, float]:
    keys = [*COLUMNS, "other"]
    return {k: statistics.median(s.columns.get(k, 0.0) for s in samples) for k in keys}


def print_tables(
    results: Sequence[Result], repeat: int, notes: Sequence[str], context: dict[str, float]
) -> None:
    print(
        f"bench_warm_review: one finding's review, cold and warm, against its raw runs; "
        f"medians of {repeat} run(s); {len(os.sched_getaffinity(0))} CPUs; "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    print()
    print(
        "| subject | raw runs | warm review | warm ÷ raw (target ≤ 1.5×) | cold review | "
        "cold ÷ raw (target ≤ 3×) | raw runs as typed | warm ÷ as typed | outcome |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in results:
        raw = statistics.median(r.raw)
        typed = statistics.median(r.typed)
        warm = statistics.median(s.seconds for s in r.warm)
        cold = statistics.median(s.seconds for s in r.cold)
        outcome = "/".join(sorted({s.outcome for s in r.warm + r.cold}))
        print(
            f"| {r.subject.name} | {raw:.2f} s | {warm:.2f} s | {warm / raw:.2f}× | "
            f"{cold:.2f} s | {cold / raw:.2f}× | {typed:.2f} s | {warm / typed:.2f}× | "
            f"{outcome} |"
        )
    print()
    print("Where the review's time goes (medians, seconds; each instant counted once):")
    print()
    print("| subject | run | graph | context | trees | runs | other | total |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        for label, samples in (("warm", r.warm), ("cold", r.cold)):
            columns = median_columns(samples)
            total = statistics.median(s.seconds for s in samples)
            cells = " | ".join(f"{columns[k]:.2f}" for k in (*COLUMNS, "other"))
            print(f"| {r.subject.name} | {label} | {cells} | {total:.2f} |")
    print()
    for r in results:
        runs = sorted({s.child_runs for s in r.warm + r.cold})
        print(
            f"- {r.subject.name}: the report logs {'/'.join(map(str, runs))} runs per review "
            "(the patched tree's confirmation attempts and the counterfactual's)"
        )
    for note in notes:
        print(f"- {note}")
    if context:
        print()
        print(f"The packet's context of the {results[0].subject.name} repository, in-process:")
        print()
        print("| context read by | seconds | ÷ libcst |")
        print("| --- | ---: | ---: |")
        for arm, label in (
            ("libcst", "libcst, every file (as before)"),
            ("fast", "ast + tokenize, empty cache (cold)"),
            ("cached", "the content cache (warm)"),
        ):
            print(f"| {label} | {context[arm]:.3f} | {context[arm] / context['libcst']:.3f}× |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, two samples")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--samples", default=None, help="comma-separated sample names")
    args = parser.parse_args()
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    wanted = args.samples.split(",") if args.samples else None
    if args.quick and wanted is None:
        wanted = ["inventory", "textstats"]
    signal.signal(signal.SIGTERM, _interrupt)
    tmp = Path(tempfile.mkdtemp(prefix="critic22-bench-warm-"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS",)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "bytecode")
    plugins = tmp / "plugins"
    plugins.mkdir()
    (plugins / "critic22_bench_timers.py").write_text(TIMERS)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugins), env.get("PYTHONPATH")]))
    results: list[Result] = []
    subjects: list[Subject] = []
    context: dict[str, float] = {}
    try:
        subjects = [generated_subject(tmp)]
        samples, skipped = sample_subjects(tmp, wanted)
        subjects += samples
        for subject in subjects:
            results.append(measure(subject, tmp, repeat, env))
        print("  [the context, in-process] ...", file=sys.stderr, flush=True)
        context = context_seconds(subjects[0], tmp, repeat)
    finally:
        for subject in subjects:
            shutil.rmtree(trees_root(subject.repo), ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    notes = [f"no verified test: finding to replay in: {', '.join(skipped)}"]
    print_tables(results, repeat, notes if skipped else [], context)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
