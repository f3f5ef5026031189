"""Rate fits: ``y ≈ A x^b`` as a straight line in log10-log10 coordinates, per group, with a 95%
interval for the exponent ``b`` (the rate), and an optional break-point (threshold) model.

Intervals: with seeds, ``b`` is fitted per seed and the interval is Student-t across the seeds'
slopes (``ci="t"``) or a percentile bootstrap resampling seeds (``ci="bootstrap"``); without
seeds, from the least-squares standard error (t with ``n - 2`` degrees of freedom) or a
bootstrap over points. ``A`` (``prefactor``, reported with its log10 ``intercept``) and ``R²``
come from the fit to all points. Non-positive ``x`` or ``y`` cannot be logged: they are dropped
and counted.

Break-point model: a continuous line with one kink at ``log10 x = c``, slopes ``slope_left``
and ``slope_right`` (``c`` by grid search, least squares for the rest); ``preferred`` is
``"break"`` when its BIC beats the straight line's by more than 2, else ``"line"``.
"""

from __future__ import annotations

import math

import numpy as np

from expressivity.statistics import t_quantile_975

CI_METHODS = ("t", "bootstrap")


def ols(lx: np.ndarray, ly: np.ndarray) -> tuple[float, float, float, float | None]:
    """``(slope, intercept, r2, standard error of the slope)`` of ``ly ~ lx``."""
    n = len(lx)
    mx, my = lx.mean(), ly.mean()
    sxx = float(((lx - mx) ** 2).sum())
    slope = float(((lx - mx) * (ly - my)).sum() / sxx)
    intercept = float(my - slope * mx)
    resid = ly - (intercept + slope * lx)
    rss, tss = float((resid ** 2).sum()), float(((ly - my) ** 2).sum())
    r2 = 1.0 - rss / tss if tss > 0 else 1.0
    se = math.sqrt(rss / (n - 2) / sxx) if n > 2 else None
    return slope, intercept, r2, se


def fit_power_law(x, y, seeds=None, ci: str = "t", breakpoint: bool = False, n_boot: int = 2000,
                  rng_seed: int = 0) -> dict:
    """Fit ``y = A x^b`` to positive pairs; see the module doc. Returns a dict of plain numbers
    (``slope`` is ``None``, with a ``problem``, when fewer than two distinct ``x`` remain)."""
    if ci not in CI_METHODS:
        raise ValueError(f"ci must be one of {CI_METHODS}")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    s = np.asarray(seeds if seeds is not None else np.zeros(len(x)), dtype=object)
    keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    out = {"n_points": int(keep.sum()), "dropped": int((~keep).sum()), "n_seeds": None, "slope": None,
           "ci_low": None, "ci_high": None, "ci_method": None, "intercept": None, "prefactor": None, "r2": None}
    lx, ly, s = np.log10(x[keep]), np.log10(y[keep]), s[keep]
    if len(np.unique(lx)) < 2:
        return out | {"problem": "fewer than two distinct x values among the points with positive, finite x and y"}
    slope, intercept, r2, se = ols(lx, ly)
    # intercept is log10 of the prefactor; 10^intercept beyond float64 is reported as None
    prefactor = 10.0 ** intercept if abs(intercept) < 308 else None
    out.update(slope=slope, intercept=intercept, prefactor=prefactor, r2=r2)
    if seeds is not None:
        groups = [np.flatnonzero(s == v) for v in dict.fromkeys(s.tolist())]
        usable = [g for g in groups if len(np.unique(lx[g])) >= 2]
        out["n_seeds"] = len(usable)
        if ci == "t" and len(usable) >= 2:
            slopes = np.array([ols(lx[g], ly[g])[0] for g in usable])
            half = t_quantile_975(len(slopes) - 1) * slopes.std(ddof=1) / math.sqrt(len(slopes))
            mean = float(slopes.mean())
            out.update(slope=mean, ci_low=mean - half, ci_high=mean + half, ci_method="t across seeds")
        elif ci == "bootstrap" and len(usable) >= 2:
            lo, hi = _bootstrap_slope(lx, ly, lambda rng: np.concatenate(
                [usable[k] for k in rng.integers(0, len(usable), len(usable))]), n_boot, rng_seed)
            out.update(ci_low=float(lo), ci_high=float(hi), ci_method="bootstrap over seeds")
        else:
            out["problem"] = "fewer than two seeds with two distinct x values: no interval across seeds"
    elif ci == "t" and se is not None:
        half = t_quantile_975(len(lx) - 2) * se
        out.update(ci_low=slope - half, ci_high=slope + half, ci_method="t (least-squares standard error)")
    elif ci == "bootstrap" and len(lx) >= 3:
        lo, hi = _bootstrap_slope(lx, ly, lambda rng: rng.integers(0, len(lx), len(lx)), n_boot, rng_seed)
        out.update(ci_low=float(lo), ci_high=float(hi), ci_method="bootstrap over points")
    else:
        out["problem"] = "three points or more are needed for an interval"
    if breakpoint:
        out.update(fit_breakpoint(lx, ly))
    return out


def _bootstrap_slope(lx, ly, draw, n_boot: int, rng_seed: int) -> tuple[float, float]:
    """2.5 and 97.5 percentiles of the least-squares slope over ``n_boot`` resamples ``draw(rng)``
    (index arrays); resamples with fewer than two distinct x are skipped."""
    rng = np.random.default_rng(rng_seed)
    boots = []
    for _ in range(n_boot):
        pick = draw(rng)
        if len(np.unique(lx[pick])) >= 2:
            boots.append(ols(lx[pick], ly[pick])[0])
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return lo, hi


def _hinge_rss(lx, ly, c):
    design = np.stack([np.ones_like(lx), np.minimum(lx - c, 0), np.maximum(lx - c, 0)], 1)
    coef, *_ = np.linalg.lstsq(design, ly, rcond=None)
    resid = ly - design @ coef
    return float((resid ** 2).sum()), coef


def fit_breakpoint(lx: np.ndarray, ly: np.ndarray) -> dict:
    """The one-kink model in log-log coordinates (see the module doc); needs 3+ distinct x values."""
    xs = np.unique(lx)
    if len(xs) < 3:
        return {"break_x": None, "slope_left": None, "slope_right": None, "preferred": "line",
                "break_problem": "three distinct x values are needed for a break point"}
    n = len(lx)
    grid = np.unique(np.concatenate([xs[1:-1], np.linspace(xs[1], xs[-2], 64)]))
    best = min(((_hinge_rss(lx, ly, c), c) for c in grid), key=lambda t: t[0][0])
    (rss_b, coef), c = best
    slope, intercept, _, _ = ols(lx, ly)
    rss_l = float(((ly - intercept - slope * lx) ** 2).sum())
    tiny = 1e-300  # a perfect fit has RSS 0; keep the logarithm finite

    def bic(rss, k):
        return n * math.log(max(rss, tiny) / n) + k * math.log(n)

    bic_l, bic_b = bic(rss_l, 2), bic(rss_b, 4)
    tss = float(((ly - ly.mean()) ** 2).sum())
    return {"break_x": float(10 ** c), "slope_left": float(coef[1]), "slope_right": float(coef[2]),
            "r2_break": 1 - rss_b / tss if tss > 0 else 1.0, "bic_line": bic_l, "bic_break": bic_b,
            "preferred": "break" if bic_b < bic_l - 2 else "line"}
