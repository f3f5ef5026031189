"""The tutorial circuits' check (constructions/circuits/check.py): the proven bound and rounding allowance as
documented, a wrong circuit failing just past its bound, and its refusals.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import dataclasses
import math
from fractions import Fraction
import numpy as np
import pytest
from expressivity.errors import ExpressivityError

EPS64 = 2.0 ** -53   # float64's unit roundoff


def _shifted(monkeypatch, name, delta, where=(0, 0)):
    """Make run_circuit see circuit `name` with a target moved by `delta` at one entry (a wrong network)."""
    import expressivity.constructions.circuits.check as chk
    from expressivity.constructions.circuits import get_circuit
    c = get_circuit(name)

    def target(values, **kw):
        t = np.array(c.target(values, **kw), dtype=object if np.asarray(values).dtype == object else None, copy=True)
        t[where] = t[where] + delta
        return t
    monkeypatch.setattr(chk, "get_circuit", lambda n: dataclasses.replace(c, target=target))
    return chk


def test_check_rounding_allowance_is_the_documented_formula():
    from expressivity.constructions.circuits.check import rounding_allowance
    v = np.array([1.0, -2.0, 3.0])
    t = np.array([[6.0], [0.5]])
    # 8 * eps * L * (1 + sum|v| + max|target|)  (module docstring)
    want = 8 * EPS64 * 3 * (1 + 6 + 6)
    assert rounding_allowance("float64", v, t) == pytest.approx(want, rel=1e-12)
    assert rounding_allowance("exact", v, t) == 0.0


def test_check_rounding_allowance_refuses_overflow():
    from expressivity.constructions.circuits.check import rounding_allowance
    with pytest.raises(ExpressivityError):
        rounding_allowance("float64", np.array([np.inf, 1.0]), np.array([[1.0]]))   # unreachable via run_circuit (L <= 4096)


def test_check_bound_recorded_is_proven_bound_plus_allowance():
    from expressivity.constructions.circuits.check import run_circuit
    vals = [1.0, 0.5, -0.25, 2.0]
    run = run_circuit("reverse", vals, dtype="float64", tolerance=1e-10)
    chk = run.report.checks[-1]
    proven = run.report.bounds["max_abs_error"]
    allowance = 8 * EPS64 * 4 * (1 + 3.75 + 2.0)
    assert chk.details["bound"] == pytest.approx(proven + allowance, rel=1e-12)
    assert run.report.errors[-1].value == pytest.approx(float(np.max(np.abs(run.output - run.target))), rel=0, abs=0)


def test_check_exact_run_counts_a_half_off_entry(monkeypatch):
    chk = _shifted(monkeypatch, "sum", Fraction(1, 2))
    run = chk.run_circuit("sum", [1, Fraction(1, 2), 3], dtype="exact")
    c = run.report.checks[-1]
    assert c.failures == 1 and not run.report.ok and run.max_abs_error_exact == Fraction(1, 2)


@pytest.mark.parametrize("factor", [1.5, 4.0])
def test_check_float_run_fails_just_beyond_the_bound(monkeypatch, factor):
    from expressivity.constructions.circuits.check import run_circuit
    vals = [1.0, 0.5, -0.25, 2.0]
    clean = run_circuit("reverse", vals, dtype="float64", tolerance=1e-10)
    B = clean.report.bounds["max_abs_error"] + 8 * EPS64 * 4 * (1 + 3.75 + 2.0)
    err = clean.max_abs_error
    # target moved by factor * B + the clean error: |output - target'| >= factor * B > B
    chk = _shifted(monkeypatch, "reverse", factor * B + err)
    run = chk.run_circuit("reverse", vals, dtype="float64", tolerance=1e-10)
    assert run.report.checks[-1].failures >= 1 and not run.report.ok


def test_check_float_sum_that_cancels_is_refused():
    # float64: 1e30 + 1 - 1e30 is not 1; within the rounding allowance, outside the exact claim
    from expressivity.constructions.circuits.check import run_circuit
    with pytest.raises(ExpressivityError, match="differs from the exact one"):
        run_circuit("sum", [1e30, 1, -1e30], dtype="float64")


def test_check_values_beyond_the_input_range_are_refused():
    from expressivity.constructions.circuits.check import run_circuit
    with pytest.raises(ExpressivityError, match="input range"):
        run_circuit("reverse", [0.0, 3.0], dtype="float64", input_range=2.0)   # spread 3 > 2


def test_check_zero_tolerance_and_zero_input_range_are_refused():
    from expressivity.constructions.circuits.check import run_circuit
    with pytest.raises(ExpressivityError):
        run_circuit("reverse", [0.0, 0.0], dtype="float64", tolerance=0.0)
    with pytest.raises(ExpressivityError):
        run_circuit("reverse", [0.0, 0.0], dtype="float64", input_range=0.0)


def test_check_non_finite_target_is_an_overflow_refusal():
    from expressivity.constructions.circuits.check import run_circuit
    with pytest.raises(ExpressivityError, match="non-finite"):
        run_circuit("sum", [1e308, 1e308], dtype="float64")


def test_check_recorded_range_holds_the_exact_values_it_was_built_on():
    # spread 1/3 is not a double; float(1/3) < 1/3, so the range recorded must be rounded up
    from expressivity.constructions.circuits.check import run_circuit
    run = run_circuit("reverse", [0, Fraction(1, 3)], dtype="float64")
    from expressivity.constructions.circuits.build import embed
    X = embed(run.network, np.array([Fraction(0), Fraction(1, 3)], dtype=object))
    assert run.network.input_domain.violation(X, run.network.input_labels, None) is None


def test_check_float_run_fails_at_one_and_a_half_bounds(monkeypatch):
    from expressivity.constructions.circuits.check import run_circuit
    vals = [1.0, 0.5, -0.25, 2.0]
    clean = run_circuit("reverse", vals, dtype="float64", tolerance=1e-10)
    B = clean.report.bounds["max_abs_error"] + 8 * EPS64 * 4 * (1 + 3.75 + 2.0)
    e00 = float(clean.output[0, 0] - clean.target[0, 0])
    chk = _shifted(monkeypatch, "reverse", e00 + 1.5 * B)   # |output - target'| = 1.5 B at (0, 0)
    run = chk.run_circuit("reverse", vals, dtype="float64", tolerance=1e-10)
    assert run.report.checks[-1].failures == 1 and not run.report.ok


def test_check_rounding_allowance_recorded():
    from expressivity.constructions.circuits.check import run_circuit
    run = run_circuit("reverse", [1.0, 0.5, -0.25, 2.0], dtype="float64", tolerance=1e-10)
    assert run.report.checks[-1].details["rounding_allowance"] == pytest.approx(8 * EPS64 * 4 * (1 + 3.75 + 2.0), rel=1e-9)


def test_check_input_range_under_hardmax_is_refused():
    from expressivity.constructions.circuits.check import run_circuit
    with pytest.raises(ExpressivityError, match="takes no input range"):
        run_circuit("reverse", [0.0, 1.0], scale=math.inf, input_range=2.0)


def test_the_max_circuit_s_float_limit_keeps_its_scores_finite():
    """An audit (2026-11-28): build_max(4, 1e308) claimed float64 for |x| up to 75,060 and its scores 1e308 x
    overflowed at x = 2; build_max(4, 1e-300) failed naming a limit, not the scale; 10**400 raised OverflowError."""
    import math

    import numpy as np

    from expressivity import build_max, embed, evaluate
    from expressivity.errors import ExpressivityError, NetworkError

    for scale in (1e308, 1e300, 1e3, 1e-300):
        net, _ = build_max(4, scale)
        limit = net.input_domain.arithmetic["float64"]
        assert limit <= 1.7976931348623157e308 / (2 * scale)
        if limit >= 3:   # inside the claim: a finite answer, the max within the bound
            assert evaluate(net, embed(net, np.array([2.0, 3.0, 1.0, 0.0]))).ravel() == pytest.approx([3.0] * 4,
                                                                                                     abs=1.5)
        else:
            with pytest.raises(NetworkError, match="largest float64 carries"):
                evaluate(net, embed(net, np.array([2.0, 3.0, 1.0, 0.0])))
    with pytest.raises(ExpressivityError, match="beyond float64's range"):
        build_max(4, 10 ** 400)
    hard, _ = build_max(4, math.inf)   # hardmax: no scores to overflow, exact for any values
    assert evaluate(hard, embed(hard, np.array([2e300, 3e300, 1.0, 0.0]))).ravel().tolist() == [3e300] * 4


@pytest.mark.parametrize("name,values,input_range", [("reverse", "0.3,1.1", None), ("shift", "0.3,1.1,0.5", None),
                                                     ("shift", "0.3,1.1,0.5", 0.8), ("reverse", "0.3,1.1", 0.8)])
def test_decimal_inputs_whose_float_spread_rounds_up_are_run_not_refused(name, values, input_range):
    """0.3 and 1.1 span exactly 0.8, their float64 roundings 0.8 + 1.1e-16: the network was built for the exact
    spread and then refused the run it was built for, telling the user to pass allow_outside=True (an audit,
    2026-11-29). It is built for the spread of the values it runs on, and its domain holds them."""
    from expressivity.constructions.circuits.check import run_circuit
    from expressivity.inspect.run import outside_claim

    floats = [float(v) for v in values.split(",")]
    exact = [Fraction(v) for v in values.split(",")]
    assert max(floats) - min(floats) > max(exact) - min(exact) == Fraction(4, 5)   # the case itself
    run = run_circuit(name, [Fraction(v) for v in values.split(",")], dtype="float64", input_range=input_range)
    assert run.report.ok   # built and checked
    assert outside_claim(run.network, np.array([[v, 0.0] for v in floats])) is None
    # a range given below the typed values' spread is still refused
    if input_range is not None:
        with pytest.raises(ExpressivityError, match="more than the input range"):
            run_circuit(name, exact, dtype="float64", input_range=0.79)


def test_the_attention_circuits_check_counts_the_rounding_of_its_scores():
    """The tutorial's attention circuit failed its check on near-ties at |v| = 1e7 (error 2.5e-6 against an allowance
    of 4.2e-8), though network and formula agree up to rounding: scores grow with |v|^2, the allowance only with |v|
    (an audit, 2026-11-29). The scores' rounding is counted; where it could move the weights by more than they are,
    the check could not fail, and the values are refused."""
    from expressivity.constructions.circuits.check import run_circuit

    rng = np.random.default_rng(1)
    for magnitude in (1.0, 1e3, 1e6, 1e7):
        for _ in range(10):
            values = [magnitude + rng.normal() * 1e-2, magnitude, magnitude * rng.uniform()]
            run = run_circuit("attention", [Fraction(v) for v in values])
            assert run.report.ok, (magnitude, values, run.max_abs_error)
    run = run_circuit("attention", [Fraction("10000000.009596802"), Fraction(10000000)])
    assert run.report.ok
    with pytest.raises(ExpressivityError, match="could not fail on these values"):
        run_circuit("attention", [Fraction(10**9), Fraction(10**9 + 1)])


def test_the_check_is_never_looser_than_the_float_claim_it_certifies():
    """reverse-dot at L = 4096 claims error <= bound + accuracy = 2e-10 in float64, but its check allowed 7.57e-9 (its
    rounding allowance grows like L^2 eps max|v|): a violation up to 38 times the claim passed (an audit,
    2026-11-29). Inside the float claim, the check's bound is at most the claim's."""
    from expressivity.constructions.circuits.check import run_circuit

    rng = np.random.default_rng(1)
    values = [Fraction(float(v)) for v in rng.uniform(0, 1, 4096)]
    run = run_circuit("reverse-dot", values, tolerance=1e-10)
    bound = run.report.bounds["max_abs_error"]
    assert run.report.ok and run.report.checks[0].details["bound"] <= bound + max(bound, 1e-10)
