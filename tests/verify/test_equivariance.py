"""Yun et al. Claim 1: networks without positional information are permutation-equivariant."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from expressivity.constructions.circuits import embed, get_circuit
from expressivity.network import AttentionLayer, Network, evaluate
from expressivity.network.exact import to_exact
from expressivity.verify.equivariance import check_equivariance
from tests.network.strategies import exact_friendly_networks, softmax_networks


@given(softmax_networks(position=False), st.integers(2, 6), st.integers(0, 10**6))
def test_position_free_networks_are_equivariant(net, n, seed):
    X = np.random.default_rng(seed).normal(size=(3, n, net.d))
    report = check_equivariance(net, X, seed=seed)
    assert not report.uses_position
    assert report.equivariant, report


@given(exact_friendly_networks(), st.integers(2, 5), st.integers(0, 10**6))
def test_equivariance_holds_exactly(net, n, seed):
    assume(not net.uses_position)  # the strategy may add a causal mask; those are tested below
    X = to_exact(np.random.default_rng(seed).integers(-3, 4, size=(2, n, net.d)))
    report = check_equivariance(net, X, seed=seed, dtype="exact")
    assert report.equivariant and report.max_deviation == 0.0


@given(st.integers(0, 10**6))
def test_positional_encoding_breaks_equivariance(seed):
    rng = np.random.default_rng(seed)
    n, d = 4, 3
    # Same random weights with and without a positional encoding: only the encoding differs.
    from tests.network.strategies import random_head

    layer = AttentionLayer((random_head(rng, d, integer=False),), normalization="softmax")
    plain = Network((layer,), labels=("a", "b", "c"))
    with_pe = Network((layer,), labels=("a", "b", "c"), positional_encoding=rng.normal(size=(n, d)))
    X = rng.normal(size=(4, n, d))
    assert check_equivariance(plain, X).equivariant
    broken = check_equivariance(with_pe, X)
    assert broken.uses_position and not broken.equivariant and broken.max_deviation > broken.tolerance


def test_circuits_break_exactly_when_they_use_position():
    rng = np.random.default_rng(0)
    for name in ("reverse", "shift", "reverse-dot", "attention", "sum", "mean", "max"):
        circuit = get_circuit(name)
        net, _ = circuit.make(6, 20.0 if circuit.scaled else None, input_range=2.0)   # values in [-1, 1)
        report = check_equivariance(net, embed(net, rng.uniform(-1, 1, size=(8, 6))))
        assert report.equivariant == (not circuit.positional), (name, report)


def test_causal_mask_breaks_equivariance():
    from expressivity.network import Head

    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.array([[1.0], [0.0]]), W_O=np.array([[0.0, 1.0]]))
    net = Network((AttentionLayer((head,), causal=True),), labels=("x", "out"))
    report = check_equivariance(net, np.random.default_rng(1).normal(size=(3, 5, 2)))
    assert net.uses_position and not report.equivariant


def test_non_finite_outputs_fail_the_check():
    # max with scale 1e308 on inputs above 1: the scores overflow to inf and the outputs are NaN. (Its claim now
    # covers only values whose scores stay finite, so the copy checked here carries no domain: a hand-built one.)
    import dataclasses

    net, _ = get_circuit("max").build(5, 1e308)
    net = dataclasses.replace(net, input_domain=None)
    X = embed(net, np.arange(1.0, 11.0).reshape(2, 5))
    with np.errstate(over="ignore", invalid="ignore"):
        report = check_equivariance(net, X)
    assert not report.finite_outputs and not report.equivariant and report.max_deviation == float("inf")


def test_the_report_counts_the_distinct_permutations_it_tried():
    """`--permutations 1000` at 2 tokens reported 1,000 permutations where one exists, and 1 token "8
    permutations" (only the identity): random draws repeated (an audit, 2026-11-28). Where n! - 1 is no more
    than asked, every permutation is tried."""
    net = get_circuit("sum").build(3)[0]
    X = embed(net, np.random.default_rng(0).normal(size=(2, 3)))
    report = check_equivariance(net, X, permutations=1000)
    assert report.permutations_per_sample == 5 and report.equivariant
    report = check_equivariance(net, X, permutations=3, seed=1)
    assert report.permutations_per_sample == 3
    one = get_circuit("sum").build(1)[0]
    assert check_equivariance(one, embed(one, np.ones((2, 1))), permutations=8).permutations_per_sample == 0


def test_a_number_of_permutations_past_any_check_is_refused():
    """Each permutation is a pass over every input and all n! - 1 are listed where no more are asked for:
    permutations=10**9 at 12 tokens would list 479M (a reread, 2026-11-28)."""
    import pytest

    from expressivity.errors import ExpressivityError

    net = get_circuit("sum").build(3)[0]
    X = embed(net, np.ones((1, 3)))
    for bad in (0, 10**9, 2.5, True):
        with pytest.raises(ExpressivityError, match="permutations must be an integer"):
            check_equivariance(net, X, permutations=bad)


def _causal_mean(normalization="softmax"):
    """One causal head writing the mean of coordinate 0 over the keys a query sees into coordinate 1."""
    from expressivity.network import Head

    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), W_V=np.array([[1.0], [0.0]]), W_O=np.array([[0.0, 1.0]]))
    return Network((AttentionLayer((head,), causal=True, normalization=normalization),), labels=("x", "out"))


def test_an_exact_check_measures_deviations_of_either_sign():
    """Mutation testing (2026-11-28): the exact path's deviation without abs() passed every test, since those
    were of equivariant networks; here every deviation is -1/2. By hand: X = (1, 0), (0, 0) gives outputs
    (1, 1), (0, 1/2); PX = (0, 0), (1, 0) gives (0, 0), (1, 1/2); P f(X) = (0, 1/2), (1, 1)."""
    from fractions import Fraction

    X = np.array([[[Fraction(1), 0], [Fraction(0), 0]]], dtype=object)
    report = check_equivariance(_causal_mean("hardmax"), X, dtype="exact")
    assert not report.equivariant and report.max_deviation == 0.5 and report.worst_permutation == [1, 0]


def test_outputs_that_turn_non_finite_only_under_a_permutation_fail_the_check(monkeypatch):
    """Mutation testing (2026-11-28): with f(X) finite and f(PX) NaN, NaN > worst is false, and only the check of
    the permuted outputs' finiteness keeps the law from being reported as holding."""
    import expressivity.verify.equivariance as equivariance

    evaluate, calls = equivariance._evaluate_in_chunks, []

    def nan_when_permuted(network, inputs, dtype):
        calls.append(1)
        out = evaluate(network, inputs, dtype)
        return out if len(calls) == 1 else np.full_like(out, np.nan)

    net = get_circuit("sum").build(3)[0]
    monkeypatch.setattr(equivariance, "_evaluate_in_chunks", nan_when_permuted)
    report = check_equivariance(net, embed(net, np.random.default_rng(0).normal(size=(2, 3))))
    assert not report.equivariant and not report.finite_outputs and report.max_deviation == float("inf")


def test_the_reversal_is_always_among_the_permutations_tried():
    """With one permutation asked for, it is the reversal, whatever the seed (a mutation survived that dropped it)."""
    X = np.random.default_rng(1).normal(size=(2, 5, 2))
    for seed in range(3):
        report = check_equivariance(_causal_mean(), X, permutations=1, seed=seed)
        assert report.worst_permutation == [4, 3, 2, 1, 0] and not report.equivariant


def test_the_default_tolerance_is_relative_to_the_outputs_scale():
    """1e-9 (float64) or 1e-4 (float32) times the largest |output|, at least 1 (a mutation of either constant or
    of the scaling passed every test)."""
    net = get_circuit("sum").build(3)[0]
    X = embed(net, np.array([[100.0, 200.0, 300.0]]))   # outputs up to 600
    scale = float(np.max(np.abs(evaluate(net, X))))
    assert scale > 500   # the sum, 600 up to rounding
    assert check_equivariance(net, X).tolerance == 1e-9 * scale
    assert abs(check_equivariance(net, X, dtype="float32").tolerance - 1e-4 * scale) <= 1e-6 * 1e-4 * scale
    small = embed(net, np.array([[1e-3, 0.0, 0.0]]))
    assert check_equivariance(net, small).tolerance == 1e-9   # below 1 the scale is 1
