"""Every construction records the inputs its claim covers: the claim holds at the edge of that
domain, and inputs just beyond it are refused (and, run anyway, break the claim where the
construction's bound depends on it)."""

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from expressivity.constructions.circuits import CIRCUITS, embed
from expressivity.constructions.circuits.check import rounding_allowance, run_circuit
from expressivity.constructions.domains import domain_from_report
from expressivity.errors import ExpressivityError, NetworkError
from expressivity.network import evaluate

L = 6


def _edge_values(spread: float) -> np.ndarray:
    """``L`` values spanning exactly ``spread``, and not in order (so reversal and shifts move them)."""
    return np.array([0.3, spread + 0.3, 1.3, 0.8, 0.3 + spread / 2, 2.3])[:L]


@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_every_circuit_meets_its_claim_at_the_edge_of_its_domain(name):
    circuit = CIRCUITS[name]
    run = run_circuit(name, list(_edge_values(5.0)), input_range=5.0 if circuit.ranged else None)
    net, domain = run.network, run.network.input_domain
    assert domain is not None and domain.origin == "recorded" and domain.dims == ("x",)
    edge = _edge_values(5.0)
    assert net.outside_claim(embed(net, edge)) is None
    out = evaluate(net, embed(net, edge))
    target = np.asarray(circuit.target(edge), dtype=float)
    bound = run.report.bounds["max_abs_error"] + rounding_allowance("float64", edge, target)
    assert np.max(np.abs(out - target)) <= bound


@pytest.mark.parametrize("name", [n for n, c in sorted(CIRCUITS.items()) if c.ranged])
def test_a_ranged_circuit_refuses_just_beyond_its_range_and_is_wrong_far_beyond(name):
    circuit = CIRCUITS[name]
    run = run_circuit(name, list(_edge_values(5.0)), input_range=5.0)
    net = run.network
    beyond = _edge_values(5.0 * (1 + 1e-9))
    with pytest.raises(NetworkError, match=r"above 5, outside the inputs.*--input-range R"):
        evaluate(net, embed(net, beyond))
    far = _edge_values(1e12)
    out = evaluate(net, embed(net, far), allow_outside=True)
    assert np.max(np.abs(out - np.asarray(circuit.target(far), dtype=float))) > 1.0   # why it is refused


@pytest.mark.parametrize("name", ["reverse", "shift", "previous", "reverse-dot"])
def test_hardmax_circuits_claim_every_value_exactly(name):
    run = run_circuit(name, [1, 2, 3, 4, 5, 6], scale=math.inf, dtype="exact")
    domain = run.network.input_domain
    assert domain.exact and domain.fields[0].spread is None
    huge = [10 ** 400, -(10 ** 400), Fraction(1, 3), 0, 7, 10 ** 30]
    out = evaluate(run.network, embed(run.network, np.array(huge, dtype=object)), "exact")[:, 0]
    assert list(out) == list(CIRCUITS[name].target(np.array(huge, dtype=object))[:, 0])


def test_input_range_applies_only_where_the_bound_depends_on_it():
    for name in ("mean", "sum", "max", "attention"):
        with pytest.raises(ExpressivityError, match="takes no input range"):
            run_circuit(name, [1, 2, 3], input_range=10.0)
    with pytest.raises(ExpressivityError, match="under hardmax takes no input range"):
        run_circuit("reverse", [1, 2, 3], scale=math.inf, input_range=10.0)
    with pytest.raises(ExpressivityError, match="span 5 .*more than the input range 2"):
        run_circuit("reverse", [1, 2, 6], input_range=2.0)
    wide = run_circuit("reverse", [1, 2, 3], input_range=1e12)
    assert wide.network.input_domain.fields[0].spread == 1e12
    assert wide.report.constants["scale"] > run_circuit("reverse", [1, 2, 3]).report.constants["scale"]


def test_exact_values_are_inside_the_domain_they_were_built_on():
    values = [Fraction(1, 3), Fraction(2, 3), Fraction(5, 3)]   # the float spread rounds below the exact 4/3
    net = run_circuit("reverse", values).network
    assert net.outside_claim(embed(net, np.array(values, dtype=object))) is None


def test_yun_networks_claim_the_unit_cube():
    from expressivity.constructions.yun.build import build_yun

    result = build_yun("mean-shift", n=2, d=1, delta="1/2", samples=200)
    soft, modified = result.softened, result.build.network
    edge = np.array([[0.0], [1 - 2.0 ** -10]])
    assert soft.outside_claim(edge) is None
    # a rounding below 1: on the softened quantizer's ramp (1 - epsilon, 1), which the claim leaves out
    assert "below the quantizer breakpoint 1: on the softened ramp" in soft.outside_claim(
        np.array([[0.0], [np.nextafter(1.0, 0.0)]]))
    with pytest.raises(NetworkError, match=r"outside \[0, 1\).*rescale the inputs"):
        evaluate(soft, np.array([[0.0], [1.0]]))
    with pytest.raises(NetworkError, match="outside"):
        evaluate(soft, np.array([[np.nextafter(0.0, -1.0)], [0.5]]))
    # the modified network equals g_bar everywhere without positions (0 outside the cube), exactly
    assert modified.input_domain.exact and modified.outside_claim(np.array([[-3.0], [7.0]])) is None


def test_yun_networks_claim_only_the_arithmetic_that_keeps_their_answer():
    # fresh audits (2026-11-28): the modified network's float64 answer for x = 1e300 was the in-cube one (the
    # quantizer's x + (out - x) rounded to 0); then, with floats limited to 2^52 / 2^23, float64 answered
    # 47.5 for a target in [0, 1] at x = 2^52 - 1/2, a breakpoint k/3 stored rounded sent 0.3333333333333333
    # to the next cell, and float32 answered another cell's value on most random inputs of n = d = 2; the
    # softened network answered 517 in float32. The modified network's claim is exact arithmetic only.
    from expressivity.constructions.yun.build import build_yun

    result = build_yun("smooth-rank", n=2, d=1, delta="1/4", samples=200)
    soft, modified = result.softened, result.build.network
    near = np.array([[2.0 ** 52 - 0.5], [0.7]])
    assert evaluate(modified, near.astype(object), "exact").tolist() == [[0], [0]]
    # what float64 answers: another cell's value (47.5 before the output clamp bounded it by the target's range)
    assert np.max(np.abs(evaluate(modified, near, allow_outside=True))) > 0.5
    for dtype in ("float64", "float32", "torch-float64"):
        with pytest.raises(NetworkError, match=r"holds in exact arithmetic, not (float64|float32)"):
            evaluate(modified, np.array([[0.25], [0.5]]), dtype)
    assert modified.outside_claim(near, "float64") and modified.outside_claim(near, "exact") is None
    third = build_yun("smooth-rank", n=2, d=1, delta="1/3", samples=200).build.network
    below = np.array([[0.3333333333333333], [0.9]])
    exact = evaluate(third, below.astype(object).copy(), "exact")
    assert not np.allclose(evaluate(third, below, allow_outside=True), np.asarray(exact, dtype=float))
    inside = np.array([[0.02], [0.99]])
    with pytest.raises(NetworkError, match=r"holds in float64 arithmetic, not float32"):
        evaluate(soft, inside, "float32")
    assert soft.outside_claim(inside, "float64") is None
    assert np.all(np.isfinite(evaluate(soft, inside, "float32", allow_outside=True)))


def test_wang_e_signal_constructions_claim_minus_one_to_one():
    from expressivity.constructions.wang_e.essential import build_kernel_memory
    from expressivity.constructions.wang_e.fixed import build_fixed_memory

    for net, _ in (build_fixed_memory("1,3", readout="linear"), build_kernel_memory("exp")):
        edge = np.array([[1.0], [-1.0], [1.0], [-1.0], [0.5]])
        assert net.outside_claim(edge) is None
        beyond = edge.copy()
        beyond[2, 0] = np.nextafter(1.0, 2.0)
        with pytest.raises(NetworkError, match=r"outside \[-1, 1\]"):
            evaluate(net, beyond)


def _pointer_input(values, pointers, T):
    X = np.zeros((len(values), 2 + T))
    X[:, 0] = values
    X[0, 1] = 1
    for t, p in enumerate(pointers):
        if p:
            X[t, 1 + p] = 1
    return X


@pytest.mark.parametrize("build", ["adaptive-hard", "adaptive-soft", "dpfree"])
def test_pointer_constructions_claim_pointers_inside_the_sequence(build):
    from expressivity.constructions.wang_e.adaptive import build_adaptive_memory
    from expressivity.constructions.wang_e.dpfree import build_dpfree_pointer

    T = 3
    net, _ = {"adaptive-hard": lambda: build_adaptive_memory(T, 1, 8),
              "adaptive-soft": lambda: build_adaptive_memory(T, 1, 8, beta=40.0),
              "dpfree": lambda: build_dpfree_pointer(T, 8)}[build]()
    values = [0.0, 1.0, -1.0, 0.5, 0.25, -0.75]
    edge = _pointer_input(values, [0, 1, 2, 3, 3, 3], T)                   # p_t = t at t = 1, 2, 3: the edge
    assert net.outside_claim(edge) is None
    dtype = "float64" if build == "adaptive-soft" else "exact"    # hardmax chains are checked (and claimed) exactly
    if dtype == "exact":
        with pytest.raises(NetworkError, match="holds in exact arithmetic, not float32"):
            evaluate(net, edge, "float32")
    out = np.asarray(evaluate(net, edge, dtype)[:, 0], dtype=float)
    want = [values[t - p] for t, p in enumerate([0, 1, 2, 3, 3, 3])][1:]
    assert np.max(np.abs(out[1:] - want)) < 1e-6
    for pointers, message in (([0, 2, 2, 3, 3, 3], "before the start"), ([1, 1, 2, 3, 3, 3], "sets a pointer")):
        with pytest.raises(NetworkError, match=message):
            evaluate(net, _pointer_input(values, pointers, T), dtype)
    no_start = edge.copy()
    no_start[0, 1] = 0
    with pytest.raises(NetworkError, match="start"):
        evaluate(net, no_start, dtype)
    big = edge.copy()
    big[4, 0] = 1e6
    if build == "adaptive-hard":                        # a hardmax hop copies any value exactly
        assert net.outside_claim(big) is None
    else:
        with pytest.raises(NetworkError, match=r"outside \[-1, 1\]"):
            evaluate(net, big, dtype)


def test_the_dp_free_parity_claims_signs_from_its_largest_lag_on():
    from expressivity.constructions.wang_e.dpfree import build_dpfree_boolean

    net, _ = build_dpfree_boolean((1, 3), 8)
    assert net.input_domain.claimed_from == 3 and "from position 3" in net.input_domain.describe()
    with pytest.raises(NetworkError, match=r"not one of \{-1, 1\}"):
        evaluate(net, np.array([[1.0], [-1.0], [0.0], [1.0]]))


def test_token_models_claim_their_vocabulary():
    from expressivity.nn.convert import to_network
    from expressivity.nn.model import Model, ModelConfig

    net = to_network(Model(ModelConfig(vocab_size=5, d_out=5, max_len=8, layers=1, heads=1, d_model=8,
                                       ffn_width=8)).double())
    assert net.input_domain.names() == (0, 1, 2, 3, 4)
    with pytest.raises(NetworkError, match="not 0 or 1"):
        evaluate(net, np.full((3, 5), 0.2))


@pytest.mark.parametrize("name", ["reverse", "shift", "max", "sum", "reverse-dot"])
def test_a_domain_is_rebuilt_from_an_old_report(name):
    run = run_circuit(name, [1, 2, 3, 4, 5, 6])
    old = replace(run.network, input_domain=None, metadata={"circuit": name})
    derived = domain_from_report(run.report.as_dict(), old)
    assert derived.origin.startswith("derived from") and replace(derived, origin="recorded") == run.network.input_domain
