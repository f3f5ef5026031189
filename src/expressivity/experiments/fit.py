"""Rate fits: ``y ≈ A x^b`` as a straight line in log10-log10 coordinates, per group, with a 95%
interval for the exponent ``b`` (the rate), and an optional break-point (threshold) model.

With seeds, ``b`` is the mean of the seeds' own least-squares slopes (each seed with two distinct
``x`` or more), and its interval Student-t across those slopes (``ci="t"``) or a percentile
bootstrap of their mean, resampling seeds (``ci="bootstrap"``); without seeds, ``b`` is the
least-squares slope of all points, its interval from the least-squares standard error (t with
``n - 2`` degrees of freedom; it assumes equal noise at every point, and covered 74% of tables of 8 points
whose two ends were 40 times noisier, 93% with noise growing along x, simulated) or a bootstrap over points.
``A`` (``prefactor``, with its log10 ``intercept``) is the least-squares prefactor of all points given that
``b``, and ``R²`` that curve's on all points, so ``A x^b`` is one fitted curve whatever ``ci``.

A percentile bootstrap runs narrow on few units: simulated coverage of a nominal 95% interval of a
mean of normal per-seed slopes is 52% with 2 seeds, 83% with 5, 91% with 10, 94% with 20, 93-95% with 30
(1,000 data sets each, 2,000 resamples: 94.7% and, an audit's, 93.2%; a review's 20,000: 93.35%; from theory
about 93.6%, P(|T_29| < 1.96 sqrt(29/30)): a percentile interval of a mean is roughly the normal one with the
1/n variance, short of 95% at every size). Over seeds it is therefore the expanded percentile interval
(:func:`expanded_percentiles`: 95.8% of 1,000 tables of 30 seeds, 94.3% of 40), and ``ci="bootstrap"`` gives an
interval from
:data:`MIN_BOOTSTRAP_UNITS` seeds (or points) on, and below that none, with a ``problem`` naming
``ci="t"``. Non-positive ``x`` or ``y`` cannot be logged: they are dropped and counted.

Break-point model: a continuous line with one kink at ``log10 x = c``, slopes ``slope_left``
and ``slope_right`` (``c`` by grid search, least squares for the rest); ``preferred`` is
``"break"`` when its BIC beats the straight line's by more than 2 **and** a gap that large is rare
for a straight line: ``break_p``, the share of :data:`NULL_DRAWS` straight lines with Gaussian
noise (the fitted line's, from a fixed seed) whose BIC gap is at least as large, is at most 0.05.
The gap alone is not calibrated: ``c`` is searched, so the hinge bends to noise, and a fixed
"BIC better by 2" preferred a break on 33% of straight lines of 6 points (20% at 8, 4% at 18); with
the null draws, about 5% at every size (the gap depends only on the ratio of the residual sums,
so Gaussian noise of any scale around any line gives the same null). That null is one of **equal** noise
at every point: where the noise grows along ``x`` (a loss near its floor), straight lines of 8 points
"broke" 9-12% of the time (noise growing 4-20x, a statistics audit, 2026-11-29) and 30% (growing 20x
geometrically along log x; a wild bootstrap of the residuals tried then kept 14% there and cost power, so it
was not adopted). The hinge has four
parameters and fits any four points exactly, so it is compared from :data:`MIN_BREAK_POINTS`
points and four distinct ``x`` on; below, ``preferred`` is ``None``.
"""

from __future__ import annotations

import math

import numpy as np

from expressivity.statistics import t_quantile_975

CI_METHODS = ("t", "bootstrap")
MIN_BOOTSTRAP_UNITS = 30   # seeds (or points) from which the percentile bootstrap covers about 95% (module notes)
MIN_BREAK_POINTS = 6       # two residual degrees of freedom left to the four-parameter hinge
NULL_DRAWS = 999           # straight lines with noise that calibrate the break model's BIC gap
BREAK_LEVEL = 0.05         # a break is preferred when a straight line gives its gap this rarely or less


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
    slope, _, _, se = ols(lx, ly)
    if seeds is not None:
        by_seed: dict = {}   # one pass (a comparison of every point with every seed took 30 s at 32,000 seeds)
        for i, v in enumerate(s.tolist()):
            if not (isinstance(v, float) and math.isnan(v)):   # a NaN seed is no seed (it equals nothing)
                by_seed.setdefault(v, []).append(i)
        groups = [np.array(g) for g in by_seed.values()]
        slopes = np.array([ols(lx[g], ly[g])[0] for g in groups if len(np.unique(lx[g])) >= 2])
        out["n_seeds"] = len(slopes)
        if len(slopes):
            slope = float(slopes.mean())
        out.update(_seed_interval(slopes, ci, n_boot, rng_seed))
    else:
        out.update(_point_interval(lx, ly, slope, se, ci, n_boot, rng_seed))
    intercept = float(ly.mean() - slope * lx.mean())   # least squares given the slope
    tss = float(((ly - ly.mean()) ** 2).sum())
    r2 = 1.0 - float(((ly - intercept - slope * lx) ** 2).sum()) / tss if tss > 0 else 1.0
    # intercept is log10 of the prefactor; 10^intercept beyond float64 is reported as None
    prefactor = 10.0 ** intercept if abs(intercept) < 308 else None
    out.update(slope=slope, intercept=intercept, prefactor=prefactor, r2=r2)
    if breakpoint:
        out.update(fit_breakpoint(lx, ly))
    return out


def _seed_interval(slopes: np.ndarray, ci: str, n_boot: int, rng_seed: int) -> dict:
    """The 95% interval of the mean of the seeds' ``slopes`` (see the module notes), or a ``problem``."""
    if len(slopes) < 2:
        return {"problem": "fewer than two seeds with two distinct x values: no interval across seeds"}
    if ci == "t":
        half = t_quantile_975(len(slopes) - 1) * slopes.std(ddof=1) / math.sqrt(len(slopes))
        if _rounding_width(half, float(slopes.mean())):
            return {"problem": f"the seeds' slopes agree to rounding (interval half-width {half:.2g}): no interval; "
                               "the points lie on a power law (a deterministic quantity?)"}
        return {"ci_low": float(slopes.mean() - half), "ci_high": float(slopes.mean() + half),
                "ci_method": "t across seeds"}
    if len(slopes) < MIN_BOOTSTRAP_UNITS:
        return {"problem": f"a percentile bootstrap over {len(slopes)} seeds covers well under 95% (it needs "
                           f"{MIN_BOOTSTRAP_UNITS} or more): no interval; use --ci t"}
    rng = np.random.default_rng(rng_seed)
    means = slopes[rng.integers(0, len(slopes), (n_boot, len(slopes)))].mean(axis=1)
    lo, hi = np.percentile(means, expanded_percentiles(len(slopes), len(slopes) - 1))
    if _rounding_width((hi - lo) / 2, float(slopes.mean())):   # it printed [-2.0, -2.0] (an audit, 2026-11-29)
        return {"problem": f"the seeds' slopes agree to rounding (bootstrap interval width {hi - lo:.2g}): no "
                           "interval; the points lie on a power law (a deterministic quantity?)"}
    return {"ci_low": float(lo), "ci_high": float(hi), "ci_method": "bootstrap over seeds (expanded percentile)"}


def expanded_percentiles(n: int, df: int) -> list[float]:
    """The percentiles (in %) of Hesterberg's expanded percentile interval ("What teachers should know about the
    bootstrap", 2015): the plain 2.5 and 97.5 cover short of 95% because a bootstrap of a mean has the 1/n variance
    and normal tails (93.35% +- 0.18% over 20,000 tables of 30 seeds: a review, 2026-11-29); taking them at
    z = sqrt(n / df) t_{0.975, df} instead widens the interval to the t interval's size and keeps its skew.
    ``df``: n - 1 for a mean of n seeds, n - 2 for a slope through n points (the pairs bootstrap over points
    covered 92.6% +- 0.5% of 2,500 tables of 30 log-uniform points with the plain percentiles, an audit,
    2026-11-29, where an earlier design had read 96% of 600; expanded: 94.0% of 1,500 tables of 30 points and
    94.3% of 40, x log-uniform in [2, 1000], noise 0.1 in log10 y, 1,000 resamples)."""
    z = math.sqrt(n / df) * t_quantile_975(df)
    tail = 0.5 * math.erfc(z / math.sqrt(2))   # Phi(-z)
    return [100 * tail, 100 * (1 - tail)]


def _rounding_width(half: float, slope: float) -> bool:
    """An interval as narrow as float64's rounding of the logs (1e-9 of the slope's size, far above it, far below
    any sampling error): an exact power law, whose "95% interval" printed as [-2.000000000000001,
    -1.9999999999999982] or with both ends equal (an audit, 2026-11-28); the convention of
    :mod:`expressivity.statistics` (a zero-width interval states no uncertainty) gives none."""
    return not half > 1e-9 * (1 + abs(slope))


def _point_interval(lx, ly, slope: float, se: float | None, ci: str, n_boot: int, rng_seed: int) -> dict:
    """The 95% interval of the least-squares ``slope`` of all points, or a ``problem``."""
    if ci == "t":
        if se is None:
            return {"problem": "three points or more are needed for an interval"}
        half = t_quantile_975(len(lx) - 2) * se
        if _rounding_width(half, slope):
            return {"problem": f"the points lie on a power law to rounding (interval half-width {half:.2g}): no "
                               "interval (a deterministic quantity?)"}
        # the standard error assumes equal noise at every point: with noisier ends such an interval covered 74%
        # (an audit, 2026-11-29); the method says so, and seeds (a t across their slopes) need no such assumption
        return {"ci_low": slope - half, "ci_high": slope + half,
                "ci_method": "t (least-squares standard error; assumes equal noise at every point)"}
    if len(lx) < MIN_BOOTSTRAP_UNITS:
        return {"problem": f"a percentile bootstrap over {len(lx)} points covers well under 95% (it needs "
                           f"{MIN_BOOTSTRAP_UNITS} or more): no interval; use --ci t"}
    lo, hi = _bootstrap_slope(lx, ly, lambda rng: rng.integers(0, len(lx), len(lx)), n_boot, rng_seed,
                              expanded_percentiles(len(lx), len(lx) - 2))
    if _rounding_width((hi - lo) / 2, slope):
        return {"problem": f"the points lie on a power law to rounding (bootstrap interval width {hi - lo:.2g}): no "
                           "interval (a deterministic quantity?)"}
    return {"ci_low": float(lo), "ci_high": float(hi), "ci_method": "bootstrap over points (expanded percentile)"}


def _bootstrap_slope(lx, ly, draw, n_boot: int, rng_seed: int, percentiles=(2.5, 97.5)) -> tuple[float, float]:
    """The ``percentiles`` of the least-squares slope over ``n_boot`` resamples ``draw(rng)``
    (index arrays); resamples with fewer than two distinct x are skipped."""
    rng = np.random.default_rng(rng_seed)
    boots = []
    for _ in range(n_boot):
        pick = draw(rng)
        if len(np.unique(lx[pick])) >= 2:
            boots.append(ols(lx[pick], ly[pick])[0])
    lo, hi = np.percentile(boots, list(percentiles))
    return lo, hi


def _hinge_rss(lx, ly, c):
    design = np.stack([np.ones_like(lx), np.minimum(lx - c, 0), np.maximum(lx - c, 0)], 1)
    coef, *_ = np.linalg.lstsq(design, ly, rcond=None)
    resid = ly - design @ coef
    return float((resid ** 2).sum()), coef


def fit_breakpoint(lx: np.ndarray, ly: np.ndarray) -> dict:
    """The one-kink model in log-log coordinates (see the module doc)."""
    xs = np.unique(lx)
    n = len(lx)
    if n < MIN_BREAK_POINTS or len(xs) < 4:
        return {"break_x": None, "slope_left": None, "slope_right": None, "preferred": None,
                "break_problem": f"a break point is compared from {MIN_BREAK_POINTS} points and four distinct x "
                                 f"values on (its four parameters fit fewer exactly); here {n} and {len(xs)}"}
    grid = np.unique(np.concatenate([xs[1:-1], np.linspace(xs[1], xs[-2], 64)]))
    best = min(((_hinge_rss(lx, ly, c), c) for c in grid), key=lambda t: t[0][0])
    (rss_b, coef), c = best
    slope, intercept, _, _ = ols(lx, ly)
    rss_l = float(((ly - intercept - slope * lx) ** 2).sum())
    bic_l, bic_b = _bic(rss_l, 2, n), _bic(rss_b, 4, n)
    gap = bic_l - bic_b
    if rss_l <= n * (1e-10 * (1 + float(np.max(np.abs(ly))))) ** 2:
        gap = 0.0   # the line fits to round-off: the two sums compared are rounding (an exact power law "broke")
    null = _null_gaps(lx, grid, np.random.default_rng(0).standard_normal((n, NULL_DRAWS))) if gap > 2 else []
    p = (1 + int(np.sum(null >= gap))) / (1 + len(null)) if gap > 2 else 1.0
    tss = float(((ly - ly.mean()) ** 2).sum())
    return {"break_x": float(10 ** c), "slope_left": float(coef[1]), "slope_right": float(coef[2]),
            "r2_break": 1 - rss_b / tss if tss > 0 else 1.0, "bic_line": bic_l, "bic_break": bic_b,
            "break_p": p, "preferred": "break" if gap > 2 and p <= BREAK_LEVEL else "line"}


def _bic(rss: float, k: int, n: int) -> float:
    return n * math.log(max(rss, 1e-300) / n) + k * math.log(n)   # a perfect fit has RSS 0: keep the log finite


def _null_gaps(lx: np.ndarray, grid: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """The line's BIC minus the best hinge's for every column of ``Y`` ``(n, draws)`` (straight-line
    noise), all break points ``grid`` at once: least squares by each design's pseudo-inverse."""
    n = len(lx)
    hinge = np.stack([np.broadcast_to(np.ones_like(lx), (len(grid), n)), np.minimum(lx[None] - grid[:, None], 0),
                      np.maximum(lx[None] - grid[:, None], 0)], axis=2)            # (grid, n, 3)
    fitted = hinge @ (np.linalg.pinv(hinge) @ Y)                                    # (grid, n, draws)
    rss_b = ((Y[None] - fitted) ** 2).sum(axis=1).min(axis=0)
    line = np.stack([np.ones_like(lx), lx], axis=1)
    rss_l = ((Y - line @ (np.linalg.pinv(line) @ Y)) ** 2).sum(axis=0)
    return np.array([_bic(a, 2, n) - _bic(b, 4, n) for a, b in zip(rss_l, rss_b)])
