"""Step 3 (Lemma 9): hardmax -> softmax(lambda), piecewise-linear -> ReLU(epsilon), in float64.

Softmax: every attention layer gets ``inverse_temperature = lambda``. On grid inputs the
score gap between the selected key and any other is at least ``gamma = delta^2/2`` (query
``>= delta/2`` away from 0, distinct keys ``>= delta`` apart), so a head's error is at most
``scale * (n-1) * exp(-lambda*gamma) * V`` with ``V`` the key range (spec §5). ``lambda`` is
chosen to make the sum over all attention layers at most ``1e-6 delta``, far inside the
``delta/2`` window margins, because that leakage reaches the output unchanged.

ReLU: a piecewise-linear ``phi`` with a constant piece ``m`` is rewritten around that piece (a
piece whose constant is 0 when there is one: inputs that a layer leaves alone sit there, and on
that piece no ReLU unit is active, so they pass with no rounding at all):
each breakpoint to the right adds ``jump*H(t-c) + (slope change)*ReLU(t-c)``, each to the left
the mirror image with ``ReLU(c-t)``; the step ``H`` is a ramp of width ``epsilon`` just left
of the breakpoint. Two ReLUs per breakpoint, so width 4 per original unit (``T^{2,1,4}``).
``tilde phi = phi`` outside the ramps.

float64 limits (spec §9, plus the value map's rounding, measured and derived here). Two things
must hold, and a size that breaks either is refused before building, with a smaller size that
fits named in the message (found with the same predicate, so the suggestion builds):

* attention scores, products of contextual values, stay exact: ``(2N t_r)^2 < 2^53``;
* the value map's rounding stays below ``delta/8`` per output entry (well under the
  construction's own quantization error). At a column's firing layer the pre-activation
  ``u.Z - v`` of two numbers of size ``t_r`` is rounded (exactly representable, so no rounding,
  when ``delta`` is a power of two), and the unit's coefficient ``(sigma A - Z)/epsilon ~
  t_r/epsilon`` amplifies it: about ``6 t_r^2 / epsilon * 2^-53``. Value layers come in
  decreasing ``v`` and activations are expanded around their zero piece, so every other layer
  leaves a column untouched in float64 too and the error does not accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import ceil, exp, frexp, ldexp, log

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.quantize import grid_activation, softened_domain
from expressivity.errors import ExpressivityError
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, PiecewiseLinear, ReLU
from expressivity.network.network import Network
from expressivity.network.numbers import round_down
from expressivity.network.lengths import ValidLengths
from expressivity.network.sequence_rules import OffRamps

FLOAT64_EXACT = 2 ** 53


@dataclass(frozen=True)
class SoftenConfig:
    """``lam`` / ``epsilon`` override the automatic choices; ``epsilon`` is the quantizer ramp,
    ``epsilon_post`` the ramp of the later (lattice-input) layers. The quantizer's ramp is rounded down to a
    power of two (:func:`dyadic_floor`), so that grid-point inputs pass the quantizer exactly in float64."""

    lam: float | None = None
    epsilon: float | None = None
    epsilon_post: float | None = None
    quantizer_measure: float = 1e-6  # target measure of inputs hit by quantizer ramps


@dataclass(frozen=True)
class SoftenReport:
    lam: float
    epsilon: float
    epsilon_post: float
    margins: dict
    dtype: str

    def as_dict(self) -> dict:
        return {"lambda": self.lam, "epsilon": self.epsilon, "epsilon_post": self.epsilon_post,
                "margins": self.margins, "dtype": self.dtype}


def value_map_rounding(p: YunParams, value_scale=None, dyadic: bool | None = None) -> float:
    """Estimated float64 error per output entry of the softened value map (see the module notes).

    ``value_scale`` bounds ``|sigma A - Z|`` (default ``t_r``, which dominates it); the softened
    ramp width is ``delta/4``. ``dyadic`` (default: whether ``delta`` is a power of two) says
    whether the firing layer's pre-activation is exact.
    """
    t_r = float(p.t_r)
    scale = t_r if value_scale is None else float(value_scale)
    dyadic = p.N & (p.N - 1) == 0 if dyadic is None else dyadic
    pre_rounding = 0.0 if dyadic else 3 * t_r * 2.0 ** -53  # absolute error of u.Z - v at the firing layer
    return 2 * pre_rounding * scale * 4 * p.N + 8 * scale * 2.0 ** -53


def dyadic_floor(x: float) -> float:
    """The largest power of two at most ``x > 0`` (exact: ``math.frexp``)."""
    mantissa, exponent = frexp(x)
    return ldexp(0.5, exponent) if mantissa != 0.5 else x


# Below this the ramp slopes (jump / epsilon) overflow float64.
MIN_EPSILON = 1e-300


def check_epsilon(p: YunParams, epsilon: float | None) -> None:
    """Refuse a quantizer ramp width that float64 or the construction cannot use.

    Ramps sit just left of the quantizer breakpoints, ``delta`` apart; at ``epsilon >= delta/4``
    they cover a quarter or more of every cell, the inputs on them leave the grid, and the
    softened network no longer approximates the verified one anywhere near its bound. Below
    :func:`smallest_epsilon` the ramps' units are so steep that float64's drift covers the cells.
    """
    if epsilon is None:
        return
    low = smallest_epsilon(p)
    if low is None:
        raise ExpressivityError(f"no --epsilon keeps float64's drift within delta/4 at {p.describe()}; leave --epsilon "
                                "out for the automatic width")
    if not (epsilon >= low and epsilon < float(p.delta) / 4):  # also refuses NaN
        # the range once read [1e-300, ...) though the drift refused anything below ~1e-13 (the seventeenth audit)
        raise ExpressivityError(
            f"--epsilon {epsilon:g} is outside [{low:g}, delta/4 = {float(p.delta) / 4:g}) for delta=1/{p.N}: "
            "narrower ramps make the quantizer's units so steep that float64 moves entries across the cells, wider "
            "ones cover the cells; leave --epsilon out for the automatic width")


def smallest_epsilon(p: YunParams) -> float | None:
    """The narrowest quantizer ramp (a power of two, as the ramps are rounded to one) whose float64
    drift (:func:`quantizer_ramps`) stays within ``delta/4``; ``None`` where none does. The drift
    grows as the ramp narrows (the units' coefficients are about ``delta/epsilon``), so the scan from
    ``delta/8`` down stops at the first width that fails (some 40 widths: a millisecond)."""
    quarter = float(p.delta) / 4
    eps = dyadic_floor(quarter)
    eps = eps / 2 if eps == quarter else eps
    low = None
    while eps >= MIN_EPSILON:
        left, right = quantizer_ramps(p, eps)
        if not left + right < quarter:   # NaN too
            break
        low, eps = eps, eps / 2
    return low


def float64_limit(p: YunParams) -> None:
    """Raise with a reason and a smaller size to try when float64 cannot carry ``p``."""
    if _fits(p):
        return
    hint = _fitting_size(p)
    if not _scores_exact(p):
        raise ExpressivityError(
            f"float64 cannot carry {p.describe()}: contextual values reach t_r = {_approx(p.t_r)} "
            f"({_approx(p.t_r * 2 * p.N)} half-delta units) and their squares (attention scores) exceed 2^53, "
            f"so rounding creates false ties; {hint}")
    raise ExpressivityError(
        f"float64 cannot carry {p.describe()}: the softened value map would round by about "
        f"{value_map_rounding(p):.2g} per output entry (t_r = {_approx(p.t_r)}, delta not a power of two), above "
        f"delta/8 = {1 / (8 * p.N):.2g}; {hint}")


def _approx(x) -> str:
    try:
        return f"{float(x):.3g}"
    except OverflowError:
        from expressivity.verify.size import fmt_size

        return fmt_size(x)


def _scores_exact(p: YunParams) -> bool:
    # Spec §9: scores are products of contextual values; they must stay exact in float64.
    return (p.t_r * 2 * p.N) ** 2 < FLOAT64_EXACT


def _fits(p: YunParams) -> bool:
    return _scores_exact(p) and value_map_rounding(p) <= 1 / (8 * p.N)


def _fitting_size(p: YunParams) -> str:
    if p.positional and p.shift == "paper":
        return "try a smaller n or a larger delta"
    # Both limits tighten as N grows, except that powers of two round nothing in the value map:
    # bisect over all N for the general limit, then take the largest power of two if it is larger.
    general = _largest(2, p.N - 1, lambda N: _scores_exact(replace(p, N=N)) and _general_rounding_fits(replace(p, N=N)))
    dyadic = next((2 ** k for k in range(p.N.bit_length() - 1, 0, -1)
                   if 2 ** k < p.N and _fits(replace(p, N=2 ** k))), None)
    N = max((v for v in (general, dyadic) if v is not None), default=None)
    if N is not None:
        return f"try --delta 1/{N}"
    n = _largest(2, p.n - 1, lambda n: _scores_exact(replace(p, n=n)) and _general_rounding_fits(replace(p, n=n)))
    if n is not None:
        return f"try --n {n}"
    return "try a smaller n and a larger delta"


def _general_rounding_fits(p: YunParams) -> bool:
    """The value-map limit as if ``delta`` were not a power of two (monotone in N and n)."""
    return value_map_rounding(p, dyadic=False) <= 1 / (8 * p.N)


def _largest(lo: int, hi: int, ok) -> int | None:
    """Largest ``k`` in ``[lo, hi]`` with ``ok(k)``, for ``ok`` true up to some point then false."""
    if hi < lo or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def choose_lambda(p: YunParams, network: Network) -> tuple[float, dict]:
    attn = [layer for layer in network.layers if isinstance(layer, AttentionLayer)]
    gamma = float(p.delta) ** 2 / 2
    scale = max(abs(float(h.W_O[0, 0])) for layer in attn for h in layer.heads)
    V = 2 * float(p.t_r)
    # Softmax leakage passes straight into the output (value layers add A - Z to the actual Z),
    # so aim far below the delta/2 window margin: 1e-6 delta summed over all attention layers.
    budget = float(p.delta) * 1e-6 / len(attn)
    lam = log(scale * (p.n - 1) * V / budget) / gamma
    return lam, {"score_gap": gamma, "key_range": V, "head_scale": scale, "per_layer_error_bound":
                 scale * (p.n - 1) * V * exp(-lam * gamma), "attention_layers": len(attn)}


def check_leakage(p: YunParams, lam: float, margins: dict) -> None:
    """Refuse a ``lambda`` whose summed softmax leakage bound reaches ``delta/8``, a quarter of the
    ``delta/2`` lattice margin. The bound is first order: leakage passes through the later layers
    unchanged only while every perturbed lattice value stays far from the next window and ramp; far
    above that margin the "bound" (645,121 at lambda 1 for n = 2, d = 1, delta = 1/4) says nothing
    and a check against it cannot fail (deviations of 619 passed it)."""
    limit = float(p.delta) / 8
    if margins["attention_leakage_bound"] <= limit:
        return
    smallest = log(margins["attention_layers"] * margins["head_scale"] * (p.n - 1) * margins["key_range"] / limit) \
        / margins["score_gap"]
    raise ExpressivityError(
        f"lambda {lam:g} leaks up to {margins['attention_leakage_bound']:.3g} through the softmax heads, beyond "
        f"delta/8 = {limit:g}, where the softened network's bound holds; give a lambda of at least "
        f"{ceil(smallest * 10) / 10:g} (or leave it automatic)")   # rounded up to 0.1: it holds, 0.1 less does not


# Scores up to this (times lambda) stay finite with room: 2^1000 ~ 1.07e301, 2^24 below float64's largest.
SCORE_LIMIT = 2.0 ** 1000


def check_score_range(p: YunParams, lam: float, network: Network) -> None:
    """Refuse a ``lambda`` whose attention scores ``lambda (id_j + b_Q) id_k`` can overflow float64. Every
    contextual id is at most ``max(|t_l|, |t_r|, |out value|)`` in size (:mod:`~.grid`), so a score is at most
    ``lambda (T + max |b_Q|) T``. A user's lambda of 8.98e303 overflowed only for the top contextual class
    (1.3% of the domain turned NaN), which the sampled checks missed, and the build said all checks passed (a
    fresh audit, 2026-11-29)."""
    ids = float(max(abs(p.t_l), abs(p.t_r), abs(p.out_value)))
    b_q = max((float(np.max(np.abs(np.asarray(h.b_Q, dtype=float)))) for layer in network.layers
               if isinstance(layer, AttentionLayer) for h in layer.heads if h.b_Q is not None), default=0.0)
    largest = (ids + b_q) * ids
    if lam * largest > SCORE_LIMIT:
        raise ExpressivityError(
            f"lambda {lam:g} can overflow float64 in the attention scores, which reach at most lambda x "
            f"{largest:.3g}; give a lambda of at most {round_down(SCORE_LIMIT / largest, 3):.3g} (or leave it "
            "automatic)")


def relu_expand(phi: PiecewiseLinear, eps: float) -> tuple[list[tuple[int, float, float]], float]:
    """ReLU form of ``phi``: units ``(sign, offset, coef)`` meaning ``coef*ReLU(sign*(t - offset))``, plus a constant."""
    br = [float(c) for c in phi.breakpoints]
    a = [float(s) for s in phi.slopes]
    b = [float(i) for i in phi.intercepts]
    constant = [k for k, s in enumerate(phi.slopes) if s == 0]
    m = next((k for k in constant if phi.intercepts[k] == 0), constant[0])
    units = []
    for k in range(m, len(br)):  # breakpoint k sits between pieces k and k+1
        c = br[k]
        jump = (a[k + 1] * c + b[k + 1]) - (a[k] * c + b[k])
        units.append((1, c - eps, jump / eps))
        units.append((1, c, a[k + 1] - a[k] - jump / eps))
    for k in range(m - 1, -1, -1):
        c = br[k]
        jump = (a[k + 1] * c + b[k + 1]) - (a[k] * c + b[k])
        # left of c: phi_left = phi_right - (a_k - a_{k+1}) ReLU(c - t) - jump * 1{t < c}, step ramped on (c-eps, c)
        units.append((-1, c, -(a[k] - a[k + 1]) - jump / eps))
        units.append((-1, c - eps, jump / eps))
    return units, b[m]


def quantizer_drift(p: YunParams, eps: float) -> float:
    """A bound on how far float64 moves an entry the softened quantizer has not snapped yet, over its
    coordinate's grid layers (an entry exactly on a grid point moves not at all where ``delta`` and
    ``epsilon`` are powers of two: every sum then is exact).

    Grid layers are expanded around their left zero piece, so an entry already snapped below a layer's cell
    passes with no ReLU unit active, exactly; an entry above the cell passes through live units whose
    coefficients, about ``delta/epsilon``, cancel in exact arithmetic but not in float64. Per layer the hidden
    values ``t - offset`` (at most ``2R + delta``, ``R`` the quantizer's range) are rounded, multiplied, summed
    over the ``u`` units and added to the entry, each to ``2^-53`` of its size: at most
    ``(sum|coef| (2R + delta) (u + 2) + R) 2^-53``; the ``levels`` layers add up. The drift is erased when the
    entry is snapped, unless it carried the entry onto a ramp: the input domain keeps entries that far from
    the ramps (:class:`~expressivity.network.sequence_rules.OffRamps`)."""
    R, delta = float(p.range_hi), float(p.delta)
    units, _ = relu_expand(grid_activation(p), eps)
    coefs = sum(abs(c) for _, _, c in units)
    return p.levels * (coefs * (2 * R + delta) * (len(units) + 2) + R) * 2.0 ** -53


def quantizer_ramps(p: YunParams, eps: float) -> tuple[float, float]:
    """``(left, right)``: how far below a quantizer breakpoint and above it an input entry is on a softened ramp
    or within float64's drift of one (:func:`quantizer_drift`; nothing above a breakpoint when ``delta`` is a
    power of two and an entry on it passes exactly, which is what the ``right`` band guards in the others).
    Dyadic ``delta`` still moves entries near (not on) a breakpoint, so ``right`` is the drift in both cases;
    an entry exactly on a breakpoint is exempt (see ``OffRamps.check``)."""
    drift = quantizer_drift(p, eps)
    return eps + drift, drift


def ramp_count(p: YunParams) -> int:
    """The quantizer ramps an input meets: each entry meets 2 breakpoints per quantizer layer of its coordinate."""
    return p.n * p.d * 2 * (p.levels + 1)


def ramp_measure(p: YunParams, eps: float) -> float:
    """A bound on the share of the input cube (a union bound over entries, so it may pass 1) within a quantizer ramp
    of width ``eps`` or float64's drift around one (:func:`quantizer_ramps`): where the softened network is not the
    verified one and nothing bounds it."""
    return ramp_count(p) * sum(quantizer_ramps(p, eps))


def automatic_epsilon(p: YunParams, config: SoftenConfig) -> float:
    """The quantizer ramp width used where ``config.epsilon`` is not given: the ramps' widths sum to about
    ``config.quantizer_measure``, rounded down to a power of two (:func:`dyadic_floor`)."""
    return dyadic_floor(config.quantizer_measure / ramp_count(p))


def _soft_ff(layer: FeedForwardLayer, eps: float) -> FeedForwardLayer:
    if isinstance(layer.activation, ReLU):
        return layer
    W1 = np.asarray(layer.W_1, dtype=float)
    b1 = np.asarray(layer.b_1, dtype=float)
    W2 = np.asarray(layer.W_2, dtype=float)
    b2 = np.asarray(layer.b_2, dtype=float).copy()
    units, const = relu_expand(layer.activation, eps)
    cols, biases, rows = [], [], []
    for h in range(W1.shape[1]):
        b2 = b2 + const * W2[h]
        for sign, offset, coef in units:
            cols.append(sign * W1[:, h])
            biases.append(sign * (b1[h] - offset))
            rows.append(coef * W2[h])
    return FeedForwardLayer(np.stack(cols, axis=1), np.array(biases), np.stack(rows, axis=0), b2,
                            activation=ReLU(), name=f"{layer.name} (ReLU)")


def _soft_attn(layer: AttentionLayer, lam: float) -> AttentionLayer:
    heads = tuple(Head(np.asarray(h.W_Q, float), np.asarray(h.W_K, float), np.asarray(h.W_V, float),
                       np.asarray(h.W_O, float), np.asarray(h.b_Q, float), name=h.name) for h in layer.heads)
    return AttentionLayer(heads, normalization="softmax", inverse_temperature=lam, name=layer.name)


def soften(p: YunParams, network: Network, n_quantizer: int, precondition_margin: Fraction,
           config: SoftenConfig = SoftenConfig()) -> tuple[Network, SoftenReport]:
    """The softmax/ReLU network ``g`` from the modified network ``g_bar`` (float64 weights).

    Args:
        n_quantizer: number of leading quantizer layers (they get the ``epsilon`` ramp).
        precondition_margin: ``t_l - delta/2 - max u.(sigma A)``, the value-map margin.
    """
    float64_limit(p)
    check_epsilon(p, config.epsilon)
    lam, attn_margins = choose_lambda(p, network)
    if config.lam is not None:  # the bound is stated for the lambda actually used
        lam = config.lam
        attn_margins["per_layer_error_bound"] = (attn_margins["head_scale"] * (p.n - 1) * attn_margins["key_range"]
                                                 * exp(-lam * attn_margins["score_gap"]))
    attn_margins["attention_leakage_bound"] = attn_margins["per_layer_error_bound"] * attn_margins["attention_layers"]
    check_leakage(p, lam, attn_margins)
    check_score_range(p, lam, network)
    # A power of two: with delta one too, an input on a grid point k delta (0, 1/2: the most natural inputs)
    # passes every layer exactly, so it cannot drift into the ramp just left of its breakpoint. With 4e-8 (not
    # dyadic) the layers below moved 1/2 to 1/2 - 2e-10, into the ramp, and the contextual map turned that into
    # 493,332 for a target in [0, 1] (an audit, 2026-11-28).
    eps_q = dyadic_floor(config.epsilon) if config.epsilon is not None else automatic_epsilon(p, config)
    lattice = float(p.delta) / 2
    # Later layers see only multiples of delta/2; a ramp of width delta/4 keeps every such input
    # delta/4 away from a ramp end (width delta/2 would put lattice points on ramp starts, where
    # float rounding of the hidden bias times the large coefficients leaks into the output).
    eps_post = config.epsilon_post if config.epsilon_post is not None else min(lattice / 2, float(precondition_margin) / 2)
    if eps_q <= 0 or eps_post <= 0 or lam <= 0:
        raise ExpressivityError("lambda and epsilon must be positive")
    layers = []
    for k, layer in enumerate(network.layers):
        if isinstance(layer, AttentionLayer):
            layers.append(_soft_attn(layer, lam))
        else:
            layers.append(_soft_ff(layer, eps_q if k < n_quantizer else eps_post))
    pe = None if network.positional_encoding is None else np.asarray(network.positional_encoding, dtype=float)
    left, right = quantizer_ramps(p, eps_q)
    if not left + right < float(p.delta) / 4:   # NaN too
        # a narrow ramp has steep units: float64's drift around each breakpoint then covers the cells (--epsilon 1e-20
        # at delta 1/4 was refused naming an internal rule: a fuzz, 2026-11-28)
        raise ExpressivityError(
            f"--epsilon {config.epsilon if config.epsilon is not None else eps_q:g} (a ramp of {eps_q:g}) makes the "
            f"quantizer's ReLU units so steep that float64 moves entries by up to "
            f"{right:.3g}, beyond a quarter of the cells (delta/4 = {float(p.delta) / 4:g}); give a larger --epsilon, "
            "or leave it out for the automatic width")
    domain = softened_domain(p)
    # the fix names the ramps too: "rescale the inputs into [0, 1)" alone was the advice for 0.4999999999, inside
    # [0, 1) and on a ramp (a fresh audit, 2026-11-29)
    domain = replace(domain, rules=(OffRamps(domain.dims, p.N, left, right, p.positional),),
                     fix=f"{domain.fix}, and move every entry{' plus its token index' if p.positional else ''} off "
                         f"the quantizer's ramps (not within {left:.3g} below or {right:.3g} above a breakpoint "
                         f"k/{p.N})")
    soft = Network(tuple(layers), network.labels, pe, name=network.name + " (softmax/ReLU)",
                   valid_lengths=network.valid_lengths, input_domain=domain,
                   metadata={"lambda": lam, "epsilon": eps_q, "epsilon_post": eps_post,
                             "n": p.n, "d": p.d, "delta": str(p.delta)})
    margins = {**attn_margins, "lattice_margin": lattice, "precondition_margin": float(precondition_margin),
               "quantizer_ramp_measure_bound": ramp_count(p) * (left + right),
               # the same at the automatic width: a chosen epsilon above it leaves more of the cube unverified
               "quantizer_ramp_measure_automatic": (ramp_measure(p, automatic_epsilon(p, config))
                                                    if config.epsilon is not None else ramp_count(p) * (left + right)),
               "quantizer_drift_bound": right,
               "largest_value_half_delta_units": float(p.t_r * 2 * p.N),
               "value_map_rounding_estimate": value_map_rounding(p)}
    return soft, SoftenReport(lam, eps_q, eps_post, margins, "float64")
