"""Statistics (pure) of ``critic22 ab``: intervals, the paired test, the metrics, the decision.

Wilson score intervals for rates, Student-t intervals for means, the exact McNemar test for
two arms on the same cases, and the keep-or-remove rule (spec §9.6) with the ablations (§9.5).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_critic22.apps.ab.arms import MECHANISMS, CaseResult, arm_case

#: One-sided significance level for "beyond noise".
ALPHA = 0.05
#: The 97.5% quantile of the standard normal distribution (two-sided 95%).
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Rate:
    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "rate": self.value, "ci95": [self.low, self.high]}


@dataclass(frozen=True, slots=True)
class MeanInterval:
    n: int
    total: float
    mean: float | None
    low: float | None  # None: fewer than two values, no interval
    high: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "total": self.total, "mean": self.mean, "ci95": [self.low, self.high]}


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """The Wilson score interval of k successes in n trials (n = 0: the whole of [0, 1])."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got {k}/{n}")
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k, n, low, high)


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection on the CDF)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("need 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """The mean with its 95% Student-t interval (no interval for fewer than two values)."""
    n = len(values)
    total = float(sum(values))
    if n == 0:
        return MeanInterval(0, 0.0, None, None, None)
    mean = total / n
    if n < 2:
        return MeanInterval(n, total, mean, None, None)
    half = t_quantile(0.975, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return MeanInterval(n, total, mean, mean - half, mean + half)


def mcnemar(first_only: int, second_only: int) -> tuple[float, float, float]:
    """Exact McNemar test on the discordant pairs.

    Returns (two-sided p, one-sided p that the first is more often positive, one-sided p that
    the second is). Under the null each discordant case goes either way with probability 1/2.
    """
    n = first_only + second_only
    if n == 0:
        return 1.0, 1.0, 1.0
    scale = 2.0**n

    def at_least(k: int) -> float:
        return sum(math.comb(n, i) for i in range(k, n + 1)) / scale

    two = min(
        1.0, 2.0 * sum(math.comb(n, i) for i in range(min(first_only, second_only) + 1)) / scale
    )
    return two, at_least(first_only), at_least(second_only)


@dataclass(frozen=True, slots=True)
class Paired:
    """Two arms on the same cases: how often only one of them was positive."""

    measure: str  # "recall" (positive = caught) or "false rejection" (positive = rejected)
    first: str
    second: str
    n: int  # the cases compared
    first_only: int
    second_only: int
    p_two_sided: float
    p_first_more: float  # one-sided
    p_second_more: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "arms": [self.first, self.second],
            "n": self.n,
            "first_only": self.first_only,
            "second_only": self.second_only,
            "p_two_sided": self.p_two_sided,
            "p_first_more": self.p_first_more,
            "p_second_more": self.p_second_more,
            "test": "exact McNemar (binomial on discordant cases)",
        }


def paired(measure: str, first: str, second: str, outcomes: Sequence[tuple[bool, bool]]) -> Paired:
    first_only = sum(1 for x, y in outcomes if x and not y)
    second_only = sum(1 for x, y in outcomes if y and not x)
    two, first_more, second_more = mcnemar(first_only, second_only)
    return Paired(
        measure, first, second, len(outcomes), first_only, second_only, two, first_more, second_more
    )


@dataclass(frozen=True, slots=True)
class ArmMetrics:
    arm: str
    available: bool
    note: str = ""  # why not available
    recall: Rate = field(default_factory=lambda: wilson(0, 0))
    agree: int = 0  # caught defective cases whose hidden test fails on patched
    over_veto: Rate = field(default_factory=lambda: wilson(0, 0))
    false_rejection: Rate = field(default_factory=lambda: wilson(0, 0))
    inconclusive: Rate = field(default_factory=lambda: wilson(0, 0))
    calls: MeanInterval = field(default_factory=lambda: mean_interval(()))
    tokens: MeanInterval = field(default_factory=lambda: mean_interval(()))
    wall: MeanInterval | None = None  # None: no runs of its own (d and e are b's runs)

    def to_dict(self) -> dict[str, Any]:
        if not self.available:
            return {"arm": self.arm, "available": False, "note": self.note}
        return {
            "arm": self.arm,
            "available": True,
            "recall": {
                **self.recall.to_dict(),
                "agree_with_ground_truth": wilson(self.agree, self.recall.k).to_dict(),
            },
            "over_veto": self.over_veto.to_dict(),
            "false_rejection": self.false_rejection.to_dict(),
            "inconclusive": self.inconclusive.to_dict(),
            "critic_calls": self.calls.to_dict(),
            "tokens": self.tokens.to_dict(),
            "wall_seconds": self.wall.to_dict() if self.wall is not None else "b's runs",
        }


def arm_metrics(arm: str, results: Sequence[CaseResult], note: str = "") -> ArmMetrics:
    """The metrics of one arm over the given (held-out) cases."""
    seen = [(r, arm_case(arm, r)) for r in results]
    if not results or any(view is None for _, view in seen):
        missing = sum(1 for _, view in seen if view is None)
        return ArmMetrics(arm, False, note or f"not run for {missing} of {len(results)} case(s)")
    views = [(r, v) for r, v in seen if v is not None]
    defective = [(r, v) for r, v in views if r.label == "defective"]
    good = [v for r, v in views if r.label == "good"]
    caught = [(r, v) for r, v in defective if v.rejected]
    wall = [v.seconds for _, v in views if v.seconds is not None]
    return ArmMetrics(
        arm=arm,
        available=True,
        recall=wilson(len(caught), len(defective)),
        agree=sum(1 for r, _ in caught if r.defect_confirmed),
        over_veto=wilson(sum(v.killed for _, v in views), sum(v.emitted for _, v in views)),
        false_rejection=wilson(sum(1 for v in good if v.rejected), len(good)),
        inconclusive=wilson(
            sum(v.inconclusive for _, v in views), sum(v.executed for _, v in views)
        ),
        calls=mean_interval([float(v.calls) for _, v in views]),
        tokens=mean_interval([float(v.tokens) for _, v in views]),
        wall=mean_interval(wall) if len(wall) == len(views) else None,
    )


def compare(first: str, second: str, results: Sequence[CaseResult]) -> tuple[Paired, Paired]:
    """(recall, false rejection) of two arms, paired on the same cases."""
    both = [(r, arm_case(first, r), arm_case(second, r)) for r in results]
    pairs = [(r, x, y) for r, x, y in both if x is not None and y is not None]
    recall = paired(
        "recall",
        first,
        second,
        [(x.rejected, y.rejected) for r, x, y in pairs if r.label == "defective"],
    )
    false_rejection = paired(
        "false rejection",
        first,
        second,
        [(x.rejected, y.rejected) for r, x, y in pairs if r.label == "good"],
    )
    return recall, false_rejection


@dataclass(frozen=True, slots=True)
class Clause:
    text: str
    holds: bool
    detail: str


def fewest_discordant(alpha: float = ALPHA) -> int:
    """The fewest paired cases in which the exact one-sided McNemar test can fall below
    ``alpha``: every one of n cases going the same way gives p = 0.5**n, its smallest value."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"need 0 < alpha <= 1, got {alpha}")
    n = 1
    while mcnemar(n, 0)[1] >= alpha:
        n += 1
    return n


#: The fewest defective cases the §9.6 rule decides on: with fewer, a recall gain can never be
#: beyond noise (clause 3), and "remove" would be the only possible answer — the rule's verdict
#: on the data it lacks. 5 at ALPHA = 0.05 (0.5**4 = 0.0625, 0.5**5 = 0.031). (Clause 3 could
#: hold on false rejections alone, but only by the critic arm rejecting fewer good patches
#: than the validator alone, whose items it runs too: by chance, not by the critic.)
MIN_DEFECTIVE = fewest_discordant(ALPHA)
#: The fewest good cases: with none, "no more over-veto than the validator alone" (clause 2)
#: compares nothing, and recall would be reported without its over-veto.
MIN_GOOD = 1

Verdict = Literal["keep", "remove", "not enough data"]


@dataclass(frozen=True, slots=True)
class Decision:
    """The §9.6 rule applied to ``defective`` and ``good`` cases measured in both arms.

    ``keep`` is None when there are fewer cases than the rule needs (``needs``: defective,
    good; :data:`MIN_DEFECTIVE` and :data:`MIN_GOOD` at :data:`ALPHA`): then the clauses are
    there for information and nothing is decided.
    """

    keep: bool | None
    clauses: tuple[Clause, ...]
    defective: int = 0
    good: int = 0
    needs: tuple[int, int] = (MIN_DEFECTIVE, MIN_GOOD)

    @property
    def verdict(self) -> Verdict:
        if self.keep is None:
            return "not enough data"
        return "keep" if self.keep else "remove"

    @property
    def headline(self) -> str:
        if self.keep is None:
            return f"not enough data: {self.defective} defective, {self.good} good measured"
        if self.keep:
            return "keep the critic"
        return "remove the critic — an empty L column"

    @property
    def shortfall(self) -> str:
        """What the rule needs and did not get ("" when it had enough)."""
        if self.keep is not None:
            return ""
        defective, good = self.needs
        return (
            f"the rule needs at least {defective} defective cases (with fewer, a recall gain "
            f"can never be beyond noise) and at least {good} good case{'s' if good != 1 else ''}"
            " (to compare false rejections)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "keep": self.keep,
            "decision": self.verdict,
            "headline": self.headline,
            "measured": {"defective": self.defective, "good": self.good},
            "needs": {"defective": self.needs[0], "good": self.needs[1]},
            "shortfall": self.shortfall,
            "clauses": [
                {"text": c.text, "holds": c.holds, "detail": c.detail} for c in self.clauses
            ],
            "alpha": ALPHA,
        }


def _rate_text(rate: Rate) -> str:
    return f"{rate.k}/{rate.n}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value < 0.01 else f"{value:.3f}".rstrip("0").rstrip(".")


def decide(
    on: ArmMetrics,
    off: ArmMetrics,
    recall: Paired,
    false_rejection: Paired,
    alpha: float = ALPHA,
) -> Decision:
    """Spec §9.6. ``recall`` and ``false_rejection`` pair ``on`` (first) with ``off`` (second);
    the cases they pair are the ones measured. Too few of them: no decision (``keep`` None)."""
    higher = (
        on.recall.value is not None
        and off.recall.value is not None
        and on.recall.value > off.recall.value
    )
    c1 = Clause(
        "verified-defect recall strictly higher with the critic",
        higher,
        f"{_rate_text(on.recall)} with, {_rate_text(off.recall)} without",
    )
    on_fr, off_fr = on.false_rejection.value or 0.0, off.false_rejection.value or 0.0
    c2 = Clause(
        "over-veto not worse than the validator alone",
        on_fr <= off_fr,
        "the validator alone makes no claims (over-veto "
        f"{_rate_text(off.over_veto)}), so what counts is the over-veto that reaches a verdict: "
        f"good patches rejected {_rate_text(on.false_rejection)} with the critic, "
        f"{_rate_text(off.false_rejection)} without; the critic's claims killed by their own "
        f"falsification: {_rate_text(on.over_veto)}",
    )
    degraded = []
    if recall.p_first_more < alpha:
        degraded.append(f"recall (one-sided p = {_p(recall.p_first_more)})")
    if false_rejection.p_second_more < alpha:
        degraded.append(f"false rejection (one-sided p = {_p(false_rejection.p_second_more)})")
    c3 = Clause(
        "removing the critic degrades at least one measure beyond noise",
        bool(degraded),
        ", ".join(degraded)
        if degraded
        else (
            f"no: caught only with the critic {recall.first_only}, only without "
            f"{recall.second_only} (one-sided p = {_p(recall.p_first_more)}); good patches "
            f"rejected only without the critic {false_rejection.second_only} "
            f"(one-sided p = {_p(false_rejection.p_second_more)}); alpha = {alpha:g}"
        ),
    )
    defective, good = recall.n, false_rejection.n
    needs = (fewest_discordant(alpha), MIN_GOOD)
    enough = defective >= needs[0] and good >= needs[1]
    keep = c1.holds and c2.holds and c3.holds if enough else None
    return Decision(keep, (c1, c2, c3), defective, good, needs)


@dataclass(frozen=True, slots=True)
class Ablation:
    mechanism: str
    arm: str
    available: bool
    recall: Paired | None = None  # the ablated arm first, b second
    false_rejection: Paired | None = None
    degraded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "arm": self.arm,
            "available": self.available,
            "recall": self.recall.to_dict() if self.recall else None,
            "false_rejection": self.false_rejection.to_dict() if self.false_rejection else None,
            "removal_degrades": list(self.degraded),
        }


def ablation(arm: str, results: Sequence[CaseResult], available: bool) -> Ablation:
    """Spec §9.5: the mechanism of ``arm`` removed, against b, on the same cases."""
    mechanism = MECHANISMS[arm]
    if not available:
        return Ablation(mechanism, arm, False)
    recall, false_rejection = compare(arm, "b", results)
    degraded = []
    if recall.p_second_more < ALPHA:
        degraded.append(f"recall (one-sided p = {_p(recall.p_second_more)})")
    if false_rejection.p_first_more < ALPHA:
        degraded.append(f"false rejection (one-sided p = {_p(false_rejection.p_first_more)})")
    return Ablation(mechanism, arm, True, recall, false_rejection, tuple(degraded))
