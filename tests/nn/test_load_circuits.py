"""Constructed tutorial circuits load into the trained model family and compute the same function."""

import numpy as np
import pytest
import torch

from expressivity.constructions.circuits import embed, get_circuit
from expressivity.errors import NetworkError
from expressivity.network.reference import forward
from expressivity.nn.load import from_network


@pytest.mark.parametrize("name, scale", [("reverse-dot", 5.0), ("shift", 3.0), ("previous", 2.0), ("max", 4.0),
                                         ("attention", None)])
def test_softmax_circuits_load_and_agree(name, scale):
    circuit = get_circuit(name)
    net, _ = circuit.build(10, scale)
    values = np.random.default_rng(0).uniform(-1, 1, size=(3, 10))
    X = embed(net, values)
    model = from_network(net, max_len=10)
    got = model(torch.tensor(X)).detach().numpy()
    assert np.abs(got - forward(net, X)).max() < 1e-10


def test_hardmax_circuit_is_refused_with_the_fix():
    net, _ = get_circuit("mean").build(5)
    with pytest.raises(NetworkError, match="soften it first"):
        from_network(net)
