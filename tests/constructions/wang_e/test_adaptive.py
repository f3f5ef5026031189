"""Adaptive memories (wang_e/adaptive.py): the chain bound by its documented recursion, and checks that count a
wrong answer.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import math
from fractions import Fraction
import pytest
from expressivity.errors import ExpressivityError


def _hop(b):
    return 0.0 if math.isinf(b) else 2 * math.exp(-b) / (1 - math.exp(-3 * b))


def test_adaptive_chain_bound_by_the_documented_recursion():
    """Per hop: w = hop(beta (1 - 2 delta)), then delta += T w; the bound is 2 w of the last hop; inf once
    delta reaches 1/2."""
    from expressivity.constructions.wang_e.adaptive import chain_error_bound, hop_error_bound
    assert hop_error_bound(3.0) == pytest.approx(2 * math.exp(-3) / (1 - math.exp(-9)), rel=1e-14)
    beta, depth, T = 6.0, 3, 8
    delta, w = 0.0, 0.0
    for _ in range(depth):
        w = _hop(beta * (1 - 2 * delta))
        delta += T * w
    assert chain_error_bound(beta, depth, T) == pytest.approx(2 * w, rel=1e-12)
    assert chain_error_bound(beta, 1, T) == pytest.approx(2 * _hop(beta), rel=1e-12)
    assert chain_error_bound(1.0, 2, 8) == math.inf            # 8 * hop(1) = 6.2 >= 1/2 after one hop


def test_adaptive_too_soft_beta_is_refused():
    from expressivity.constructions.wang_e.adaptive import build_adaptive_memory
    with pytest.raises(ExpressivityError, match="too soft"):
        build_adaptive_memory(max_lag=8, depth=2, length=16, beta=1.0)


def test_adaptive_exact_check_counts_a_wrong_answer(monkeypatch):
    import expressivity.constructions.wang_e.adaptive as ada
    net, rep = ada.build_adaptive_memory(max_lag=2, depth=1, length=6)
    orig = ada.forward_exact

    def off(n, X):
        out = orig(n, X).copy()
        out[0, -1, 0] = out[0, -1, 0] + Fraction(1, 7)
        return out
    monkeypatch.setattr(ada, "forward_exact", off)
    r = ada.check_adaptive_memory(net, rep)
    assert r.checks[-1].failures >= 1 and not r.ok   # (one per chunk of sequences)


def test_adaptive_soft_check_fails_at_twice_its_bound(monkeypatch):
    import expressivity.constructions.wang_e.adaptive as ada
    net, rep = ada.build_adaptive_memory(max_lag=2, depth=1, length=6, beta=40.0)
    bound = rep.bounds["sup_error"] + 16 * 2.0 ** -52 * 40.0 * 36
    orig = ada.forward
    monkeypatch.setattr(ada, "forward", lambda n, X: orig(n, X) + 2 * bound)
    r = ada.check_adaptive_memory(net, rep)
    assert not r.ok and r.checks[-1].failures == r.checks[-1].points
