"""Lemma 4.1: the quantizer ``g_q`` as ``d * levels + d`` width-1 feed-forward layers.

Tokens are rows: a layer maps ``Z (n, d)`` to ``Z + phi(Z @ e_i + b) e_i^T``. Out-of-range
layers send every entry outside ``[0, range_hi)`` to the constant ``p.out_value``; grid layer
``(i, k)`` snaps entries in ``[k delta, (k+1) delta)`` of coordinate ``i`` down to ``k delta``.
In Theorem 3 mode the positional encoding (row ``j`` = ``j * 1_d``) is added first and the
grid covers ``[0, n)``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.network.domain import Field, InputDomain
from expressivity.network.layers import FeedForwardLayer, PiecewiseLinear
from expressivity.network.network import Network


def _unit(d: int, i: int, scale=1) -> np.ndarray:
    e = np.zeros(d, dtype=object)
    e[:] = 0
    e[i] = scale
    return e


def labels(d: int) -> tuple[str, ...]:
    return tuple(f"x[{i}]" for i in range(d))


def modified_domain(p: YunParams) -> InputDomain:
    """Where the modified network equals ``g_bar`` exactly (checked by Lemmas 4.1-4.3, in exact
    arithmetic): every real input without positions (the quantizer sends entries outside ``[0, 1)`` to
    a constant, and ``g_bar`` is 0 there); entries in ``[0, 1)`` with them (``x + j`` of another token's
    range would land in token ``j``'s grid). The claim holds in exact arithmetic only (:data:`MODIFIED_ARITHMETIC`)."""
    if p.positional:
        return softened_domain(p, exact=True)
    return InputDomain((Field.real(labels(p.d)),), exact=True, built_for={"delta": str(p.delta)},
                       arithmetic=MODIFIED_ARITHMETIC)


# The lemmas are checked in exact arithmetic, and floats leave the claim on ordinary inputs (a fresh audit,
# 2026-11-28): the contextual values are products up to t_r, beyond float32's 2^24 already at n = d = 2,
# delta = 1/4 (134 of 200 random inputs in [0, 1) answered a different cell's value); a breakpoint k/3 is
# stored rounded, so x = 0.3333333333333333 < 1/3 fell in the next cell in float64; and the quantizer's
# out-of-range unit x + (out - x) loses x's fraction near 2^52. `run` checks a float answer against exact
# arithmetic for each input; the claim itself is exact.
MODIFIED_ARITHMETIC = {"exact": None}


def softened_domain(p: YunParams, exact: bool = False) -> InputDomain:
    """Theorems 2 and 3 approximate ``f`` on ``[0, 1]^(d x n)``: every entry in ``[0, 1)`` (the quantizer's
    cubes; the right end has measure zero in ``d_p``)."""
    claim = "exact on distinct-column cubes" if exact else "a d_p error over the cube, not a bound at each input"
    # the softened network's sharp softmax is measured in float64; in float32 it answered 517 for a target
    # in [0, 1] (the export measures float32 too coarse too)
    arithmetic = MODIFIED_ARITHMETIC if exact else {"float64": None}
    return InputDomain((Field.real(labels(p.d), 0, 1, hi_open=True),), exact=exact,
                       built_for={"delta": str(p.delta), "claim": claim},
                       fix="rescale the inputs into [0, 1), the domain of Theorems 2 and 3", arithmetic=arithmetic)


def positional_encoding(p: YunParams) -> np.ndarray:
    """``(n, d)`` encoding with row ``j`` equal to ``j * 1_d`` (spec §6, tokens as rows)."""
    pe = np.empty((p.n, p.d), dtype=object)
    for j in range(p.n):
        pe[j, :] = j
    return pe


def out_of_range_activation(p: YunParams) -> PiecewiseLinear:
    out = p.out_value
    return PiecewiseLinear((0, p.range_hi), (-1, 0, -1), (out, 0, out))


def grid_activation(p: YunParams) -> PiecewiseLinear:
    return PiecewiseLinear((0, p.delta), (0, -1, 0), (0, 0, 0))


def quantizer(p: YunParams) -> Network:
    """The quantizer network (with the positional encoding in Theorem 3 mode)."""
    d = p.d
    layers = []
    phi_out = out_of_range_activation(p)
    for i in range(d):
        e = _unit(d, i)
        layers.append(FeedForwardLayer(e.reshape(d, 1), np.array([0], dtype=object), e.reshape(1, d),
                                       activation=phi_out, name=f"out-of-range x[{i}]"))
    phi_q = grid_activation(p)
    for i in range(d):
        e = _unit(d, i)
        for k in range(p.levels):
            layers.append(FeedForwardLayer(e.reshape(d, 1), np.array([-Fraction(k, p.N)], dtype=object),
                                           e.reshape(1, d), activation=phi_q, name=f"snap x[{i}] to {Fraction(k, p.N)}"))
    pe = positional_encoding(p) if p.positional else None
    return Network(tuple(layers), labels(d), positional_encoding=pe, name="yun quantizer",
                   metadata={"stage": "quantize"})


def quantize_scalar(p: YunParams, t: Fraction) -> Fraction:
    """The scalar map ``g_q^ent`` the quantizer must realise (spec §2), for tests."""
    t = Fraction(t)
    if t < 0 or t >= p.range_hi:
        return Fraction(p.out_value)
    return Fraction(int(t * p.N), p.N)
