"""Step 3 (Lemma 9): hardmax -> softmax(lambda), piecewise-linear -> ReLU(epsilon), in float64.

Softmax: every attention layer gets ``inverse_temperature = lambda``. On grid inputs the
score gap between the selected key and any other is at least ``gamma = delta^2/2`` (query
``>= delta/2`` away from 0, distinct keys ``>= delta`` apart), so a head's error is at most
``scale * (n-1) * exp(-lambda*gamma) * V`` with ``V`` the key range (spec §5). ``lambda`` is
chosen to make the sum over all attention layers at most ``1e-6 delta``, far inside the
``delta/2`` window margins, because that leakage reaches the output unchanged.

ReLU: a piecewise-linear ``phi`` with a constant piece ``m`` is rewritten around that piece:
each breakpoint to the right adds ``jump*H(t-c) + (slope change)*ReLU(t-c)``, each to the left
the mirror image with ``ReLU(c-t)``; the step ``H`` is a ramp of width ``epsilon`` just left
of the breakpoint. Two ReLUs per breakpoint, so width 4 per original unit (``T^{2,1,4}``).
``tilde phi = phi`` outside the ramps.

float64 is refused (spec §9) when in-support magnitudes ``t_r`` in ``delta/2`` units reach
``2^53``; the message names a smaller size that fits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from math import exp, log

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.errors import ExpressivityError
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, PiecewiseLinear, ReLU
from expressivity.network.network import Network

FLOAT64_EXACT = 2 ** 53


@dataclass(frozen=True)
class SoftenConfig:
    """``lam`` / ``epsilon`` override the automatic choices; ``epsilon`` is the quantizer ramp,
    ``epsilon_post`` the ramp of the later (lattice-input) layers."""

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


def float64_limit(p: YunParams) -> None:
    """Raise with a reason and a smaller size to try when float64 cannot carry ``p``."""
    if _fits(p):
        return
    top = p.t_r * 2 * p.N
    hint = _fitting_size(p)
    raise ExpressivityError(
        f"float64 cannot carry {p.describe()}: contextual values reach t_r = {_approx(p.t_r)} "
        f"({_approx(top)} half-delta units) and their squares (attention scores, value-map ramps) exceed 2^53, "
        f"so rounding creates false ties and cancels the ReLU ramps; {hint}"
    )


def _approx(x) -> str:
    try:
        return f"{float(x):.3g}"
    except OverflowError:
        from expressivity.verify.size import fmt_size

        return fmt_size(x)


def _fits(p: YunParams) -> bool:
    # Spec §9: scores are products of contextual values; they must stay exact in float64.
    return (p.t_r * 2 * p.N) ** 2 < FLOAT64_EXACT


def _fitting_size(p: YunParams) -> str:
    if p.positional and p.shift == "paper":
        return "try a smaller n or a larger delta"
    # t_r grows with N and with n, so the largest fitting value is found by bisection.
    N = _largest(2, p.N - 1, lambda N: _fits(replace(p, N=N)))
    if N is not None:
        return f"try --delta 1/{N}"
    n = _largest(2, p.n - 1, lambda n: _fits(replace(p, n=n)))
    if n is not None:
        return f"try --n {n}"
    return "try a smaller n and a larger delta"


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


def relu_expand(phi: PiecewiseLinear, eps: float) -> tuple[list[tuple[int, float, float]], float]:
    """ReLU form of ``phi``: units ``(sign, offset, coef)`` meaning ``coef*ReLU(sign*(t - offset))``, plus a constant."""
    br = [float(c) for c in phi.breakpoints]
    a = [float(s) for s in phi.slopes]
    b = [float(i) for i in phi.intercepts]
    m = next(k for k, s in enumerate(phi.slopes) if s == 0)
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
    lam, attn_margins = choose_lambda(p, network)
    lam = config.lam if config.lam is not None else lam
    # Each entry meets 2 breakpoints per quantizer layer of its coordinate; ramps are eps wide.
    ramps = p.n * p.d * 2 * (p.levels + 1)
    eps_q = config.epsilon if config.epsilon is not None else config.quantizer_measure / ramps
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
    soft = Network(tuple(layers), network.labels, pe, name=network.name + " (softmax/ReLU)",
                   metadata={"lambda": lam, "epsilon": eps_q, "epsilon_post": eps_post})
    margins = {**attn_margins, "lattice_margin": lattice, "precondition_margin": float(precondition_margin),
               "quantizer_ramp_measure_bound": ramps * eps_q,
               "largest_value_half_delta_units": float(p.t_r * 2 * p.N),
               # ReLU ramps of the value map cancel terms of size ~ t_r^2/eps: float64 rounding per layer.
               "value_map_rounding_per_layer_estimate": float(p.t_r) ** 2 / eps_post * 2.0 ** -53}
    return soft, SoftenReport(lam, eps_q, eps_post, margins, "float64")
