"""Position biases: their matrices, infinite masses and JSON round trips."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import NetworkError
from expressivity.network import MatrixBias, RelativeBias, SlopeBias
from expressivity.network.biases import bias_from_dict
from expressivity.network.serial import InlineArrays
from expressivity.network.zeta import zeta


def test_relative_bias_defaults_differ_left_and_right():
    rb = RelativeBias(((0, 1), (1, 5)), default=-1, default_negative=7)
    # offset i - j: keys before the query beyond the table take default, keys after take default_negative
    assert rb.matrix(3).tolist() == [[1, 7, 7], [5, 1, 7], [-1, 5, 1]]
    assert RelativeBias(((1, 5), (-1, -5)), default=0).matrix(3).tolist() == [[0, -5, 0], [5, 0, -5], [0, 5, 0]]
    with pytest.raises(NetworkError, match="twice"):
        RelativeBias(((1, 0), (1, 2)))


def test_slope_biases_are_minus_beta_times_distance_or_its_log():
    lin, log = SlopeBias("lin", 0.5), SlopeBias("log", 1.5)
    s = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :])
    assert np.array_equal(lin.matrix(4), -0.5 * s)
    assert np.allclose(log.matrix(4), -1.5 * np.log1p(s), rtol=0, atol=0)
    exact = SlopeBias("lin", Fraction(1, 3)).matrix(3)
    assert exact.dtype == object and exact[2, 0] == Fraction(-2, 3)
    with pytest.raises(NetworkError, match="'lin' or 'log'"):
        SlopeBias("exp", 1.0)


@pytest.mark.parametrize("beta", [0.05, 0.7, 3.0])
def test_lin_infinite_mass_is_the_geometric_sum(beta):
    direct = math.fsum(math.exp(-beta * s) for s in range(20000))
    assert SlopeBias("lin", beta).infinite_mass() == pytest.approx(direct, rel=1e-13)


def test_log_mass_is_zeta_and_divergent_masses_are_none():
    assert SlopeBias("log", 1.5).infinite_mass() == zeta(1.5)
    # partial sums approach zeta(3): sum_{s<N} (1+s)^-3 + tail ~ 1/(2N^2)
    partial = math.fsum((1 + s) ** -3.0 for s in range(10**5))
    assert SlopeBias("log", 3.0).infinite_mass() == pytest.approx(partial + 0.5e-10, rel=1e-13)
    assert SlopeBias("log", 1.0).infinite_mass() is None
    assert SlopeBias("lin", 0.0).infinite_mass() is None
    assert RelativeBias(((0, 1.0),), default=0).infinite_mass() is None
    assert MatrixBias(np.zeros((2, 2))).infinite_mass() is None


def test_finitely_supported_relative_bias_has_the_mass_of_its_past_offsets():
    rb = RelativeBias(((-1, 9.0), (0, 0.0), (2, math.log(3))), default=-math.inf)
    assert rb.infinite_mass() == pytest.approx(1 + 3)   # offset -1 is a future key: not in the past


def test_matrix_bias_uses_the_leading_block_and_refuses_longer_inputs():
    mb = MatrixBias(np.arange(9.0).reshape(3, 3))
    assert mb.matrix(2).tolist() == [[0, 1], [3, 4]]
    with pytest.raises(NetworkError, match="length 3"):
        mb.matrix(4)


@pytest.mark.parametrize("bias", [
    RelativeBias(((0, Fraction(1, 3)), (2, -1.5)), default=-math.inf, default_negative=2),
    MatrixBias(np.array([[Fraction(1, 3), 0], [1, 2]], dtype=object)),
    SlopeBias("log", 1.25), SlopeBias("lin", Fraction(2, 7)),
])
def test_biases_round_trip_through_json(bias):
    arrays = InlineArrays()
    text = json.dumps(bias.to_dict(arrays), allow_nan=False)
    back = bias_from_dict(json.loads(text), arrays)
    assert type(back) is type(bias) and back.describe() == bias.describe()
    assert np.array_equal(back.matrix(2), bias.matrix(2)) and back.parameter_count() == bias.parameter_count()


def test_unknown_bias_kind_is_refused():
    with pytest.raises(NetworkError, match="unknown position bias 'alibi'"):
        bias_from_dict({"kind": "alibi"}, InlineArrays())
