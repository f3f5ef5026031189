"""The scaled-integer fast path of ``forward_exact`` gives the Fraction path's numbers, of the same
types; it takes exactly the networks it can, and everything else falls back or is refused."""

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expressivity.errors import EvaluationError, NetworkError
from expressivity.network import (GELU, AttentionLayer, FeedForwardLayer, Head, LayerNorm, MixingHead, MixingLayer,
                                  Network, PiecewiseLinear, SlopeBias)
from expressivity.network import exact, exact_scaled
from expressivity.network.exact import forward_exact
from expressivity.network.exact_scaled import forward_scaled, scaled_refusal
from tests.network.strategies import ROWS, exact_matrix, input_length, scaled_networks


def _same(fast: np.ndarray, reference: np.ndarray) -> bool:
    """Equal shapes, values and Python types entry by entry (``Fraction(2)`` is not ``2``)."""
    return (fast.shape == reference.shape and fast.tolist() == reference.tolist()
            and [type(v) for v in fast.flat] == [type(v) for v in reference.flat])


@settings(max_examples=150)
@given(scaled_networks(), st.integers(1, ROWS), st.integers(1, 3), st.integers(0, 10**6))
def test_fast_path_equals_the_fraction_path_in_values_and_types(net, n, batch, seed):
    assert scaled_refusal(net) is None      # the drawn network takes the fast path
    X = exact_matrix(np.random.default_rng(seed), (batch, input_length(net, n), net.d_in))
    fast, fast_residuals = forward_exact(net, X, return_residuals=True)
    reference, reference_residuals = forward_exact(net, X, return_residuals=True, fast=False)
    assert _same(fast, reference)
    assert len(fast_residuals) == len(reference_residuals) == len(net.layers) + 1
    assert all(_same(a, b) for a, b in zip(fast_residuals, reference_residuals))
    assert _same(forward_exact(net, X[0]), reference[0])      # one unbatched sequence


def _one_head(lam, causal=False) -> Network:
    head = Head(np.eye(1), np.eye(1), np.eye(1), np.eye(1))
    return Network((AttentionLayer((head,), normalization="hardmax", inverse_temperature=lam, causal=causal),),
                   labels=("x",))


@pytest.mark.parametrize("lam, causal, update", [
    (1, False, [3, 3, 3]),                           # x_i x_j is largest at the largest key
    (-1, False, [1, 1, 1]),                          # a negative lam flips the arg-max to the smallest key
    (0, False, [2, 2, 2]),                           # all keys tie: the mean
    (-1, True, [1, 1, 1]),
    (1, True, [1, 2, 3]),                            # the causal mask hides later keys
])
def test_inverse_temperature_sign_ties_and_causal_masks(lam, causal, update):
    X = np.array([[1], [2], [3]], dtype=object)
    net = _one_head(lam, causal)
    # hardmax weights are Fractions, so every entry after the layer is one, whole or not
    expected = np.array([[Fraction(x + u)] for x, u in zip([1, 2, 3], update)], dtype=object)
    assert _same(forward_exact(net, X, fast=False), expected)
    assert _same(forward_exact(net, X), expected)


def _ffn(activation=None, norm=None) -> FeedForwardLayer:
    kw = {} if activation is None else {"activation": activation}
    return FeedForwardLayer(np.ones((1, 1)), np.array([-0.5]), np.ones((1, 1)), norm=norm, **kw)


LN = LayerNorm(np.ones(1), np.zeros(1))
MIXING = MixingLayer((MixingHead(np.eye(1), np.eye(1), kernel=np.array([[1.0], [Fraction(1, 3)]]), left=1),))
OPEN_ENDED = PiecewiseLinear((float("-inf"), 1), (0, 1, 0), (Fraction(1, 2), 0, 2))


@pytest.mark.parametrize("layers, reason", [
    ((MIXING,), "layer 0: mixing layers run on the Fraction path"),
    ((_ffn(), _ffn(OPEN_ENDED)), "layer 1: a piecewise activation with an infinite breakpoint"),
])
def test_exact_features_the_fast_path_leaves_out_fall_back_to_the_reference(layers, reason):
    net = Network(layers, labels=("x",))
    assert scaled_refusal(net).startswith(reason)
    X = np.array([[[Fraction(1, 2)], [2], [-1]]], dtype=object)
    assert _same(forward_exact(net, X), forward_exact(net, X, fast=False))
    with pytest.raises(EvaluationError, match="does not take"):
        forward_scaled(net, X)


@pytest.mark.parametrize("net, reason", [
    (Network((_ffn(GELU()),), labels=("x",)), "layer 0: the gelu activation"),
    (Network((_ffn(norm=LN),), labels=("x",)), "layer 0: a layer norm"),
    (Network((_ffn(),), labels=("x",), final_norm=LN), "the final layer norm"),
    (Network((AttentionLayer((Head(np.eye(1), np.eye(1), np.eye(1), np.eye(1)),), normalization="softmax"),),
             labels=("x",)), "layer 0: softmax"),
    (Network((AttentionLayer((Head(np.ones((1, 2)), np.ones((1, 2)), np.eye(1), np.eye(1), rotary=True),),
                             normalization="hardmax"),), labels=("x",)), "layer 0: rotary heads"),
    (Network((AttentionLayer((Head.dp_free(np.eye(1), np.eye(1), SlopeBias("lin", 1.0)),), causal=True,
                             normaliser="infinite"),), labels=("x",)), "layer 0: the infinite-past normaliser"),
])
def test_what_has_no_exact_value_is_refused_by_both_paths(net, reason):
    assert scaled_refusal(net).startswith(reason)
    X = np.ones((1, 2, 1), dtype=object)
    with pytest.raises(EvaluationError, match="no exact value"):
        forward_exact(net, X)
    with pytest.raises(EvaluationError, match="does not take"):
        forward_scaled(net, X)


def test_a_layer_kind_without_a_scaled_rule_fails_loudly():
    # every kind the exact evaluator knows has a scaled-integer rule (a fallback counts) ...
    assert set(exact_scaled._RULES) == set(exact._RULES)
    # ... and a kind neither knows is an error naming the evaluator, never a silent fallback
    stranger = SimpleNamespace(layers=(SimpleNamespace(kind="made-up"),), final_norm=None)
    with pytest.raises(NetworkError, match="scaled-integer evaluator has no rule for layer kind 'made-up'"):
        scaled_refusal(stranger)
