"""The full modified network equals f_bar on distinct-column cubes and 0 elsewhere, exactly."""

import dataclasses
import sys
import types
from fractions import Fraction
from fractions import Fraction as F

import numpy as np
import pytest

from expressivity.constructions.yun.compile import compile_modified, f_bar
from expressivity.constructions.yun.constants import CLAMP_PASSES, YunParams
from expressivity.network.exact import forward_exact
from expressivity.targets import get_target
from expressivity.constructions.yun.checks.value import verify_value


@pytest.mark.parametrize("target,n,d,N,pos", [
    ("mean-shift", 2, 1, 4, False), ("smooth-rank", 3, 1, 3, False), ("attention", 2, 2, 3, False),
    ("pairwise-distance", 3, 2, 2, False), ("sort", 2, 2, 2, True), ("reverse", 3, 1, 3, True),
])
def test_value_map_exact(target, n, d, N, pos):
    b = compile_modified(get_target(target), YunParams(n, d, N, positional=pos))
    r = verify_value(b)
    assert r.failures == 0
    assert r.good_points + r.other_points == (N + 1) ** (n * d)
    assert b.network.layer_counts()["total"] == sum(b.params.layer_counts().values()) - b.params.layer_counts()["total"]


def _dyadic_inputs(rng, shape, outside: bool):
    X = (rng.integers(0, 256, size=shape) + 0.5) / 256  # exact floats, never on a cube boundary for N | 256
    if outside:
        X[0, 0, 0] = 1.25
        X[1, -1, -1] = -0.5
    return X


@pytest.mark.parametrize("n,d,N,pos", [(2, 1, 4, False), (3, 2, 2, False), (2, 2, 2, True), (3, 1, 4, True)])
def test_generic_exact_evaluator_agrees(n, d, N, pos):
    b = compile_modified(get_target("sort" if pos else "smooth-rank"), YunParams(n, d, N, positional=pos))
    rng = np.random.default_rng(3)
    X = _dyadic_inputs(rng, (12, n, d), outside=not pos)
    X[2] = X[3]  # includes a duplicate-column point
    X[2, 1] = X[2, 0]
    out = forward_exact(b.network, X)
    want = f_bar(b, X, distinct_only=True)
    assert all(F(w) == o for w, o in zip(want.flat, out.flat))


def _collide(X):
    # For n=2, d=1, delta=1/2 the contexts of L=(0,1/2) are 13 and 27/2 (spec vector). Value layers
    # run in decreasing context, so the token with context 27/2 is mapped first; mapping it to 13,
    # exactly the other token's context, makes that later layer fire on it again.
    return np.where(X == X.max(axis=1, keepdims=True), 13.0, 20.0)


def test_hidden_precondition_handled_by_rescale():
    sys.modules["_yun_collide_target"] = types.SimpleNamespace(f=_collide)
    target = get_target("_yun_collide_target:f")
    target = type(target)(target.name, target.fn, True, target.description)
    p = YunParams(2, 1, 2)
    b = compile_modified(target, p)
    assert b.sigma < 1
    r = verify_value(b)
    assert r.failures == 0 and r.precondition_margin > 0
    # Without the rescale the mapped columns land in later windows: the check must fail.
    bad = compile_modified(target, p, sigma=F(1))
    r_bad = verify_value(bad)
    assert r_bad.precondition_margin < 0
    assert r_bad.mismatches_good > 0


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def _q(pos=False):
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.quantize import quantizer
    p = YunParams(2, 1, 4, positional=pos)
    return p, quantizer(p)


def test_value_quantizer_point_only_difference_is_caught():
    """A width-2 step layer in front adds 1/2 to the input exactly at t = 1/N (1{t >= t0} + 1{t <= t0} - 1):
    every open interval is unchanged, so only the check at the breakpoint itself can see it."""
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_quantizer
    from expressivity.network.layers import FeedForwardLayer, PiecewiseLinear
    p, q = _q()
    t0, c = Fraction(1, p.N), Fraction(1, 2)
    step = PiecewiseLinear((0,), (0, 0), (0, 1))
    spike = FeedForwardLayer(np.array([[1, -1]], dtype=object), np.array([-t0, t0], dtype=object),
                             np.array([[c], [c]], dtype=object), np.array([-c], dtype=object), activation=step)
    assert verify_quantizer(p, q)[1] == 0
    assert verify_quantizer(p, dataclasses.replace(q, layers=(spike, *q.layers)))[1] >= 1


def test_value_quantizer_slope_with_right_intercept_is_caught():
    """The first snap layer with slope -(1 - 1/1000): output t/1000 on (0, 1/N), whose intercept is the
    reference 0 there; only the slope says it is not constant."""
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_quantizer
    p, q = _q()
    snap0 = q.layers[p.d]            # after the d out-of-range layers: snap x[0] to 0
    act = snap0.activation
    bent = dataclasses.replace(snap0, activation=dataclasses.replace(
        act, slopes=(act.slopes[0], Fraction(-999, 1000), act.slopes[2])))
    layers = list(q.layers)
    layers[p.d] = bent
    assert verify_quantizer(p, dataclasses.replace(q, layers=tuple(layers)))[1] >= 1


def test_value_quantizer_missing_positional_encoding_is_caught():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_quantizer
    p, q = _q(pos=True)
    assert verify_quantizer(p, q)[1] == 0
    assert verify_quantizer(p, dataclasses.replace(q, positional_encoding=None))[1] >= 1


def _build():
    from expressivity.constructions.yun.compile import compile_modified
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.targets import get_target
    return compile_modified(get_target("mean-shift"), YunParams(2, 1, 4))   # sigma = 1, d = 1


def _with_value_layers(b, layers):
    import dataclasses
    value = dataclasses.replace(b.value, layers=tuple(layers))
    stages = (*b.quantizer.layers, *b.contextual.layers, *value.layers)
    return dataclasses.replace(b, value=value, network=dataclasses.replace(b.network, layers=stages))


def _replacing(b, k, layer):
    """``b`` with value layer ``k`` replaced by ``layer``."""
    layers = list(b.value.layers)
    layers[k] = layer
    return _with_value_layers(b, layers)


def test_value_clean_build_verifies():
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    assert b.sigma == 1 and verify_value(b).failures == 0


def test_value_kill_layer_that_kills_nothing_is_caught():
    """The kill layer made a no-op (W_2 = 0): non-grid points keep nonzero columns."""
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    kill = b.value.layers[0]
    noop = dataclasses.replace(kill, W_2=np.zeros_like(kill.W_2))
    r = verify_value(_with_value_layers(b, (noop, *b.value.layers[1:])))
    assert r.nonzero_other > 0 and r.failures > 0


def test_value_head_that_moves_good_columns_is_caught():
    """The zeroing layer with an output bias of 1: every column moves, grid points included."""
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    zero = b.value.layers[1]
    moved = dataclasses.replace(zero, b_2=np.array([1], dtype=object))
    r = verify_value(_with_value_layers(b, (b.value.layers[0], moved, *b.value.layers[2:])))
    assert r.mismatches_good > 0


def test_value_unknown_class_counts_as_mismatch():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    keys = np.array(b.rep_keys).copy()
    keys[0] = -1                       # class 0 (its 2 orders: n! = 2 grid points) has no representative now
    r = verify_value(dataclasses.replace(b, rep_keys=keys))
    assert r.mismatches_good == 2


def test_value_network_that_is_not_the_stages_is_caught():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    r = verify_value(dataclasses.replace(b, network=dataclasses.replace(b.network, layers=b.network.layers[:-1])))
    assert r.network_is_stages is False and r.failures >= 1


def test_value_overlapping_windows_are_refused():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    from expressivity.errors import NetworkError
    b = _build()
    w0, w1 = b.value.layers[2], b.value.layers[3]
    # move window 1 onto window 0 (same b_1): the windows overlap
    clash = dataclasses.replace(w1, b_1=np.array(w0.b_1, dtype=object))
    with pytest.raises(NetworkError, match="overlapping"):
        verify_value(_replacing(b, 3, clash))


def test_value_window_on_zero_column_is_caught():
    """An extra window layer around u.Z = 0 fires on every killed (zero) column."""
    from expressivity.constructions.yun.checks.value import verify_value
    from expressivity.network.layers import FeedForwardLayer, PiecewiseLinear
    b = _build()
    e = Fraction(1, 16)
    act = PiecewiseLinear((-e, e), (0, 0, 0), (0, 1, 0))
    extra = FeedForwardLayer(np.array([[1]], dtype=object), np.array([0], dtype=object),
                             np.array([[1]], dtype=object), np.array([0], dtype=object), activation=act)
    clamps = CLAMP_PASSES * b.params.d   # the output clamp ends the value map; the extra window goes before it
    r = verify_value(_with_value_layers(b, (*b.value.layers[:-clamps], extra, *b.value.layers[-clamps:])))
    assert r.nonzero_other >= 1 and r.failures >= 1


def _body(b):
    """The window layers of ``b``'s value map: after kill and zeroing, before the output clamp (sigma = 1)."""
    assert b.sigma == 1 and b.value.metadata["clamp"] is not None
    return list(b.value.layers[1 + b.params.d: len(b.value.layers) - CLAMP_PASSES * b.params.d])


def test_value_checks_the_output_clamp_as_it_stands():
    """The clamp is the identity on every grid output (0 or a target value): a clamp narrowed below the target's
    largest value, or one that moves 0, is caught by the exact check."""
    from expressivity.constructions.yun.checks.value import verify_value
    from expressivity.constructions.yun.compile import compile_modified
    from expressivity.constructions.yun.value import clamp_layers
    b = _build()
    lo, hi = b.value.metadata["clamp"]
    assert verify_value(b).failures == 0 and lo == 0 and hi == max(Fraction(float(a)) for a in b.A_rep.flat)
    layers = list(b.value.layers)
    clamps = CLAMP_PASSES * b.params.d
    assert layers[-clamps:] == clamp_layers(b.params.d, lo, hi)   # both passes, as clamp_layers makes them
    for narrowed in ((lo, hi - Fraction(1, 64)), (Fraction(1, 64), hi)):
        layers[-clamps:] = clamp_layers(b.params.d, *narrowed)
        assert verify_value(_with_value_layers(b, layers)).failures > 0, narrowed
        layers[-b.params.d:] = clamp_layers(b.params.d, *narrowed, passes=1)   # the second pass alone narrowed
        assert verify_value(_with_value_layers(b, layers)).failures > 0, narrowed
        layers = list(b.value.layers)
    paper = compile_modified(b.target, b.params, clamp=False)   # the paper's value map: no clamp layer
    assert len(paper.value.layers) == len(b.value.layers) - clamps and paper.network.metadata["clamp"] is None
    assert verify_value(paper).failures == 0


def _sequential(p, layers, Z):
    from expressivity.network.exact import exact_activate, to_exact
    Z = np.array([Fraction(z) for z in Z], dtype=object)
    for layer in layers:
        pre = Z @ to_exact(layer.W_1) + to_exact(layer.b_1)
        Z = Z + exact_activate(layer.activation, pre) @ to_exact(layer.W_2) + to_exact(layer.b_2)
    return list(Z)


def test_value_run_windows_matches_the_layers_at_window_edges():
    """The event-driven window pass equals applying the window layers in order, at every window's
    two edges (windows are [lo, hi): firing at lo, not at hi) and centre."""
    from expressivity.constructions.yun.checks.value import _run_windows, _value_layers
    b = _build()
    p = b.params
    body = _body(b)
    wins = _value_layers(p, body)
    starts = [w[0] for w in wins]
    for lo, hi, _, _ in wins:
        for t in (lo, hi, (lo + hi) / 2):
            assert _run_windows(p, wins, starts, [t]) == _sequential(p, body, [t]), t


def test_value_a_layer_fires_once_even_if_its_update_stays_in_its_window():
    import dataclasses
    from expressivity.constructions.yun.checks.value import _run_windows, _value_layers
    b = _build()
    p = b.params
    body = _body(b)
    body[0] = dataclasses.replace(body[0], W_2=np.array([[Fraction(1, 16)]], dtype=object))  # window is 1/4 wide
    wins = _value_layers(p, body)
    starts = [w[0] for w in wins]
    lo = next(w[0] for w in wins if w[2] == 0)
    assert _run_windows(p, wins, starts, [lo]) == _sequential(p, body, [lo]) == [lo + Fraction(1, 16)]


def test_value_network_with_a_copied_layer_is_not_the_stages():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    b = _build()
    last = b.network.layers[-1]
    other = dataclasses.replace(last, b_2=np.array([Fraction(1, 3)], dtype=object))
    r = verify_value(dataclasses.replace(b, network=dataclasses.replace(b.network, layers=(*b.network.layers[:-1], other))))
    assert r.network_is_stages is False and r.failures >= 1


def test_value_quantizer_cross_coordinate_unit_is_caught():
    """d = 2: a unit in front reads x[0] and writes x[1] only (x[1] += ReLU(x[0] - 1/2)): not a function of
    one coordinate, and the quantized x[1] is wrong whenever x[0] > 1/2."""
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_quantizer
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.quantize import quantizer
    from expressivity.network.layers import FeedForwardLayer
    p = YunParams(2, 2, 2)
    q = quantizer(p)
    cross = FeedForwardLayer(np.array([[1], [0]], dtype=object), np.array([Fraction(-1, 2)], dtype=object),
                             np.array([[0, 1]], dtype=object), np.array([0, 0], dtype=object))
    assert verify_quantizer(p, q)[1] == 0
    assert verify_quantizer(p, dataclasses.replace(q, layers=(cross, *q.layers)))[1] >= 1


def test_value_window_whose_indicator_stays_on_is_refused():
    import dataclasses
    from expressivity.constructions.yun.checks.value import verify_value
    from expressivity.errors import NetworkError
    b = _build()
    w = b.value.layers[2]
    stays = dataclasses.replace(w, activation=dataclasses.replace(w.activation, intercepts=(0, 1, 1)))
    with pytest.raises(NetworkError, match="window"):
        verify_value(_replacing(b, 2, stays))


def test_value_scaled_ff_at_the_breakpoints_matches_exact():
    from expressivity.constructions.yun.checks.value import _scaled_ff
    b = _build()
    p = b.params
    scale = 2 * p.N
    for layer in b.value.layers[:1 + p.d]:
        for c in layer.activation.breakpoints:
            t = (Fraction(c) - Fraction(layer.b_1[0])) / Fraction(layer.W_1[0, 0])   # pre-activation exactly c
            got = _scaled_ff(layer, np.array([[int(t * scale)]], dtype=object), scale)[0, 0]
            assert Fraction(int(got), scale) == _sequential(p, [layer], [t])[0], (layer.name, c)
