"""The reference semantics of each layer feature against a hand computation (and the other
evaluators against the reference where they apply)."""

import math

import numpy as np
import pytest

from expressivity.network import (GELU, AttentionLayer, FeedForwardLayer, Head, LayerNorm, MixingHead, MixingLayer,
                                  Network, RelativeBias, SlopeBias, evaluate)
from expressivity.network.reference import attention_weights, forward, rotate

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("bias, kernel", [
    (SlopeBias("lin", 0.4), lambda s: math.exp(-0.4 * s) * (1 - math.exp(-0.4))),
    (SlopeBias("log", 1.5), lambda s: (1 + s) ** -1.5 / 2.612375348685488),
    (RelativeBias(((0, 0.0), (2, math.log(3))), default=-math.inf), lambda s: {0: 0.25, 2: 0.75}.get(s, 0.0)),
])
def test_infinite_normaliser_weights_are_the_kernel_over_a_zero_padded_past(bias, kernel):
    layer = AttentionLayer((Head.dp_free(np.ones((1, 1)), np.ones((1, 1)), position_bias=bias),), causal=True,
                           normaliser="infinite")
    n = 6
    A = attention_weights(layer, RNG.normal(size=(1, n, 1)))[0, 0]
    want = np.array([[kernel(i - j) if j <= i else 0.0 for j in range(n)] for i in range(n)])
    assert np.allclose(A, want, rtol=1e-14, atol=0)
    assert A[0].sum() < 1   # early queries get less than unit mass: the missing past holds zeros


def test_visible_normaliser_renormalises_a_dp_free_head_over_the_visible_keys():
    layer = AttentionLayer((Head.dp_free(np.ones((1, 1)), np.ones((1, 1)), position_bias=SlopeBias("lin", 1.0)),),
                           causal=True)
    A = attention_weights(layer, np.zeros((1, 3, 1)))[0, 0]
    e = np.exp(-np.arange(3.0))
    assert np.allclose(A[2], e[::-1] / e.sum(), rtol=1e-15) and np.allclose(A.sum(-1), 1)


def test_mixing_layer_convolves_depth_wise_with_zeros_outside_and_applies_matrices():
    X = RNG.normal(size=(2, 5, 2))
    kernel = RNG.normal(size=(3, 2))
    conv = MixingHead(np.eye(2), np.eye(2), kernel=kernel, left=1)          # taps at keys i-1, i, i+1
    P = RNG.normal(size=(7, 7))
    mat = MixingHead(np.eye(2), 2 * np.eye(2), matrix=P)
    net = Network((MixingLayer((conv, mat)),), labels=("a", "b"), max_length=7)
    want = X.copy()
    for i in range(5):
        for u in range(3):
            if 0 <= i - 1 + u < 5:
                want[:, i] += kernel[u] * X[:, i - 1 + u]
    want += 2 * P[:5, :5] @ X
    for dtype in ("float64", "torch-float64"):
        assert np.allclose(evaluate(net, X, dtype), want, rtol=1e-13, atol=1e-13)


def test_gelu_is_the_exact_erf_form():
    net = Network((FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1)), activation=GELU()),), labels=("x",))
    t = np.array([[-3.0], [-0.5], [0.0], [0.7], [4.0]])
    want = t + 0.5 * t * (1 + np.vectorize(math.erf)(t / math.sqrt(2)))
    for dtype in ("float64", "torch-float64"):
        assert np.allclose(evaluate(net, t, dtype), want, rtol=1e-15, atol=1e-15)


def test_pre_norm_is_read_by_the_layer_while_the_residual_keeps_the_raw_stream():
    gain, bias = np.array([2.0, 0.5]), np.array([0.1, -0.3])
    W1, W2 = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2))
    ffn = FeedForwardLayer(W1, np.zeros(3), W2, norm=LayerNorm(gain, bias, eps=0.01))
    net = Network((ffn,), labels=("a", "b"), final_norm=LayerNorm(np.ones(2), np.zeros(2)))
    X = RNG.normal(size=(4, 2))

    def ln(H, g, b, eps):
        c = H - H.mean(-1, keepdims=True)
        return c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) * g + b

    H = X + np.maximum(ln(X, gain, bias, 0.01) @ W1, 0) @ W2
    assert np.allclose(forward(net, X), ln(H, 1, 0, 1e-5), rtol=1e-14, atol=1e-14)


def test_rotary_turns_each_pair_and_makes_scores_depend_on_the_offset_only():
    m, n = 4, 6
    x = RNG.normal(size=(1, n, m))
    y = rotate(x)
    p, k = 3, 1
    a = p * 10000 ** (-2 * k / m)
    assert y[0, p, k] == pytest.approx(x[0, p, k] * math.cos(a) - x[0, p, k + 2] * math.sin(a), rel=1e-14)
    assert y[0, p, k + 2] == pytest.approx(x[0, p, k] * math.sin(a) + x[0, p, k + 2] * math.cos(a), rel=1e-14)
    q, key = RNG.normal(size=m), RNG.normal(size=m)
    S = rotate(np.tile(q, (1, n, 1)))[0] @ rotate(np.tile(key, (1, n, 1)))[0].T
    for off in range(-n + 1, n):
        diag = np.diagonal(S, offset=off)
        assert np.allclose(diag, diag[0], rtol=1e-12)


def test_embedding_encoding_and_readout_bias_compose_in_order():
    E, b, PE = RNG.normal(size=(3, 2)), RNG.normal(size=2), RNG.normal(size=(5, 2))
    R, rb = RNG.normal(size=(2, 1)), RNG.normal(size=1)
    net = Network((), labels=("a", "b"), embedding=E, embedding_bias=b, positional_encoding=PE, readout=R,
                  readout_bias=rb, max_length=5)
    X = RNG.normal(size=(2, 3, 3))
    assert np.allclose(forward(net, X), (X @ E + b + PE[:3]) @ R + rb, rtol=1e-15)


@pytest.mark.parametrize("shape, width", [((3, 5, 4), 7), ((1, 1, 2), 1), ((2, 4, 3), 0), ((0, 4, 3), 2),
                                          ((2, 4, 0), 3)])
def test_token_rows_is_the_stacked_product(shape, width):
    # the feed-forward products as one (batch * n, k) matrix (2026-11-29): the stacked product's values and shape,
    # width-0 layers and empty batches included
    from expressivity.network.reference import _token_rows

    rng = np.random.default_rng(1)
    A, W = rng.normal(size=shape), rng.normal(size=(shape[-1], width))
    got = _token_rows(A, W)
    assert got.shape == (*shape[:-1], width)
    np.testing.assert_allclose(got, A @ W, rtol=1e-13, atol=1e-13)
