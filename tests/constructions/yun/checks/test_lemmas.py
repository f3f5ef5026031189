"""Exhaustive P1-P4 checks: zero failures for set B / the PE variants, detected failures otherwise."""

import dataclasses
import math
from dataclasses import replace
from fractions import Fraction
from fractions import Fraction as F
from math import comb

import numpy as np
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


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def _perm(a, k):
    return math.perm(a, k)


def test_lemmas_p3_counts_every_good_point_when_the_interval_is_one_value():
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.constructions.yun.checks.lemmas import verify_contextual
    from expressivity.network.network import Network
    n, d, N = 2, 1, 3
    p = YunParams(n, d, N)
    net = contextual_map(p)
    narrow = Network(net.layers, net.labels, metadata={**net.metadata, "t_r": net.metadata.get("t_l", p.t_l)})
    r = verify_contextual(p, narrow)
    # good points: ordered pairs of distinct in-range columns, N^d (N^d - 1); their 2 distinct values
    # cannot both equal t_l, so every one leaves [t_l, t_l]
    assert r.failures_by_property["P3"] == _perm(N ** d, n) == 6
    assert r.failures >= 6


def test_lemmas_p1_p2_count_collisions(monkeypatch):
    import dataclasses as dc
    import expressivity.constructions.yun.checks.lemmas as lem
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.constructions.yun.grid import scaled
    n, d, N = 2, 1, 3
    p = YunParams(n, d, N)
    net = contextual_map(p)
    t_l = scaled(p, net.metadata.get("t_l", p.t_l))
    orig = lem.run_ids

    def flat(layers, ids):   # a broken contextual map: every column gets the value t_l
        res = orig(layers, ids)
        return dc.replace(res, ids=np.full_like(res.ids, t_l))
    monkeypatch.setattr(lem, "run_ids", flat)
    r = lem.verify_contextual(p, net)
    good = _perm(N ** d, n)                      # 6 ordered distinct pairs
    assert r.failures_by_property["P1"] == good  # each has two equal values
    assert r.failures_by_property["P3"] == 0     # t_l is inside
    # P2: the 12 good values sorted: all equal; adjacent pairs from different classes (3 classes {0,1},{0,2},{1,2},
    # each 4 values, sorted stably by value then grid order) -- at least 2 clashes, exactly the count of key changes
    assert r.failures_by_property["P2"] >= 2
    bad = (N + 1) ** (n * d) - good              # 16 - 6 = 10 points, each with a value inside [t_l, t_r]
    assert r.failures_by_property["P4"] == bad


def test_lemmas_zero_query_ties_and_min_gap(monkeypatch):
    import dataclasses as dc
    import expressivity.constructions.yun.checks.lemmas as lem
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    n, d, N = 2, 1, 3
    p = YunParams(n, d, N)
    net = contextual_map(p)
    orig = lem.run_ids

    def tied(layers, ids):   # every point reports a zero-query tie; values: (scaled id)^2
        res = orig(layers, ids)
        q = np.asarray(ids, dtype=np.int64) ** 2
        return dc.replace(res, ids=q, zero_query_ties=np.ones(ids.shape[0], dtype=np.int64))
    monkeypatch.setattr(lem, "run_ids", tied)
    r = lem.verify_contextual(p, net)
    assert r.failures_by_property["zero-query-tie"] == (N + 1) ** (n * d) == 16
    assert r.failures == sum(r.failures_by_property.values()) and r.failures >= 16
    # in-range scaled ids (units delta/2 = 1/6) of d = 1, N = 3: 0, 2, 4 -> values 0, 4, 16: smallest gap 4/6
    assert r.min_gap == Fraction(4, 6)


def test_lemmas_p3_flags_a_point_with_one_value_outside(monkeypatch):
    import dataclasses as dc
    import expressivity.constructions.yun.checks.lemmas as lem
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.network.network import Network
    n, d, N = 2, 1, 3
    p = YunParams(n, d, N)
    net = contextual_map(p)
    orig = lem.run_ids
    monkeypatch.setattr(lem, "run_ids", lambda layers, ids: dc.replace(orig(layers, ids), ids=np.asarray(ids, np.int64)))
    # identity contextual map: good values are the in-range ids 0, 1/3, 2/3 (paper units); interval [0, 1/3]
    net2 = Network(net.layers, net.labels, metadata={**net.metadata, "t_l": Fraction(0), "t_r": Fraction(1, 3)})
    r = lem.verify_contextual(p, net2)
    # ordered good pairs with 2/3 in them: (0, 2/3), (2/3, 0), (1/3, 2/3), (2/3, 1/3)
    assert r.failures_by_property["P3"] == 4
