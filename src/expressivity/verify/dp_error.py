"""Monte-Carlo estimate of ``d_p`` errors with 95% confidence intervals.

``d_p(f1, f2) = (integral over [0,1]^{n x d} of ||f1(X) - f2(X)||_p^p dX)^{1/p}`` (entry-wise
p-norm; the domain has volume 1, so the integral is a mean). The mean of
``||f1 - f2||_p^p`` over ``M`` uniform samples gets a normal-approximation 95% interval,
mapped through ``x -> x^{1/p}`` (monotone), clipped at 0. Arithmetic: float64.

The decomposition is ``d_p(f, f_bar)``, ``d_p(f_bar, g_bar)``, ``d_p(g_bar, g)`` and the total
``d_p(f, g)``. ``g_bar`` is evaluated through the identity ``g_bar = f_bar`` on distinct-column
cubes and 0 elsewhere, which :mod:`expressivity.verify.yun_value` checks exactly; ``g`` is
the softened network run by the float64 reference evaluator. Every term of
:meth:`DpDecomposition.as_dict` carries a ``method`` string saying which of these it used.

Non-finite values (float64 overflow in the softened network, or target values so large that
``|f1 - f2|^p`` overflows) raise :class:`~expressivity.errors.ExpressivityError` instead of
reporting ``inf``/``nan``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network.reference import forward

METHOD_F_FBAR = ("Monte Carlo over uniform samples: f evaluated in float64, f_bar from its per-cube table "
                 "(f at the cube centre), float64")
METHOD_FBAR_GBAR = ("exact identity verified on every cube (g_bar = f_bar on distinct-column cubes, 0 elsewhere; "
                    "quantizer checked exactly at breakpoints), integrated by Monte Carlo, float64")
METHOD_GBAR_G = ("Monte Carlo: g_bar from the exactly verified identity, g by float64 network evaluation "
                 "of the softened network")
METHOD_TOTAL = "Monte Carlo, float64 network evaluation of the softened network g against f"
METHOD_TOTAL_NO_SOFT = ("Monte Carlo: g_bar from the exactly verified identity (no softened network), "
                        "against f evaluated in float64")


@dataclass(frozen=True)
class DpEstimate:
    value: float
    ci: tuple[float, float]
    samples: int
    method: str = "Monte Carlo, float64"

    def as_dict(self) -> dict:
        return {"value": self.value, "ci95": list(self.ci), "samples": self.samples, "method": self.method}


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
    return np.sum(np.abs(A - B) ** p, axis=(1, 2))


@dataclass(frozen=True)
class DpDecomposition:
    f_fbar: DpEstimate
    fbar_gbar: DpEstimate
    gbar_g: DpEstimate | None
    total: DpEstimate
    p: float

    def as_dict(self) -> dict:
        out = {"p": self.p, "f_fbar": self.f_fbar.as_dict(), "fbar_gbar": self.fbar_gbar.as_dict(),
               "total": self.total.as_dict(), "arithmetic": "float64"}
        out["gbar_g"] = None if self.gbar_g is None else self.gbar_g.as_dict()
        return out


def dp_decomposition(build, soft_network=None, p: float = 2.0, samples: int = 2000, seed: int = 0,
                     batch: int = 512, lam: float | None = None) -> DpDecomposition:
    """Estimate every term on the same uniform samples of ``[0,1]^{n x d}``.

    ``lam`` (the softmax inverse temperature used) only goes into the overflow message.
    """
    from expressivity.constructions.yun.compile import f_bar
    from expressivity.targets import evaluate_target

    rng = np.random.default_rng(seed)
    X = rng.random((samples, build.params.n, build.params.d))
    F = evaluate_target(build.target, X)
    Fb = f_bar(build, X)
    Gb = f_bar(build, X, distinct_only=True)
    # The target-only terms first: an overflow there is the target's, not the softened network's.
    with np.errstate(over="ignore"):
        f_fbar = dp_from_values(pnorm_pow(F, Fb, p), p, METHOD_F_FBAR, "d_p(f, f_bar)")
        fbar_gbar = dp_from_values(pnorm_pow(Fb, Gb, p), p, METHOD_FBAR_GBAR, "d_p(f_bar, g_bar)")
    if soft_network is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            G = np.concatenate([forward(soft_network, X[i:i + batch]) for i in range(0, samples, batch)])
        bad = int(np.count_nonzero(~np.all(np.isfinite(G), axis=(1, 2))))
        if bad:
            at = "" if lam is None else f" at lambda={lam:g}"
            raise ExpressivityError(
                f"the softened network's outputs are not finite on {bad} of {samples} Monte-Carlo samples: "
                f"float64 overflowed{at}; lower --lambda (or leave it automatic)")
        with np.errstate(over="ignore"):
            gbar_g = dp_from_values(pnorm_pow(Gb, G, p), p, METHOD_GBAR_G, "d_p(g_bar, g)")
            total = dp_from_values(pnorm_pow(F, G, p), p, METHOD_TOTAL, "d_p(f, g)")
    else:
        gbar_g = None
        with np.errstate(over="ignore"):
            total = dp_from_values(pnorm_pow(F, Gb, p), p, METHOD_TOTAL_NO_SOFT, "d_p(f, g_bar)")
    return DpDecomposition(f_fbar, fbar_gbar, gbar_g, total, p)
