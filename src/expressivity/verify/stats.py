"""Confidence intervals for small samples (seeds), without SciPy."""

from __future__ import annotations

import math
import statistics

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30; beyond that the normal 1.96
# is within 2%.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t_quantile_975(df: int) -> float:
    """``t_{0.975}`` with ``df`` degrees of freedom (``df >= 1``)."""
    if df < 1:
        raise ValueError("a t interval needs at least two values")
    return _T975[df - 1] if df <= len(_T975) else 1.96


def t_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval ``(mean, low, high)`` of ``values`` (at least two)."""
    if confidence != 0.95:
        raise ValueError("only 95% intervals are tabulated")
    values = [float(v) for v in values]
    mean = statistics.fmean(values)
    half = t_quantile_975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def log10_t_interval(values) -> tuple[float, float, float]:
    """Geometric mean and 95% interval of positive ``values``: a t interval on ``log10`` mapped back.

    Suits errors that vary over orders of magnitude between seeds.
    """
    mean, low, high = t_interval([math.log10(v) for v in values])
    return 10**mean, 10**low, 10**high
