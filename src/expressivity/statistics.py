"""The statistics every reported number rests on: small-sample intervals over seeds, paired
differences, exact binomial intervals, an exact test and a difference interval between two
arms' success rates, and geometric means of values that can sit at a resolution floor. The
quantiles, the exact binomial bounds and the exact test come from ``scipy.stats`` (imported
inside the functions that need them, so importing this module stays light); no other package
of ``expressivity`` is imported, so every layer may use it.

Conventions: every interval is two-sided 95%. A group of fewer than two values has **no**
interval: :func:`interval` returns one whose bounds are ``-inf`` and ``inf`` and whose
:attr:`Interval.decided` is false, so it can never count as disjoint from anything (a zero-width
interval from one seed would). A zero-width interval from two or more values (identical
values, or every value at a floor) is not decided either: it states no uncertainty, which a
sample of seeds cannot have. A group of no values has value ``nan``.
"""

from __future__ import annotations

import math
import numbers
import statistics
from typing import Iterable, NamedTuple

# The resolution of ``1 - R^2`` when R^2 is a float64 just below 1: the spacing of doubles in
# [1/2, 1) is 2^-53, so ``1 - R^2`` is either exactly 0 or at least 2^-53. (Before commit
# d7560e5 the metric was computed in float32, whose spacing below 1 is 2^-24 ~ 6e-8: the "float32
# floor" of the README's older heavy-tail table.)
R2_RESOLUTION = 2.0**-53


def rounding_width(low: float, high: float) -> bool:
    """Whether ``[low, high]`` is no wider than float64's rounding of its ends (10^-12 of their size, some 4,500
    ulps, far below any sample's spread): values equal up to rounding, whose interval states no uncertainty."""
    return not (high - low) > 1e-12 * max(abs(low), abs(high))


class Interval(NamedTuple):
    """A point value with its 95% interval over ``n`` values (``low``/``high`` are infinite when
    ``n < 2``: no interval)."""

    value: float
    low: float
    high: float
    n: int

    @property
    def decided(self) -> bool:
        """An interval exists (at least two values), is finite and wider than float64's rounding of its ends
        (:func:`rounding_width`): one rounding error wide, [-0.3, -0.3] from 0.1 + 0.2 against 0.3, decided a
        paired comparison with p 1e-33 (an audit, 2026-11-29), where a zero-width one states no uncertainty."""
        return (self.n >= 2 and math.isfinite(self.low) and math.isfinite(self.high)
                and not rounding_width(self.low, self.high))

    @property
    def half_width(self) -> float:
        """Half the interval's width (``inf`` without an interval)."""
        return (self.high - self.low) / 2 if self.decided else math.inf

    def excludes(self, x: float) -> bool:
        """``x`` lies outside the interval (never true without an interval)."""
        return self.decided and (x < self.low or x > self.high)

    def below(self, other: "Interval") -> bool:
        """This interval lies wholly below ``other`` (both must exist)."""
        return self.decided and other.decided and self.high < other.low

    def fmt(self, digits: int = 3, against: Iterable[float] = ()) -> str:
        """``value [low, high]`` to ``digits`` significant digits, or more where an end would
        otherwise be shown on the wrong side of (or equal to) a threshold in ``against`` that the
        decision compared it with (0.1496 is not shown as 0.15 beside "below the margin 0.15")."""
        if self.n == 0:
            return "no values"
        if self.n < 2 or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.value:.{digits}g} (n = {self.n}: no interval)"
        if not self.decided:
            return f"{self.value:.{digits}g} (n = {self.n}, zero width: no interval)"
        digits = digits_showing((self.low, self.high), against, digits)
        return f"{self.value:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"

    def clipped(self, low: float = -math.inf, high: float = math.inf) -> "Interval":
        """The interval with its bounds clipped to ``[low, high]`` (a quantity that cannot leave that
        range, such as R^2 <= 1): for display; the decision uses the unclipped interval."""
        return self._replace(low=min(max(self.low, low), high), high=max(min(self.high, high), low))


def digits_showing(values: Iterable[float], thresholds: Iterable[float], digits: int = 3) -> int:
    """The fewest significant digits, at least ``digits`` (at most 17), at which every one of
    ``values`` printed with ``g`` lies on the same side of every threshold as the value itself."""
    values, thresholds = list(values), [float(t) for t in thresholds]

    def side(x: float, t: float) -> int:
        return (x > t) - (x < t)

    for d in range(digits, max(digits, 17) + 1):
        if all(side(float(f"{v:.{d}g}"), t) == side(v, t) for v in values if math.isfinite(v) for t in thresholds):
            return d
    return max(digits, 17)


def t_quantile_975(df: int) -> float:
    """``t_{0.975}`` with ``df`` degrees of freedom (``df >= 1``), from ``scipy.stats.t.ppf``."""
    if isinstance(df, bool) or df < 1:
        raise ValueError("a t interval needs at least two values")
    from scipy.stats import t

    return float(t.ppf(0.975, df))


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval ``(mean, low, high)`` of ``values`` (at least two; else ValueError)."""
    if confidence != 0.95:
        raise ValueError("only 95% intervals are tabulated")
    values = [float(v) for v in values]
    scale = max((abs(v) for v in values), default=0.0)
    if math.isfinite(scale) and scale > 1e300:
        # in units of the largest: fsum and stdev overflowed on [1e308, 1.5e308] with an OverflowError (an audit,
        # 2026-11-29); ends past float64's largest come back infinite
        mean, low, high = t_interval([v / scale for v in values])
        return mean * scale, low * scale, high * scale
    mean = statistics.fmean(values) if values else math.nan
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def _exp10(x: float) -> float:
    """``10 ** x``, infinite past float64's range (``10 ** 400`` raises an OverflowError)."""
    return math.inf if x > 308.5 else 10.0 ** x


def log10_t_interval(values) -> tuple[float, float, float]:
    """Geometric mean and 95% interval of positive ``values``: a t interval on ``log10`` mapped back."""
    mean, low, high = t_interval([math.log10(v) for v in values])
    return _exp10(mean), _exp10(low), _exp10(high)


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
    shrink the group; flooring states what is known: "at most the resolution". The interval's
    lower end is at least ``floor`` (every floored value is; a t interval on the logs could reach
    below it). Where a large share of the values is floored, the floored values are no sample of
    the truth and the interval is not a 95% one (a fresh audit, 2026-11-28, simulated 85-91%
    coverage with a quarter to 70% of log-normal values floored): the count returned says how many.
    Negative or non-finite values are an error."""
    if not (floor > 0 and math.isfinite(floor)):
        raise ValueError(f"floor must be a positive resolution, got {floor}")
    values = [float(v) for v in values]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError(f"a floored geometric mean takes finite values >= 0, got {values}")
    floored = sum(1 for v in values if v < floor)
    logs = [math.log10(max(v, floor)) for v in values]
    mid = interval(logs)
    return Interval(_exp10(mid.value) if logs else math.nan, max(_exp10(mid.low), floor) if mid.decided else 0.0,
                    _exp10(mid.high) if mid.decided else math.inf, mid.n), floored


def paired_difference(a: dict, b: dict) -> Interval:
    """Mean and 95% t interval of ``a[seed] - b[seed]`` over the seeds both have.

    Models trained on the same seed share the data order and the held-out sample, so their
    difference varies less than either; an unpaired comparison wastes that. Seeds present in only
    one arm are left out (the interval's ``n`` says how many pairs there were)."""
    common = sorted(set(a) & set(b), key=str)
    return interval([float(a[s]) - float(b[s]) for s in common])


# ---- pass/fail outcomes -----------------------------------------------------------------------------


# ---- one-sided p-values of decided intervals (for corrections across a claim's parts) ----------------


def t_tail(diff: Interval, threshold: float, above: bool) -> float:
    """One-sided p-value, from the 95% t interval ``diff`` (:func:`interval`), that the mean lies
    above ``threshold`` (``above``) or below it: ``P(T_{n-1} >= t)`` with ``t = (mean - threshold) /
    se`` (``se`` = half width / ``t_{0.975, n-1}``), or ``P(T_{n-1} <= t)``. The interval lies wholly
    past ``threshold`` on that side exactly when this is at most 0.025. ``1.0`` where there is no
    interval."""
    from scipy.stats import t

    if not diff.decided:
        return 1.0
    se = diff.half_width / t_quantile_975(diff.n - 1)
    score = (diff.value - threshold) / se
    return float(t.sf(score, diff.n - 1) if above else t.cdf(score, diff.n - 1))


def binomial_tail(successes: int, trials: int, p0: float, above: bool) -> float:
    """One-sided exact p-value that the success rate is above ``p0`` (``P(X >= k | p0)``) or below
    it (``P(X <= k | p0)``): at most 0.025 exactly when :func:`clopper_pearson`'s interval lies
    wholly past ``p0`` on that side."""
    from scipy.stats import binom

    k, n = _check_counts(successes, trials)
    return float(binom.sf(k - 1, n, p0) if above else binom.cdf(k, n, p0))


def newcombe_tail(a: tuple[int, int], b: tuple[int, int], margin: float, above: bool) -> float:
    """One-sided p-value that ``p_a - p_b`` lies above ``margin`` (``above``) or below it: the
    ``alpha`` at which the end of the ``1 - 2 alpha`` interval of :func:`rate_difference` (exact
    arms at that level) meets ``margin``, found by bisection (to 1e-6 relative). At most 0.025
    exactly when the 95% interval lies wholly past ``margin`` on that side."""
    if not math.isfinite(margin):
        raise ValueError(f"margin must be a finite number, got {margin!r}")

    def end(alpha: float) -> float:
        diff = newcombe(clopper_pearson(*a, 1 - 2 * alpha), clopper_pearson(*b, 1 - 2 * alpha))
        return diff.low - margin if above else margin - diff.high   # > 0: past the margin at this level

    lo, hi = 1e-12, 0.5   # end(alpha) grows with alpha (a narrower interval)
    if end(lo) > 0:
        return lo
    if end(hi) <= 0:
        return 1.0
    while hi - lo > 1e-6 * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if end(mid) > 0 else (mid, hi)
    # the bisection's last digit must not put p on the other side of 0.025 than the 95% interval
    # itself (a review found 0.02500000596 for an interval 1e-9 past its margin)
    past = end(0.025) > 0
    return min(hi, 0.025) if past else max(hi, math.nextafter(0.025, 1.0))


def _check_counts(successes: int, trials: int) -> tuple[int, int]:
    whole = all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in (successes, trials))
    if not whole or not (0 <= successes <= trials) or trials < 1:   # 2.5 successes read as 2 before
        raise ValueError(f"need whole counts 0 <= successes <= trials and trials >= 1, got {successes!r} of {trials!r}")
    return int(successes), int(trials)


def _check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, (int, float)) and 0 <= confidence < 1):   # 0: the median (newcombe_tail's end)
        raise ValueError(f"confidence must be a level in [0, 1), got {confidence!r}")
    return float(confidence)


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """Success rate ``k/n`` with its exact (Clopper-Pearson) interval, 95% unless
    :func:`newcombe_tail` asks for another level ``1 - 2 a``.

    The bounds solve ``P(X >= k | p_low) = a`` and ``P(X <= k | p_high) = a``: the beta quantiles
    ``Beta(a; k, n - k + 1)`` and ``Beta(1 - a; k + 1, n - k)`` (``scipy.stats.beta.ppf``);
    ``p_low = 0`` when ``k = 0`` and ``p_high = 1`` when ``k = n``. Coverage is at least the level
    for every ``p``."""
    from scipy.stats import beta

    k, n = _check_counts(successes, trials)
    a = (1 - _check_confidence(confidence)) / 2
    low = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return Interval(k / n, low, high, n)


def fisher_exact(successes_a: int, trials_a: int, successes_b: int, trials_b: int) -> float:
    """Two-sided p-value of Fisher's exact test that two arms share one success rate
    (``scipy.stats.fisher_exact`` on the 2 x 2 table: every table with the observed margins no more
    likely than the observed one)."""
    from scipy.stats import fisher_exact as fisher

    a, n_a = _check_counts(successes_a, trials_a)
    b, n_b = _check_counts(successes_b, trials_b)
    return float(fisher([[a, n_a - a], [b, n_b - b]]).pvalue)


def wilson(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """Success rate with its Wilson score interval (``scipy.stats.binomtest(...).proportion_ci``, no
    continuity correction; 95% by default): the arms of Newcombe's method 10 (:func:`newcombe`). Its
    coverage dips below 95% near 0 and 1; the verdicts use :func:`clopper_pearson`."""
    from scipy.stats import binomtest

    k, n = _check_counts(successes, trials)
    ci = binomtest(k, n).proportion_ci(confidence, method="wilson")
    return Interval(k / n, float(ci.low), float(ci.high), n)


def rate_difference(successes_a: int, trials_a: int, successes_b: int, trials_b: int) -> Interval:
    """``p_a - p_b`` with Newcombe's hybrid 95% interval (:func:`newcombe`) built from each arm's
    exact Clopper-Pearson interval ``[l, u]``::

        low  = d - sqrt((p_a - l_a)^2 + (u_b - p_b)^2)
        high = d + sqrt((u_a - p_a)^2 + (p_b - l_b)^2)

    It stays inside [-1, 1]. With Newcombe's own Wilson arms (method 10) a decision on one end runs
    above its 2.5% at a seed sweep's counts (a fresh audit, 2026-11-28, enumerated 0.038 at 24 and
    0.030 at 96 trials an arm for "the gain is below a margin of 0.15" when it is exactly 0.15);
    with the exact arms it stays under it (0.019, 0.020, 0.022, 0.022 at 20, 24, 64, 96 trials:
    ``tests/experiments/claims/test_rules.py`` enumerates it at 24). ``n`` is the smaller arm's trials."""
    return newcombe(clopper_pearson(successes_a, trials_a), clopper_pearson(successes_b, trials_b))


def newcombe(ra: Interval, rb: Interval) -> Interval:
    """The hybrid interval of ``ra.value - rb.value`` from the two arms' intervals (Newcombe 1998:
    method 10 with Wilson arms; :func:`rate_difference` gives it exact arms)."""
    d = ra.value - rb.value
    low = d - math.sqrt((ra.value - ra.low) ** 2 + (rb.high - rb.value) ** 2)
    high = d + math.sqrt((ra.high - ra.value) ** 2 + (rb.value - rb.low) ** 2)
    return Interval(d, max(-1.0, low), min(1.0, high), min(ra.n, rb.n))
