"""What verifying findings costs, against the physical limit (issue 15, "What it must show").

    python benchmarks/bench_verify.py [--quick] [--repeat N]

Everything is timed as a whole process (``time.perf_counter()`` around ``subprocess.run``),
each arm run ``--repeat`` times (default 3) with the arms interleaved repetition by
repetition, so drift of the machine falls on all of them alike; the table shows medians and
the ratios of those medians, all measured in this one run. Nothing is asserted: speed is
measured, not a test (the targets column quotes issue 15, it does not fail anything).

The subject is a git repository generated in a temporary folder: a small package
(``calc``) and a few hundred fast tests (300 in 15 files; ``--quick``: 60 in 3), one commit.
The candidate patch breaks one function (one hunk, edit ``e1``). Each recorded finding is a
``test:`` finding on ``e1`` with its own test function (so its own generated module) that
fails on the patched tree and passes on the counterfactual (the base): every finding is
*verified*, the most expensive outcome (confirmation reruns, then the counterfactual). The
plugin runs as ``python -m pytest --critic22=PATCH --critic22-findings=FILE --critic22-only
--critic22-preservation=off -p no:cacheprovider -q`` in the repository: preservation is off
so that only the findings are measured (the raw runs below run only the finding's test).

Rows (ratio = numerator median / denominator median):

- 1 finding: the plugin ÷ the raw runs a person would make by hand: ``python -m pytest`` of
  the same test file once on a patched worktree and once on a counterfactual worktree (made
  here with ``git worktree add`` + ``git apply``; the two runs' times are summed).
- 8 and 32 findings ÷ 1 finding: how cost grows with findings that all need the same two trees
  (issue 15 wants it to grow with trees, not findings).
- ``-n 2`` ÷ serial on 32 findings (pytest-xdist).
- 32 findings, serial, on every CPU ÷ pinned to one CPU (``sched_setaffinity``): what running
  different trees side by side within one run gains (issue 15 item 5); the plugin sizes its
  parallelism by the CPUs it may run on.
- Tree setup on a 5,000-file repository ÷ on the 300-test one: the plugin's own ``TreeSet``
  building the run's two trees (patched, counterfactual) and removing them, in a child
  process; and warm ÷ fresh on the 5,000-file one (warm: the trees of the repository's pool,
  reset with ``git checkout --detach`` + ``git clean -ffdx`` and given back; issue 15 item 4).
- xdist's own cost: plain ``pytest -n 2`` ÷ plain ``pytest`` on the generated repository's
  tests, the floor under the ``-n 2`` row.
- The sandbox's per-run cost: the 1-finding run with ``--critic22-sandbox=bwrap`` ÷ with
  ``--critic22-sandbox=rlimits`` (skipped, with a note, when bubblewrap cannot run here).

Bytecode: every process runs with Python's bytecode cache on, as on a usual machine, in a
folder of the benchmark's own (``PYTHONPYCACHEPREFIX``; ``PYTHONDONTWRITEBYTECODE`` is
dropped if the environment sets it). Without a cache, each plugin run would compile the
plugin's hundred modules again, a fixed cost of about 2 s here that makes every ratio over
"1 finding" look better than it is. The untimed warm-up runs fill the cache.

Below the table, the number of child pytest processes a run started (from the JSON report,
``--critic22-report``) says where the time goes. The machine may be shared: medians over a
few repetitions dampen, but do not remove, the noise of other load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.execution.trees import trees_root

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
FUNCTIONS_PER_MODULE = 4
BROKEN = ("calc/mod00.py", "    return x * 2 + 0\n", "    return x * 2 + 1\n")  # f0_0
GIT_IDENTITY = [
    "-c",
    "user.name=bench",
    "-c",
    "user.email=bench@example.invalid",
    "-c",
    "commit.gpgsign=false",
]


@dataclass(frozen=True, slots=True)
class Scale:
    test_files: int
    tests_per_file: int
    findings: tuple[int, int, int]  # the one, the few, the many
    big_files: int  # the many-file repository of the tree-setup rows


FULL = Scale(test_files=15, tests_per_file=20, findings=(1, 8, 32), big_files=5000)
QUICK = Scale(test_files=3, tests_per_file=20, findings=(1, 2, 4), big_files=1000)


@dataclass(slots=True)
class Arm:
    """One command, run once per repetition; its samples are wall seconds."""

    name: str
    command: list[str]
    cwd: Path
    report: Path | None = None  # the plugin's JSON report, checked after every run
    expect_verified: int = 0
    samples: list[float] = field(default_factory=list)
    child_runs: list[int] = field(default_factory=list)
    child_seconds: list[float] = field(default_factory=list)  # summed over a run's children
    sandbox: str = ""
    cpus: int = 0  # run on this many of the machine's CPUs (affinity); 0: all of them

    def run(self, env: dict[str, str]) -> None:
        if self.report is not None:
            self.report.unlink(missing_ok=True)
        pin = None
        if self.cpus:
            allowed = set(sorted(os.sched_getaffinity(0))[: self.cpus])
            pin = lambda: os.sched_setaffinity(0, allowed)  # noqa: E731
        start = time.perf_counter()
        done = subprocess.run(
            self.command,
            cwd=self.cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=pin,
        )
        self.samples.append(time.perf_counter() - start)
        if self.report is not None:
            self._check_report(done)
        elif done.returncode not in (0, 1):
            raise SystemExit(f"{self.name}: exit {done.returncode}\n{done.stdout}{done.stderr}")

    def _check_report(self, done: subprocess.CompletedProcess[str]) -> None:
        """Every finding must be verified, or the arm measured something else."""
        assert self.report is not None
        try:
            document = json.loads(self.report.read_text())
        except (OSError, ValueError):
            raise SystemExit(
                f"{self.name}: no JSON report (exit {done.returncode})\n{done.stdout}{done.stderr}"
            ) from None
        outcomes = [f["outcome"]["status"] for f in document.get("findings", [])]
        verified = outcomes.count("verified")
        if verified != self.expect_verified or len(outcomes) != self.expect_verified:
            raise SystemExit(
                f"{self.name}: expected {self.expect_verified} verified findings, got "
                f"{outcomes}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        runs, seconds = count_child_runs(document)
        self.child_runs.append(runs)
        self.child_seconds.append(seconds)
        self.sandbox = _sandbox_mode(document)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def count_child_runs(document: Any) -> tuple[int, float]:
    """How many child pytest runs the report logs, and their summed wall seconds: every
    record shaped like a RunResult (``status``, ``exit_code``, ``seconds``, ``tests``)
    anywhere in the findings' and preservation groups' logs."""
    found: list[float] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if {"status", "exit_code", "seconds", "tests"} <= node.keys():
                found.append(float(node["seconds"]))
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document.get("findings", []))
    walk(document.get("preservation", []))
    return len(found), sum(found)


def _sandbox_mode(document: Any) -> str:
    sandbox = document.get("sandbox")
    if isinstance(sandbox, dict):
        return str(sandbox.get("mode", sandbox))
    return str(sandbox or "?")


# -- the generated repository ----------------------------------------------------------------


def git(args: Sequence[str], cwd: Path, *, input: str | None = None) -> str:
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def write_package(repo: Path, modules: int, tests_per_file: int) -> None:
    """``calc/modNN.py`` with a few arithmetic functions, ``tests/test_modNN.py`` testing them."""
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc" / "__init__.py").write_text('"""A package generated by bench_verify."""\n')
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    for m in range(modules):
        lines = ['"""Generated arithmetic."""', "", "from __future__ import annotations", ""]
        for f in range(FUNCTIONS_PER_MODULE):
            lines += [
                "",
                f"def f{m}_{f}(x: int) -> int:",
                f'    """x times {f + 2}, plus {m}."""',
                f"    return x * {f + 2} + {m}",
                "",
            ]
        (repo / "calc" / f"mod{m:02d}.py").write_text("\n".join(lines).rstrip() + "\n")
        tests = ["from __future__ import annotations", "", f"from calc import mod{m:02d}", ""]
        for t in range(tests_per_file):
            f = t % FUNCTIONS_PER_MODULE
            tests += [
                "",
                f"def test_f{m}_{f}_case{t}() -> None:",
                f"    assert mod{m:02d}.f{m}_{f}({t}) == {t * (f + 2) + m}",
                "",
            ]
        (repo / "tests" / f"test_mod{m:02d}.py").write_text("\n".join(tests).rstrip() + "\n")


def write_filler(repo: Path, files: int) -> None:
    """Many small modules, in folders of 50, that nothing imports: a big checkout."""
    for index in range(files):
        folder = repo / "filler" / f"part{index // 50:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{index:05d}.py").write_text(
            f'"""Filler module {index}."""\n\nVALUE = {index}\n\n\n'
            f"def get() -> int:\n    return VALUE * 2\n"
        )


def make_repo(repo: Path, scale: Scale, filler: int = 0) -> tuple[str, str]:
    """Generate and commit the repository; return (base commit, the candidate patch)."""
    write_package(repo, scale.test_files, scale.tests_per_file)
    if filler:
        write_filler(repo, filler)
    git(["init", "-q", "-b", "main"], repo)
    git(["add", "-A"], repo)
    git(["commit", "-q", "-m", "base"], repo)
    base = git(["rev-parse", "HEAD"], repo).strip()
    path, old, new = BROKEN
    original = (repo / path).read_text()
    assert old in original, "the function the patch breaks is missing"
    (repo / path).write_text(original.replace(old, new))
    patch = git(["diff", "--no-ext-diff"], repo)
    (repo / path).write_text(original)
    return base, patch


def finding_source(index: int) -> str:
    """A distinct test of the broken function: fails on the patched tree, passes on base."""
    x = index + 1
    return (
        "from calc.mod00 import f0_0\n\n\n"
        f"def test_f0_0_doubles_{x}() -> None:\n"
        f"    assert f0_0({x}) == {2 * x}\n"
    )


def findings(count: int) -> list[dict[str, Any]]:
    return [
        {
            "location": "e1",
            "claim": f"f0_0({i + 1}) no longer returns {2 * (i + 1)}.",
            "severity": "blocking",
            "evidence": "e1 adds 1 to the result of f0_0.",
            "falsification": "test:\n" + finding_source(i),
            "confidence": 0.5,
        }
        for i in range(count)
    ]


def count_files(repo: Path) -> int:
    return len(git(["ls-files"], repo).splitlines())


# -- trees ------------------------------------------------------------------------------------

# The plugin's own tree code, in a child process: build the run's two trees, remove them.
_TREESET = """\
import sys
from pathlib import Path
from pytest_critic22.execution.trees import TreeSet, Variant
repo, base, patch = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).read_text()
warm = len(sys.argv) > 4 and sys.argv[4] == "warm"
trees = TreeSet(repo, base, "bench-verify", warm=warm)
trees.claim()
try:
    trees.get(Variant("patched", (patch,)))
    trees.get(Variant("without-e1", ("",)))
finally:
    trees.remove_all()
"""


@contextlib.contextmanager
def worktrees(repo: Path, folder: Path) -> Iterator[list[Path]]:
    """Worktrees this script adds; always removed on the way out (Ctrl-C too)."""
    added: list[Path] = []
    try:
        yield added
    finally:
        for path in added:
            subprocess.run(
                ["git", "worktree", "remove", "--force", "--force", str(path)],
                cwd=repo,
                capture_output=True,
                check=False,
            )
            shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def add_tree(repo: Path, path: Path, base: str, patch: Path | None, added: list[Path]) -> Path:
    git(["worktree", "add", "-q", "--detach", "--force", str(path), base], repo)
    added.append(path)
    if patch is not None:
        git(["apply", "--whitespace=nowarn", str(patch)], path)
    return path


# -- the benchmark ---------------------------------------------------------------------------


def sandbox_option_exists(env: dict[str, str], cwd: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return "--critic22-sandbox" in done.stdout


def bwrap_problem() -> str | None:
    try:
        from pytest_critic22.execution.sandbox import probe_bwrap
    except ImportError:
        return "pytest_critic22.execution.sandbox has no probe_bwrap"
    return probe_bwrap()


def plugin_arm(
    name: str, repo: Path, patch: Path, tmp: Path, count: int, extra: Sequence[str] = ()
) -> Arm:
    records = tmp / f"findings-{count}.json"
    records.write_text(json.dumps(findings(count), indent=2))
    report = tmp / f"report-{name.replace(' ', '_').replace('/', '_')}.json"
    command = [
        *PYTEST,
        f"--critic22={patch}",
        f"--critic22-findings={records}",
        "--critic22-only",
        "--critic22-preservation=off",
        f"--critic22-max-findings={max(count, 20)}",
        f"--critic22-report={report}",
        f"--critic22-ledger={tmp / 'ledger.jsonl'}",
        *extra,
    ]
    return Arm(name, command, repo, report=report, expect_verified=count)


def interleave(arms: Sequence[Arm], repeat: int, env: dict[str, str], label: str) -> None:
    for number in range(repeat):
        # Alternate the order, so no arm always runs right after the same neighbour.
        order = list(arms) if number % 2 == 0 else list(arms)[::-1]
        for arm in order:
            print(f"  [{label} {number + 1}/{repeat}] {arm.name} ...", file=sys.stderr, flush=True)
            arm.run(env)
            print(f"      {arm.samples[-1]:.2f} s", file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Row:
    what: str
    numerator: float | None
    denominator: float | None
    target: str
    note: str = ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (fewer of all)")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (default 3, 1 quick)")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    drop = ("PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    one, few, many = scale.findings

    # A kill (SIGTERM) unwinds like Ctrl-C, so the finally below removes what was made.
    signal.signal(signal.SIGTERM, _interrupt)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="critic22-bench-verify-"))
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "bytecode")  # a usual machine's cache, kept here
    repo, big = tmp / "repo", tmp / "big"
    try:
        repo.mkdir()
        big.mkdir()
        base, patch_text = make_repo(repo, scale)
        big_base, big_patch_text = make_repo(big, scale, filler=scale.big_files)
        patch, big_patch = tmp / "patch.diff", tmp / "big-patch.diff"
        patch.write_text(patch_text)
        big_patch.write_text(big_patch_text)
        rows, notes = run_all(tmp, repo, big, base, big_base, patch, big_patch, scale, repeat, env)
    finally:
        # subprocess.run kills a child that outlives Ctrl-C by 0.25 s: its trees may be left.
        for folder in (repo, big):
            shutil.rmtree(trees_root(folder), ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed, load = time.perf_counter() - started, (load_before, os.getloadavg()[0])
    print_table(rows, notes, scale, repeat, elapsed, load, one, few, many)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_all(
    tmp: Path,
    repo: Path,
    big: Path,
    base: str,
    big_base: str,
    patch: Path,
    big_patch: Path,
    scale: Scale,
    repeat: int,
    env: dict[str, str],
) -> tuple[list[Row], list[str]]:
    one, few, many = scale.findings
    rows: list[Row] = []
    notes: list[str] = []
    quick = scale is QUICK
    cpus = len(os.sched_getaffinity(0))

    # 1. The raw runs, on worktrees made here, and the plugin with 1, few, many findings.
    with worktrees(repo, tmp / "raw") as added:
        patched = add_tree(repo, tmp / "raw" / "patched", base, patch, added)
        counterfactual = add_tree(repo, tmp / "raw" / "counterfactual", base, None, added)
        for tree in (patched, counterfactual):
            (tree / "tests" / "test_critic22_f1.py").write_text(finding_source(0))
        raw_command = [*PYTEST, "tests/test_critic22_f1.py"]
        raw_patched = Arm("raw run, patched tree", raw_command, patched)
        raw_counter = Arm("raw run, counterfactual tree", raw_command, counterfactual)
        plugin_one = plugin_arm(f"plugin, {one} finding", repo, patch, tmp, one)
        plugin_few = plugin_arm(f"plugin, {few} findings", repo, patch, tmp, few)
        plugin_many = plugin_arm(f"plugin, {many} findings", repo, patch, tmp, many)
        plugin_many_n2 = plugin_arm(
            f"plugin, {many} findings, -n 2", repo, patch, tmp, many, ["-n", "2"]
        )
        plugin_many_1cpu = plugin_arm(f"plugin, {many} findings, one CPU", repo, patch, tmp, many)
        plugin_many_1cpu.cpus = 1
        plain_serial = Arm("plain pytest, the repository's tests", [*PYTEST], repo)
        plain_n2 = Arm("plain pytest -n 2, the repository's tests", [*PYTEST, "-n", "2"], repo)
        arms = [raw_patched, raw_counter, plugin_one, plugin_few, plugin_many, plugin_many_n2]
        arms += [plugin_many_1cpu] if cpus > 1 else []
        arms += [plain_serial, plain_n2]
        for arm in (raw_patched, raw_counter, plugin_one):  # warm caches; not timed
            arm.run(env)
            arm.samples.clear()
            arm.child_runs.clear()
            arm.child_seconds.clear()
        interleave(arms, repeat, env, "findings")

    raw = statistics.median(
        p + c for p, c in zip(raw_patched.samples, raw_counter.samples, strict=True)
    )
    rows.append(
        Row(
            f"{one} finding: plugin ÷ raw runs (patched + counterfactual)",
            plugin_one.median,
            raw,
            "≤ 1.25×",
        )
    )
    many_target = "(8, 32 in a full run)" if quick else ""
    rows.append(
        Row(
            f"{few} findings ÷ {one} finding",
            plugin_few.median,
            plugin_one.median,
            many_target or "≤ 1.5×",
        )
    )
    rows.append(
        Row(
            f"{many} findings ÷ {one} finding",
            plugin_many.median,
            plugin_one.median,
            many_target or "≤ 2.5×",
        )
    )
    rows.append(
        Row(
            f"{many} findings: -n 2 ÷ serial",
            plugin_many_n2.median,
            plugin_many.median,
            "≤ 0.6×",
        )
    )
    if cpus > 1:
        rows.append(
            Row(
                f"{many} findings, serial: {cpus} CPUs ÷ one CPU",
                plugin_many.median,
                plugin_many_1cpu.median,
                "(item 5)",
                "issue 15 item 5, parallel within a run without xdist: the same serial review "
                "pinned to one CPU (affinity), where the plugin runs one child at a time",
            )
        )
    tests = scale.test_files * scale.tests_per_file
    rows.append(
        Row(
            f"xdist's own cost: plain pytest -n 2 ÷ serial ({tests} tests)",
            plain_n2.median,
            plain_serial.median,
            "(context)",
            "the -n 2 row's floor: a serial review already runs different trees side by "
            "side on every CPU, so xdist adds its workers' start-up and little else",
        )
    )
    notes.append(
        f"raw runs: patched {raw_patched.median:.2f} s (fails, as the finding says), "
        f"counterfactual {raw_counter.median:.2f} s (passes)"
    )
    # The three arms of one repetition run next to each other: their ratio drifts less with
    # the machine's speed than the ratio of medians does (the table's).
    paired = sorted(
        one_run / (p + c)
        for one_run, p, c in zip(
            plugin_one.samples, raw_patched.samples, raw_counter.samples, strict=True
        )
    )
    notes.append(
        f"row 1 per repetition: {', '.join(f'{r:.2f}×' for r in paired)} "
        f"(median {statistics.median(paired):.2f}×)"
    )
    for arm in (plugin_one, plugin_few, plugin_many, plugin_many_n2, plugin_many_1cpu):
        if not arm.samples:
            continue
        runs = "/".join(str(c) for c in sorted(set(arm.child_runs)))
        inside = statistics.median(arm.child_seconds)
        per_child = inside / max(1, statistics.median(arm.child_runs))
        notes.append(
            f"{arm.name}: {runs} runs in the report (a child merged for n findings counts n; "
            f"sandbox {arm.sandbox}), "
            f"{inside:.1f} s summed inside them ({per_child:.2f} s each), "
            f"of a {arm.median:.1f} s run"
        )
    marginal = (plugin_many.median - plugin_one.median) / max(1, many - one)
    notes.append(f"each finding beyond the first adds {marginal:.2f} s (serial, {many} vs {one})")

    # 2. Tree setup: the plugin's TreeSet on the many-file repository and on the small one.
    small_trees = Arm(
        "TreeSet: 2 trees built + removed, small repository",
        [sys.executable, "-c", _TREESET, str(repo), base, str(patch)],
        repo,
    )
    big_trees = Arm(
        f"TreeSet: 2 trees built + removed, {scale.big_files:,}-file repository",
        [sys.executable, "-c", _TREESET, str(big), big_base, str(big_patch)],
        big,
    )
    warm_trees = Arm(
        f"TreeSet: 2 warm trees reset + given back, {scale.big_files:,}-file repository",
        [sys.executable, "-c", _TREESET, str(big), big_base, str(big_patch), "warm"],
        big,
    )
    tree_arms = [small_trees, big_trees, warm_trees]
    for arm in tree_arms:  # the page cache, and the warm pool's first fill; not timed
        arm.run(env)
        arm.samples.clear()
    interleave(tree_arms, repeat, env, "trees")
    big_count, small_count = count_files(big), count_files(repo)
    rows.append(
        Row(
            f"tree setup, fresh: {big_count:,}-file ÷ {small_count}-file repository",
            big_trees.median,
            small_trees.median,
            "baseline",
        )
    )
    rows.append(
        Row(
            f"tree setup, {big_count:,} files: warm ÷ fresh trees",
            warm_trees.median,
            big_trees.median,
            "(none given)",
            "the plugin's TreeSet: a kept tree reset (checkout --detach + clean -ffdx) vs "
            "git worktree add; see also benchmarks/bench_trees.py",
        )
    )

    # 3. The sandbox's per-run cost.
    if not sandbox_option_exists(env, repo):
        rows.append(Row("sandbox: bwrap ÷ rlimits, 1 finding", None, None, "—", "no option"))
        notes.append("skipped the sandbox row: this plugin has no --critic22-sandbox option")
    elif (problem := bwrap_problem()) is not None:
        rows.append(Row("sandbox: bwrap ÷ rlimits, 1 finding", None, None, "—", "skipped"))
        notes.append(f"skipped the sandbox row: bubblewrap cannot run here ({problem})")
    else:
        bwrap = plugin_arm(
            f"plugin, {one} finding, bwrap", repo, patch, tmp, one, ["--critic22-sandbox=bwrap"]
        )
        rlimits = plugin_arm(
            f"plugin, {one} finding, rlimits",
            repo,
            patch,
            tmp,
            one,
            ["--critic22-sandbox=rlimits"],
        )
        interleave([bwrap, rlimits], repeat, env, "sandbox")
        children = float(statistics.median(bwrap.child_runs))
        extra = (bwrap.median - rlimits.median) / max(1.0, children)
        rows.append(
            Row(
                f"sandbox: bwrap ÷ rlimits, {one} finding",
                bwrap.median,
                rlimits.median,
                "(measured only)",
            )
        )
        notes.append(
            f"sandbox: {children:g} child runs per plugin run, so bwrap adds about "
            f"{extra * 1000:+.0f} ms per child run (and one probe per plugin run)"
        )
    return rows, notes


def print_table(
    rows: Sequence[Row],
    notes: Sequence[str],
    scale: Scale,
    repeat: int,
    elapsed: float,
    load: tuple[float, float],
    one: int,
    few: int,
    many: int,
) -> None:
    tests = scale.test_files * scale.tests_per_file
    print(
        f"bench_verify: generated repository, {tests} tests in {scale.test_files} files, "
        f"a patch that breaks one function; {one}/{few}/{many} verified `test:` findings"
        f"{' (--quick)' if scale is QUICK else ''}"
    )
    print(
        f"medians of {repeat} run(s) per arm, arms interleaved, whole processes, one run; "
        f"{len(os.sched_getaffinity(0))} CPUs; bytecode cached (see the docstring)"
    )
    print(
        f"caveat: the CPUs may be shared with other work (another agent's test runs here); "
        f"1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end. "
        "Ratios of interleaved arms are steadier than the seconds"
    )
    print()
    width = max(len(r.what) for r in rows)
    print(f"{'what':{width}s}  {'numerator':>9s}  {'denominator':>11s}  {'ratio':>7s}  target")
    for row in rows:
        if row.numerator is None or row.denominator is None:
            print(f"{row.what:{width}s}  {'—':>9s}  {'—':>11s}  {'—':>7s}  {row.target}")
        else:
            ratio = row.numerator / row.denominator
            print(
                f"{row.what:{width}s}  {row.numerator:8.2f}s  {row.denominator:10.2f}s  "
                f"{ratio:6.2f}×  {row.target}"
            )
    print()
    for row in rows:
        if row.note:
            print(f"note ({row.what}): {row.note}")
    for note in notes:
        print(f"- {note}")
    print(f"total wall time of the benchmark: {elapsed:.0f} s")


if __name__ == "__main__":
    main()
