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


def test_a_token_network_s_page_shows_its_answers_and_its_domain():
    from expressivity import rasp
    from expressivity.rasp import library

    compiled = rasp.compile(library.make_sort(rasp.tokens, rasp.tokens, max_seq_len=4, min_key=1), vocab=[1, 2, 3],
                            max_seq_len=4)
    X = compiled.one_hot(compiled.token_ids(["BOS", 3, 1, 2]))
    html = network_page(Saved(compiled.network, "construction", "."), X.astype(int))
    answers = html[html.index('<table id="answers">'):]
    answers = answers[:answers.index("</table>")]
    cells = [row.split("</td><td>") for row in answers.split("<tr><td>")[1:]]
    assert [c[2] for c in cells] == ["BOS", "1", "2", "3"] and [c[1] for c in cells] == ["BOS", "3", "1", "2"]
    assert 'id="input-domain"' in html and "BOS at the first position only" in html and 'id="outside-claim"' not in html
    with pytest.raises(NetworkError, match="is not BOS"):
        network_page(Saved(compiled.network, "construction", "."), X[1:].astype(int))
    outside = network_page(Saved(compiled.network, "construction", "."), X[[0, 1, 0]].astype(int), allow_outside=True)
    assert 'id="outside-claim"' in outside and "belongs to the first position only" in outside
