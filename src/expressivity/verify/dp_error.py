"""Monte-Carlo estimate of ``d_p`` distances between two sequence functions, with 95% intervals.

``d_p(f1, f2) = (integral over [0,1]^{n x d} of ||f1(X) - f2(X)||_p^p dX)^{1/p}`` (entry-wise
p-norm; the domain has volume 1, so the integral is a mean). The mean of
``||f1 - f2||_p^p`` over ``M`` uniform samples gets a normal-approximation 95% interval,
mapped through ``x -> x^{1/p}`` (monotone), clipped at 0, where it rests on enough samples
(:data:`MIN_EFFECTIVE_SAMPLES`), and no interval otherwise. Arithmetic: float64.

Non-finite values (float64 overflow in the softened network, or target values so large that
``|f1 - f2|^p`` overflows) raise :class:`~expressivity.errors.ExpressivityError` instead of
reporting ``inf``/``nan``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from expressivity.errors import ExpressivityError

# The fewest effective samples, ``(sum v)^2 / sum v^2`` over the per-sample powers ``v``, on which the normal
# interval is given: a mean resting on a few samples (differences on a small set, or a large p, where the largest
# difference dominates) is skewed, and its normal interval covered 35% (no differing sample: [0, 0]) and 36% (p =
# 1,000) in an audit (2026-11-28). A 0/1 difference on k samples has k effective samples; Wald's interval on a
# proportion covers about 93% from 30 events on.
MIN_EFFECTIVE_SAMPLES = 30


@dataclass(frozen=True)
class DpEstimate:
    """A ``d_p`` estimate over ``samples`` inputs; ``ci`` its 95% interval, ``None`` where none is given (``note``
    says why: no sample differs, or too few carry the mean)."""

    value: float
    ci: tuple[float, float] | None
    samples: int
    method: str = "Monte Carlo, float64"
    note: str | None = None
    # per stratum of a stratified estimate (:func:`dp_stratified`): its name, measure (its share of the cube), samples
    # and the d_p restricted to it (the p-th root of its mean of ||f1 - f2||_p^p), and its share of d_p^p
    strata: tuple[dict, ...] | None = None

    def __post_init__(self) -> None:
        # Plain floats: a NumPy scalar would print as ``np.float64(...)`` in the interval.
        object.__setattr__(self, "value", float(self.value))
        if self.ci is not None:
            object.__setattr__(self, "ci", (float(self.ci[0]), float(self.ci[1])))

    def as_dict(self) -> dict:
        return {"value": self.value, "ci95": None if self.ci is None else list(self.ci), "samples": self.samples,
                "method": self.method, **({"no_interval": self.note} if self.note else {}),
                **({"strata": [dict(s) for s in self.strata]} if self.strata else {})}


def dp_from_values(diff_pow: np.ndarray, p: float, method: str = "Monte Carlo, float64",
                   term: str = "d_p") -> DpEstimate:
    """``diff_pow``: per-sample ``||f1 - f2||_p^p``; non-finite values raise :class:`ExpressivityError`."""
    bad = int(np.count_nonzero(~np.isfinite(diff_pow)))
    if bad:
        raise ExpressivityError(
            f"{term} is not finite: ||f1 - f2||_p^p overflows float64 on {bad} of {diff_pow.size} samples "
            f"(values too large for p={p:g}); rescale the target's outputs or lower --p")
    m = diff_pow.size
    with np.errstate(over="ignore", invalid="ignore"):
        return _dp_estimate(diff_pow, p, m, method, term)


def _dp_estimate(diff_pow: np.ndarray, p: float, m: int, method: str, term: str) -> DpEstimate:
    mean = float(diff_pow.mean())
    half = 1.96 * float(diff_pow.std(ddof=1)) / np.sqrt(m) if m > 1 else float("inf")
    lo, hi = max(mean - half, 0.0), mean + half
    try:
        est = DpEstimate(mean ** (1 / p), (lo ** (1 / p), hi ** (1 / p)), m, method)
    except OverflowError:
        est = None
    if est is None or not np.isfinite(est.value) or (m > 1 and not np.isfinite(est.ci[1])):
        raise ExpressivityError(f"{term} is not finite: the mean of ||f1 - f2||_p^p overflows float64 "
                                f"(values too large for p={p:g}); rescale the target's outputs or lower --p")
    return est


def pnorm_pow(A: np.ndarray, B: np.ndarray, p: float) -> np.ndarray:
    """Per-sample ``||A - B||_p^p`` for ``(samples, n, d)`` arrays (may under- or overflow for
    large ``p``; :func:`dp_between` avoids both)."""
    return np.sum(np.abs(A - B) ** p, axis=(1, 2))


def dp_between(A: np.ndarray, B: np.ndarray, p: float, method: str = "Monte Carlo, float64",
               term: str = "d_p") -> DpEstimate:
    """``d_p`` between the sampled outputs ``A`` and ``B`` (``(samples, n, d)``).

    Differences are divided by their largest magnitude ``s`` before the power and the result
    multiplied back: ``d_p = s * mean(sum (|A - B| / s)^p)^(1/p)``. Without the scaling, large
    ``p`` underflows every ``|A - B|^p < 1`` to 0 (reporting ``d_p = 0`` for a nonzero error) or
    overflows ones above 1.
    """
    diff = np.abs(np.asarray(A, dtype=np.float64) - np.asarray(B, dtype=np.float64))
    m = diff.shape[0]
    bad = int(np.count_nonzero(~np.all(np.isfinite(diff), axis=tuple(range(1, diff.ndim)))))
    if bad:
        raise ExpressivityError(f"{term} is not finite: the outputs differ by inf or nan on {bad} of {m} samples; "
                                "rescale the target's outputs")
    top = float(diff.max(initial=0.0))
    if top == 0.0:
        # no sample differs: the set where they do has measure below 1 - 0.05^(1/m) at 95%, but what they differ by
        # there is not bounded, so neither is d_p
        return DpEstimate(0.0, None, m, method, f"no interval: none of the {m} samples differs (the set where they "
                                                f"differ has measure below {1 - 0.05 ** (1 / m):.2g} at 95%, but d_p "
                                                "there is not bounded); more --samples narrow that set")
    scaled = np.sum((diff / top) ** p, axis=tuple(range(1, diff.ndim)))
    est = dp_from_values(scaled, p, method, term)
    effective = float(scaled.sum()) ** 2 / float((scaled ** 2).sum())
    with np.errstate(over="ignore"):
        value, lo, hi = est.value * top, est.ci[0] * top, est.ci[1] * top
    if not (np.isfinite(value) and np.isfinite(hi)):
        raise ExpressivityError(f"{term} is not finite: it exceeds the float64 range (largest difference {top:.3g}); "
                                "rescale the target's outputs")
    if effective < MIN_EFFECTIVE_SAMPLES:
        return DpEstimate(value, None, m, method, f"no interval: the mean rests on about {effective:.3g} of the {m} "
                                                  f"samples (fewer than {MIN_EFFECTIVE_SAMPLES}: differences on a small "
                                                  "set, or a large p), where a normal interval does not cover; more "
                                                  "--samples (or a smaller --p) give one")
    return DpEstimate(value, (lo, hi), m, method)


def dp_stratified(parts: list[tuple[str, float, np.ndarray, np.ndarray]], p: float,
                  method: str = "stratified Monte Carlo, float64", term: str = "d_p") -> DpEstimate:
    """``d_p`` over a cube split into strata of known measure: ``parts`` holds per stratum its name, its
    measure ``w`` (the measures sum to 1) and the outputs ``A``, ``B`` (``(samples, n, d)``) on samples drawn
    uniformly from that stratum. ``d_p^p = sum_h w_h mean_h``; the 95% interval is the normal one on that sum,
    ``var = sum_h w_h^2 s_h^2 / n_h``, mapped through ``x -> x^{1/p}``.

    Why: a set of measure 10^-7 where the outputs differ by 10^5 carries ``d_2 ~ 30`` and uniform samples almost
    never land on it (Yun's softened quantizer ramps: a reported 0.175 [0.160, 0.190] where d_2 was about 267, an
    audit, 2026-11-29). Sampling the small set apart, with its measure known exactly, counts it. As in
    :func:`dp_between`, differences are divided by the largest before the power; a stratum carrying 1% or more of
    the estimate or of its variance whose mean rests on fewer than :data:`MIN_EFFECTIVE_SAMPLES` effective samples
    gives no interval. The measures must be finite, >= 0 and sum to 1; a stratum of measure 0 is left out."""
    weights = [w for _, w, _, _ in parts]
    if not all(isinstance(w, (int, float)) and math.isfinite(w) and w >= 0 for w in weights) \
            or abs(sum(weights) - 1) > 1e-9:
        # a NaN measure read 0.0 and measures (1, 1) sqrt(2) times the truth (a review, 2026-11-29)
        raise ExpressivityError(f"{term}: the strata's measures must be finite, >= 0 and sum to 1, got {weights}")
    parts = [part for part in parts if part[1] > 0]   # a stratum of measure 0 adds nothing, whatever it holds
    diffs = []
    for name, w, A, B in parts:
        diff = np.abs(np.asarray(A, dtype=np.float64) - np.asarray(B, dtype=np.float64))
        bad = int(np.count_nonzero(~np.all(np.isfinite(diff), axis=tuple(range(1, diff.ndim)))))
        if bad:
            raise ExpressivityError(f"{term} is not finite: the outputs differ by inf or nan on {bad} of {diff.shape[0]} "
                                    f"samples {name}; rescale the target's outputs")
        if w > 0 and diff.shape[0] < 2:
            raise ExpressivityError(f"{term}: the stratum {name} needs 2 or more samples, got {diff.shape[0]}")
        diffs.append(diff)
    m = sum(d.shape[0] for d in diffs)
    top = max((float(d.max(initial=0.0)) for (_, w, _, _), d in zip(parts, diffs) if w > 0), default=0.0)
    if top == 0.0:
        return DpEstimate(0.0, None, m, method, f"no interval: none of the {m} samples differs (the set where they "
                                                f"differ is not bounded by them, nor is d_p there); more --samples "
                                                "narrow that set")
    total, var, strata, thin = 0.0, 0.0, [], []
    with np.errstate(over="ignore", under="ignore"):
        for (name, w, _, _), diff in zip(parts, diffs):
            v = np.sum((diff / top) ** p, axis=tuple(range(1, diff.ndim)))
            mean = float(v.mean()) if v.size else 0.0
            total += w * mean
            var += w * w * float(v.var(ddof=1)) / v.size if v.size > 1 else 0.0
            if w > 0 and mean > 0 and float(v.sum()) ** 2 / float((v ** 2).sum()) < MIN_EFFECTIVE_SAMPLES:
                thin.append((name, w * mean, w * w * float(v.var(ddof=1)) / v.size if v.size > 1 else 0.0))
            strata.append({"name": name, "measure": w, "samples": int(v.size), "dp": top * mean ** (1 / p),
                           "share": w * mean})
        for s in strata:
            s["share"] = s["share"] / total if total > 0 else 0.0
        half = 1.96 * var ** 0.5
        value, lo, hi = top * total ** (1 / p), top * max(total - half, 0.0) ** (1 / p), top * (total + half) ** (1 / p)
    if not (np.isfinite(value) and np.isfinite(hi)):
        raise ExpressivityError(f"{term} is not finite: it exceeds the float64 range (largest difference {top:.3g}); "
                                "rescale the target's outputs")
    # a thin stratum decides only where it matters: 1% or more of the estimate or of its variance (one of 25 samples
    # in float64's drift, carrying 5e-7 of d_p^p, left every build below 400 samples without an interval: a review)
    thin = [name for name, share, spread in thin if share >= 0.01 * total or spread >= 0.01 * var]
    if thin:
        return DpEstimate(value, None, m, method, f"no interval: the mean {', '.join(thin)} rests on fewer than "
                                                  f"{MIN_EFFECTIVE_SAMPLES} effective samples (differences on a small "
                                                  "set, or a large p), where a normal interval does not cover; more "
                                                  "--samples (or a smaller --p) give one", tuple(strata))
    return DpEstimate(value, (lo, hi), m, method, None, tuple(strata))
