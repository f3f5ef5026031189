"""The exact evaluator runs every exact part and refuses, naming the layer, what has no exact value."""

from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import EvaluationError
from expressivity.network import (GELU, AttentionLayer, FeedForwardLayer, Head, LayerNorm, MixingHead, MixingLayer,
                                  Network, SlopeBias, evaluate)


def _ffn(**kw):
    return FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1)), **kw)


LN = LayerNorm(np.ones(1), np.zeros(1))


@pytest.mark.parametrize("net, match", [
    (Network((_ffn(), _ffn(activation=GELU())), labels=("x",)), "layer 1 uses GELU"),
    (Network((_ffn(norm=LN),), labels=("x",)), "layer 0 uses a layer norm"),
    (Network((_ffn(),), labels=("x",), final_norm=LN), "final layer norm"),
    (Network((AttentionLayer((Head(np.ones((1, 2)), np.ones((1, 2)), np.ones((1, 1)), np.ones((1, 1)), rotary=True),),
                             normalization="hardmax"),), labels=("x",)), "layer 0, head 0 is rotary"),
    (Network((AttentionLayer((Head.dp_free(np.ones((1, 1)), np.ones((1, 1)), SlopeBias("lin", 1.0)),), causal=True,
                             normaliser="infinite"),), labels=("x",)), "layer 0 normalises over an infinite past"),
])
def test_exact_mode_refuses_what_has_no_exact_value(net, match):
    with pytest.raises(EvaluationError, match=match) as info:
        evaluate(net, np.ones((2, 1)), "exact")
    assert "float64" in str(info.value) and "\n" not in str(info.value)


def test_exact_mode_runs_mixing_layers_embeddings_and_dp_free_hardmax_exactly():
    third = Fraction(1, 3)
    mixing = MixingLayer((MixingHead(np.eye(1), np.array([[third]], dtype=object), kernel=np.array([[1.0], [2.0]]), left=1),
                          MixingHead(np.eye(1), np.eye(1), matrix=np.array([[0, 0, 0], [third, 0, 0], [0, 1, 0]], dtype=object))))
    # DP-free hardmax head with a lin bias: arg-max of -|i - j| is the query itself
    attn = AttentionLayer((Head.dp_free(np.eye(1), np.eye(1), SlopeBias("lin", 1)),), normalization="hardmax")
    net = Network((mixing, attn), labels=("x",), embedding=np.array([[1.0], [10.0]]), readout_bias=np.array([third], dtype=object),
                  max_length=3)
    X = np.array([[[1, 0], [0, 1], [1, 1]]], dtype=object)
    out = evaluate(net, X, "exact")
    h = np.array([1, 10, 11], dtype=object)
    conv = np.array([2 * h[0], h[0] + 2 * h[1], h[1] + 2 * h[2]], dtype=object) * third   # h[i-1] + 2 h[i]
    mat = np.array([0, third * h[0], h[1]], dtype=object)
    after_mix = h + conv + mat
    assert out[0, :, 0].tolist() == list(2 * after_mix + third)
    assert np.allclose(evaluate(net, X.astype(float), "float64"), out.astype(float), rtol=1e-15)


def test_exact_inputs_of_every_exact_kind_are_read_as_the_numbers_they_write():
    """0.1 + 0.2 - 0.3 is 0 exactly: a Decimal, a sympy Rational or a numeric string must not be
    rounded to the nearest float on the way in (it answered 2^-55, "exact")."""
    from decimal import Decimal

    import sympy

    from expressivity import build_sum, evaluate

    net, _ = build_sum(3)
    for values in ([Decimal("0.1"), Decimal("0.2"), Decimal("-0.3")],
                   [sympy.Rational(1, 10), sympy.Rational(2, 10), sympy.Rational(-3, 10)],
                   ["0.1", "0.2", " -0.3"], ["1/10", "2/10", "-3/10"],
                   [Fraction(1, 10), Fraction(2, 10), Fraction(-3, 10)]):
        got = evaluate(net, np.array([[v, 0] for v in values], dtype=object), "exact")
        assert got[0, 0] == 0, values
    assert evaluate(net, np.array([[0.5, 0], [np.float32(0.25), 0], [1, 0]], dtype=object), "exact")[0, 0] == Fraction(7, 4)
    for bad, says in (("nan", "finite numbers"), (Decimal("inf"), "finite numbers"), ("abc", "needs numbers"),
                      ("1/0", "needs numbers"), (sympy.Float("0.1", 30), "pass a Fraction"), (None, "pass a Fraction")):
        with pytest.raises(EvaluationError, match=says):
            evaluate(net, np.array([[bad, 0]] * 3, dtype=object), "exact")


def test_a_large_exact_batch_runs_in_chunks_with_the_same_answers(monkeypatch):
    """2,040 sequences of 256 tokens asked for 8 GB of exact scores at once and ran out of memory (a fresh
    audit, 2026-11-28): a batch runs a few sequences at a time, with the answers and residual streams of
    one pass; a sequence whose scores alone are above the budget is refused."""
    import expressivity.network.exact as exact
    import math

    from expressivity import build_shift, embed
    from expressivity.network.exact import forward_exact

    net, _ = build_shift(6, math.inf)   # hardmax: an exact pass exists
    X = embed(net, np.random.default_rng(0).integers(-9, 9, size=(7, 6)).astype(float))
    whole, whole_res = forward_exact(net, X, return_residuals=True)
    assert exact.exact_chunk(net, 6) == exact.EXACT_SCORES_AT_ONCE // 36
    monkeypatch.setattr(exact, "EXACT_SCORES_AT_ONCE", 2 * 36)   # two sequences at a time
    assert exact.exact_chunk(net, 6) == 2
    parts, parts_res = forward_exact(net, X, return_residuals=True)
    assert (parts == whole).all() and all((a == b).all() for a, b in zip(parts_res, whole_res))
    assert (forward_exact(net, X[0]) == whole[0]).all()
    monkeypatch.setattr(exact, "EXACT_MAX_SCORES", 35)
    with pytest.raises(EvaluationError, match="exact evaluation at 6 tokens holds 36 exact attention scores a head"):
        forward_exact(net, X)


def test_a_log_type_position_bias_is_refused_in_exact_arithmetic():
    """fl(log 2) read as an exact rational made a tie that is not there: scores differing by -2.3e-17 in real
    arithmetic tied, and hardmax averaged two keys, 2.3466 for the answer 2 (an audit, 2026-11-29). A log bias
    has no exact value, as rotary heads have none; beta = 0 (all zeros) stays exact."""
    import math

    from expressivity.network import AttentionLayer, Head, Network, SlopeBias

    def net(beta):
        head = Head(np.array([[1.0]]), np.array([[1.0]]), np.array([[1.0]]), np.array([[1.0]]),
                    position_bias=SlopeBias("log", beta))
        return Network((AttentionLayer((head,), normalization="hardmax"),), labels=("x",))

    X = np.array([[1 + Fraction(math.log1p(1.0))], [Fraction(1)]], dtype=object)
    with pytest.raises(EvaluationError, match="log-type position bias"):
        evaluate(net(1.0), X, "exact")
    # without the bias, token 1's query (x = 1) picks the larger key, x_0: the residual 1 plus x_0, exactly
    assert evaluate(net(0), X, "exact")[1, 0] == X[1, 0] + X[0, 0]


def test_a_lin_slope_bias_with_a_float_beta_is_exact_in_the_exact_passes():
    """The exact passes read SlopeBias("lin", 0.1)'s float64 products as exact: fl(0.1 * 3) is not 3 fl(0.1), which
    moved scores across ties (found reviewing the log-bias refusal, 2026-11-29). Both exact passes now compute
    -beta s from beta's exact value: a query-key score of exactly 3 fl(0.1) ties the bias at distance 3."""
    from expressivity.network import AttentionLayer, Head, Network, SlopeBias
    from expressivity.network.exact_scaled import exact_bias

    bias = SlopeBias("lin", 0.1)
    assert exact_bias(bias, 4)[0, 3] == -3 * Fraction(0.1) != Fraction(-0.1 * 3)
    # query 0 (x = 1) scores key 0 at 1 * 1 + 0 and key 3 at 1 * (1 + 3 fl(0.1)) - 3 fl(0.1): an exact tie, which
    # hardmax averages; with the rounded bias key 3 lost by 2e-17 and key 0 alone was read
    one = np.array([[1.0]])
    head = Head(one, one, one, one, position_bias=bias)
    net = Network((AttentionLayer((head,), normalization="hardmax"),), labels=("x",))
    x3 = 1 + 3 * Fraction(0.1)
    X = np.array([[Fraction(1)], [Fraction(0)], [Fraction(0)], [x3]], dtype=object)
    for path in (evaluate(net, X, "exact"),):
        assert path[0, 0] == 1 + (1 + x3) / 2, path[0, 0]   # the residual 1 plus the mean of the two tied values
