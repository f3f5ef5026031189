"""Essentially sparse memories (wang_e/essential.py): the bound with its float64 rounding, and a check that fails
just past it.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import pytest
from expressivity.errors import ExpressivityError


def test_essential_sup_error_bound_includes_float_rounding():
    from expressivity.constructions.wang_e.essential import build_kernel_memory
    net, rep = build_kernel_memory("power", 0.5, rpe="lin", heads=16)
    from expressivity.constructions.wang_e.kernels import kernel_fit
    l1 = rep.error("kernel_l1").value
    rounding = kernel_fit("lin", "power", 0.5, 16).extra["rounding"]   # of the l1's own float64 terms
    assert 0 < rounding < 1e-9
    want = l1 + rounding + 16 * rep.constants["max_abs_weight"] * 2.0 ** -51
    assert rep.bounds["sup_error"] == want


def test_essential_refuses_heads_whose_rounding_exceeds_the_kernel_error():
    # 24 lin heads for the power kernel: coefficients ~1e15, rounding ~1.7 > l1 ~0.11
    from expressivity.constructions.wang_e.essential import build_kernel_memory
    with pytest.raises(ExpressivityError, match="float64 cannot carry"):
        build_kernel_memory("power", 0.5, rpe="lin", heads=24)


def test_essential_check_fails_on_an_output_off_by_a_millionth(monkeypatch):
    import expressivity.constructions.wang_e.essential as ess
    net, rep = ess.build_kernel_memory("exp", 0.5)      # matched: one head, exact kernel, bound ~1e-12
    assert rep.bounds["sup_error"] < 1e-9
    orig = ess.forward
    monkeypatch.setattr(ess, "forward", lambda n, X: orig(n, X) + 1e-6)
    r = ess.check_kernel_memory(net, rep, length=32, samples=4)
    assert not r.ok and r.checks[-1].failures == r.checks[-1].points


def test_essential_check_fails_at_twice_its_bound(monkeypatch):
    import expressivity.constructions.wang_e.essential as ess
    net, rep = ess.build_kernel_memory("exp", 0.5)
    bound = rep.bounds["sup_error"] + 1e-12        # the check's bound (float64 convolution allowance included)
    orig = ess.forward
    monkeypatch.setattr(ess, "forward", lambda n, X: orig(n, X) + 2 * bound)
    r = ess.check_kernel_memory(net, rep, length=32, samples=4)
    assert not r.ok and r.checks[-1].failures == r.checks[-1].points
