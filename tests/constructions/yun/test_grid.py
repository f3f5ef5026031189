"""The extended grid's id arithmetic (yun/grid.py): rank-one heads parsed or refused, scaled ids on the lattice,
zero-query ties flagged, the event-driven window pass equal to the layer-by-layer one on window edges.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import dataclasses
from fractions import Fraction
import numpy as np
import pytest


def _ctx(n=2, d=2, N=2):
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    p = YunParams(n, d, N)
    return p, contextual_map(p)


def _replace_layer(net, k, layer):
    import dataclasses
    layers = list(net.layers)
    layers[k] = layer
    return dataclasses.replace(net, layers=tuple(layers))


@pytest.mark.parametrize("change", ["causal", "temperature", "w_o", "gain"])
def test_grid_parse_rank_one_refuses_other_shapes(change):
    import dataclasses
    from expressivity.constructions.yun.grid import parse_rank_one
    from expressivity.errors import NetworkError
    p, net = _ctx()
    parse_rank_one(net, p)
    layer = net.layers[0]
    h = layer.heads[0]
    if change == "causal":
        bad = dataclasses.replace(layer, causal=True)
    elif change == "temperature":
        bad = dataclasses.replace(layer, inverse_temperature=-1)
    elif change == "w_o":
        bad = dataclasses.replace(layer, heads=(dataclasses.replace(h, W_O=np.array([[h.W_O[0, 0], 1.0]])), *layer.heads[1:]))
    else:
        bad = dataclasses.replace(layer, heads=(dataclasses.replace(h, W_O=np.array([[Fraction(1, 2), 0]], dtype=object)), *layer.heads[1:]))
    with pytest.raises(NetworkError):
        parse_rank_one(_replace_layer(net, 0, bad), p)


def test_grid_scaled_refuses_off_lattice():
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.grid import scaled
    from expressivity.errors import NetworkError
    p = YunParams(2, 1, 4)
    assert scaled(p, Fraction(3, 8)) == 3
    with pytest.raises(NetworkError):
        scaled(p, Fraction(1, 3))


def test_grid_zero_query_with_fractional_average_is_flagged():
    from expressivity.constructions.yun.grid import IdHead, run_ids
    # one head, query offset -3: the first id has query 0 and hardmax averages (3 + 4)/2, not an integer
    r = run_ids([[IdHead(1, -3)]], np.array([[3, 4], [3, 5]], dtype=np.int64))
    assert list(r.zero_query_ties) == [True, False]
    assert r.ids.tolist()[1] == [3 + 4, 5 + 5]          # (3+5)/2 = 4 for the zero query, max 5 for the other


def test_grid_event_driven_windows_equal_layer_by_layer_on_window_edges():
    """ids placed on every window's edges: the event pass must hand them to the layer-by-layer pass
    (or agree with it)."""
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.constructions.yun.grid import _apply_layer, _window, parse_rank_one, run_ids
    p = YunParams(2, 2, 4)
    layers = parse_rank_one(contextual_map(p), p)
    assert sum(_window(h) is not None for h in layers) > 4 * (p.n + 1)     # the event-driven pass runs
    edges = sorted({e for heads in layers if (w := _window(heads)) for e in w})
    rng = np.random.default_rng(0)
    ids = np.array([[e, e + 2] for e in edges] + [[e, e - 2] for e in edges] + [list(rng.choice(edges, 2)) for _ in range(20)],
                   dtype=np.int64)
    for row in ids:                  # one row at a time: a row on an edge sends only itself to the slow pass
        v, bad = row[None, :].copy(), np.zeros(1, dtype=bool)
        for heads in layers:
            v = _apply_layer(heads, v, bad)
        assert run_ids(layers, row[None, :]).ids.tolist() == v.tolist(), row
