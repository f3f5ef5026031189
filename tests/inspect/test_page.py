"""The page dispatches on layer kind through tables: every kind has a rule, an unknown one fails loudly."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from expressivity.errors import NetworkError
from expressivity.export.folders import Saved
from expressivity.inspect import page
from expressivity.inspect.page import layer_rows, network_page
from expressivity.network import FeedForwardLayer, Network, ReLU
from expressivity.network.layers import LAYERS


@dataclass(frozen=True)
class Novel(FeedForwardLayer):
    """A layer kind that joined nothing but this test."""

    kind: ClassVar[str] = "novel"


def _novel_network() -> Network:
    return Network((Novel(np.eye(1), np.zeros(1), np.eye(1), np.zeros(1), ReLU()),), labels=("x",))


def test_the_page_has_a_rule_for_every_layer_kind():
    assert set(page._LAYER_ROWS) == set(LAYERS)
    assert set(page._PICTURES) == set(LAYERS)


def test_a_layer_kind_the_page_does_not_know_fails_loudly_naming_it():
    with pytest.raises(NetworkError, match="HTML page.*'novel'"):
        layer_rows(_novel_network())
    with pytest.raises(NetworkError, match="'novel'"):
        network_page(Saved(_novel_network(), "network", "."), np.ones((2, 1)))
