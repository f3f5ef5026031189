"""The ``d_p`` decomposition of a Yun build: ``d_p(f, f_bar)``, ``d_p(f_bar, g_bar)``,
``d_p(g_bar, g)`` and the total ``d_p(f, g)``, all on the same uniform samples.

``g_bar`` is evaluated through the identity ``g_bar = f_bar`` on distinct-column cubes and 0
elsewhere, which :mod:`.value` checks exactly; ``g`` is the softened network run by the float64
reference evaluator. Every term of :meth:`DpDecomposition.as_dict` carries a ``method`` string
saying which of these it used.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network.reference import forward
from expressivity.verify.dp_error import DpEstimate, dp_between

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
class DpDecomposition:
    f_fbar: DpEstimate
    fbar_gbar: DpEstimate
    gbar_g: DpEstimate | None
    total: DpEstimate
    p: float
    # The samples and both networks' outputs on them, for checks that reuse them (not serialised).
    X: np.ndarray | None = field(default=None, repr=False)
    gbar: np.ndarray | None = field(default=None, repr=False)
    g: np.ndarray | None = field(default=None, repr=False)

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
    from expressivity.constructions.yun.compile import f_bar  # compile imports the checks: resolve at call time
    from expressivity.targets import evaluate_target

    rng = np.random.default_rng(seed)
    X = rng.random((samples, build.params.n, build.params.d))
    F = evaluate_target(build.target, X)
    Fb = f_bar(build, X)
    Gb = f_bar(build, X, distinct_only=True)
    # The target-only terms first: an overflow there is the target's, not the softened network's.
    with np.errstate(over="ignore"):
        f_fbar = dp_between(F, Fb, p, METHOD_F_FBAR, "d_p(f, f_bar)")
        if build.params.positional:   # every cube has distinct tokens: g_bar = f_bar everywhere, d_p exactly 0
            fbar_gbar = DpEstimate(0.0, None, samples, "exact: g_bar = f_bar on every cube in Theorem 3 mode (every cube "
                                                       "has distinct tokens; the identity verified on every cube)")
        else:
            fbar_gbar = dp_between(Fb, Gb, p, METHOD_FBAR_GBAR, "d_p(f_bar, g_bar)")
    if soft_network is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            # every sample, the ramps' too: d_p is over the whole cube (its input domain leaves the ramps out of the
            # claim at an input, and refused a sample that landed on one: a fuzz, 2026-11-28, 10^6 samples)
            G = np.concatenate([forward(soft_network, X[i:i + batch], allow_outside=True)
                                for i in range(0, samples, batch)])
        bad = int(np.count_nonzero(~np.all(np.isfinite(G), axis=(1, 2))))
        if bad:
            at = "" if lam is None else f" at lambda={lam:g}"
            raise ExpressivityError(
                f"the softened network's outputs are not finite on {bad} of {samples} Monte-Carlo samples: "
                f"float64 overflowed{at}; lower --lambda (or leave it automatic)")
        with np.errstate(over="ignore"):
            gbar_g = dp_between(Gb, G, p, METHOD_GBAR_G, "d_p(g_bar, g)")
            total = dp_between(F, G, p, METHOD_TOTAL, "d_p(f, g)")
    else:
        G, gbar_g = None, None
        with np.errstate(over="ignore"):
            total = dp_between(F, Gb, p, METHOD_TOTAL_NO_SOFT, "d_p(f, g_bar)")
    return DpDecomposition(f_fbar, fbar_gbar, gbar_g, total, p, X, Gb, G)


def on_quantizer_ramps(params, X: np.ndarray, ramp: float, drift: float = 0.0) -> np.ndarray:
    """``(samples,)`` mask of inputs with an entry inside a softened quantizer ramp, or within ``drift``
    above a breakpoint (float64 can move such an entry below it, onto the ramp).

    The ramps lie just left of every breakpoint ``k/N`` (positional offset ``j`` added to token
    ``j`` in Theorem 3 mode); there the softened quantizer is between two grid values on purpose.
    ``ramp`` is their width plus the drift (:func:`~expressivity.constructions.yun.soften.quantizer_ramps`).
    """
    t = X + (np.arange(params.n)[None, :, None] if params.positional else 0.0)
    gap = np.ceil(t * params.N) / params.N - t  # distance to the next breakpoint on the right
    above = t - np.floor(t * params.N) / params.N   # distance to the breakpoint on the left
    return np.any(((gap > 0) & (gap < ramp)) | ((above > 0) & (above < drift)), axis=(1, 2))


def softened_on_grid(build, soft_network, bound: float, limit: int = 4096, seed: int = 0):
    """Check that the softened network equals the verified ``g_bar`` within ``bound`` on grid-point inputs
    (every entry ``k/N``; every such input up to ``limit``, else ``limit`` drawn at random): the inputs a
    user types first, which sit on the quantizer's breakpoints, where the Monte-Carlo samples never land
    (an audit, 2026-11-28: 493,332 for a target in [0, 1] at the input (0, 1/2) passed every check).
    ``None`` where ``delta`` is not a power of two: its grid points are not float64 numbers, and the one
    nearest each lies within float64's reach of a ramp, where the input domain keeps no claim."""
    from expressivity.constructions.report import Check
    from expressivity.constructions.yun.compile import f_bar  # compile imports the checks: resolve at call time

    p = build.params
    if p.N & (p.N - 1):
        return None
    t0 = time.perf_counter()
    entries = p.n * p.d
    total = p.N ** entries
    if total <= limit:
        codes = np.arange(total)
        how = f"all {total} grid-point inputs"
    else:
        codes = np.random.default_rng(seed).integers(0, total, limit, dtype=np.int64) if total < 2 ** 62 else None
        how = f"{limit} of {total:.3g} grid-point inputs, drawn at random (seed {seed})"
    if codes is None:
        X = np.random.default_rng(seed).integers(0, p.N, (limit, p.n, p.d)) / p.N
    else:
        X = np.stack([(codes // p.N ** e) % p.N for e in range(entries)], axis=1).reshape(-1, p.n, p.d) / p.N
    with np.errstate(over="ignore", invalid="ignore"):
        G = np.concatenate([forward(soft_network, X[i:i + 256], allow_outside=True) for i in range(0, len(X), 256)])
    Gb = f_bar(build, X, distinct_only=True)
    dev = np.max(np.abs(G - Gb), axis=(1, 2))
    dev = np.where(np.isfinite(dev), dev, np.inf)
    return Check("softened g equals the verified g_bar on grid-point inputs (entries k/N)", points=len(X),
                 failures=int(np.count_nonzero(dev > bound)), arithmetic="float64 (reference pass)",
                 seconds=time.perf_counter() - t0, details={"bound": bound, "max_deviation": float(dev.max()),
                                                            "inputs": how})


def softened_agreement(decomposition: DpDecomposition, params, ramp: float, bound: float, drift: float = 0.0):
    """Check that the softened network ``g`` equals the exactly verified modified network
    ``g_bar`` within ``bound`` on every Monte-Carlo sample off the quantizer ramps.

    ``bound`` is the proven softmax leakage plus the estimated float64 rounding; a sample beyond
    it means the softened network does not carry the verified one (float64 or softening failed).
    """
    from expressivity.constructions.report import Check

    t0 = time.perf_counter()
    off = ~on_quantizer_ramps(params, decomposition.X, ramp, drift)
    dev = np.max(np.abs(decomposition.g - decomposition.gbar), axis=(1, 2))[off]
    worst = float(dev.max()) if dev.size else 0.0
    return Check("softened g equals the verified g_bar off the quantizer ramps", points=int(off.sum()),
                 failures=int(np.count_nonzero(dev > bound)), arithmetic="float64 (reference pass)",
                 seconds=time.perf_counter() - t0,
                 details={"bound": bound, "max_deviation": worst, "samples_on_ramps": int((~off).sum())})
