"""``critic22 ab``: critic-on against critic-off on a labelled population of patches.

Honest measurement (spec §9): every held-out case of a population runs through the plugin's
own pipeline (:func:`pytest_critic22.apps.api.review`, never a second implementation of the gate)
in each arm, and the arms are compared on the same cases:

a. **validator alone** — ``--critic22-engage=never``: the preservation items (the existing
   tests that reach the touched symbols, and obligations that are test ids) on the patched
   tree, against the base;
b. **critic, then validator** — the plugin as it runs: the critic's blocking findings are
   executed (falsification on worktrees) and the gate decides, the validator's items included;
c. **blinding off** — b, with the generator's rationale and confidence shown to the critic.
   Recorded critics supply ``<set>/<case>.unblinded.json`` for it (absent: the arm is n/a);
   a live model cannot be run unblinded yet, since the plugin strips rationale and confidence
   from every request and has no switch to let them through;
d. **routing off** — b's findings act as verdicts without execution: reject iff a blocking
   finding was emitted (or the validator verified a regression). Computed from b's report;
e. **gate off** — the critic's confidence decides: reject iff a blocking finding has
   confidence >= 0.5 (:data:`CONFIDENCE_THRESHOLD`; or the validator verified a regression).
   Computed from b's report.

Definitions (per arm, over the held-out cases only):

- **caught**: the arm rejects the patch. For a, b and c that is "at least one verified
  blocking item" (a finding, or a preservation regression); for d and e it is their rule.
- **verified-defect recall**: caught defective cases / defective cases. Of those, the ones
  that **agree with the ground truth** are the cases where at least one of the case's hidden
  tests fails on the patched tree (the defect is real). The ground truth is case-level: it
  does not check that the verified finding is about the same defect as the hidden test.
- **over-veto false-positive rate**: blocking findings killed by their own falsification
  (outcome ``refuted``) / blocking findings emitted (after the parser's downgrades). d and e
  emit the same findings as b, so the same number; the validator alone emits none (0 of 0).
- **false rejection rate**: rejected good cases / good cases — the over-veto that reaches a
  verdict.
- **inconclusive rate**: executed blocking items (findings and preservation groups) whose
  outcome is inconclusive / executed blocking items. d executes only the preservation items.
- **critic calls, tokens, wall time**: per case. A replayed recording counts as one call with
  no tokens; d and e have no runs of their own (they are b's runs, read differently).

Intervals are 95%: Wilson score intervals for rates (claims within a case are counted as
independent, which they are not quite), Student-t intervals for means. The paired comparison
of two arms is the exact McNemar test (the binomial test on the discordant cases); "beyond
noise" means a one-sided exact McNemar p-value below :data:`ALPHA`.

The decision rule (spec §9.6) keeps the critic iff (1) recall is strictly higher with the
critic than without, (2) the over-veto is not worse than the validator alone's — compared on
what reaches a verdict, the false rejection rate, since the validator alone makes no claims of
its own (0 of 0) — and (3) removing the critic degrades at least one measure (recall, or false
rejections) beyond noise. Otherwise: remove the critic, an empty L column (the spec's "L column"
lists the learned parts of a review, at most the critic; empty, the validator decides alone,
a correct state). A decision needs data: with fewer than :data:`MIN_DEFECTIVE` defective cases
measured (5: the fewest in which an exact one-sided McNemar test can reach :data:`ALPHA`, so
fewer could never show a recall gain beyond noise) or fewer than :data:`MIN_GOOD` good cases
(1: none, and clause 2 compares nothing), the report says "not enough data" and neither keeps
nor removes.

The hidden ground-truth tests are read only by :func:`run_ground_truth`, after the reviews,
on a copy of the patched tree; they never reach a plugin input. Every run is cached under
``--cache`` keyed by (case content digest, run kind, critic, plugin version), so an
interrupted run resumes where it stopped.

The package, one module per stage, each importing only the ones before it:
:mod:`~pytest_critic22.apps.ab.population` (the cases, the population file, the critic choice),
:mod:`~pytest_critic22.apps.ab.runs` (one run of a case, its cache key and record),
:mod:`~pytest_critic22.apps.ab.pool` (the cache and the worker pool),
:mod:`~pytest_critic22.apps.ab.arms` (records to per-arm outcomes),
:mod:`~pytest_critic22.apps.ab.stats` (intervals, the paired test, metrics, the decision),
:mod:`~pytest_critic22.apps.ab.render` (the report and its text),
:mod:`~pytest_critic22.apps.ab.driver` (:func:`run_population`) and
:mod:`~pytest_critic22.apps.ab.cli` (``critic22 ab``'s arguments and :func:`main`).
"""

from __future__ import annotations

from pytest_critic22.apps.ab.arms import (
    ARMS,
    CONFIDENCE_THRESHOLD,
    ArmCase,
    CaseResult,
    Claim,
    ReviewSummary,
    arm_case,
    summarize,
)
from pytest_critic22.apps.ab.cli import main
from pytest_critic22.apps.ab.driver import AbRun, run_population
from pytest_critic22.apps.ab.population import (
    Case,
    CriticChoice,
    GroundTruthTest,
    HeldOutRule,
    Population,
    PopulationError,
    choose_critic,
    load_population,
)
from pytest_critic22.apps.ab.render import AbReport, build_report, render
from pytest_critic22.apps.ab.runs import (
    RunOptions,
    Unit,
    case_digest,
    materialize,
    plan_units,
    plugin_digest,
    plugin_input_texts,
    plugin_inputs,
    run_ground_truth,
    run_unit,
    unit_key,
)
from pytest_critic22.apps.ab.stats import (
    ALPHA,
    MIN_DEFECTIVE,
    MIN_GOOD,
    Ablation,
    ArmMetrics,
    Clause,
    Decision,
    MeanInterval,
    Paired,
    Rate,
    ablation,
    arm_metrics,
    compare,
    decide,
    fewest_discordant,
    mcnemar,
    mean_interval,
    paired,
    t_quantile,
    wilson,
)

__all__ = [
    "ALPHA",
    "ARMS",
    "CONFIDENCE_THRESHOLD",
    "MIN_DEFECTIVE",
    "MIN_GOOD",
    "AbReport",
    "AbRun",
    "Ablation",
    "ArmCase",
    "ArmMetrics",
    "Case",
    "CaseResult",
    "Claim",
    "Clause",
    "CriticChoice",
    "Decision",
    "GroundTruthTest",
    "HeldOutRule",
    "MeanInterval",
    "Paired",
    "Population",
    "PopulationError",
    "Rate",
    "ReviewSummary",
    "RunOptions",
    "Unit",
    "ablation",
    "arm_case",
    "arm_metrics",
    "build_report",
    "case_digest",
    "choose_critic",
    "compare",
    "decide",
    "fewest_discordant",
    "load_population",
    "main",
    "materialize",
    "mcnemar",
    "mean_interval",
    "paired",
    "plan_units",
    "plugin_digest",
    "plugin_input_texts",
    "plugin_inputs",
    "render",
    "run_ground_truth",
    "run_population",
    "run_unit",
    "summarize",
    "t_quantile",
    "unit_key",
    "wilson",
]
