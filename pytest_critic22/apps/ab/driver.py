"""The driver of ``critic22 ab``: every held-out case in every arm, then the report."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_critic22.apps.ab.arms import CaseResult, summarize
from pytest_critic22.apps.ab.pool import Progress, execute
from pytest_critic22.apps.ab.population import Case, CriticChoice, Population
from pytest_critic22.apps.ab.render import AbReport, build_report
from pytest_critic22.apps.ab.runs import RunOptions, plan_units
from pytest_critic22.apps.cluster import open_engine


@dataclass(frozen=True, slots=True)
class AbRun:
    report: AbReport
    records: Mapping[tuple[str, str], Mapping[str, Any]]
    errors: Mapping[str, str]  # case id -> why it is excluded
    reused: int  # runs taken from the cache
    ran: int


def _case_result(
    case: Case, records: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[CaseResult | None, str]:
    validator = summarize(records.get((case.id, "validator"), {}))
    critic = summarize(records.get((case.id, "critic"), {}))
    for kind, summary in (("validator", validator), ("critic", critic)):
        if summary is None:
            record = records.get((case.id, kind), {})
            return None, f"the {kind} run gave no report: {record.get('error') or 'unknown'}"
    assert validator is not None and critic is not None
    unblinded = None
    if (case.id, "unblinded") in records:
        unblinded = summarize(records[(case.id, "unblinded")])
        if unblinded is None:
            record = records[(case.id, "unblinded")]
            return None, f"the unblinded run gave no report: {record.get('error') or 'unknown'}"
    truth = records.get((case.id, "ground-truth"), {})
    ground = str(truth.get("patched") or ("error" if truth.get("error") else "none"))
    return CaseResult(case.id, case.label, ground, validator, critic, unblinded), ""


def run_population(
    population: Population,
    critic: CriticChoice,
    *,
    cache_dir: Path,
    jobs: int = 1,
    fresh: bool = False,
    options: RunOptions = RunOptions(),  # noqa: B008 - a frozen dataclass, never mutated
    progress: IO[str] | None = None,
    cases: Sequence[Case] | None = None,
    scheduler: str | None = None,
) -> AbRun:
    """Run (or read from the cache) every held-out case in every arm; build the report.

    The runs go to :func:`~pytest_critic22.apps.cluster.open_engine` (``jobs``, ``scheduler``):
    the same records wherever they run."""
    held_out = tuple(cases) if cases is not None else population.held_out()
    units = plan_units(held_out, critic, options, cache_dir)
    meter = Progress(units, progress)
    try:
        with open_engine(jobs, scheduler) as engine:
            records = execute(units, engine=engine, fresh=fresh, progress=meter)
    finally:
        meter.finish()
    results: list[CaseResult] = []
    errors: dict[str, str] = {}
    for case in held_out:
        result, why = _case_result(case, records)
        if result is None:
            errors[case.id] = why
        else:
            results.append(result)
    notes = []
    if critic.kind == "model":
        c_note = (
            "not available with a live model yet: the plugin strips the generator's rationale "
            "and confidence from every request (invariant 6) and has no switch to let them "
            "through"
        )
    else:
        have = sum(1 for r in results if r.unblinded is not None)
        c_note = (
            ""
            if have == len(results) and results
            else f"no unblinded recordings ({have} of {len(results)} held-out cases have "
            f"<case>.unblinded.json in {critic.folder})"
        )
        if critic.replayed:
            notes.append(
                f"{critic.kind} critic: each replayed output counts as one critic call with no "
                "tokens"
            )
    for case in held_out:
        existing = records.get((case.id, "ground-truth"), {}).get("existing")
        if existing not in (None, "passed"):
            notes.append(f"label check: {case.id}'s existing tests {existing} on the patched tree")
    for result in results:
        if result.label == "defective" and result.ground_truth != "failed":
            notes.append(
                f"label check: {result.case_id} is labelled defective but its hidden tests "
                f"{result.ground_truth} on the patched tree"
            )
        if result.label == "good" and result.ground_truth not in ("passed", "none"):
            notes.append(
                f"label check: {result.case_id} is labelled good but its hidden tests "
                f"{result.ground_truth} on the patched tree"
            )
    report = build_report(
        population=_shown(population.path),
        critic=critic.label,
        rule=population.rule.describe(),
        held_out=len(held_out),
        tuning=len(population.cases) - len(held_out),
        results=results,
        c_note=c_note,
        notes=notes,
        excluded=errors,
    )
    reused = sum(1 for r in records.values() if r.get("cached"))
    return AbRun(report, records, errors, reused, len(records) - reused)


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)
