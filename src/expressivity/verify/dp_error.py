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

    def __post_init__(self) -> None:
        # Plain floats: a NumPy scalar would print as ``np.float64(...)`` in the interval.
        object.__setattr__(self, "value", float(self.value))
        if self.ci is not None:
            object.__setattr__(self, "ci", (float(self.ci[0]), float(self.ci[1])))

    def as_dict(self) -> dict:
        return {"value": self.value, "ci95": None if self.ci is None else list(self.ci), "samples": self.samples,
                "method": self.method, **({"no_interval": self.note} if self.note else {})}


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
