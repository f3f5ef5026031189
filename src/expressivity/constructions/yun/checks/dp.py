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
from expressivity.verify.dp_error import DpEstimate, dp_between, dp_stratified

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
                     batch: int = 512, lam: float | None = None,
                     ramps: tuple[float, float] | None = None) -> DpDecomposition:
    """Estimate every term on the same samples of ``[0,1]^{n x d}``: uniform ones, or, with the softened
    network's ``ramps`` (``(left, drift)``, :func:`~expressivity.constructions.yun.soften.quantizer_ramps`),
    ``samples`` drawn off the quantizer ramps, ``samples // 2`` on them and ``samples // 4`` within float64's
    drift of them (each at least :data:`MIN_STRATUM`), each stratum weighted by its exact measure
    (:func:`ramp_strata`). On the ramps ``g`` is not the verified network and reaches the contextual values
    (10^5 at delta 1/16); their measure is about 10^-7, so uniform samples never met them and d_2(f, g) read
    0.175 where it was about 264 (an audit, 2026-11-29).

    ``lam`` (the softmax inverse temperature used) only goes into the overflow message. ``X``, ``gbar`` and ``g``
    of the result are the samples off the ramps (the agreement check's)."""
    from expressivity.constructions.yun.compile import f_bar  # compile imports the checks: resolve at call time
    from expressivity.targets import evaluate_target

    rng = np.random.default_rng(seed)
    params = build.params
    if soft_network is not None and ramps is not None:
        strata = ramp_strata(params, *ramps, samples, rng)
    else:
        strata = [("over the cube", 1.0, rng.random((samples, params.n, params.d)))]   # no ramps to count
    weighted = len(strata) > 1
    X = strata[0][2]
    Fs = [evaluate_target(build.target, Xs) for _, _, Xs in strata]
    Fbs = [f_bar(build, Xs) for _, _, Xs in strata]
    Gbs = [f_bar(build, Xs, distinct_only=True) for _, _, Xs in strata]

    def term(A, B, method, name):
        if not weighted:
            return dp_between(A[0], B[0], p, method, name)
        return dp_stratified([(label, w, a, b) for (label, w, _), a, b in zip(strata, A, B)], p,
                             f"{method}; stratified: {STRATIFIED}", name)

    # The target-only terms first: an overflow there is the target's, not the softened network's.
    with np.errstate(over="ignore"):
        f_fbar = term(Fs, Fbs, METHOD_F_FBAR, "d_p(f, f_bar)")
        if params.positional:   # every cube has distinct tokens: g_bar = f_bar everywhere, d_p exactly 0
            count = sum(len(Xs) for _, _, Xs in strata)
            fbar_gbar = DpEstimate(0.0, None, count, "exact: g_bar = f_bar on every cube in Theorem 3 mode (every cube "
                                                     "has distinct tokens; the identity verified on every cube)")
        else:
            fbar_gbar = term(Fbs, Gbs, METHOD_FBAR_GBAR, "d_p(f_bar, g_bar)")
    if soft_network is not None:
        Gs = []
        for label, _, Xs in strata:
            with np.errstate(over="ignore", invalid="ignore"):
                # every sample, the ramps' too: d_p is over the whole cube (its input domain leaves the ramps out of
                # the claim at an input, and refused a sample that landed on one: a fuzz, 2026-11-28, 10^6 samples)
                G = np.concatenate([forward(soft_network, Xs[i:i + batch], allow_outside=True)
                                    for i in range(0, len(Xs), batch)])
            bad = int(np.count_nonzero(~np.all(np.isfinite(G), axis=(1, 2))))
            if bad:
                at = "" if lam is None else f" at lambda={lam:g}"
                raise ExpressivityError(
                    f"the softened network's outputs are not finite on {bad} of {len(Xs)} Monte-Carlo samples "
                    f"{label}: float64 overflowed{at}; the attention scores are refused beyond float64 before this "
                    "(yun/soften.py), so the target's values, carried through the value map's rescale, are the likely "
                    "cause: divide the target by a constant, or lower --lambda")   # blamed lambda alone (an audit)
            Gs.append(G)
        with np.errstate(over="ignore"):
            gbar_g = term(Gbs, Gs, METHOD_GBAR_G, "d_p(g_bar, g)")
            total = term(Fs, Gs, METHOD_TOTAL, "d_p(f, g)")
        G = Gs[0]
    else:
        G, gbar_g = None, None
        with np.errstate(over="ignore"):
            total = term(Fs, Gbs, METHOD_TOTAL_NO_SOFT, "d_p(f, g_bar)")
    return DpDecomposition(f_fbar, fbar_gbar, gbar_g, total, p, X, Gbs[0], G)


STRATIFIED = ("the cube split into inputs off the softened quantizer's ramps, inputs whose first entry near one lies on "
              "it, and inputs whose first such entry lies within float64's drift of it, each sampled uniformly and "
              "weighted by its exact measure")


OFF_RAMPS = "off the quantizer ramps"   # the stratum where g is the verified network
RAMP = "on a quantizer ramp"            # the ramp proper, where g is between two cells' values
MIN_STRATUM = 60   # samples of a stratum near the ramps at least: twice the effective samples an interval needs


def stratum(error, name: str) -> dict | None:
    """The stratum ``name`` (:data:`OFF_RAMPS`, :data:`RAMP`, ...) of a stratified ``d_p`` estimate
    (``DpEstimate`` or ``ErrorEstimate``: ``name``, ``measure``, ``samples``, ``dp``, ``share``), ``None`` without."""
    return next((s for s in getattr(error, "strata", None) or () if s["name"] == name), None)


def ramp_strata(params, left: float, drift: float, samples: int, rng: np.random.Generator):
    """``[(name, measure, X), ...]``: ``samples`` inputs drawn uniformly off the quantizer ramps, ``max(samples //
    2, 60)`` from the inputs whose first entry near a ramp lies on the ramp proper, and ``max(samples // 4, 60)``
    from those whose first such entry lies within float64's drift of one, with each set's exact measure.

    Per entry the set near the ramps is ``[k/N - left, k/N)`` for ``k = 1..N`` (the ramp proper, width
    ``epsilon = left - drift``, just below the breakpoint, and the drift below it) and ``[k/N, k/N + drift)``
    for ``k = 0..N-1`` (the drift above a breakpoint, the breakpoint itself included): disjoint, as ``left +
    drift < delta/4`` (:mod:`~expressivity.constructions.yun.soften`), so an entry meets it with probability ``m
    = N (left + drift)``, the same set for the token-offset entries of Theorem 3 (``x + j`` for an integer ``j``
    meets a breakpoint's ramp exactly when ``x`` does). The ``n d`` entries are independent, so an input meets
    it with probability ``1 - (1 - m)^{n d}``; such an input is drawn by its first entry there (entry ``k`` with
    probability proportional to ``(1 - m)^k``; its place uniform on the set, independent of the others, so the
    ramp proper takes ``epsilon / (left + drift)`` of the measure), the entries before it off the set and those
    after it anywhere. Sampled apart because g is far from the verified network on the ramp proper and equal to
    it in most of the drift (100 samples over both put 4 on the ramps and read d_2 0.26 for 8.4). A superset of
    what the input domain refuses (it spares an entry within the drift above 0 in the first cell, which the
    first layer snaps): the strata need only a known measure."""
    N, n, d = params.N, params.n, params.d
    entries = n * d
    m = N * (left + drift)
    if not 0 <= m < 1:
        raise ExpressivityError(f"the quantizer ramps cover {m:.3g} of each entry's range: no stratum off them")
    near_share = -np.expm1(entries * np.log1p(-m))   # 1 - (1 - m)^{n d}, without cancelling for tiny m
    eps = left - drift
    ramps = (np.arange(1, N + 1) / N - eps, np.full(N, eps))
    drifts = (np.concatenate([np.arange(1, N + 1) / N - left, np.arange(N) / N]), np.full(2 * N, drift))

    def near(x):
        """Entries of ``x`` near a ramp (on one or within the drift: the union of ``ramps`` and ``drifts``)."""
        up = np.ceil(x * N) / N - x
        down = x - np.floor(x * N) / N
        return ((up > 0) & (up <= left)) | (down < drift)

    def off_ramps(shape):
        x = rng.random(shape)
        while True:
            hit = near(x)
            if not hit.any():
                return x
            x[hit] = rng.random(int(hit.sum()))

    def within(intervals, count):
        starts, widths = intervals
        pick = rng.choice(len(starts), size=count, p=widths / widths.sum())
        return np.minimum(starts[pick] + rng.random(count) * widths[pick], np.nextafter(1.0, 0.0))

    def first_near(intervals, count):
        first = np.arange(entries)
        weights = np.exp(first * np.log1p(-m))
        k = rng.choice(entries, size=count, p=weights / weights.sum())
        flat = rng.random((count, entries))
        before = first[None, :] < k[:, None]
        flat[before] = off_ramps(int(before.sum()))
        flat[np.arange(count), k] = within(intervals, count)
        return flat.reshape(count, n, d)

    strata = [(OFF_RAMPS, float(1 - near_share), off_ramps((samples, n, d)))]
    if near_share > 0:
        strata.append((RAMP, float(near_share * eps / (left + drift)),
                       first_near(ramps, max(samples // 2, MIN_STRATUM))))
    if near_share > 0 and drift > 0:
        strata.append(("within float64's drift of a quantizer ramp", float(near_share * 2 * drift / (left + drift)),
                       first_near(drifts, max(samples // 4, MIN_STRATUM))))
    return strata


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
