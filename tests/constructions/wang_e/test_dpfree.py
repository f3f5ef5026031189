"""The explicit DP-free networks of claims 6 and 7: exact, DP-free, and caught when wrong."""

from dataclasses import replace

import numpy as np
import pytest

from expressivity.constructions.wang_e.dpfree import (build_dpfree_boolean, build_dpfree_pointer, check_dpfree_boolean,
                                                      check_dpfree_pointer)
from expressivity.errors import ExpressivityError
from expressivity.network import AttentionLayer


def _dp_free(net) -> bool:
    return all(h.size == 0 for layer in net.layers if isinstance(layer, AttentionLayer) for h in layer.heads)


@pytest.mark.parametrize("T", [1, 4, 8])
def test_pointer_network_is_exact_and_dp_free(T):
    net, rep = build_dpfree_pointer(T, 2 * T + 2)
    rep = check_dpfree_pointer(net, rep)
    assert rep.ok and rep.error("sup_error").value == 0 and _dp_free(net)
    assert rep.constants["heads"] == T and rep.constants["ffn_width"] == 2 * T  # width grows with the range


def test_pointer_check_catches_a_wrong_gate():
    net, rep = build_dpfree_pointer(4, 10)
    gate = net.layers[1]
    b1 = gate.b_1.copy()
    b1[0] = -1  # the first unit leaks v_(t-1) when its pointer bit is 0
    # claimed_weights=None: claim for the broken weights what the construction claims (a copy keeps none)
    broken = replace(net, layers=(net.layers[0], replace(gate, b_1=b1)), claimed_weights=None)
    assert not check_dpfree_pointer(broken, rep).ok


@pytest.mark.parametrize("lags", [(2, 5, 9), (1,), (1, 2, 3, 4)])
def test_boolean_network_is_exact(lags):
    net, rep = build_dpfree_boolean(lags, max(lags) + 4)
    rep = check_dpfree_boolean(net, rep, random=8)
    assert rep.ok and rep.error("sup_error").value == 0 and _dp_free(net)


def test_boolean_check_catches_a_wrong_lag():
    net, rep = build_dpfree_boolean((2, 5, 9), 14)
    wrong, _ = build_dpfree_boolean((2, 5, 8), 14)  # reads lag 8 instead of 9
    assert not check_dpfree_boolean(wrong, rep, random=8).ok


def test_bad_arguments_are_refused():
    for call in (lambda: build_dpfree_pointer(0), lambda: build_dpfree_pointer(8, 8), lambda: build_dpfree_pointer(True),
                 lambda: build_dpfree_boolean(()), lambda: build_dpfree_boolean((3, 3)), lambda: build_dpfree_boolean((2,), 2),
                 lambda: build_dpfree_boolean(tuple(range(1, 10)))):
        with pytest.raises(ExpressivityError):
            call()
    assert np.isfinite(build_dpfree_boolean((1, 2))[1].size.parameters)


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def test_dpfree_pointer_check_sees_position_one(monkeypatch):
    import expressivity.constructions.wang_e.dpfree as dpf
    net, rep = dpf.build_dpfree_pointer(max_lag=3, length=8)
    orig = dpf.forward_exact

    def wrong_at_1(n, X):
        out = orig(n, X).copy()
        out[:, 1, 0] = out[:, 1, 0] + 1
        return out
    monkeypatch.setattr(dpf, "forward_exact", wrong_at_1)
    r = dpf.check_dpfree_pointer(net, rep)
    assert not r.ok and r.checks[-1].failures >= 1


def test_dpfree_boolean_check_sees_every_pattern_at_the_first_scored_position(monkeypatch):
    import expressivity.constructions.wang_e.dpfree as dpf
    lags = (1, 2, 3, 4, 5, 6, 7, 8)
    net, rep = dpf.build_dpfree_boolean(lags=lags, length=9)
    T = max(lags)
    orig = dpf.forward_exact

    def wrong_on_one_pattern(n, X):
        out = orig(n, X).copy()
        x = np.asarray(X[..., 0], dtype=np.int64)
        hit = np.all(np.stack([x[:, T - lag] == (-1) ** lag for lag in lags]), axis=0)   # one of 256 patterns at t = T
        out[hit, T, 0] = out[hit, T, 0] + 2
        return out
    monkeypatch.setattr(dpf, "forward_exact", wrong_on_one_pattern)
    r = dpf.check_dpfree_boolean(net, rep)
    assert not r.ok and r.checks[-1].failures >= 1


def test_dpfree_boolean_lag_512_is_refused():
    from expressivity.constructions.wang_e.dpfree import build_dpfree_boolean
    build_dpfree_boolean(lags=(2, 511), length=512)
    with pytest.raises(ExpressivityError):
        build_dpfree_boolean(lags=(2, 512), length=512)


def test_dpfree_boolean_check_scores_the_first_position(monkeypatch):
    import expressivity.constructions.wang_e.dpfree as dpf
    net, rep = dpf.build_dpfree_boolean(lags=(2, 5), length=8)
    orig = dpf.forward_exact

    def wrong_at_T(n, X):
        out = orig(n, X).copy()
        out[:, 5, 0] = -out[:, 5, 0]          # every answer at t = T = 5 flipped
        return out
    monkeypatch.setattr(dpf, "forward_exact", wrong_at_T)
    r = dpf.check_dpfree_boolean(net, rep)
    assert not r.ok and r.checks[-1].failures == r.checks[-1].details["sequences"]


def test_an_exact_boolean_check_over_its_budget_is_refused_before_it_runs():
    """A fresh audit (2026-11-29): 8 lags at 512 tokens (2^8 x 504 + 64 sequences of 512 tokens) ran for hours with
    nothing printed; the check is estimated first and refused above its budget, naming the fix."""
    from expressivity.constructions.wang_e.dpfree import BOOLEAN_CHECK_BUDGET_S, boolean_check_seconds
    lags = (1, 2, 3, 4, 5, 6, 7, 8)
    assert boolean_check_seconds(lags, 512) > 10 * BOOLEAN_CHECK_BUDGET_S > 100 * boolean_check_seconds(lags, 24)
    net, rep = build_dpfree_boolean(lags, 512)
    with pytest.raises(ExpressivityError, match=r"129,088 sequences of 512 tokens.*smaller --length or fewer --lags"):
        check_dpfree_boolean(net, rep)
    small, small_rep = build_dpfree_boolean((2, 5), 12)
    with pytest.raises(ExpressivityError, match="over the budget"):
        check_dpfree_boolean(small, small_rep, budget_s=1e-6)
    assert check_dpfree_boolean(small, small_rep, random=4).ok
