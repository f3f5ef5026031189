"""The decision rules every claim's verdict is made of: a word from an interval, never from a point.

* **Directional** (:func:`compare_paired`, :func:`compare`): *reproduced* when the interval of the
  difference lies wholly on the claimed side of 0, *refuted* when wholly on the other.
* **Equivalence with a margin** (:func:`equivalent`): "X is not needed / no worse / flat" is
  *reproduced* only when the whole interval of the difference lies inside ``(-margin, margin)``
  -- a non-significant difference is not equivalence -- and decidedly not when it lies wholly
  beyond the margin.
* **Per-seed outcomes** (:class:`Outcomes`): "solves / fails" counts the seeds past a threshold
  and decides on the exact (Clopper-Pearson) interval of that share, with a minimum of valid
  seeds; runs that failed (crashed, or diverged to a non-finite value) are reported, never
  counted as seeds.
* **Power lines** (:func:`paired_detectable`, :func:`equivalence_power`, :func:`majority_power`):
  what a criterion's seed count can detect, stated before the run.

Anything else is *undecided: underpowered*, with what was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from expressivity.experiments.claims import Verdict, led_by_reason
from expressivity.statistics import (Interval, clopper_pearson, newcombe, paired_difference, rate_difference,
                                     t_quantile_975, wilson)

MAJORITY = 0.5   # a cell "solves" when the exact interval of its share of passing seeds lies above this


# ---- continuous differences ----------------------------------------------------------------------------


def compare_paired(diff: Interval, what: str) -> Verdict:
    """``diff`` = claimed-better minus claimed-worse, per seed (lower is better). Reproduced if the
    whole interval is below 0, refuted if above, else undecided (underpowered)."""
    if not diff.decided:
        return Verdict("undecided", f"underpowered: {what}: {diff.fmt()}: no interval (needs 2 paired seeds with "
                                    "different values)")
    pairs = f"over {diff.n} paired seeds"   # seeds missing from either arm (failed runs) are not pairs
    if diff.high < 0:
        return Verdict("reproduced", f"{what}: paired difference {diff.fmt()} {pairs} < 0")
    if diff.low > 0:
        return Verdict("refuted", f"{what}: paired difference {diff.fmt()} {pairs} > 0 (the reverse)")
    return Verdict("undecided", f"underpowered: {what}: paired difference {diff.fmt()} {pairs} contains 0")


def compare(better: Interval, worse: Interval, what: str) -> Verdict:
    """Unpaired: reproduced if ``better`` lies wholly below ``worse``, refuted if wholly above,
    else undecided (underpowered). Use :func:`compare_paired` when the arms share seeds."""
    if not (better.decided and worse.decided):
        return Verdict("undecided", f"underpowered: {what}: {better.fmt()} and {worse.fmt()}: intervals need 2 seeds")
    if better.below(worse):
        return Verdict("reproduced", f"{what}: {better.fmt()} below {worse.fmt()}")
    if worse.below(better):
        return Verdict("refuted", f"{what}: {better.fmt()} above {worse.fmt()} (the reverse)")
    return Verdict("undecided", f"underpowered: {what}: {better.fmt()} and {worse.fmt()} overlap")


def paired(a: dict, b: dict, what: str) -> tuple[Interval, Verdict]:
    """``a`` claimed lower than ``b`` (both ``{seed: value}``): the paired difference and its verdict."""
    diff = paired_difference(a, b)
    return diff, compare_paired(diff, what)


def equivalent(diff: Interval, margin: float, what: str, units: str = "") -> Verdict:
    """"The difference is smaller than ``margin``": reproduced if the whole interval lies inside
    ``(-margin, margin)``; *not reproduced* if it lies wholly beyond the margin on one side (a
    decided difference larger than the margin); else undecided (the interval reaches past the
    margin: the seeds cannot tell). A difference that is merely not significant is not
    equivalence."""
    band = f"(-{margin:g}, {margin:g}){units}"
    if not diff.decided:
        return Verdict("undecided", f"underpowered: {what}: {diff.fmt()}: no interval")
    pairs = f"over {diff.n} paired seeds"
    if -margin < diff.low and diff.high < margin:
        return Verdict("reproduced", f"{what}: {diff.fmt()} {pairs} inside the margin {band}")
    if diff.low >= margin or diff.high <= -margin:
        return Verdict("not reproduced", f"{what}: {diff.fmt()} {pairs} wholly beyond the margin {band}")
    return Verdict("undecided", f"underpowered: {what}: {diff.fmt()} {pairs} reaches past the margin {band}")


def combine(parts: dict[str, Verdict]) -> Verdict:
    """Any part refuted: refuted; all reproduced: reproduced; any not reproduced: not reproduced;
    else undecided, with the parts' reasons."""
    words = {v.word for v in parts.values()}
    summary = "; ".join(f"{k}: {v.word}" for k, v in parts.items())
    if "refuted" in words:
        return Verdict("refuted", summary)
    if words == {"reproduced"}:
        return Verdict("reproduced", summary)
    if "not reproduced" in words:
        return Verdict("not reproduced", summary)
    first = next(v.reason for v in parts.values() if v.word == "undecided")
    return Verdict("undecided", led_by_reason(summary, first))


def explained(parts: dict[str, Verdict], extra: str = "") -> Verdict:
    """:func:`combine`'s word with every part's reason (and ``extra``) in place of the words."""
    verdict = combine(parts)
    detail = "; ".join(v.reason for v in parts.values()) + (f"; {extra}" if extra else "")
    if verdict.word == "undecided":
        detail = led_by_reason(detail, verdict.reason)
    return Verdict(verdict.word, detail)


# ---- success rates -------------------------------------------------------------------------------------


def rate_margin_verdict(a: tuple[int, int], b: tuple[int, int], margin: float, what: str) -> tuple[Verdict, Interval]:
    """"Arm a does not beat arm b by ``margin`` or more" on ``(successes, trials)``: the Newcombe
    interval of ``p_a - p_b``; reproduced if its upper end is below ``margin``, refuted if its
    lower end is above ``margin`` (a decided gain of at least the margin), else undecided."""
    diff = rate_difference(*a, *b)
    text = f"{what}: {a[0]}/{a[1]} - {b[0]}/{b[1]} = {diff.fmt(2)} (Newcombe 95%), margin {margin:g}"
    if diff.high < margin:
        return Verdict("reproduced", f"{text}: the upper end is below the margin"), diff
    if diff.low > margin:
        return Verdict("refuted", f"{text}: the lower end is above the margin"), diff
    return Verdict("undecided", f"underpowered: {text}: the interval contains the margin"), diff


@dataclass(frozen=True)
class Outcomes:
    """Per-seed pass/fail outcomes of one cell: of ``valid`` finished seeds with a finite value,
    ``passed`` reached the pass threshold and ``failed`` stayed at or below the fail threshold;
    ``broken`` runs failed (crashed or diverged) and are reported, never counted as seeds."""

    passed: int
    failed: int
    valid: int
    broken: int = 0

    @classmethod
    def of(cls, values: dict, pass_at: float, fail_at: float, broken: int = 0) -> "Outcomes":
        """From ``{seed: value}`` (higher is better); non-finite values count as broken runs."""
        good = [float(v) for v in values.values() if math.isfinite(float(v))]
        return cls(sum(v >= pass_at for v in good), sum(v <= fail_at for v in good), len(good),
                   broken + len(values) - len(good))

    def pass_rate(self) -> Interval:
        return clopper_pearson(self.passed, self.valid) if self.valid else Interval(math.nan, 0.0, 1.0, 0)

    def fail_rate(self) -> Interval:
        return clopper_pearson(self.failed, self.valid) if self.valid else Interval(math.nan, 0.0, 1.0, 0)

    def status(self, min_seeds: int) -> str:
        """``solved`` (the exact interval of the share of passing seeds lies above 1/2), ``failed``
        (that of failing seeds does), ``unclear``, or ``too few seeds`` (fewer than ``min_seeds``)."""
        if self.valid < min_seeds:
            return "too few seeds"
        if self.pass_rate().low > MAJORITY:
            return "solved"
        if self.fail_rate().low > MAJORITY:
            return "failed"
        return "unclear"

    def fmt(self) -> str:
        rate = self.pass_rate()
        text = (f"{self.passed}/{self.valid} pass [{rate.low:.2f}, {rate.high:.2f}], {self.failed}/{self.valid} fail"
                if self.valid else "no valid seeds")
        return text + (f", {self.broken} failed run(s) not counted" if self.broken else "")


# ---- power lines -----------------------------------------------------------------------------------------


def paired_detectable(n: int, power: float = 0.8) -> float:
    """The smallest mean paired difference, in standard deviations of the per-seed difference,
    that a two-sided 95% t interval over ``n`` seeds excludes from 0 with probability ``power``
    (``(t_{0.975, n-1} + t_{power, n-1}) / sqrt(n)``, the usual approximation)."""
    from scipy.stats import t

    if n < 2:
        return math.inf
    return float((t_quantile_975(n - 1) + t.ppf(power, n - 1)) / math.sqrt(n))


def equivalence_sd(n: int, margin: float, power: float = 0.8) -> float:
    """The largest standard deviation of the per-seed difference at which a two-sided 95% t interval
    over ``n`` seeds lies inside ``(-margin, margin)`` with probability ``power`` when the true
    difference is 0 (``margin sqrt(n) / (t_{0.975, n-1} + t_{(1+power)/2, n-1})``, the usual approximation)."""
    from scipy.stats import t

    if n < 2:
        return 0.0
    return float(margin * math.sqrt(n) / (t_quantile_975(n - 1) + t.ppf((1 + power) / 2, n - 1)))


def min_majority(n: int) -> int | None:
    """The fewest passing seeds of ``n`` whose exact interval lies above 1/2 (``None``: no count does)."""
    return next((k for k in range(n + 1) if clopper_pearson(k, n).low > MAJORITY), None) if n else None


def majority_power(n: int, p: float) -> float:
    """The probability that a cell whose seeds pass with probability ``p`` is called solved with ``n`` seeds."""
    k = min_majority(n)
    return 0.0 if k is None else sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def equivalence_power(n: int, p: float, margin: float) -> float:
    """The probability that two arms of ``n`` seeds with the same success probability ``p`` are
    called equivalent within ``margin`` by :func:`rate_margin_verdict` (exact enumeration)."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    rates = [wilson(k, n) for k in range(n + 1)]
    return sum(pmf[a] * pmf[b] for a in range(n + 1) for b in range(n + 1)
               if newcombe(rates[a], rates[b]).high < margin)
