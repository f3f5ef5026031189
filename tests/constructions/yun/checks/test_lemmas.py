"""Exhaustive P1-P4 checks: zero failures for set B / the PE variants, detected failures otherwise."""

from dataclasses import replace
from fractions import Fraction as F
from math import comb

import pytest

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import contextual_map
from expressivity.network.network import Network
from expressivity.constructions.yun.checks.lemmas import verify_contextual

CASES = [(2, 1, 2), (2, 1, 5), (3, 1, 3), (4, 1, 3), (2, 2, 3), (3, 2, 2), (2, 3, 2), (5, 1, 2), (2, 4, 2)]


def check(p):
    net = contextual_map(p)
    return verify_contextual(net.metadata["params"], net)


@pytest.mark.parametrize("n,d,N", CASES)
def test_theorem2_set_b(n, d, N):
    p = YunParams(n, d, N)
    r = check(p)
    assert r.failures == 0, r.examples
    assert r.grid_points == (N + 1) ** (n * d)
    assert r.classes == comb(N ** d, n)
    assert r.t_l == p.t_l and r.t_r == p.t_r
    if r.classes >= 1:  # n > N^d leaves no distinct-column point at all
        assert r.min_gap is not None and r.min_gap >= F(1, N)


@pytest.mark.parametrize("n,d,N", CASES[:7])
@pytest.mark.parametrize("shift", ["clean", "paper"])
def test_theorem3_positional(n, d, N, shift):
    r = check(YunParams(n, d, N, positional=True, shift=shift))
    assert r.failures == 0, r.examples
    assert r.classes == N ** (n * d)


@pytest.mark.slow
def test_issue_case_n4_d2_quarter():
    for pos in (False, True):
        r = check(YunParams(4, 2, 4, positional=pos))
        assert r.failures == 0 and r.grid_points == 390_625


@pytest.mark.parametrize("n,d,N", [(2, 1, 2), (2, 2, 3), (3, 1, 3)])
def test_constant_set_a_fails_p4(n, d, N):
    r = check(YunParams(n, d, N, constants="A"))
    assert r.failures_by_property["P4"] > 0
    assert any(e["property"] == "P4" for e in r.examples)


def test_weak_shift_detected():
    # Window layers with shift 1 instead of delta^{-d}: contexts collide (P2) or leave [t_l, t_r].
    p = YunParams(3, 1, 3)
    net = contextual_map(p)
    weak = []
    for layer in net.layers[:-1]:
        heads = tuple(replace(h, W_O=h.W_O / abs(h.W_O[0, 0])) for h in layer.heads)
        weak.append(replace(layer, heads=heads))
    broken = Network(tuple(weak) + (net.layers[-1],), net.labels, metadata=net.metadata)
    r = verify_contextual(p, broken)
    assert r.failures > 0


def test_out_of_order_windows_detected():
    p = YunParams(3, 1, 4)
    net = contextual_map(p)
    layers = list(net.layers)
    layers[:-1] = layers[:-1][::-1]
    r = verify_contextual(p, Network(tuple(layers), net.labels, metadata=net.metadata))
    assert r.failures > 0
