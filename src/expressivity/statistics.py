"""The statistics every reported number rests on: small-sample intervals over seeds, paired
differences, exact binomial intervals and an exact test between two arms, and geometric means
of values that can sit at a resolution floor. Pure Python (no SciPy), no other package of
``expressivity`` imported, so every layer may use it.

Conventions: every interval is two-sided 95%. A group of fewer than two values has **no**
interval: :func:`interval` returns one whose bounds are ``-inf`` and ``inf`` and whose
:attr:`Interval.decided` is false, so it can never count as disjoint from anything (a zero-width
interval from one seed would). A group of no values has value ``nan``.
"""

from __future__ import annotations

import math
import statistics
from typing import Iterable, NamedTuple

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30; beyond that the normal 1.96
# is within 2%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)

# The resolution of ``1 - R^2`` when R^2 is a float64 just below 1: the spacing of doubles in
# [1/2, 1) is 2^-53, so ``1 - R^2`` is either exactly 0 or at least 2^-53. (Before commit
# d7560e5 the metric was computed in float32, whose spacing below 1 is 2^-24 ~ 6e-8: the "float32
# floor" of the README's older heavy-tail table.)
R2_RESOLUTION = 2.0**-53


class Interval(NamedTuple):
    """A point value with its 95% interval over ``n`` values (``low``/``high`` are infinite when
    ``n < 2``: no interval)."""

    value: float
    low: float
    high: float
    n: int

    @property
    def decided(self) -> bool:
        """An interval exists (at least two values) and is finite."""
        return self.n >= 2 and math.isfinite(self.low) and math.isfinite(self.high)

    def excludes(self, x: float) -> bool:
        """``x`` lies outside the interval (never true without an interval)."""
        return self.decided and (x < self.low or x > self.high)

    def below(self, other: "Interval") -> bool:
        """This interval lies wholly below ``other`` (both must exist)."""
        return self.decided and other.decided and self.high < other.low

    def fmt(self, digits: int = 3) -> str:
        if self.n == 0:
            return "no values"
        if not self.decided:
            return f"{self.value:.{digits}g} (n = {self.n}: no interval)"
        return f"{self.value:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


def t_quantile_975(df: int) -> float:
    """``t_{0.975}`` with ``df`` degrees of freedom (``df >= 1``)."""
    if df < 1:
        raise ValueError("a t interval needs at least two values")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval ``(mean, low, high)`` of ``values`` (at least two; else ValueError)."""
    if confidence != 0.95:
        raise ValueError("only 95% intervals are tabulated")
    values = [float(v) for v in values]
    mean = statistics.fmean(values) if values else math.nan
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def log10_t_interval(values) -> tuple[float, float, float]:
    """Geometric mean and 95% interval of positive ``values``: a t interval on ``log10`` mapped back."""
    mean, low, high = t_interval([math.log10(v) for v in values])
    return 10**mean, 10**low, 10**high


def interval(values: Iterable[float]) -> Interval:
    """Mean and 95% t interval of ``values``; with fewer than two, no interval (infinite bounds).

    Non-finite values are an error (a failed run must be counted as failed, not averaged)."""
    values = [float(v) for v in values]
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"interval of non-finite values {values}: count failed runs separately")
    if len(values) < 2:
        return Interval(values[0] if values else math.nan, -math.inf, math.inf, len(values))
    mean, low, high = t_interval(values)
    return Interval(mean, low, high, len(values))


def floored_geometric_interval(values: Iterable[float], floor: float) -> tuple[Interval, int]:
    """Geometric mean and 95% interval of non-negative ``values`` with every value below ``floor``
    (exact zeros included) raised to ``floor`` -- the stated resolution -- rather than dropped.

    Returns ``(interval, how many were floored)``. Dropping the zeros would bias the mean upward and
    shrink the group; flooring states what is known: "at most the resolution". Negative or
    non-finite values are an error."""
    if not (floor > 0 and math.isfinite(floor)):
        raise ValueError(f"floor must be a positive resolution, got {floor}")
    values = [float(v) for v in values]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError(f"a floored geometric mean takes finite values >= 0, got {values}")
    floored = sum(1 for v in values if v < floor)
    logs = [math.log10(max(v, floor)) for v in values]
    mid = interval(logs)
    return Interval(10**mid.value if logs else math.nan, 10**mid.low if mid.decided else 0.0,
                    10**mid.high if mid.decided else math.inf, mid.n), floored


def paired_difference(a: dict, b: dict) -> Interval:
    """Mean and 95% t interval of ``a[seed] - b[seed]`` over the seeds both have.

    Models trained on the same seed share the data order and the held-out sample, so their
    difference varies less than either; an unpaired comparison wastes that. Seeds present in only
    one arm are left out (the interval's ``n`` says how many pairs there were)."""
    common = sorted(set(a) & set(b), key=str)
    return interval([float(a[s]) - float(b[s]) for s in common])


# ---- pass/fail outcomes -----------------------------------------------------------------------------


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return min(1.0, sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1)))


def _solve(f, target: float) -> float:
    """The ``p`` in [0, 1] with ``f(p) = target`` for ``f`` decreasing in ``p`` (bisection to 1e-12)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(successes: int, trials: int) -> Interval:
    """Success rate ``k/n`` with its exact (Clopper-Pearson) 95% interval.

    The bounds solve ``P(X >= k | p_low) = 0.025`` and ``P(X <= k | p_high) = 0.025``; ``p_low = 0``
    when ``k = 0`` and ``p_high = 1`` when ``k = n``. Coverage is at least 95% for every ``p``."""
    if isinstance(successes, bool) or isinstance(trials, bool) or not (0 <= successes <= trials) or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    k, n = int(successes), int(trials)
    low = 0.0 if k == 0 else _solve(lambda p: _binomial_cdf(k - 1, n, p), 0.975)
    high = 1.0 if k == n else _solve(lambda p: _binomial_cdf(k, n, p), 0.025)
    return Interval(k / n, low, high, n)


def fisher_exact(successes_a: int, trials_a: int, successes_b: int, trials_b: int) -> float:
    """Two-sided p-value of Fisher's exact test that two arms share one success rate.

    Conditional on the total successes, the count in arm a is hypergeometric; the p-value sums
    the probabilities of every table no more likely than the observed one (a relative tolerance of
    1e-9 keeps ties)."""
    for k, n in ((successes_a, trials_a), (successes_b, trials_b)):
        if isinstance(k, bool) or isinstance(n, bool) or not (0 <= k <= n) or n < 1:
            raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {k} of {n}")
    total, N = successes_a + successes_b, trials_a + trials_b
    denom = math.comb(N, total)
    lo, hi = max(0, total - trials_b), min(trials_a, total)

    def prob(x: int) -> float:
        return math.comb(trials_a, x) * math.comb(trials_b, total - x) / denom

    observed = prob(successes_a)
    return min(1.0, sum(p for x in range(lo, hi + 1) if (p := prob(x)) <= observed * (1 + 1e-9)))
