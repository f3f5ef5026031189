"""Hypothesis strategies for random small networks."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from expressivity.network import AttentionLayer, FeedForwardLayer, Head, Network, PiecewiseLinear, RelativeBias, ReLU


def int_matrix(rng: np.random.Generator, shape, low=-2, high=3) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(float)


def random_head(rng, d, *, integer: bool, position_bias: bool = False) -> Head:
    m = int(rng.integers(1, 3))
    mat = (lambda s: int_matrix(rng, s)) if integer else (lambda s: rng.normal(0, 0.7, size=s))
    bias = None
    if position_bias:
        bias = RelativeBias.from_function(lambda o: float(rng.integers(-2, 3)), max_offset=6)
    return Head(W_Q=mat((d, m)), W_K=mat((d, m)), W_V=mat((d, m)), W_O=mat((m, d)), b_Q=mat((m,)),
                position_bias=bias)


def random_piecewise(rng, dyadic: bool = False) -> PiecewiseLinear:
    """Integer breakpoints, or (``dyadic``) multiples of 1/4, which floats hold exactly."""
    unit = 0.25 if dyadic else 1
    c1 = int(rng.integers(-2, 2)) * unit
    c2 = c1 + int(rng.integers(1, 3)) * unit
    slopes = [int(rng.integers(-1, 2)) for _ in range(3)]
    slopes[int(rng.integers(0, 3))] = 0
    intercepts = [int(rng.integers(-2, 3)) for _ in range(3)]
    return PiecewiseLinear((c1, c2), tuple(slopes), tuple(intercepts))


def random_ffn(rng, d, *, integer: bool, piecewise: bool) -> FeedForwardLayer:
    r = int(rng.integers(1, 4))
    mat = (lambda s: int_matrix(rng, s)) if integer else (lambda s: rng.normal(0, 0.7, size=s))
    return FeedForwardLayer(W_1=mat((d, r)), b_1=mat((r,)), W_2=mat((r, d)), b_2=mat((d,)),
                            activation=random_piecewise(rng, dyadic=not integer) if piecewise else ReLU())


@st.composite
def softmax_networks(draw, position: bool = False):
    """Random float networks: softmax attention and ReLU/piecewise feed-forward layers."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 4))
    n_layers = draw(st.integers(1, 3))
    layers = []
    for _ in range(n_layers):
        if rng.random() < 0.6:
            heads = tuple(random_head(rng, d, integer=False, position_bias=position and rng.random() < 0.5)
                          for _ in range(int(rng.integers(1, 3))))
            layers.append(AttentionLayer(heads, normalization="softmax", inverse_temperature=float(rng.uniform(0.5, 2)),
                                         causal=bool(position and rng.random() < 0.3)))
        else:
            # Piecewise layers with random float inputs: a pre-activation lands within rounding
            # of a breakpoint with probability ~1e-16, so float evaluators still agree.
            layers.append(random_ffn(rng, d, integer=False, piecewise=bool(rng.random() < 0.4)))
    n_max = 6
    pe = rng.normal(size=(n_max, d)) if position and rng.random() < 0.4 else None
    readout = rng.normal(size=(d, int(rng.integers(1, 3)))) if rng.random() < 0.5 else None
    return Network(tuple(layers), labels=tuple(f"h{k}" for k in range(d)), positional_encoding=pe, readout=readout)


@st.composite
def exact_friendly_networks(draw):
    """Integer-weight networks: piecewise FF layers, one hardmax attention layer, then ReLU FF layers.

    On integer inputs every score before the attention layer (integer weights, integer biases,
    integer inverse temperature) is an integer, so float64 sees the same ties as exact
    arithmetic; after it only continuous ReLU layers follow. This lets the float and exact
    evaluators be compared without tie-breaking artefacts. (Two hardmax layers in a row would
    not: the first one's 1/k averages are rounded in float and can split a later exact tie.)
    """
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = draw(st.integers(1, 3))
    layers = [random_ffn(rng, d, integer=True, piecewise=True) for _ in range(draw(st.integers(0, 2)))]
    heads = tuple(random_head(rng, d, integer=True, position_bias=bool(rng.random() < 0.4))
                  for _ in range(int(rng.integers(1, 3))))
    layers.append(AttentionLayer(heads, normalization="hardmax", causal=bool(rng.random() < 0.3),
                                 inverse_temperature=int(rng.integers(1, 4))))
    layers += [random_ffn(rng, d, integer=True, piecewise=False) for _ in range(draw(st.integers(0, 2)))]
    return Network(tuple(layers), labels=tuple(f"h{k}" for k in range(d)))
