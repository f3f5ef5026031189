"""Hypothesis strategies for random small networks, wide enough to reach every layer feature."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st

from expressivity.network import (GELU, AttentionLayer, FeedForwardLayer, Head, LayerNorm, MatrixBias, MixingHead,
                                  MixingLayer, Network, PiecewiseLinear, RelativeBias, ReLU, SlopeBias)

ROWS = 6   # rows of every position-indexed array; inputs have at most this many tokens


def int_matrix(rng: np.random.Generator, shape, low=-2, high=3) -> np.ndarray:
    return rng.integers(low, high, size=shape).astype(float)


def _mat(rng, integer: bool):
    return (lambda s: int_matrix(rng, s)) if integer else (lambda s: rng.normal(0, 0.7, size=s))


def random_bias(rng, *, integer: bool, matrix: bool = True, log: bool = True):
    """None, a relative bias (possibly different defaults left and right), a lin/log slope bias (``log``: log-type
    allowed; it has no exact value) or a matrix."""
    choice = rng.integers(0, 4 if matrix else 3)
    if choice == 0:
        return None
    if choice == 1:
        value = (lambda: float(rng.integers(-2, 3))) if integer else (lambda: float(rng.normal()))
        neg = value() if rng.random() < 0.5 else None
        return RelativeBias.from_function(lambda o: value(), max_offset=int(rng.integers(0, 4)), default=value(),
                                          default_negative=neg)
    if choice == 2:
        if integer:
            return SlopeBias("lin", int(rng.integers(0, 3)))
        return SlopeBias(str(rng.choice(["lin", "log"])) if log else "lin", float(rng.uniform(0, 2)))
    return MatrixBias(_mat(rng, integer)((ROWS, ROWS)))


def random_head(rng, d, *, integer: bool, position_bias: bool = False, rotary: bool = False,
                dp_free: bool = False) -> Head:
    mat = _mat(rng, integer)
    bias = random_bias(rng, integer=integer) if position_bias else None
    mv = int(rng.integers(1, 3))
    if dp_free:
        return Head.dp_free(mat((d, mv)), mat((mv, d)), position_bias=bias)
    m = 2 * int(rng.integers(1, 3)) if rotary else int(rng.integers(1, 3))
    return Head(W_Q=mat((d, m)), W_K=mat((d, m)), W_V=mat((d, mv)), W_O=mat((mv, d)), b_Q=mat((m,)),
                position_bias=bias, rotary=rotary)


def random_norm(rng, d) -> LayerNorm:
    return LayerNorm(rng.normal(1, 0.3, size=d), rng.normal(0, 0.3, size=d), eps=float(rng.choice([1e-5, 0.1])))


def random_piecewise(rng, dyadic: bool = False) -> PiecewiseLinear:
    """Integer breakpoints, or (``dyadic``) multiples of 1/4, which floats hold exactly."""
    unit = 0.25 if dyadic else 1
    c1 = int(rng.integers(-2, 2)) * unit
    c2 = c1 + int(rng.integers(1, 3)) * unit
    slopes = [int(rng.integers(-1, 2)) for _ in range(3)]
    slopes[int(rng.integers(0, 3))] = 0
    intercepts = [int(rng.integers(-2, 3)) for _ in range(3)]
    return PiecewiseLinear((c1, c2), tuple(slopes), tuple(intercepts))


def random_ffn(rng, d, *, integer: bool, piecewise: bool, gelu: bool = False, norm: bool = False) -> FeedForwardLayer:
    r = int(rng.integers(0 if not integer else 1, 4))
    mat = _mat(rng, integer)
    act = random_piecewise(rng, dyadic=not integer) if piecewise else GELU() if gelu else ReLU()
    return FeedForwardLayer(W_1=mat((d, r)), b_1=mat((r,)), W_2=mat((r, d)), b_2=mat((d,)), activation=act,
                            norm=random_norm(rng, d) if norm else None)


def random_mixing(rng, d, *, integer: bool, norm: bool = False) -> MixingLayer:
    """Convolution heads (any kernel size and reach into the past) and ``ROWS x ROWS`` matrix heads."""
    mat = _mat(rng, integer)
    heads = []
    for _ in range(int(rng.integers(1, 3))):
        mv = int(rng.integers(1, 3))
        if rng.random() < 0.5:
            K = int(rng.integers(1, 4))
            heads.append(MixingHead(mat((d, mv)), mat((mv, d)), kernel=mat((K, mv)), left=int(rng.integers(0, K))))
        else:
            heads.append(MixingHead(mat((d, mv)), mat((mv, d)), matrix=mat((ROWS, ROWS))))
    return MixingLayer(tuple(heads), norm=random_norm(rng, d) if norm else None)


def random_infinite_layer(rng, d) -> AttentionLayer:
    """Causal DP-free heads normalised over an infinite past: lin, log or finitely supported biases."""
    heads = []
    for _ in range(int(rng.integers(1, 3))):
        kind = rng.integers(0, 3)
        if kind == 0:
            bias = SlopeBias("lin", float(rng.uniform(0.2, 2)))
        elif kind == 1:
            bias = SlopeBias("log", float(rng.uniform(1.1, 3)))
        else:
            bias = RelativeBias(tuple((o, float(rng.normal())) for o in range(int(rng.integers(1, 4)))), default=-np.inf)
        mv = int(rng.integers(1, 3))
        heads.append(Head.dp_free(rng.normal(size=(d, mv)), rng.normal(size=(mv, d)), position_bias=bias))
    return AttentionLayer(tuple(heads), causal=True, normaliser="infinite")


@st.composite
def softmax_networks(draw, position: bool = False, norms: bool = True):
    """Random float networks: softmax attention (dot-product, DP-free, rotary, every bias type,
    the infinite normaliser), ReLU/GELU/piecewise feed-forward and mixing layers, optional layer
    norms, embedding, encoding, readout bias and ``max_length``.

    ``position=False`` keeps to permutation-equivariant parts and to inputs of width ``d``
    (``tests/verify`` feeds them ``(batch, n, d)``); ``norms=False`` drops layer norms.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 4))
    norm = lambda: norms and rng.random() < 0.3  # noqa: E731
    layers = []
    for _ in range(draw(st.integers(1, 3))):
        u = rng.random()
        if position and u < 0.15:
            layers.append(random_infinite_layer(rng, d))
        elif position and u < 0.3:
            layers.append(random_mixing(rng, d, integer=False, norm=norm()))
        elif u < 0.65:
            heads = tuple(random_head(rng, d, integer=False, position_bias=position and rng.random() < 0.5,
                                      rotary=position and rng.random() < 0.3, dp_free=rng.random() < 0.2)
                          for _ in range(int(rng.integers(1, 3))))
            layers.append(AttentionLayer(heads, normalization="softmax", inverse_temperature=float(rng.uniform(0.5, 2)),
                                         causal=bool(position and rng.random() < 0.3), norm=random_norm(rng, d) if norm() else None))
        else:
            # Piecewise layers with random float inputs: a pre-activation lands within rounding
            # of a breakpoint with probability ~1e-16, so float evaluators still agree.
            u = rng.random()
            layers.append(random_ffn(rng, d, integer=False, piecewise=u < 0.4, gelu=u > 0.7, norm=norm()))
    d_in = int(rng.integers(1, 4)) if position else d
    embed = rng.random() < 0.4
    d_out = int(rng.integers(1, 3))
    readout = rng.normal(size=(d, d_out)) if rng.random() < 0.5 else None
    return Network(
        tuple(layers), labels=tuple(f"h{k}" for k in range(d)),
        positional_encoding=rng.normal(size=(ROWS, d)) if position and rng.random() < 0.4 else None,
        readout=readout, readout_bias=rng.normal(size=d if readout is None else d_out) if rng.random() < 0.3 else None,
        embedding=rng.normal(size=(d_in, d)) if embed else None,
        embedding_bias=rng.normal(size=d) if rng.random() < 0.3 else None,
        final_norm=random_norm(rng, d) if norm() else None,
        max_length=ROWS if position and rng.random() < 0.5 else None)


@st.composite
def exact_friendly_networks(draw):
    """Integer-weight networks: piecewise FF and mixing layers, one hardmax attention layer, then
    ReLU FF and mixing layers, with an optional integer ``(d, d)`` embedding (inputs stay
    ``(batch, n, d)`` for ``tests/verify``), readout bias and ``max_length``.

    On integer inputs every score before the attention layer (integer weights, integer biases,
    integer inverse temperature) is an integer, so float64 sees the same ties as exact
    arithmetic; after it only continuous layers follow. This lets the float and exact
    evaluators be compared without tie-breaking artefacts. (Two hardmax layers in a row would
    not: the first one's 1/k averages are rounded in float and can split a later exact tie.)
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 3))
    mixing = lambda: [random_mixing(rng, d, integer=True)] if rng.random() < 0.3 else []  # noqa: E731
    layers = [random_ffn(rng, d, integer=True, piecewise=True) for _ in range(draw(st.integers(0, 2)))] + mixing()
    heads = tuple(random_head(rng, d, integer=True, position_bias=bool(rng.random() < 0.4), dp_free=rng.random() < 0.2)
                  for _ in range(int(rng.integers(1, 3))))
    layers.append(AttentionLayer(heads, normalization="hardmax", causal=bool(rng.random() < 0.3),
                                 inverse_temperature=int(rng.integers(1, 4))))
    layers += [random_ffn(rng, d, integer=True, piecewise=False) for _ in range(draw(st.integers(0, 2)))] + mixing()
    return Network(tuple(layers), labels=tuple(f"h{k}" for k in range(d)),
                   embedding=int_matrix(rng, (d, d)) if rng.random() < 0.4 else None,
                   readout_bias=int_matrix(rng, (d,)) if rng.random() < 0.3 else None,
                   max_length=ROWS if rng.random() < 0.5 else None)


def input_length(net: Network, n: int) -> int:
    """A length ``net`` accepts, from a drawn ``n`` in ``1 .. ROWS``."""
    return net.length or n


# Small exact weights of both Python types: whole Fractions stay Fractions and whole floats
# become ints in the exact evaluator, so the type rules of both paths get exercised; few distinct
# values, so hardmax scores tie often.
EXACT_VALUES = (-2, -1, 0, 0, 1, 1, 2, Fraction(1, 2), Fraction(-1, 3), Fraction(2), 0.5, -1.5)
INVERSE_TEMPERATURES = (-2, -1, 0, 1, 3, Fraction(1, 2), Fraction(-3, 2), 0.25)


def exact_matrix(rng: np.random.Generator, shape) -> np.ndarray:
    """An object array of entries drawn from :data:`EXACT_VALUES`."""
    out = np.empty(shape, dtype=object)
    out.flat[:] = [EXACT_VALUES[k] for k in rng.integers(0, len(EXACT_VALUES), size=int(np.prod(shape)))]
    return out


def _exact_piecewise(rng) -> PiecewiseLinear:
    """At most three pieces, exact breakpoints, Fraction or int slopes and intercepts, one piece constant."""
    breakpoints = sorted(set(EXACT_VALUES[k] for k in rng.integers(0, len(EXACT_VALUES), size=int(rng.integers(0, 3)))),
                         key=Fraction)
    breakpoints = [c for k, c in enumerate(breakpoints) if k == 0 or Fraction(c) != Fraction(breakpoints[k - 1])]
    pieces = len(breakpoints) + 1
    slopes = list(exact_matrix(rng, (pieces,)))
    slopes[int(rng.integers(0, pieces))] = 0
    return PiecewiseLinear(tuple(breakpoints), tuple(slopes), tuple(exact_matrix(rng, (pieces,))))


def _exact_head(rng, d) -> Head:
    # no log-type bias: the exact passes refuse it (its entries are float64 roundings of -beta log(1 + s))
    bias = random_bias(rng, integer=rng.random() < 0.7, log=False) if rng.random() < 0.5 else None
    mv = int(rng.integers(1, 3))
    if rng.random() < 0.2:
        return Head.dp_free(exact_matrix(rng, (d, mv)), exact_matrix(rng, (mv, d)), position_bias=bias)
    m = int(rng.integers(1, 3))
    return Head(exact_matrix(rng, (d, m)), exact_matrix(rng, (d, m)), exact_matrix(rng, (d, mv)),
                exact_matrix(rng, (mv, d)), b_Q=exact_matrix(rng, (m,)), position_bias=bias)


@st.composite
def scaled_networks(draw):
    """Networks the scaled-integer exact pass takes: hardmax attention (inverse temperature of
    either sign or zero, query and position biases, causal masks, DP-free heads), ReLU and
    piecewise feed-forward layers (width 0 too), optional embedding and its bias, positional
    encoding, readout and its bias. Inputs: ``(batch, n, net.d_in)``."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 3))
    layers = []
    for _ in range(draw(st.integers(1, 3))):
        if rng.random() < 0.55:
            heads = tuple(_exact_head(rng, d) for _ in range(int(rng.integers(1, 3))))
            lam = INVERSE_TEMPERATURES[int(rng.integers(0, len(INVERSE_TEMPERATURES)))]
            layers.append(AttentionLayer(heads, normalization="hardmax", inverse_temperature=lam,
                                         causal=bool(rng.random() < 0.4)))
        else:
            r = int(rng.integers(0, 3))
            act = _exact_piecewise(rng) if rng.random() < 0.5 else ReLU()
            layers.append(FeedForwardLayer(exact_matrix(rng, (d, r)), exact_matrix(rng, (r,)), exact_matrix(rng, (r, d)),
                                           exact_matrix(rng, (d,)), activation=act))
    d_in, d_out = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    maybe = lambda shape: exact_matrix(rng, shape) if rng.random() < 0.4 else None  # noqa: E731
    readout = maybe((d, d_out))
    embedding = exact_matrix(rng, (d_in, d)) if rng.random() < 0.6 else None
    return Network(tuple(layers), labels=tuple(f"h{k}" for k in range(d)), embedding=embedding,
                   embedding_bias=maybe((d,)), positional_encoding=maybe((ROWS, d)), readout=readout,
                   readout_bias=maybe((d if readout is None else d_out,)))
