"""The contextual map against the spec's test vectors, the closed form of §3.5, and the fast id pass."""

from fractions import Fraction as F
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import contextual_map
from expressivity.constructions.yun.grid import column_table, parse_rank_one, run_ids
from expressivity.constructions.yun.quantize import quantize_scalar, quantizer
from expressivity.network.exact import forward_exact
from expressivity.constructions.yun.checks.value import verify_quantizer


def q_values(p, X):
    net = contextual_map(p)
    p = net.metadata["params"]
    H = forward_exact(quantizer(p).then(net), np.array(X, dtype=object))
    return [sum(u * h for u, h in zip(p.u, row)) for row in H]


@pytest.mark.parametrize("p,X,want", [
    (YunParams(2, 1, 2), [[0], [F(1, 2)]], [13, F(27, 2)]),
    (YunParams(2, 1, 2), [[F(1, 2)], [F(1, 2)]], [F(9, 2), F(9, 2)]),
    (YunParams(2, 1, 2), [[0], [-4]], [72, -36]),
    (YunParams(3, 1, 3), [[0], [F(1, 3)], [F(2, 3)]], [1190, F(3580, 3), F(3608, 3)]),
])
def test_spec_vectors(p, X, want):
    assert q_values(p, X) == want


def test_set_b_constants():
    p = YunParams(2, 1, 2)
    assert (p.c, p.t_l, p.t_r) == (8, 8, 36)
    p = YunParams(3, 1, 3)
    assert (p.c, p.t_l, p.t_r) == (81, 486, 2214)


def closed_form(p, L):
    """Spec §3.5: cascade values l~_j of sorted distinct ids and q_j = l~_j + c l~_n (Theorem 2)."""
    ids = [sum(u * x for u, x in zip(p.u, col)) for col in L]
    order = sorted(range(p.n), key=lambda j: ids[j])
    l = [ids[j] for j in order]
    x = p.N ** p.d
    lt = [l[0] + x * (l[-1] - l[0])]
    for j in range(1, p.n):
        lt.append(l[j] + x * (lt[j - 1] - l[j]))
    q = [None] * p.n
    for rank, j in enumerate(order):
        q[j] = lt[rank] + p.c * lt[-1]
    return q


@pytest.mark.parametrize("n,d,N", [(2, 1, 5), (3, 2, 3), (2, 3, 2), (4, 1, 6), (3, 3, 2)])
def test_closed_form_on_distinct_points(n, d, N):
    p = YunParams(n, d, N)
    rng = np.random.default_rng(n * 100 + d * 10 + N)
    for _ in range(8):
        codes = rng.choice(N ** d, size=n, replace=False)
        L = [[F(int(c) // N ** i % N, N) for i in range(d)] for c in codes]
        assert q_values(p, L) == closed_form(p, L)


@pytest.mark.parametrize("n,d,N,pos", [(2, 1, 3, False), (3, 2, 2, False), (2, 3, 2, False), (3, 1, 3, True), (2, 2, 2, True)])
def test_fast_id_pass_matches_generic_exact_evaluator(n, d, N, pos):
    p = YunParams(n, d, N, positional=pos)
    net = contextual_map(p)
    table = column_table(p)
    per = (N + 1) ** d
    rng = np.random.default_rng(1)
    pts = rng.integers(0, per ** n, size=40)
    configs = np.stack([(pts // per ** j) % per for j in range(n)], axis=1)
    X = np.empty((pts.size, n, d), dtype=object)
    ids = np.empty((pts.size, n), dtype=object)
    for r in range(pts.size):
        for j in range(n):
            X[r, j] = [F(e, 2 * N) for e in table.entries[j][configs[r, j]]]
            ids[r, j] = table.ids[j][configs[r, j]]
    fast = run_ids(parse_rank_one(net, p), ids.astype(np.int64)).ids
    H = forward_exact(net, X)
    slow = (H * np.array(p.u, dtype=object)).sum(axis=2) * 2 * N
    assert np.array_equal(fast.astype(object), slow)


@pytest.mark.parametrize("n,d,N,pos", [(2, 1, 2, False), (3, 2, 3, False), (2, 1, 3, True)])
def test_quantizer_exact(n, d, N, pos):
    p = YunParams(n, d, N, positional=pos)
    pieces, failures = verify_quantizer(p, quantizer(p))
    assert failures == 0 and pieces >= d * (2 * p.levels + 3)   # every level's point and interval, each coordinate
    assert len(quantizer(p).layers) == p.d * p.levels + p.d


@pytest.mark.parametrize("pos", [False, True])
def test_the_quantizer_check_catches_a_breakpoint_moved_by_less_than_any_sample_offset(pos):
    """A fresh audit (2026-11-28): the check sampled k/N, k/N + 1/(1000 N), ...; a breakpoint moved by 1e-6
    or an out-of-range edge moved to 1 - 1/40000 passed, and the network sent 79999/80000 to -16."""
    import dataclasses

    p = YunParams(2, 1, 4, positional=pos)
    q = quantizer(p)
    snap = q.layers[-1]
    moved_snap = dataclasses.replace(snap, b_1=np.array([snap.b_1[0] - F(1, 10**6)], dtype=object))
    edge = q.layers[0]
    phi = edge.activation
    moved_edge = dataclasses.replace(edge, activation=dataclasses.replace(
        phi, breakpoints=(phi.breakpoints[0], F(phi.breakpoints[1]) - F(1, 40000))))
    for i, layer in ((len(q.layers) - 1, moved_snap), (0, moved_edge)):
        layers = list(q.layers)
        layers[i] = layer
        assert verify_quantizer(p, dataclasses.replace(q, layers=tuple(layers)))[1] > 0
    rescaled = dataclasses.replace(snap, W_1=np.array([[1]], dtype=object), W_2=np.array([[F(1, 10**9) - 1]], dtype=object))
    assert verify_quantizer(p, dataclasses.replace(q, layers=(*q.layers[:-1], rescaled)))[1] > 0
    from expressivity.network.layers import GELU, LayerNorm   # a review: a norm was ignored, GELU crashed

    normed = dataclasses.replace(q.layers[0], norm=LayerNorm(np.array([1.0]), np.array([0.0])))
    assert verify_quantizer(p, dataclasses.replace(q, layers=(normed, *q.layers[1:])))[1] > 0
    smooth = dataclasses.replace(q.layers[0], activation=GELU())
    assert verify_quantizer(p, dataclasses.replace(q, layers=(smooth, *q.layers[1:])))[1] > 0


@settings(max_examples=40, deadline=None)
@given(st.fractions(min_value=-2, max_value=3, max_denominator=60))
def test_quantizer_scalar_law(t):
    p = YunParams(2, 1, 3)
    out = forward_exact(quantizer(p), np.array([[t], [F(1, 2)]], dtype=object))
    assert out[0, 0] == quantize_scalar(p, t)


def test_layer_counts_match_spec():
    p = YunParams(3, 2, 4)
    # the value map: kill, d zeroing layers, one window per (class, token), two passes of d output clamps
    # (without: the paper's)
    assert p.layer_counts() == {"quantize": 2 * 4 + 2, "contextual": 16 + 1, "value": 1 + 2 + 3 * comb(16, 3) + 4,
                                "total": 10 + 17 + 3 + 3 * 560 + 4}
    assert p.layer_counts(clamp=False) == {"quantize": 10, "contextual": 17, "value": 3 + 3 * 560,
                                           "total": 10 + 17 + 3 + 3 * 560}
    assert len(contextual_map(p).layers) == 17
    assert len(contextual_map(YunParams(3, 2, 4, positional=True)).layers) == 3 * 16 + 1
