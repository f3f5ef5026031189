from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.compile import compile_modified
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.soften import soften
from expressivity.export import load_network, save_network
from expressivity.network.evaluate import evaluate
from expressivity.targets import get_target


def _exact_equal(a, b):
    return a.shape == b.shape and all(Fraction(x) == Fraction(y) for x, y in zip(a.flat, b.flat))


def test_exact_round_trip(tmp_path):
    b = compile_modified(get_target("smooth-rank"), YunParams(2, 1, 3))
    save_network(b.network, tmp_path)
    back = load_network(tmp_path)
    assert back.layer_counts() == b.network.layer_counts()
    for l1, l2 in zip(b.network.layers, back.layers):
        for attr in ("W_1", "b_1", "W_2", "b_2"):
            if hasattr(l1, attr):
                assert _exact_equal(getattr(l1, attr), getattr(l2, attr))
        if hasattr(l1, "activation"):
            assert l1.activation == l2.activation
    X = np.array([[[0.1], [0.7]], [[0.5], [0.2]]])
    assert _exact_equal(evaluate(b.network, X, "exact"), evaluate(back, X, "exact"))


def test_float_round_trip_with_pe(tmp_path):
    b = compile_modified(get_target("reverse"), YunParams(2, 1, 2, positional=True))
    soft, _ = soften(b.params, b.network, b.network.metadata["stages"]["quantize"], Fraction(1))
    save_network(soft, tmp_path)
    back = load_network(tmp_path)
    X = np.random.default_rng(0).random((8, 2, 1))
    assert np.array_equal(evaluate(soft, X), evaluate(back, X))
    assert back.positional_encoding is not None
