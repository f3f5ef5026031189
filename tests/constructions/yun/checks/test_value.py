"""The full modified network equals f_bar on distinct-column cubes and 0 elsewhere, exactly."""

import sys
import types
from fractions import Fraction as F

import numpy as np
import pytest

from expressivity.constructions.yun.compile import compile_modified, f_bar
from expressivity.constructions.yun.constants import YunParams
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
