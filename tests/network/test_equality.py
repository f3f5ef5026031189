"""Value equality of networks and layers: arrays compared whole, never NumPy's ambiguous truth value."""

import copy
import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from expressivity import build_reverse_dot
from expressivity.network.biases import MatrixBias
from expressivity.network.equality import same_value
from expressivity.network.layers import FeedForwardLayer, LayerNorm
from expressivity.export.safetensors_io import load_network, save_network


@pytest.fixture(scope="module")
def net():
    return build_reverse_dot(4)[0]


def test_a_copy_equals_its_original(net):
    twin = copy.deepcopy(net)
    assert twin is not net and twin.readout is not net.readout
    assert net == twin
    assert not net != twin


def test_one_changed_weight_makes_networks_differ(net):
    readout = net.readout.copy()
    readout[0, 0] += 1
    assert net != dataclasses.replace(net, readout=readout)
    layer = net.layers[0]
    head = layer.heads[0]
    w = head.W_O.copy()
    w[-1, -1] += 1e-12
    changed_layer = dataclasses.replace(layer, heads=(dataclasses.replace(head, W_O=w),) + layer.heads[1:])
    changed = dataclasses.replace(net, layers=(changed_layer,) + net.layers[1:])
    assert net != changed


def test_metadata_is_not_compared_but_the_name_is(net):
    assert net == dataclasses.replace(net, metadata={"note": "other"})
    assert net != dataclasses.replace(net, name=net.name + " (renamed)")


def test_a_float_layer_differs_from_its_exact_twin():
    third = np.full((2, 2), Fraction(1, 3), dtype=object)
    exact = FeedForwardLayer(W_1=third, b_1=np.zeros(2), W_2=np.eye(2))
    rounded = FeedForwardLayer(W_1=np.full((2, 2), 1 / 3), b_1=np.zeros(2), W_2=np.eye(2))
    assert exact.W_1.dtype == object and rounded.W_1.dtype == np.float64
    assert exact == copy.deepcopy(exact)
    assert rounded == copy.deepcopy(rounded)
    assert exact != rounded


def test_shapes_and_other_types_compare_unequal():
    norm = LayerNorm(gain=np.ones(2), bias=np.zeros(2))
    assert norm != LayerNorm(gain=np.ones(3), bias=np.zeros(3))
    assert norm != "LayerNorm"
    assert MatrixBias(np.zeros((2, 2))) == MatrixBias(np.zeros((2, 2)))
    assert MatrixBias(np.zeros((2, 2))) != MatrixBias(np.ones((2, 2)))
    assert not same_value((np.zeros(2),), [np.zeros(2)])
    assert not same_value(np.zeros(2), 0.0)


def test_a_saved_and_loaded_network_equals_the_original(net, tmp_path):
    save_network(net, tmp_path / "n")
    assert load_network(tmp_path / "n") == net


def test_networks_stay_unhashable(net):
    with pytest.raises(TypeError):
        hash(net)
