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


def _size_rows(html: str) -> dict:
    table = html[html.index("<h2>Size</h2>"):]
    table = table[:table.index("</table>")]
    return {row.split('</th><td>')[0]: row.split('</th><td>')[1].split("</td>")[0]
            for row in table.split('<tr><th class="l">')[1:]}


def test_the_size_ratio_is_the_shown_network_s_and_a_report_is_not_trusted_blindly():
    """A fresh audit (2026-11-28): a Yun modified network's page showed the softened network's parameters /
    bound (27.5 for 53 / 4); a report whose bound was not a number raised a traceback; "passed": "no" read as
    passed."""
    from expressivity.constructions.circuits.build import build_reverse_dot, embed

    net, rep = build_reverse_dot(4, "auto", input_range=1.0)
    X = embed(net, np.array([0.5, -0.25, 0.0, 0.75]))
    report = rep.as_dict()
    report["size"] = {"paper_bound": 4, "bound": "a bound", "ratio": 99.0}
    html = network_page(Saved(net, "construction", ".", report), X)
    rows = _size_rows(html)
    assert float(rows["parameters / bound"]) == pytest.approx(net.parameter_count() / 4, rel=1e-3)
    report["size"]["paper_bound"] = "abc"
    report["checks"] = [{"property": "a check", "points": 1, "failures": 0, "passed": "no", "arithmetic": "exact"}]
    report["ok"] = "yes"
    html = network_page(Saved(net, "construction", ".", report), X)
    assert _size_rows(html)["parameters / bound"] == "" and "abc" in _size_rows(html)["paper&#x27;s bound"]
    assert "FAILED" in html and "all checks passed" not in html
    assert "evaluated in NumPy float64 (the reference pass)" in html


def test_a_convolution_s_picture_says_it_is_one_channel_and_an_exact_network_says_its_arithmetic():
    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.nn import Model, ModelConfig
    from expressivity.nn.convert import to_network
    from expressivity.targets import get_target

    model = Model(ModelConfig(vocab_size=5, d_out=5, max_len=6, mixer="sepconv", layers=1, d_model=8, ffn_width=8))
    html = network_page(Saved(to_network(model), "trained", "."), np.eye(5)[[0, 1, 2, 3, 4, 0]].astype(int))
    assert "channel 0 of 8: each channel has its own taps" in html and "head 0, channel 0" in html
    built = build_and_check(get_target("smooth-rank"), YunParams(2, 1, 2), BuildConfig(samples=100, seed=0))
    html = network_page(Saved(built.build.network, "construction", "."), np.array([[0.3], [0.7]]))
    assert "evaluated in exact rational arithmetic" in html
