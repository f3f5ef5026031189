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
