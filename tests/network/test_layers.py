from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import EvaluationError, NetworkError
from expressivity.network import (AttentionLayer, FeedForwardLayer, Head, MatrixBias, Network, PiecewiseLinear,
                                  RelativeBias, ReLU, evaluate)


def _ffn(act, d=1):
    return FeedForwardLayer(W_1=np.ones((d, 1)), b_1=np.zeros(1), W_2=np.ones((1, d)), activation=act)


def test_piecewise_rejects_four_pieces_and_no_constant_piece():
    with pytest.raises(NetworkError, match="at most 3"):
        PiecewiseLinear((0, 1, 2), (0, 1, 1, 1), (0, 0, 0, 0))
    with pytest.raises(NetworkError, match="constant piece"):
        PiecewiseLinear((0,), (1, 2), (0, 0))
    with pytest.raises(NetworkError, match="increase"):
        PiecewiseLinear((1, 0), (0, 1, 1), (0, 0, 0))


@pytest.mark.parametrize("dtype", ["exact", "float64", "torch-float64", "float32"])
def test_piecewise_pieces_are_half_open_and_may_jump(dtype):
    # phi = 5 on (-inf, 0), -t on [0, 1), 7 on [1, inf): a breakpoint belongs to the right piece.
    phi = PiecewiseLinear((0, 1), (0, -1, 0), (5, 0, 7))
    net = Network((_ffn(phi),), labels=("x",))
    t = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])[:, None]
    out = np.asarray(evaluate(net, t, dtype), dtype=float)[:, 0]
    # residual: x + phi(x)
    assert out.tolist() == [-1 + 5, 0 + 0, 0.5 - 0.5, 1 + 7, 2 + 7]


@pytest.mark.parametrize("dtype", ["exact", "float64", "torch-float64"])
def test_hardmax_splits_ties_evenly(dtype):
    # Constant query; keys = x: tokens 0 and 2 tie at the max (3), token 1 is lower.
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.array([[1.0], [0.0]]), b_Q=np.ones(1),
                W_V=np.array([[0.0], [1.0]]), W_O=np.array([[0.0, 1.0]]))
    net = Network((AttentionLayer((head,), normalization="hardmax"),), labels=("key", "val"))
    X = np.array([[3.0, 1.0], [1.0, 100.0], [3.0, 4.0]])
    out = np.asarray(evaluate(net, X, dtype), dtype=object)
    # val += mean of the tied values (1 + 4)/2, exactly
    assert [Fraction(v) for v in out[:, 1]] == [1 + Fraction(5, 2), 100 + Fraction(5, 2), 4 + Fraction(5, 2)]


@pytest.mark.parametrize("dtype", ["exact", "float64", "torch-float64"])
def test_causal_mask_hides_future_keys(dtype):
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.array([[1.0], [0.0]]), W_O=np.array([[0.0, 1.0]]))
    net = Network((AttentionLayer((head,), normalization="hardmax", causal=True),), labels=("x", "out"))
    X = np.array([[2.0, 0], [4.0, 0], [6.0, 0]])
    out = np.asarray(evaluate(net, X, dtype), dtype=float)
    assert out[:, 1].tolist() == [2.0, 3.0, 4.0]  # running means


def test_relative_and_matrix_bias_matrices():
    rb = RelativeBias(((1, 5), (-1, -5)), default=0)
    assert rb.matrix(3).tolist() == [[0, -5, 0], [5, 0, -5], [0, 5, 0]]
    mb = MatrixBias(np.eye(3))
    with pytest.raises(NetworkError, match="length 3"):
        mb.matrix(4)


def test_network_validates_shapes_and_lengths():
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.zeros((2, 1)), W_O=np.zeros((1, 2)),
                position_bias=MatrixBias(np.zeros((3, 3))))
    layer = AttentionLayer((head,))
    with pytest.raises(NetworkError, match="width 2"):
        Network((layer,), labels=("a", "b", "c"))
    with pytest.raises(NetworkError, match="different lengths"):
        Network((layer,), labels=("a", "b"), positional_encoding=np.zeros((4, 2)))
    net = Network((layer,), labels=("a", "b"))
    assert net.length == 3 and net.uses_position
    with pytest.raises(NetworkError, match="built for length 3"):
        evaluate(net, np.zeros((5, 2)))
    with pytest.raises(NetworkError, match="input must be"):
        evaluate(net, np.zeros((3, 7)))
    with pytest.raises(NetworkError, match="W_V"):
        Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.zeros((3, 1)), W_O=np.zeros((1, 2)))


def test_exact_mode_refuses_softmax():
    head = Head(W_Q=np.zeros((1, 1)), W_K=np.zeros((1, 1)), W_V=np.zeros((1, 1)), W_O=np.zeros((1, 1)))
    net = Network((AttentionLayer((head,), normalization="softmax"),), labels=("x",))
    with pytest.raises(EvaluationError, match="softmax"):
        evaluate(net, np.zeros((2, 1)), "exact")
    with pytest.raises(EvaluationError, match="unknown dtype"):
        evaluate(net, np.zeros((2, 1)), "float16")


def test_counts_and_summary_name_the_dimensions():
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.array([[1.0], [0]]), W_O=np.array([[0, 1.0]]))
    net = Network((AttentionLayer((head,), normalization="hardmax"), _ffn(ReLU(), d=2)), labels=("x", "out"))
    assert net.layer_counts() == {"attention": 1, "feedforward": 1, "total": 2}
    # head: 4 matrices of 2 entries + b_Q (1); ffn: W_1 (2) + b_1 (1) + W_2 (2) + b_2 (2)
    assert net.parameter_count() == 9 + 7
    text = net.summary()
    assert "reads {x}" in text and "writes {out}" in text and "hardmax" in text


def test_exact_weights_stay_exact():
    ffn = FeedForwardLayer(W_1=np.array([[Fraction(1, 3)]], dtype=object), b_1=np.zeros(1),
                           W_2=np.array([[3]], dtype=object), activation=ReLU())
    net = Network((ffn,), labels=("x",))
    assert net.is_exact_weighted
    out = evaluate(net, np.array([[Fraction(1, 7)]], dtype=object), "exact")
    assert out[0, 0] == Fraction(1, 7) + Fraction(1, 7)


def test_float_evaluators_refuse_weights_beyond_float_range_and_exact_runs_them():
    huge = np.array([[10**400]], dtype=object)
    head = Head(W_Q=huge, W_K=np.ones((1, 1)), W_V=np.ones((1, 1)), W_O=np.ones((1, 1)))
    net = Network((AttentionLayer((head,), normalization="hardmax"),), labels=("x",))
    for dtype in ("float64", "torch-float64", "float32"):
        with pytest.raises(EvaluationError, match="exact"):
            evaluate(net, np.ones((2, 1)), dtype)
    assert evaluate(net, np.ones((2, 1), dtype=object), "exact").tolist() == [[2], [2]]
