"""The three evaluators implement one semantics: property tests on random small networks."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expressivity.network import evaluate
from expressivity.network.evaluate import compare_evaluators
from tests.network.strategies import ROWS, exact_friendly_networks, input_length, softmax_networks


def _close(out, ref, rel=1e-10):
    return np.allclose(out, ref, rtol=rel, atol=rel * (1 + np.abs(ref).max()))


@settings(max_examples=300)
@given(softmax_networks(position=True), st.integers(1, ROWS), st.integers(0, 10**6))
def test_torch_float64_matches_reference(net, n, seed):
    X = np.random.default_rng(seed).normal(size=(3, input_length(net, n), net.d_in))
    assert _close(evaluate(net, X, "torch-float64"), evaluate(net, X, "float64"))


def _has_inexact_part(net) -> bool:
    layers = net.layers
    return (net.final_norm is not None or any(layer.norm is not None for layer in layers)
            or any(getattr(layer, "normalization", None) == "softmax" for layer in layers)
            or any(getattr(getattr(layer, "activation", None), "kind", None) == "gelu" for layer in layers))


@given(softmax_networks(norms=False), st.integers(1, ROWS), st.integers(0, 10**6))
def test_float32_disagreement_is_reported_and_small(net, n, seed):
    X = np.random.default_rng(seed).normal(size=(2, input_length(net, n), net.d_in))
    report = compare_evaluators(net, X)
    assert isinstance(report["exact"], str) == _has_inexact_part(net)
    scale = 1 + np.abs(evaluate(net, X, "float64")).max()
    # float32 rounding: a few ulps per operation, relative to the output scale.
    assert 0 <= report["float32"] <= 1e-4 * scale, report
    assert report["torch-float64"] <= 1e-10 * scale


@settings(max_examples=200)
@given(exact_friendly_networks(), st.integers(1, ROWS), st.integers(0, 10**6))
def test_exact_matches_reference_on_integer_inputs(net, n, seed):
    X = np.random.default_rng(seed).integers(-3, 4, size=(2, input_length(net, n), net.d_in)).astype(float)
    exact = evaluate(net, X.astype(int).astype(object), "exact")
    ref = evaluate(net, X, "float64")
    torch64 = evaluate(net, X, "torch-float64")
    exact_f = exact.astype(float)
    tol = 1e-9 * (1 + np.abs(exact_f).max())
    assert np.allclose(ref, exact_f, atol=tol)
    assert np.allclose(torch64, exact_f, atol=tol)


def test_reference_returns_residual_stream_per_layer():
    from expressivity.network import Network
    from expressivity.network.reference import forward
    from tests.network.strategies import random_ffn

    rng = np.random.default_rng(0)
    net = Network((random_ffn(rng, 2, integer=True, piecewise=False), random_ffn(rng, 2, integer=True, piecewise=True)),
                  labels=("a", "b"))
    X = rng.normal(size=(4, 2))
    out, residuals = forward(net, X, return_residuals=True)
    assert len(residuals) == 3 and np.array_equal(residuals[0], X) and np.array_equal(residuals[-1], out)


@settings(max_examples=50)
@given(softmax_networks(position=True), st.integers(1, ROWS), st.integers(0, 10**6), st.booleans())
def test_torch_residual_stream_matches_the_reference_per_layer(net, n, seed, single):
    from expressivity.network.reference import forward
    from expressivity.network.torch_eval import forward_torch

    shape = (input_length(net, n), net.d_in) if single else (2, input_length(net, n), net.d_in)
    X = np.random.default_rng(seed).normal(size=shape)
    out, residuals = forward_torch(net, X, "float64", return_residuals=True)
    ref_out, ref_residuals = forward(net, X, return_residuals=True)
    assert _close(out, ref_out) and np.array_equal(out, forward_torch(net, X, "float64"))
    assert len(residuals) == len(net.layers) + 1
    for H, ref in zip(residuals, ref_residuals):
        assert H.shape == ref.shape and _close(H, ref)


@settings(max_examples=30)
@given(exact_friendly_networks(), st.integers(1, ROWS), st.integers(0, 10**6))
def test_evaluate_returns_each_evaluators_residuals_from_one_pass(net, n, seed):
    from unittest import mock

    from expressivity.inspect.run import run_network
    from expressivity.network import reference
    from expressivity.network.exact import forward_exact
    from expressivity.network.torch_eval import forward_torch

    X = np.random.default_rng(seed).integers(-3, 4, size=(input_length(net, n), net.d_in))
    own = {"exact": lambda Z: forward_exact(net, Z, return_residuals=True),
           "float64": lambda Z: reference.forward(net, Z, return_residuals=True),
           "torch-float64": lambda Z: forward_torch(net, Z, "float64", return_residuals=True),
           "float32": lambda Z: forward_torch(net, Z, "float32", return_residuals=True)}
    for dtype, evaluator in own.items():
        inputs = X.astype(object) if dtype == "exact" else X.astype(float)
        out, residuals = evaluate(net, inputs, dtype, return_residuals=True)
        want_out, want_residuals = evaluator(inputs)
        assert np.array_equal(out, evaluate(net, inputs, dtype)) and np.array_equal(out, want_out)
        assert len(residuals) == len(net.layers) + 1
        assert all(np.array_equal(H, W) for H, W in zip(residuals, want_residuals))
    with mock.patch.object(reference, "forward", wraps=reference.forward) as forward:
        result = run_network(net, X.astype(float), "float64", residuals=True)
    assert forward.call_count == 1 and len(result["residuals"]) == len(net.layers) + 1


@pytest.mark.parametrize("values, dtype", [([1e308, 1e308, 0.0], "float64"), ([3e38, 3e38, 0.0], "float32"),
                                           ([1e39, 1.0, 0.0], "float32")])
def test_a_float_overflow_is_no_answer_not_inf(values, dtype):
    # a fresh audit (2026-11-28): evaluate returned inf / NaN for a sum inside its claim ("any real [exact]"),
    # where the command line refuses the same input
    from expressivity import build_sum, embed
    from expressivity.errors import EvaluationError

    net, _ = build_sum(3)
    with pytest.raises(EvaluationError, match=f"non-finite outputs in {dtype} on this input"):
        evaluate(net, embed(net, values), dtype)
    assert not np.all(np.isfinite(evaluate(net, embed(net, values), dtype, check_finite=False)))
    exact = evaluate(net, embed(net, np.array([Fraction(v) for v in values], dtype=object)), "exact")
    assert exact[0, 0] == sum(Fraction(v) for v in values)


def test_bad_inputs_to_the_public_functions_are_one_line_errors():
    # a fresh audit (2026-11-28): each raised a raw ValueError / TypeError / OverflowError / RuntimeError /
    # AttributeError, or (complex X) silently dropped the imaginary part
    import torch

    from expressivity import build_shift, build_sum, embed
    from expressivity.errors import ExpressivityError
    from expressivity.export.transformer_lens import from_transformer_lens, save_transformer_lens, to_transformer_lens

    net, _ = build_shift(4, float("inf"))
    X = embed(net, np.array([1.0, 2, 3, 4]))
    for bad, dtype, words in ((np.array([["a", 0]] * 4, dtype=object), "exact", "needs numbers, got 'a'"),
                              (np.array([[None, 0]] * 4, dtype=object), "exact", "needs numbers"),
                              (np.array([[10**400, 0]] * 4, dtype=object), "float64", "beyond the float64 range"),
                              (X.astype(complex) + 1j, "float64", "complex")):
        with pytest.raises(ExpressivityError, match=words):
            evaluate(net, bad, dtype)
    assert np.array_equal(evaluate(net, torch.tensor(X, requires_grad=True)), evaluate(net, X))
    with pytest.raises(ExpressivityError, match="allow_length must be True or False, got 'no'"):
        evaluate(net, X, allow_length="no")
    total, _ = build_sum(3)
    for call, words in ((lambda: to_transformer_lens("x"), "exports a Network, got str"),
                        (lambda: from_transformer_lens(total), "reads a TransformerLens bridge"),
                        (lambda: save_transformer_lens(total, "unused"), "writes a TLExport")):
        with pytest.raises(ExpressivityError, match=words):
            call()


def test_a_float_pass_too_large_to_hold_its_scores_is_refused_before_it_allocates(monkeypatch):
    """An any-length mean over 20,000 tokens raised NumPy's MemoryError from inside the reference pass
    (a fresh audit, 2026-11-28): refused first, with its size."""
    import importlib

    from expressivity import build_mean, embed, evaluate
    from expressivity.errors import EvaluationError

    net, _ = build_mean(4)
    with pytest.raises(EvaluationError, match="over 1 sequence.s. of 20,000 tokens holds 400,000,000 attention scores"):
        evaluate(net, embed(net, np.zeros(20000)))
    ev = importlib.import_module("expressivity.network.evaluate")   # the module, not the function of its name
    monkeypatch.setattr(ev, "MAX_FLOAT_SCORES", 3 * 64 - 1)
    X = embed(net, np.ones((3, 8)))
    for dtype in ("float64", "float32", "torch-float64"):
        with pytest.raises(EvaluationError, match="3 sequence.s. of 8 tokens holds 192 attention scores"):
            evaluate(net, X, dtype)
    assert evaluate(net, X[:2])[0, 0, 0] == 1.0


def test_an_input_of_the_wrong_rank_is_still_a_one_line_error_with_the_size_check_first():
    """The float pass's size check read the input's shape before the input was checked: a 1-D input
    raised "not enough values to unpack" (a review, 2026-11-28)."""
    import torch

    from expressivity import build_reverse, evaluate
    from expressivity.errors import ExpressivityError

    net, _ = build_reverse(3, 40.0)
    for X in ([1.0, 2.0, 3.0], 3.0, torch.zeros(3), [[1, 0], [2]]):
        with pytest.raises(ExpressivityError):
            evaluate(net, X, "float64")


@pytest.mark.parametrize("dtype", ["torch-float64", "float32"])
def test_a_mixing_shift_reaching_past_the_sequence_runs_as_the_reference_does(dtype):
    """MixingHead(left=3) on 2 tokens: the reference answered, torch raised "narrow(): length must be
    non-negative" (F.pad cropped more than the sequence) and `run --dtype float32` printed a traceback (an audit,
    2026-11-29). Every shift, inside or past the sequence on either side, agrees with the reference."""
    from expressivity.network import MixingHead, MixingLayer, Network, evaluate

    rng = np.random.default_rng(0)
    worst = 0.0
    for left in range(-6, 9):
        for K in (1, 2, 3, 5):
            for n in (1, 2, 6):
                head = MixingHead(rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), kernel=rng.normal(size=(K, 2)),
                                  left=left)
                net = Network((MixingLayer((head,)),), labels=("a", "b"))
                X = rng.normal(size=(n, 2))
                worst = max(worst, float(np.abs(evaluate(net, X, "float64") - evaluate(net, X, dtype)).max()))
    assert worst < (1e-12 if dtype == "torch-float64" else 1e-4), worst


def test_integer_weights_past_two_to_the_53_stay_exact():
    """An audit (2026-11-29): an int64 array (numpy's default for integer literals) past 2^53 was stored as float64,
    and the exact evaluator answered with the rounded weight, 9007199254740992 for 2^53 + 1."""
    from expressivity.network import Network
    from expressivity.network.numbers import as_weight

    net = Network((), ("x",), readout=np.array([[2**53 + 1]]))
    assert evaluate(net, [[1]], "exact").tolist() == [[2**53 + 1]]
    listed = as_weight([[np.int64(2**53 + 1), 1.5]])
    assert listed.dtype == object and [type(v) for v in listed.flat] == [int, float] and listed[0, 0] == 2**53 + 1
    assert as_weight(np.array([[3, -4]])).dtype == np.float64   # small integers stay fast
    assert as_weight(np.array([[2**64 - 1]], dtype=np.uint64))[0, 0] == 2**64 - 1


def test_a_bfloat16_tensor_is_read_exactly():
    """An audit (2026-11-29): a bfloat16 torch X raised numpy's TypeError; it widens to float64 exactly."""
    import torch

    from expressivity.network import FeedForwardLayer, Network

    net = Network((FeedForwardLayer(np.eye(2), np.zeros(2), np.eye(2)),), ("a", "b"))
    X = torch.tensor([[0.5, -1.25], [3.0, 0.0]], dtype=torch.bfloat16)
    for dtype in ("float64", "exact"):
        assert np.asarray(evaluate(net, X, dtype), dtype=float).tolist() == [[1.0, -1.25], [6.0, 0.0]]


def test_an_exact_breakpoint_past_the_float_range_evaluates_exactly():
    """An audit (2026-11-29): float() of a breakpoint 10^400 raised OverflowError in the scaled-integer path."""
    from expressivity.network import FeedForwardLayer, Network, PiecewiseLinear

    step = PiecewiseLinear((10**400,), (0, 1), (0, 0))
    net = Network((FeedForwardLayer(np.array([[1]], dtype=object), np.array([0], dtype=object),
                                    np.array([[1]], dtype=object), activation=step),), ("x",))
    assert evaluate(net, np.array([[10**401]], dtype=object), "exact").tolist() == [[2 * 10**401]]
    assert evaluate(net, np.array([[7]], dtype=object), "exact").tolist() == [[7]]


def test_layer_arguments_that_mean_nothing_are_refused():
    """An audit (2026-11-29): a NaN breakpoint built and every evaluator skipped it; causal="no" ran as causal;
    a convolution's left offset 1.7 was truncated to 1."""
    from expressivity.errors import NetworkError
    from expressivity.network import AttentionLayer, Head, MixingHead, PiecewiseLinear

    for args in (((float("nan"),), (0, 1), (0, 0)), ((0,), (0, float("inf")), (0, 0)), ((0,), (0, 1), (float("nan"), 0)),
                 ((0,), (0, 1), ("1", 0))):
        with pytest.raises(NetworkError, match="piecewise-linear activation: .* must be"):
            PiecewiseLinear(*args)
    assert PiecewiseLinear((float("-inf"), 1), (0, 1, 0), (0, 0, 2)).breakpoints[0] == float("-inf")   # open-ended
    head = Head(np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    with pytest.raises(NetworkError, match="causal must be True or False, got 'no'"):
        AttentionLayer((head,), causal="no")
    assert AttentionLayer((head,), causal=np.bool_(True)).causal is True
    with pytest.raises(NetworkError, match="left must be a whole number of tokens, got 1.7"):
        MixingHead(np.ones((1, 1)), np.ones((1, 1)), kernel=np.ones((3, 1)), left=1.7)


def test_a_refusal_at_the_float_limit_tells_the_value_from_the_limit():
    """An audit (2026-11-29): "a value of magnitude 56295 is beyond 56295" (both at 6 digits)."""
    from expressivity import build_reverse, embed
    from expressivity.errors import NetworkError

    import re

    net, _ = build_reverse(6)
    limit = net.input_domain.arithmetic["float64"]   # 56294.995...
    for top in (limit + 1e-7, 56294.999):   # the second once read "56295 + 0.0037 is beyond 56295" (a review)
        v = np.array([top - 0.5, top - 0.4, top - 0.3, top - 0.2, top - 0.1, top])
        with pytest.raises(NetworkError) as info:
            evaluate(net, embed(net, v))
        shown, bound = re.search(r"magnitude (\S+) is beyond (\S+),", str(info.value)).groups()
        assert float(bound) < float(shown) <= top and abs(float(bound) - limit) < 1e-3, str(info.value)


def test_piecewise_numbers_of_every_kind_are_stored_as_the_evaluators_read_them():
    """A review (2026-11-29): a Decimal breakpoint was refused as NaN; an np.float32 breakpoint broke exact
    evaluation and an np.int64 slope the save; sympy's oo is an open end as float -inf is."""
    from decimal import Decimal

    import sympy

    from expressivity.network import FeedForwardLayer, Network, PiecewiseLinear

    step = PiecewiseLinear((np.float32(0.5),), (0, np.int64(1)), (0, Decimal("0.25")))
    assert [type(v) for v in step.breakpoints + step.slopes + step.intercepts] == [float, int, int, int, Fraction]
    net = Network((FeedForwardLayer(np.array([[1]], dtype=object), np.array([0], dtype=object),
                                    np.array([[1]], dtype=object), activation=step),), ("x",))
    assert evaluate(net, np.array([[1]], dtype=object), "exact").tolist() == [[Fraction(9, 4)]]
    open_ended = PiecewiseLinear((-sympy.oo, sympy.Rational(1, 3)), (0, 1, 0), (0, 0, sympy.Float(2.5)))
    assert open_ended.breakpoints == (float("-inf"), Fraction(1, 3)) and open_ended.intercepts[2] == 2.5
