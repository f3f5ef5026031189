"""Explicit ReLU readouts: measured sup error within the stated bound, falling with width."""

import numpy as np
import pytest

from expressivity.constructions.wang_e.readouts import (FUNCTIONS, grid_readout, grid_scratch_labels, linear_readout,
                                                        product_readout, square_units)
from expressivity.errors import ExpressivityError
from expressivity.network import Network
from expressivity.network.reference import forward

R = 1.05
LABELS = ("x", "m1", "m2", "y")


def _run(layers, labels, m):
    X = np.zeros((len(m), 1, len(labels)))
    X[:, 0, 1:3] = m
    return forward(Network(tuple(layers), labels), X)[:, 0, 3]


def _points(n=3000):
    m = np.random.default_rng(0).uniform(-R, R, (n, 2))
    return np.concatenate([m, [[R, R], [-R, R], [R, -R], [-R, -R], [0, 0]]])  # corners are the worst case


def test_linear_readout_is_exact():
    layers, ro = linear_readout(LABELS, [1, 2], 3, R, [0.25, -2.0])
    m = _points()
    assert np.abs(_run(layers, LABELS, m) - ro.fn(m)).max() < 1e-14 and ro.ffn_error == 0 and ro.lipschitz == 2.25


def test_product_error_within_bound_and_falling_with_width():
    m, errors = _points(), []
    for K in (4, 8, 16, 32):
        layers, ro = product_readout(LABELS, [1, 2], 3, R, K)
        err = np.abs(_run(layers, LABELS, m) - m[:, 0] * m[:, 1]).max()
        assert err <= ro.ffn_error + 1e-12 and ro.width == 2 * K
        errors.append(err)
    assert all(b < a / 3 for a, b in zip(errors, errors[1:]))


@pytest.mark.parametrize("name", [n for n in FUNCTIONS])
def test_grid_readouts_within_bound_and_falling_with_the_grid(name):
    m, errors = _points(1500), []
    for G in (4, 8, 16):
        labels = LABELS + grid_scratch_labels(G)
        layers, ro, _ = grid_readout(name, labels, [1, 2], 3, R, G, 16)
        err = np.abs(_run(layers, labels, m) - ro.fn(m)).max()
        assert err <= ro.ffn_error
        errors.append(err)
    assert errors[2] < errors[0]


def test_square_units_interpolate_t_squared():
    units, const, error = square_units(2.0, 8)
    t = np.linspace(-2, 2, 4001)
    approx = const + sum(c * np.maximum(t - k, 0) for k, c in units)
    assert np.abs(approx - t * t).max() == pytest.approx(error, rel=1e-3)
    knots = np.linspace(-2, 2, 9)
    assert np.allclose(const + sum(c * np.maximum(knots - k, 0) for k, c in units), knots ** 2)


@pytest.mark.parametrize("call, msg", [
    (lambda: square_units(1.0, 3), "even number"),
    (lambda: product_readout(LABELS, [1], 3, R, 8), "two memories"),
    (lambda: grid_readout("cosine", LABELS, [1, 2], 3, R, 4, 8), "unknown readout"),
    (lambda: grid_readout("max", LABELS, [1, 2], 3, R, 4, 8), "scratch dimensions"),
    (lambda: grid_readout("max", LABELS + grid_scratch_labels(0), [1, 2], 3, R, 0, 8), "grid needs"),
])
def test_bad_arguments_are_refused(call, msg):
    with pytest.raises(ExpressivityError, match=msg):
        call()


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def test_readouts_product_bound_constants():
    """f = a b on |a|, |b| <= R: sup |df/da| + |df/db| = 2R; polarisation of two squares on [-2R, 2R] with K
    intervals (h = 4R/K), each within h^2/4, a quarter of each: error (h^2/4)/2 = h^2/8."""
    from expressivity.constructions.wang_e.fixed import build_fixed_memory
    net, rep = build_fixed_memory((1, 3), readout="product", width=32)
    R = rep.margins["memory_radius"]
    assert rep.bounds["lipschitz"] == pytest.approx(2 * R, rel=1e-12)
    h = 4 * R / 32
    assert rep.bounds["ffn_error"] == pytest.approx(h * h / 8, rel=1e-12)


def test_readouts_grid_bound_constants():
    """Bilinear interpolation on a G x G grid of [-R, R]^2 (h = 2R/G): L h; plus 4 products per point,
    each polarised on [-2, 2] with K intervals (h_s = 4/K, square error h_s^2/4), weighted by max|f_ij|/4
    twice: 4 max|F| h_s^2/8."""
    from expressivity.constructions.wang_e.fixed import build_fixed_memory
    G, K = 8, 16
    net, rep = build_fixed_memory((1, 3), readout="sin-product", width=K, grid=G)
    R = rep.margins["memory_radius"]
    knots = -R + (2 * R / G) * np.arange(G + 1)
    F = np.sin(4 * np.pi * knots[:, None] * knots[None, :])
    hs = 4 / K
    want = 8 * np.pi * R * (2 * R / G) + 4 * np.abs(F).max() * hs * hs / 8
    assert rep.bounds["ffn_error"] == pytest.approx(want, rel=1e-9)
    assert rep.bounds["lipschitz"] == pytest.approx(8 * np.pi * R, rel=1e-12)
