"""Monte-Carlo estimate of ``d_p`` errors with 95% confidence intervals.

``d_p(f1, f2) = (integral over [0,1]^{n x d} of ||f1(X) - f2(X)||_p^p dX)^{1/p}`` (entry-wise
p-norm; the domain has volume 1, so the integral is a mean). The mean of
``||f1 - f2||_p^p`` over ``M`` uniform samples gets a normal-approximation 95% interval,
mapped through ``x -> x^{1/p}`` (monotone), clipped at 0. Arithmetic: float64.

The decomposition is ``d_p(f, f_bar)``, ``d_p(f_bar, g_bar)``, ``d_p(g_bar, g)`` and the total
``d_p(f, g)``. ``g_bar`` is evaluated through the identity ``g_bar = f_bar`` on distinct-column
cubes and 0 elsewhere, which :mod:`expressivity.verify.yun_value` checks exactly; ``g`` is
the softened network run by the float64 reference evaluator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from expressivity.network.reference import forward


@dataclass(frozen=True)
class DpEstimate:
    value: float
    ci: tuple[float, float]
    samples: int

    def as_dict(self) -> dict:
        return {"value": self.value, "ci95": list(self.ci), "samples": self.samples}


def dp_from_values(diff_pow: np.ndarray, p: float) -> DpEstimate:
    """``diff_pow``: per-sample ``||f1 - f2||_p^p``."""
    m = diff_pow.size
    mean = float(diff_pow.mean())
    half = 1.96 * float(diff_pow.std(ddof=1)) / np.sqrt(m) if m > 1 else float("inf")
    lo, hi = max(mean - half, 0.0), mean + half
    return DpEstimate(mean ** (1 / p), (lo ** (1 / p), hi ** (1 / p)), m)


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
                     batch: int = 512) -> DpDecomposition:
    """Estimate every term on the same uniform samples of ``[0,1]^{n x d}``."""
    from expressivity.constructions.yun.compile import f_bar
    from expressivity.targets import evaluate_target

    rng = np.random.default_rng(seed)
    X = rng.random((samples, build.params.n, build.params.d))
    F = evaluate_target(build.target, X)
    Fb = f_bar(build, X)
    Gb = f_bar(build, X, distinct_only=True)
    if soft_network is not None:
        G = np.concatenate([forward(soft_network, X[i:i + batch]) for i in range(0, samples, batch)])
        gbar_g = dp_from_values(pnorm_pow(Gb, G, p), p)
        total = dp_from_values(pnorm_pow(F, G, p), p)
    else:
        gbar_g = None
        total = dp_from_values(pnorm_pow(F, Gb, p), p)
    return DpDecomposition(dp_from_values(pnorm_pow(F, Fb, p), p), dp_from_values(pnorm_pow(Fb, Gb, p), p),
                           gbar_g, total, p)
