"""The report of ``critic22 ab`` (pure) and its rendering as text."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_critic22.apps.ab.arms import (
    ARM_TITLES,
    ARMS,
    CONFIDENCE_THRESHOLD,
    CaseResult,
    arm_case,
)
from pytest_critic22.apps.ab.stats import (
    Ablation,
    ArmMetrics,
    Decision,
    MeanInterval,
    Paired,
    Rate,
    _p,
    _rate_text,
    ablation,
    arm_metrics,
    compare,
    decide,
    mean_interval,
)


@dataclass(frozen=True, slots=True)
class AbReport:
    population: str
    critic: str
    rule: str
    held_out: int
    tuning: int
    results: tuple[CaseResult, ...]
    arms: Mapping[str, ArmMetrics]
    recall: Paired
    false_rejection: Paired
    wall_difference: MeanInterval
    decision: Decision
    ablations: tuple[Ablation, ...]
    notes: tuple[str, ...] = ()
    excluded: Mapping[str, str] = field(default_factory=dict)  # case id -> why

    def to_dict(self) -> dict[str, Any]:
        defective = sum(1 for r in self.results if r.label == "defective")
        return {
            "schema": 1,
            "population": self.population,
            "critic": self.critic,
            "held_out": {
                "rule": self.rule,
                "cases": self.held_out,
                "measured": len(self.results),
                "defective": defective,
                "good": len(self.results) - defective,
                "tuning": self.tuning,
            },
            "confidence_threshold": CONFIDENCE_THRESHOLD,
            "arms": {name: metrics.to_dict() for name, metrics in self.arms.items()},
            "paired": {
                "recall": self.recall.to_dict(),
                "false_rejection": self.false_rejection.to_dict(),
                "wall_seconds_difference": self.wall_difference.to_dict(),
            },
            "decision": self.decision.to_dict(),
            "ablations": [a.to_dict() for a in self.ablations],
            "cases": [_case_dict(r, self.arms) for r in self.results],
            "excluded": dict(self.excluded),
            "notes": list(self.notes),
        }


def _case_dict(result: CaseResult, arms: Mapping[str, ArmMetrics]) -> dict[str, Any]:
    views = {arm: arm_case(arm, result) for arm in ARMS if arms[arm].available}
    return {
        "id": result.case_id,
        "label": result.label,
        "ground_truth_on_patched": result.ground_truth,
        "rejected": {arm: view.rejected for arm, view in views.items() if view is not None},
    }


def build_report(
    *,
    population: str,
    critic: str,
    rule: str,
    held_out: int,
    tuning: int,
    results: Sequence[CaseResult],
    c_note: str = "",
    notes: Sequence[str] = (),
    excluded: Mapping[str, str] | None = None,
) -> AbReport:
    arms: dict[str, ArmMetrics] = {arm: arm_metrics(arm, results) for arm in ARMS}
    if c_note:
        arms["c"] = ArmMetrics("c", False, c_note)
    recall, false_rejection = compare("b", "a", results)
    differences = [r.critic.seconds - r.validator.seconds for r in results]
    return AbReport(
        population=population,
        critic=critic,
        rule=rule,
        held_out=held_out,
        tuning=tuning,
        results=tuple(results),
        arms=arms,
        recall=recall,
        false_rejection=false_rejection,
        wall_difference=mean_interval(differences),
        decision=decide(arms["b"], arms["a"], recall, false_rejection),
        ablations=tuple(ablation(arm, results, arms[arm].available) for arm in ("c", "d", "e")),
        notes=tuple(notes),
        excluded=dict(excluded or {}),
    )


def _fraction(value: float) -> str:
    text = f"{value:.2f}"
    return text[1:] if text.startswith("0.") else text


def _rate_cell(rate: Rate) -> str:
    if rate.n == 0:
        return "0/0 —"
    return (
        f"{rate.k}/{rate.n} {_fraction(rate.k / rate.n)} "
        f"[{_fraction(rate.low)},{_fraction(rate.high)}]"
    )


def _mean_cell(mean: MeanInterval | None, digits: int = 2) -> str:
    if mean is None:
        return "(b's runs)"
    if mean.mean is None:
        return "—"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:.{digits}f}"
    return f"{mean.mean:.{digits}f} [{mean.low:.{digits}f},{mean.high:.{digits}f}]"


def render(report: AbReport) -> str:
    """The printed report: one table (recall and over-veto side by side), tests, decision."""
    results = report.results
    defective = [r for r in results if r.label == "defective"]
    good = [r for r in results if r.label == "good"]
    lines = [
        f"critic22 ab — population {report.population}, critic {report.critic}",
        f"held-out: {report.held_out} of {report.held_out + report.tuning} cases "
        f"({report.tuning} for tuning; {report.rule}); measured {len(results)}: "
        f"{len(defective)} defective, {len(good)} good",
        "ground truth (hidden tests on the patched tree): "
        f"{sum(1 for r in defective if r.ground_truth == 'failed')}/{len(defective)} defective "
        "cases fail them, "
        f"{sum(1 for r in good if r.ground_truth in ('passed', 'none'))}/{len(good)} good "
        "cases pass them",
        "",
    ]
    width, cell_width = 28, 23
    columns = [report.arms[arm] for arm in ARMS]
    header = " " * width + "".join(f"{ARM_TITLES[m.arm]:<{cell_width}}" for m in columns)
    lines.append(header.rstrip())

    def row(title: str, cell: Callable[[ArmMetrics], str]) -> None:
        cells = "".join(f"{(cell(m) if m.available else 'n/a'):<{cell_width}}" for m in columns)
        lines.append((f"{title:<{width}}" + cells).rstrip())

    row("verified-defect recall", lambda m: _rate_cell(m.recall))
    row("  agree with ground truth", lambda m: f"{m.agree}/{m.recall.k}")
    row("over-veto (killed/emitted)", lambda m: _rate_cell(m.over_veto))
    row("false rejection (good)", lambda m: _rate_cell(m.false_rejection))
    row("inconclusive (of executed)", lambda m: _rate_cell(m.inconclusive))
    row("critic calls / case", lambda m: _mean_cell(m.calls))
    row("tokens / case", lambda m: _mean_cell(m.tokens, 0))
    row("wall s / case", lambda m: _mean_cell(m.wall, 1))
    lines.append("")
    for metrics in columns:
        if not metrics.available:
            lines.append(f"{ARM_TITLES[metrics.arm]}: n/a — {metrics.note}")
    lines += [
        "rates: k/n rate [95% Wilson interval]; per case: mean [95% t interval]",
        "a = --critic22-engage=never (preservation items only); b = the plugin with the critic; "
        "c = b, the critic shown the generator's rationale;",
        "d = b's findings as verdicts, unexecuted; "
        f"e = b's findings with confidence >= {CONFIDENCE_THRESHOLD:g} as verdicts "
        "(d and e keep the validator's items)",
        "",
        "paired, b (critic on) vs a (critic off), "
        + _count(report.recall.n + report.false_rejection.n)
        + " — exact McNemar test on the discordant cases:",
        f"  recall           caught only with the critic {report.recall.first_only}, only "
        f"without {report.recall.second_only}: p = {_p(report.recall.p_two_sided)} (two-sided), "
        f"{_p(report.recall.p_first_more)} (one-sided)",
        f"  false rejection  good patches rejected only with the critic "
        f"{report.false_rejection.first_only}, only without "
        f"{report.false_rejection.second_only}: p = {_p(report.false_rejection.p_two_sided)} "
        "(two-sided)",
        f"  wall s / case    {_signed(report.wall_difference)} (mean paired difference, 95% t "
        "interval)",
        "",
        *_decision_lines(report.decision),
    ]
    lines.append("ablations (spec §9.5), each against b on the same cases:")
    for item in report.ablations:
        lines.append("  " + _ablation_line(item, report.arms))
    for note in report.notes:
        lines.append(f"note: {note}")
    for case_id, why in report.excluded.items():
        lines.append(f"excluded: {case_id}: {why}")
    return "\n".join(lines) + "\n"


#: Spec §9.6 in plain words, printed under the decision.
RULE_IN_WORDS = (
    "  in words: keep the critic only if it catches more defects than the validator alone (a), "
    "rejects no more good patches, and removing it loses something beyond noise;",
    "  an empty L column: no learned model in the review (L, the spec's column of learned "
    "parts, holds at most the critic) — the validator decides alone, a correct state",
)


def _decision_lines(decision: Decision) -> list[str]:
    if decision.keep is None:
        lines = [
            f"decision (spec §9.6): {decision.headline}",
            f"  {decision.shortfall}; the clauses on these cases, for information:",
        ]
    elif decision.keep:
        lines = ["decision (spec §9.6): KEEP the critic"]
    else:
        lines = ["decision (spec §9.6): REMOVE the critic — an empty L column"]
    for clause in decision.clauses:
        lines.append(f"  [{'yes' if clause.holds else 'no '}] {clause.text}: {clause.detail}")
    return [*lines, *RULE_IN_WORDS]


def _count(n: int) -> str:
    return f"{n} case{'s' if n != 1 else ''}"


def _signed(mean: MeanInterval) -> str:
    if mean.mean is None:
        return "—"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:+.2f}"
    return f"{mean.mean:+.2f} [{mean.low:+.2f},{mean.high:+.2f}]"


def _ablation_line(item: Ablation, arms: Mapping[str, ArmMetrics]) -> str:
    title = f"{item.mechanism} ({item.arm}):"
    if not item.available or item.recall is None or item.false_rejection is None:
        return f"{title:<15} not measured — {arms[item.arm].note}"
    m, b = arms[item.arm], arms["b"]
    text = (
        f"{title:<15} recall {_rate_text(b.recall)} -> {_rate_text(m.recall)}, false rejection "
        f"{_rate_text(b.false_rejection)} -> {_rate_text(m.false_rejection)}, over-veto "
        f"{_rate_text(b.over_veto)} -> {_rate_text(m.over_veto)}"
    )
    if item.degraded:
        return text + f"; removal degrades {', '.join(item.degraded)}: keep {item.mechanism}"
    return (
        text + f"; removal degrades nothing beyond noise here (recall p = "
        f"{_p(item.recall.p_second_more)}, false rejection p = "
        f"{_p(item.false_rejection.p_first_more)})"
    )
