import json
from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import EvaluationError, NetworkError
from expressivity.network import (GELU, AttentionLayer, FeedForwardLayer, Head, LayerNorm, MatrixBias, MixingHead,
                                  MixingLayer, Network, PiecewiseLinear, RelativeBias, ReLU, SlopeBias, evaluate)
from expressivity.network.layers import layer_from_dict
from expressivity.network.serial import InlineArrays


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
    assert net.layer_counts() == {"attention": 1, "feedforward": 1, "mixing": 0, "total": 2}
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


def _dp_free(bias=None, d=1):
    return Head.dp_free(np.ones((d, 1)), np.ones((1, d)), position_bias=bias)


def test_dp_free_heads_have_no_query_key_columns_and_say_so():
    head = _dp_free(SlopeBias("lin", 0.5), d=2)
    assert head.W_Q.shape == (2, 0) and head.is_dp_free and head.parameter_count() == 2 + 2 + 1
    net = Network((AttentionLayer((head,), causal=True, normaliser="infinite"),), labels=("a", "b"))
    text = net.summary()
    assert "dp-free" in text and "lin(beta=0.5)-bias" in text and "infinite past" in text


@pytest.mark.parametrize("kwargs, match", [
    (dict(causal=False), "causal softmax"),
    (dict(causal=True, normalization="hardmax"), "causal softmax"),
    (dict(causal=True, heads=(_dp_free(SlopeBias("log", 1.0)),)), "head 0: log\\(beta=1\\) has no finite infinite mass"),
    (dict(causal=True, heads=(_dp_free(SlopeBias("lin", 1.0)), _dp_free())), "head 1: no position bias"),
    (dict(causal=True, heads=(Head(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)),
                                   position_bias=SlopeBias("lin", 1.0)),)), "head 0: .*needs DP-free heads"),
])
def test_infinite_normaliser_is_refused_where_it_has_no_meaning(kwargs, match):
    kwargs = {"heads": (_dp_free(SlopeBias("lin", 1.0)),), "name": "L1"} | kwargs
    heads = kwargs.pop("heads")
    with pytest.raises(NetworkError, match=f"attention layer 'L1'.*{match}") as info:
        AttentionLayer(heads, normaliser="infinite", **kwargs)
    assert "\n" not in str(info.value)
    with pytest.raises(NetworkError, match="unknown normaliser"):
        AttentionLayer(heads, normaliser="window")


def test_rotary_needs_an_even_nonzero_query_width():
    with pytest.raises(NetworkError, match="rotary needs an even query width"):
        Head(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1)), np.ones((1, 2)), rotary=True)
    with pytest.raises(NetworkError, match="rotary"):
        Head(np.ones((2, 0)), np.ones((2, 0)), np.ones((2, 1)), np.ones((1, 2)), rotary=True)


def test_mixing_heads_take_exactly_one_of_kernel_and_matrix():
    eye = np.eye(2)
    with pytest.raises(NetworkError, match="exactly one"):
        MixingHead(eye, eye)
    with pytest.raises(NetworkError, match="exactly one"):
        MixingHead(eye, eye, kernel=np.ones((2, 2)), matrix=np.eye(3))
    with pytest.raises(NetworkError, match="kernel"):
        MixingHead(eye, eye, kernel=np.ones((2, 3)))
    with pytest.raises(NetworkError, match="different lengths"):
        MixingLayer((MixingHead(eye, eye, matrix=np.eye(3)), MixingHead(eye, eye, matrix=np.eye(4))))


def test_layer_norms_must_match_the_width():
    with pytest.raises(NetworkError, match="LayerNorm of width 1"):
        FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1)), norm=LayerNorm(np.ones(2), np.zeros(2)))
    with pytest.raises(NetworkError, match="eps"):
        LayerNorm(np.ones(2), np.zeros(2), eps=0)


@pytest.mark.parametrize("layer", [
    AttentionLayer((_dp_free(RelativeBias(((0, 1.0), (1, Fraction(1, 3))), default=-np.inf)),), causal=True,
                   normaliser="infinite", norm=LayerNorm(np.ones(1), np.zeros(1))),
    AttentionLayer((Head(np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 1)), np.ones((1, 1)), rotary=True,
                         position_bias=MatrixBias(np.eye(3))),), normalization="hardmax"),
    MixingLayer((MixingHead(np.eye(1), np.eye(1), kernel=np.ones((2, 1)), left=1),
                 MixingHead(np.eye(1), np.eye(1), matrix=np.eye(3)))),
    FeedForwardLayer(np.ones((1, 2)), np.zeros(2), np.ones((2, 1)), activation=GELU()),
])
def test_layers_round_trip_through_json(layer):
    arrays = InlineArrays()
    back = layer_from_dict(json.loads(json.dumps(layer.to_dict(arrays), allow_nan=False)), arrays)
    assert type(back) is type(layer) and back.describe(("x",)) == layer.describe(("x",))
    net, again = Network((layer,), labels=("x",)), Network((back,), labels=("x",))
    X = np.random.default_rng(0).normal(size=(2, net.length or 3, 1))
    assert np.array_equal(evaluate(net, X), evaluate(again, X))


def test_unknown_layer_type_is_refused():
    with pytest.raises(NetworkError, match="unknown layer type 'conv'"):
        layer_from_dict({"type": "conv"}, InlineArrays())


# ---- layer kinds dispatch through one table per evaluator --------------------------------------

def test_every_evaluator_has_a_rule_for_every_layer_kind():
    from expressivity.network import exact, reference, torch_eval
    from expressivity.network.layers import LAYERS
    from expressivity.nn import convert

    for table in (reference.UPDATES, exact._RULES, torch_eval._MODULES, convert._places()):
        assert set(table) == set(LAYERS)
    # the trained-model loader's mixers (nn.mixers.MIXERS) hold every kind but the feed-forward one
    assert {mixer.layer_kind for mixer in convert.MIXERS.values() if mixer is not None} == set(LAYERS) - {"feedforward"}


def test_a_layer_kind_an_evaluator_does_not_know_fails_loudly_naming_it():
    """A new layer type that only joined LAYERS: every evaluator refuses it by name instead of
    skipping it."""
    from dataclasses import dataclass
    from typing import ClassVar

    from expressivity.network import Network, evaluate
    from expressivity.nn import from_network

    @dataclass(frozen=True)
    class Novel(FeedForwardLayer):
        kind: ClassVar[str] = "novel"

    net = Network((Novel(np.eye(1), np.zeros(1), np.eye(1), np.zeros(1), ReLU()),), labels=("x",))
    X = np.ones((2, 1))
    for dtype, who in (("float64", "reference"), ("exact", "exact evaluator"), ("float32", "torch evaluator")):
        with pytest.raises(NetworkError, match=f"{who}.*'novel'"):
            evaluate(net, X, dtype)
    with pytest.raises(NetworkError, match="trained-model loader.*'novel'"):
        from_network(net)


def test_one_head_count_for_attention_and_mixing_layers():
    from expressivity.network.layers import head_count

    attention = AttentionLayer((_dp_free(), _dp_free()), causal=True)
    mixing = MixingLayer((MixingHead(np.eye(1), np.eye(1), kernel=np.ones((2, 1)), left=1),))
    assert head_count([attention, _ffn(ReLU()), mixing]) == 3
    assert head_count([_ffn(ReLU())]) == 0
