"""``trace:`` — replay a test many times on both trees under a tracer.

    trace:           NODEID [repeat=N]

Verified when the patched tree fails at least once and the counterfactual never; the
result names the failing seed and where a failing trace diverges from a passing one.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.execution.child_files import child_tempdir
from pytest_critic22.execution.progress import Counter
from pytest_critic22.execution.runner import cpu_slot, detect_pythonpath, run_pytest
from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.kinds.counterfactual import nodeids_in_tree
from pytest_critic22.model.nodeids import as_pytest_args, check_in_tree, check_nodeid, split_nodeids
from pytest_critic22.model.procedure import NotExecutable, Procedure, TraceData
from pytest_critic22.model.results import Outcome, RunResult
from pytest_critic22.verification.decide import decisive_line
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    Fallback,
    FindingResult,
    Scope,
    counterfactual_variant,
    fallback_to_base,
    located_edits,
)

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike

__all__ = ["KIND", "TraceData", "TraceKind"]

_REPEAT = re.compile(r"^repeat=(\d+)$")
_TRAILING_OPTION = re.compile(r"\s(\w+=\S*)$")
_MAX_REPEAT = 200
_DEFAULT_REPEAT = 20

GRAMMAR = """\
  trace:           NODEID [repeat=N]  replay a test N times to expose a race or flakiness the
                   patch introduces. Example: trace: tests/test_cache.py::test_concurrent repeat=50
"""


class TraceKind:
    name = "trace"
    grammar = GRAMMAR
    description = "Replays of a test fail with the edit and never without it: a race or flakiness."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return _parse_trace(rest)

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return nodeids_in_tree(procedure.kind, procedure.payload(TraceData).nodeids, scope)

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        assert finding is not None
        return execute_trace(finding_id, finding, procedure, ctx)


KIND = TraceKind()


def _parse_trace(rest: str) -> Procedure | NotExecutable:
    text = rest.strip().splitlines()[0].strip() if rest.strip() else ""
    repeat = _DEFAULT_REPEAT
    # Options come last; everything before them is the one node id (which may hold spaces).
    while (tail := _TRAILING_OPTION.search(text)) is not None:
        found = _REPEAT.match(tail.group(1))
        if found is None:
            return NotExecutable(f"trace: unknown option {tail.group(1)!r}", "trace")
        repeat = int(found.group(1))
        text = text[: tail.start()].rstrip()
    nodeids = split_nodeids(text)
    if not nodeids:
        return NotExecutable("trace: names no test", "trace")
    if len(nodeids) > 1:
        return NotExecutable(f"trace: replays one test, got {len(nodeids)}", "trace")
    nodeid = nodeids[0]
    problem = check_nodeid(nodeid)
    if problem:
        return NotExecutable(f"trace: {problem}", "trace")
    if not 1 <= repeat <= _MAX_REPEAT:
        return NotExecutable(f"trace: repeat must be 1..{_MAX_REPEAT}", "trace")
    return Procedure("trace", TraceData(nodeid, repeat))


def execute_trace(
    finding_id: str, finding: FindingLike, procedure: Procedure, ctx: ExecutionContext
) -> FindingResult:
    """Replays on patched and on the counterfactual, in parallel within the CPU cap, with a
    tiny switch interval and a different hash seed per run, all within the procedure timeout.

    verified: at least one failure on patched and none on the counterfactual.
    """
    from concurrent.futures import ThreadPoolExecutor

    from pytest_critic22.verification.tracediff import pick_passing, read_trace

    data = procedure.payload(TraceData)
    variant = counterfactual_variant(finding, procedure, ctx.patch)
    logs: dict[str, Any] = {"procedure": "trace", "repeat": data.repeat}
    try:
        patched = ctx.trees.get(Variant.patched(ctx.patch))
        counter = ctx.trees.get(variant)
    except TreeError as exc:
        return FindingResult(finding_id, Outcome("inconclusive", str(exc)), variant.name, logs)
    files = sorted({e.path for e in located_edits(finding, ctx.patch) if e.path.endswith(".py")})
    for tree in (patched, counter):
        problem = check_in_tree(data.nodeid, tree)
        if problem:
            return FindingResult(
                finding_id,
                Outcome("inconclusive", f"refused to run: {problem}"),
                variant.name,
                logs,
            )
    deadline = time.monotonic() + ctx.timeout
    scratch = str(ctx.scratch) if ctx.scratch else None
    if ctx.scratch:
        ctx.scratch.mkdir(parents=True, exist_ok=True)
    with child_tempdir("critic22-trace-", scratch) as tmp:

        def replay(tree: Path, label: str, seed: int) -> tuple[RunResult, Path]:
            out = Path(tmp) / f"{label}-{seed}.jsonl"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return RunResult("error", "the procedure's time ran out", None, 0.0), out
            with cpu_slot(ctx.slot_dir, ctx.slots):
                result = run_pytest(
                    tree,
                    as_pytest_args(data.nodeids),
                    timeout=remaining,
                    pythonpath=detect_pythonpath(tree, ctx.pythonpath),
                    sandbox=ctx.sandbox,
                    writable=[Path(tmp)],
                    scratch=ctx.scratch,
                    plugins=["pytest_critic22.child.tracer"],
                    extra_env={
                        "PYTHONHASHSEED": str(seed),
                        "CRITIC22_TRACE_OUT": str(out),
                        "CRITIC22_TRACE_FILES": os.pathsep.join(str(tree / f) for f in files),
                        "CRITIC22_SWITCH_INTERVAL": "1e-6",
                    },
                )
            replayed()
            return result, out

        # Interleaved, so a run out of time costs both trees alike rather than starving the
        # counterfactual queued behind every patched replay.
        jobs = [
            (tree, label, seed)
            for seed in range(1, data.repeat + 1)
            for tree, label in ((patched, "patched"), (counter, "counterfactual"))
        ]
        replayed = Counter(ctx.progress, "replays", len(jobs), f" on patched and {variant.name}")
        with ThreadPoolExecutor(max_workers=max(1, ctx.slots)) as pool:
            done = list(pool.map(lambda job: replay(*job), jobs))
        patched_runs = done[0::2]
        counter_runs = done[1::2]
        fallback = _fallback(variant, patched_runs, counter_runs, patched, counter, data)
        if fallback is not None:
            # The patch without the edit cannot run: the base's replays stand in for its
            # (test.py's execute_on_trees does the same), within a procedure timeout of their own.
            logs["counterfactual_fallback"] = fallback.record(
                {"runs": _tally(r for r, _ in counter_runs)}
            )
            variant = fallback.variant
            try:
                counter = ctx.trees.get(variant)
            except TreeError as exc:
                why = f"{fallback.note}, but the base tree cannot be built: {exc}"
                outcome = Outcome("inconclusive", why, environment=True)
                return FindingResult(finding_id, outcome, variant.name, logs)
            problem = check_in_tree(data.nodeid, counter)
            if problem:
                outcome = Outcome("inconclusive", f"refused to run: {problem}; {fallback.note}")
                return FindingResult(finding_id, outcome, variant.name, logs)
            deadline = time.monotonic() + ctx.timeout
            base_jobs = [(counter, "base", seed) for seed in range(1, data.repeat + 1)]
            replayed = Counter(ctx.progress, "replays", len(base_jobs), " on base")
            with ThreadPoolExecutor(max_workers=max(1, ctx.slots)) as pool:
                counter_runs = list(pool.map(lambda job: replay(*job), base_jobs))
            done = [run for pair in zip(patched_runs, counter_runs, strict=True) for run in pair]
        summary = {
            "patched": _tally(r for r, _ in patched_runs),
            "counterfactual": _tally(r for r, _ in counter_runs),
        }
        logs["runs"] = summary
        failing_seeds = [
            seed for seed, (r, _) in enumerate(patched_runs, 1) if r.status == "failed"
        ]
        counter_failures = sum(1 for r, _ in counter_runs if r.status == "failed")
        errors = [r for r, _ in done if r.status == "error"]
        if errors and not failing_seeds:
            outcome = Outcome("inconclusive", f"replays did not run: {errors[0].reason}")
        elif not failing_seeds:
            outcome = Outcome("refuted", f"passes all {data.repeat} replays on the patched tree")
        elif counter_failures:
            lines = _decisive(patched_runs, counter_runs, variant.name)
            outcome = Outcome(
                "inconclusive",
                f"fails on the {variant.name} tree too ({counter_failures} of "
                f"{data.repeat} replays): not shown to come from the located edit{lines}",
            )
        elif any(r.status == "error" for r, _ in counter_runs):
            unfinished = [r for r, _ in counter_runs if r.status == "error"]
            outcome = Outcome(
                "inconclusive",
                f"{len(unfinished)} of {data.repeat} replays on the {variant.name} tree did "
                f"not finish ({unfinished[0].reason}); raise --critic22-procedure-timeout "
                "or lower repeat",
            )
        else:
            evidence = _divergence(patched_runs, read_trace, pick_passing)
            logs["divergence"] = evidence
            outcome = Outcome(
                "verified",
                f"fails {len(failing_seeds)} of {data.repeat} replays on patched "
                f"(first failing PYTHONHASHSEED={failing_seeds[0]}) and none of "
                f"{data.repeat} on the {variant.name} tree" + (f"; {evidence}" if evidence else ""),
            )
        logs["failing_seeds"] = failing_seeds
    if fallback is not None:
        outcome = Outcome(outcome.kind, f"{outcome.reason}; {fallback.note}", outcome.environment)
    return FindingResult(finding_id, outcome, variant.name, logs)


def _decisive(
    patched_runs: Sequence[tuple[RunResult, Path]],
    counter_runs: Sequence[tuple[RunResult, Path]],
    name: str,
) -> str:
    """`` (patched: …; without-e1: …)``: each tree's first failing replay's decisive line."""
    lines = []
    for label, runs in (("patched", patched_runs), (name, counter_runs)):
        failed = next((r for r, _ in runs if r.status == "failed"), None)
        line = decisive_line(failed.output) if failed is not None else ""
        if line:
            lines.append(f"{label}: {line}")
    return f" ({'; '.join(lines)})" if lines else ""


def _fallback(
    variant: Variant,
    patched_runs: Sequence[tuple[RunResult, Path]],
    counter_runs: Sequence[tuple[RunResult, Path]],
    patched: Path,
    counter: Path,
    data: TraceData,
) -> Fallback | None:
    """The base for a counterfactual tree whose replays show it is not a working program
    (:func:`pytest_critic22.verification.procedures.fallback_to_base`), judged by its first replay
    that did not pass against the patched tree's first failing one."""
    bad = next((r for r, _ in counter_runs if r.status != "passed"), None)
    failing = next((r for r, _ in patched_runs if r.status == "failed"), None)
    if bad is None or failing is None:
        return None
    own = [data.nodeid.split("::", 1)[0]]
    return fallback_to_base(variant, bad, counter, failing, patched, own)


def _tally(runs: Iterable[RunResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    return counts


def _divergence(runs: Sequence[tuple[RunResult, Path]], read_trace: Any, pick_passing: Any) -> str:
    traces = []
    for result, path in runs:
        try:
            trace = read_trace(path)
        except (OSError, ValueError):
            continue
        traces.append((list(trace.events), result.status == "failed"))
    pairing = pick_passing(traces)
    if pairing is None or pairing.divergence is None:
        return ""
    return str(pairing.divergence.describe()).split("\n")[0]
