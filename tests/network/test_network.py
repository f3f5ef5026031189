"""Network-level facts: lengths, input and output maps, summary, JSON round trip."""

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from expressivity.errors import NetworkError
from expressivity.network import (AttentionLayer, FeedForwardLayer, Head, LayerNorm, MatrixBias, MixingHead, MixingLayer,
                                  Network, RelativeBias, SlopeBias, evaluate, one_hot)
from expressivity.network.serial import InlineArrays
from tests.network.strategies import ROWS, input_length, softmax_networks


def _attn(bias=None):
    return AttentionLayer((Head(np.ones((2, 1)), np.ones((2, 1)), np.ones((2, 1)), np.ones((1, 2)), position_bias=bias),))


def test_max_length_lets_shorter_inputs_use_the_leading_rows():
    P = np.arange(16.0).reshape(4, 4)
    net = Network((_attn(MatrixBias(P)),), labels=("a", "b"), positional_encoding=np.ones((4, 2)), max_length=4)
    assert net.length is None and net.max_length == 4
    X = np.random.default_rng(0).normal(size=(3, 2))
    shorter = Network((_attn(MatrixBias(P[:3, :3])),), labels=("a", "b"), positional_encoding=np.ones((3, 2)))
    assert shorter.length == 3
    assert np.array_equal(evaluate(net, X), evaluate(shorter, X))
    with pytest.raises(NetworkError, match="at most 4 tokens"):
        evaluate(net, np.zeros((5, 2)))


def test_max_length_needs_every_position_indexed_array_to_have_that_many_rows():
    with pytest.raises(NetworkError, match="positional encoding has 3 positions but max_length is 4"):
        Network((), labels=("a",), positional_encoding=np.zeros((3, 1)), max_length=4)
    with pytest.raises(NetworkError, match="layer 0 .* has 3 positions"):
        Network((_attn(MatrixBias(np.zeros((3, 3)))),), labels=("a", "b"), max_length=4)
    with pytest.raises(NetworkError, match="positive integer"):
        Network((), labels=("a",), max_length=0)
    mix = MixingLayer((MixingHead(np.eye(1), np.eye(1), matrix=np.eye(5)),))
    with pytest.raises(NetworkError, match="different lengths"):
        Network((mix,), labels=("a",), positional_encoding=np.zeros((3, 1)))


def test_token_networks_take_one_hot_inputs():
    E = np.random.default_rng(1).normal(size=(5, 2))
    net = Network((), labels=("a", "b"), embedding=E, input_labels=tuple(f"tok{k}" for k in range(5)))
    ids = np.array([[0, 4, 2]])
    assert net.d_in == 5 and np.array_equal(evaluate(net, one_hot(ids, 5)), E[ids])
    with pytest.raises(NetworkError, match=r"token ids must be integers in \[0, 5\)"):
        one_hot(np.array([5]), 5)
    with pytest.raises(NetworkError, match=r"input must be \(n, 5\)"):
        evaluate(net, np.zeros((3, 2)))
    with pytest.raises(NetworkError, match="3 input labels for 5 inputs"):
        Network((), labels=("a", "b"), embedding=E, input_labels=("x", "y", "z"))


def test_input_and_output_maps_are_shape_checked():
    with pytest.raises(NetworkError, match=r"embedding must be \(d_in, 2\)"):
        Network((), labels=("a", "b"), embedding=np.zeros((3, 3)))
    with pytest.raises(NetworkError, match=r"readout bias must be \(1,\)"):
        Network((), labels=("a", "b"), readout=np.zeros((2, 1)), readout_bias=np.zeros(2))
    with pytest.raises(NetworkError, match="final norm"):
        Network((), labels=("a", "b"), final_norm=LayerNorm(np.ones(3), np.zeros(3)))


def test_summary_describes_every_part_and_counts_mixing_layers():
    ffn = FeedForwardLayer(np.ones((2, 1)), np.zeros(1), np.ones((1, 2)), norm=LayerNorm(np.ones(2), np.zeros(2)))
    mix = MixingLayer((MixingHead(np.eye(2), np.eye(2), kernel=np.ones((3, 2)), left=2),))
    rot = AttentionLayer((Head(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 1)), np.ones((1, 2)), rotary=True,
                               position_bias=RelativeBias(((0, 1),), default=0, default_negative=-1)),))
    net = Network((ffn, mix, rot), labels=("a", "b"), embedding=np.ones((3, 2)), readout=np.ones((2, 1)),
                  readout_bias=np.zeros(1), final_norm=LayerNorm(np.ones(2), np.zeros(2)), max_length=8)
    text = net.summary()
    for part in ("length=<=8", "1 mixing", "embedding (3, 2)", "ffn pre-LN", "conv K=3 left=2", "rotary",
                 "relative(1 offsets, default 0, right -1)-bias", "final layer norm", "readout + bias"):
        assert part in text, part
    assert net.layer_counts() == {"attention": 1, "feedforward": 1, "mixing": 1, "total": 3}
    assert net.parameter_count() == (2 + 1 + 2 + 2 + 4) + (4 + 4 + 6) + (4 + 4 + 2 + 2 + 2 + 3) + 6 + 2 + 1 + 4


def test_size_breakdowns_list_every_layer_kind_from_its_class(monkeypatch):
    """The summary and the page list layer kinds from the LAYERS table: attention and feed-forward
    always, the others when present; a kind whose class lacks a title would fail here."""
    from expressivity.network.layers import LAYERS

    assert all(isinstance(cls.title, str) and isinstance(cls.listed_when_absent, bool) for cls in LAYERS.values())
    ffn = FeedForwardLayer(np.ones((2, 1)), np.zeros(1), np.ones((1, 2)))
    mix = MixingLayer((MixingHead(np.eye(2), np.eye(2), kernel=np.ones((3, 2)), left=2),))
    assert Network((ffn,), labels=("a", "b")).layer_breakdown() == [("attention", 0), ("feed-forward", 1)]
    net = Network((ffn, mix, mix), labels=("a", "b"))
    assert net.layer_breakdown() == [("attention", 0), ("feed-forward", 1), ("mixing", 2)]
    assert "layers=3 (0 attention, 1 feed-forward, 2 mixing)" in net.summary()
    monkeypatch.setattr(MixingLayer, "title", "mixing probe")
    assert "2 mixing probe" in net.summary()


@given(softmax_networks(position=True), st.integers(1, ROWS), st.integers(0, 10**6))
def test_every_network_round_trips_through_json(net, n, seed):
    arrays = InlineArrays()
    back = Network.from_dict(json.loads(json.dumps(net.to_dict(arrays), allow_nan=False)), arrays)
    X = np.random.default_rng(seed).normal(size=(2, input_length(net, n), net.d_in))
    assert np.array_equal(evaluate(back, X), evaluate(net, X), equal_nan=True)
    assert back.summary() == net.summary()


def test_composition_keeps_the_input_map_of_the_first_and_the_output_map_of_the_second():
    first = Network((), labels=("a",), embedding=np.ones((2, 1)), max_length=4, positional_encoding=np.zeros((4, 1)))
    second = Network((FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1))),), labels=("a",),
                     readout_bias=np.ones(1))
    both = first.then(second)
    assert both.d_in == 2 and both.max_length == 4 and both.readout_bias is not None
    with pytest.raises(NetworkError, match="embedding"):
        first.then(first)
    with pytest.raises(NetworkError, match="readout"):
        both.then(second)
    slope = AttentionLayer((Head.dp_free(np.ones((1, 1)), np.ones((1, 1)), SlopeBias("lin", 1.0)),))
    assert Network((slope,), labels=("a",)).uses_position and not Network((), labels=("a",)).uses_position


def test_a_composition_takes_the_input_layout_of_the_first_and_the_rest_of_the_second():
    ff = FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1)))
    first = Network((ff,), labels=("a",), name="echo", metadata={"input_dims": ["a"], "note": "first"})
    second = Network((ff,), labels=("a",), name="out", metadata={"input_dims": ["b"], "answers": {"x": 1},
                                                                  "note": "second"})
    both = first.then(second)
    assert both.metadata["input_dims"] == ["a"] and both.metadata["answers"] == {"x": 1}
    assert both.metadata["note"] == "second" and both.name == "out o echo"
    assert "input_dims" not in Network((ff,), labels=("a",)).then(second).metadata   # about the second's input


def test_a_composition_of_differently_labelled_residuals_is_refused():
    ff = FeedForwardLayer(np.ones((2, 1)), np.zeros(1), np.ones((1, 2)))
    first = Network((ff,), labels=("a", "b"))
    with pytest.raises(NetworkError, match=r"dimension 1 is 'b' in the first network and 'c' in the second"):
        first.then(Network((ff,), labels=("a", "c")))
    assert first.then(Network((ff,), labels=("a", "b"))).labels == ("a", "b")


@pytest.mark.parametrize("field, value", [("name", 3), ("name", None), ("metadata", [("a", 1)])])
def test_a_network_refuses_a_name_or_metadata_of_the_wrong_type(field, value):
    with pytest.raises(NetworkError, match=field):
        Network((), labels=("a",), **{field: value})


def test_a_networks_weights_cannot_change_after_it_is_built():
    """``net.layers[0].heads[0].W_O[...] *= 2`` doubled sum's answers while the network kept its name,
    claim and domain, and save_network stamped fresh digests on it (a fresh audit, 2026-11-28): the
    weights are read-only copies, so neither an edit in place nor a later change to the caller's
    array reaches them."""
    from expressivity import build_sum, embed, evaluate

    net, _ = build_sum(3)
    with pytest.raises(ValueError, match="read-only"):
        net.layers[0].heads[0].W_O[...] *= 2
    W = np.eye(2)
    ffn = FeedForwardLayer(W_1=W, b_1=np.zeros(2), W_2=W, b_2=None)
    W[0, 0] = 7.0
    assert ffn.W_1[0, 0] == 1.0 and not ffn.W_1.flags.writeable
    assert evaluate(net, embed(net, np.array([1.0, 2.0, 3.0])), "exact")[0, 0] == 6


def test_weights_and_temperatures_that_no_evaluator_can_use_are_refused_where_they_are_given():
    """NaN weights were accepted and evaluate then blamed the input ("use smaller values"); a complex
    weight became its real part with a NumPy warning; an inverse temperature of NaN or inf was
    accepted (a fresh audit, 2026-11-28)."""
    import math

    good = np.ones((2, 1))
    for W, says in ((np.array([[np.nan], [1.0]]), "1 non-finite"), (np.array([[np.inf], [1.0]]), "non-finite"),
                    (1j * good, "complex"), (np.array([["a"], ["b"]]), "must hold numbers")):
        with pytest.raises(NetworkError, match=says):
            Head(W_Q=W, W_K=good, W_V=good, W_O=good.T)
    head = Head(W_Q=good, W_K=good, W_V=good, W_O=good.T)
    for lam in (math.nan, math.inf, "2", True):
        with pytest.raises(NetworkError, match="inverse_temperature must be a finite number"):
            AttentionLayer((head,), inverse_temperature=lam)
    assert AttentionLayer((head,), inverse_temperature=-2).inverse_temperature == -2   # flips the arg-max: allowed
    # a position bias may mask with -inf, never NaN
    assert MatrixBias(np.array([[0.0, -np.inf], [0.0, 0.0]])).values[0, 1] == -np.inf
    with pytest.raises(NetworkError, match=r"1 NaN or \+inf entries"):
        MatrixBias(np.array([[0.0, np.nan], [0.0, 0.0]]))


def test_exact_weights_are_checked_entry_by_entry_and_masks_are_refused_where_they_cannot_be_held():
    """A weight array with one Fraction became an object array that took NaN, inf, complex numbers,
    strings and None unchecked; a hardmax row whose every key was masked (-inf) averaged the masked
    keys; a -inf bias was refused by the exact pass as "needs finite numbers" (a review and a fuzz pass,
    2026-11-28)."""
    import math
    from fractions import Fraction

    from expressivity.errors import EvaluationError
    from expressivity.network import evaluate

    good = np.ones((2, 1))
    for bad in (np.nan, math.inf, 2j, "x", None):
        with pytest.raises(NetworkError, match="weights are finite real numbers|complex"):
            Head(W_Q=good, W_K=good, W_V=np.array([[Fraction(1, 2)], [bad]], dtype=object), W_O=good.T)
    for W, says in ((None, "must hold numbers, got None"), ([[1, 2], [3]], "must hold numbers")):
        with pytest.raises(NetworkError, match=says):
            Head(W_Q=W, W_K=good, W_V=good, W_O=good.T)
    with pytest.raises(NetworkError, match=r"NaN or \+inf"):
        MatrixBias(np.array([[0.0, np.inf], [0.0, 0.0]]))
    X = np.array([[1.0, 0.0], [2.0, 0.0]])
    W_V, W_O = np.eye(2)[:, :1], np.array([[0.0, 1.0]])
    masked = Head.dp_free(W_V, W_O, position_bias=MatrixBias(np.array([[-np.inf, -np.inf], [0.0, 0.0]])))
    net = Network((AttentionLayer((masked,), normalization="hardmax"),), ("x", "out"))
    for dtype in ("float64", "float32", "torch-float64"):
        with pytest.raises(EvaluationError, match="every key a -inf position bias masks"):
            evaluate(net, X, dtype)
    partial = Head.dp_free(W_V, W_O, position_bias=MatrixBias(np.array([[0.0, -np.inf], [0.0, 0.0]])))
    net = Network((AttentionLayer((partial,), normalization="hardmax"),), ("x", "out"))
    assert evaluate(net, X)[:, 1].tolist() == [1.0, 1.5]
    with pytest.raises(EvaluationError, match="has a -inf position bias .a mask., which exact arithmetic does not hold"):
        evaluate(net, X, "exact")


def test_an_inverse_temperature_beyond_float64_is_refused_in_one_line():
    good = np.ones((2, 1))
    head = Head(W_Q=good, W_K=good, W_V=good, W_O=good.T)
    with pytest.raises(NetworkError, match="inverse_temperature must be a finite number"):
        AttentionLayer((head,), inverse_temperature=10**400)


def test_a_copy_with_other_weights_does_not_keep_the_originals_claim():
    """`dataclasses.replace(net, readout=...)` kept the construction's lengths and domain, so `evaluate` called a
    network with doubled outputs within its claim (2026-11-28). A copy with other weights carries no claim; one
    that only renames keeps it; `claimed_weights=None` makes the same claim for the new weights explicitly."""
    import dataclasses

    from expressivity.constructions.circuits import build_sum
    from expressivity.network.evaluate import evaluate

    net, _ = build_sum(4)
    X = np.array([[1.0, 0], [2.0, 0], [3.0, 0], [4.0, 0]])
    assert net.no_claim is None and float(evaluate(net, X)[0, 0]) == 10
    doubled = dataclasses.replace(net, readout=net.readout * 2)
    assert "weights differ from those its claim was made for" in doubled.no_claim
    with pytest.raises(NetworkError, match="carries no claim on any input: its weights differ"):
        evaluate(doubled, X)
    assert float(evaluate(doubled, X, allow_outside=True)[0, 0]) == 20
    assert "claim: none on any input (its weights differ" in doubled.summary()
    assert dataclasses.replace(net, name="renamed").no_claim is None
    head = net.layers[0].heads[0]
    edited = dataclasses.replace(net, layers=(dataclasses.replace(net.layers[0], heads=(
        dataclasses.replace(head, W_V=head.W_V * 3),)),) + net.layers[1:])
    assert edited.no_claim is not None
    meta = {k: v for k, v in doubled.metadata.items() if k != "no_claim"}
    attested = dataclasses.replace(doubled, metadata=meta, claimed_weights=None)
    assert attested.no_claim is None and float(evaluate(attested, X)[0, 0]) == 20
    dropped = dataclasses.replace(net, readout=net.readout * 2, valid_lengths=None, input_domain=None)
    assert dropped.no_claim is None and dropped.claimed_weights is None
    # the claimed weights put back restore it; claimed_weights=None on a copy that lost it does not (a network
    # read from its folder comes with None: a saved copy got its claim back so, a review, 2026-11-28)
    assert dataclasses.replace(doubled, readout=net.readout).no_claim is None
    assert dataclasses.replace(doubled, claimed_weights=None).no_claim is not None


def test_a_copy_that_lost_its_claim_has_none_once_saved_and_loaded(tmp_path):
    import dataclasses

    from expressivity.constructions.circuits import build_sum
    from expressivity.export.safetensors_io import load_network, save_network

    net, _ = build_sum(4)
    save_network(dataclasses.replace(net, readout=net.readout * 2), tmp_path / "doubled")
    loaded = load_network(tmp_path / "doubled")
    assert "weights differ from those its claim was made for" in loaded.no_claim
    save_network(net, tmp_path / "kept")
    assert load_network(tmp_path / "kept").no_claim is None
    # ... nor after any copy of it: a rename took the loaded (changed) weights for the claimed ones put back and
    # claimed again, and so did the copies export makes (a fresh audit, 2026-11-29: a doubled readout exported to
    # TransformerLens "within its claim")
    for copy in (dataclasses.replace(loaded, name="renamed"), dataclasses.replace(loaded, valid_lengths=None),
                 dataclasses.replace(dataclasses.replace(loaded, name="a"), name="b")):
        assert copy.no_claim is not None, copy.name
    # a mark read from a file (an export's expressivity.json) stays on a network whose weights were never changed
    marked = dataclasses.replace(net, metadata={**net.metadata, "no_claim": loaded.no_claim})
    assert marked.no_claim is not None and dataclasses.replace(marked, name="again").no_claim is not None


def test_a_claim_holds_for_weights_too_large_to_write_in_decimal():
    """The digest wrote exact weights in decimal: a 5,000-digit weight raised Python's int-to-text limit (a review,
    2026-11-28)."""
    from fractions import Fraction

    from expressivity.network.lengths import ValidLengths

    big = np.array([[Fraction(10**5000, 3)]], dtype=object)
    net = Network([FeedForwardLayer(big, np.array([0], dtype=object), np.array([[1]], dtype=object))], ("x",),
                  valid_lengths=ValidLengths.range(1, 4))
    assert net.no_claim is None and len(net.claimed_weights) == 64


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def test_network_digest_sees_every_exact_weight_and_the_activation():
    import dataclasses
    from expressivity.constructions.yun.compile import compile_modified
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.network.network import weights_digest
    from expressivity.targets import get_target
    net = compile_modified(get_target("mean-shift"), YunParams(2, 2, 2)).network     # exact weights, a claim
    assert net.no_claim is None
    k, layer = next((k, l) for k, l in enumerate(net.layers)
                    if hasattr(l, "W_2") and np.asarray(l.W_2).dtype == object and np.asarray(l.W_2).size >= 2)
    W = np.array(layer.W_2, dtype=object, copy=True)
    W.flat[W.size - 1] = W.flat[W.size - 1] + Fraction(1, 3)       # the last entry, not the first
    layers = list(net.layers)
    layers[k] = dataclasses.replace(layer, W_2=W)
    changed = dataclasses.replace(net, layers=tuple(layers))
    assert weights_digest(changed) != weights_digest(net)
    assert changed.no_claim is not None                               # a copy with other weights carries no claim
    from expressivity.network.layers import PiecewiseLinear
    act = layer.activation
    layers[k] = dataclasses.replace(layer, activation=dataclasses.replace(act, intercepts=tuple(i + 1 for i in act.intercepts)))
    other_act = dataclasses.replace(net, layers=tuple(layers))
    assert weights_digest(other_act) != weights_digest(net) and other_act.no_claim is not None


def test_network_outside_claim_reports_no_claim_and_lengths():
    import dataclasses
    from expressivity import build_sum
    from expressivity.constructions.circuits.build import embed
    net, _ = build_sum(3)
    X = embed(net, np.array([1.0, 2.0, 3.0]))
    assert net.outside_claim(X) is None and net.within_claim(3)
    assert not net.within_claim(4) and net.outside_claim(embed(net, np.array([1.0, 2.0, 3.0, 4.0]))) is not None
    copy = dataclasses.replace(net, readout=None if net.readout is None else np.asarray(net.readout) * 2)
    assert copy.no_claim is not None and copy.outside_claim(X) == copy.no_claim


def test_one_hot_allocates_its_rows_only_and_checks_the_vocabulary_size():
    """An audit (2026-11-28): one_hot built np.eye(vocab_size), vocab_size^2 floats (537 MB for 3 tokens of 8,000;
    about 20 GB at GPT-2's 50,257), and took 3.5 or '3' for a vocabulary size."""
    import tracemalloc

    from expressivity.errors import NetworkError
    from expressivity.network import one_hot

    assert one_hot([0, 2, 1], 3).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert one_hot(np.array([[1], [0]]), 2).tolist() == [[[0, 1]], [[1, 0]]]
    tracemalloc.start()
    try:
        rows = one_hot(np.arange(3), 50_257)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows.sum() == 3 and peak < 10 * rows.nbytes   # 1.2 MB, not 20 GB
    for bad in (3.5, "3", None, 0, True):
        with pytest.raises(NetworkError, match="vocab_size"):
            one_hot([0], bad)


def test_a_copy_of_a_network_that_claims_nothing_claims_nothing_without_its_mark(tmp_path):
    """An audit (2026-11-29): a softmax RASP network checked on samples carries no claim (metadata no_claim); a copy
    by dataclasses.replace with that entry dropped, saved and run, answered "within_claim: true". A copy keeps the
    mark in claimed_weights; claimed_weights=None is the caller's own claim, made explicitly."""
    import dataclasses

    from expressivity import rasp
    from expressivity.export import load_network, save_network
    from expressivity.rasp import library as lib

    net = rasp.compile(lib.get_program("sort").program(8), vocab=[1, 2, 3, 4], max_seq_len=8,
                       attention="softmax").network
    assert net.no_claim is not None
    bare = {k: v for k, v in net.metadata.items() if k != "no_claim"}
    copy = dataclasses.replace(net, metadata=bare)
    assert copy.no_claim.startswith("it is a copy (dataclasses.replace) of a network that claims nothing")
    save_network(copy, tmp_path / "copy")
    assert load_network(tmp_path / "copy").no_claim is not None
    loaded = load_network(tmp_path / "copy")
    assert dataclasses.replace(loaded, metadata={k: v for k, v in loaded.metadata.items() if k != "no_claim"}).no_claim
    assert dataclasses.replace(net, metadata=bare, claimed_weights=None).no_claim is None   # explicit
    assert dataclasses.replace(net, name="renamed").no_claim == net.no_claim


def test_a_copy_with_its_input_labels_swapped_does_not_keep_the_claim():
    """An audit (2026-11-29): the input domain reads its columns by label, and the claim's digest left the labels
    out, so a reversal circuit with its two input labels swapped kept its claim on the other column and answered
    1, 2, 3, 4 "within its claim"."""
    import math

    from expressivity import build_reverse

    net, _ = build_reverse(4, math.inf)
    swapped = dataclasses.replace(net, input_labels=tuple(reversed(net.input_labels)))
    X = np.stack([np.zeros(4), np.arange(1.0, 5.0)], axis=1)
    assert net.no_claim is None and swapped.no_claim is not None and swapped.outside_claim(X) is not None
    assert dataclasses.replace(net, name="renamed").no_claim is None   # a rename keeps it
    assert dataclasses.replace(swapped, input_labels=net.input_labels).no_claim is None   # put back, claimed again


def test_a_trained_model_s_copy_stays_trained_whatever_its_metadata(tmp_path):
    """An audit (2026-11-29): ``trained`` read the metadata alone, so a copy of a converted model with its metadata
    replaced was called a construction and its outputs "within_claim: true", also once saved and loaded."""
    import torch

    from expressivity.export.safetensors_io import load_network, save_network
    from expressivity.inspect.run import run_network
    from expressivity.network.inputs import one_hot
    from expressivity.nn.convert import to_network
    from expressivity.nn.model import Model, ModelConfig

    torch.manual_seed(0)
    net = to_network(Model(ModelConfig(vocab_size=4, d_out=4, max_len=6, layers=1, heads=1, d_model=8, ffn_width=8)))
    copy = dataclasses.replace(net, metadata={"answers": net.metadata["answers"], "note": "my model"})
    X = one_hot(np.array([0, 1, 2, 3]), 4).astype(object)
    assert net.trained and copy.trained and "model_config" not in copy.metadata
    assert run_network(net, X)["within_claim"] is None and run_network(copy, X)["within_claim"] is None
    save_network(copy, tmp_path / "copy")
    loaded = load_network(tmp_path / "copy")
    assert loaded.trained and run_network(loaded, X)["within_claim"] is None
    assert not dataclasses.replace(net, metadata={}, trained_mark=False).trained   # said in so many words only


def test_a_composition_with_trained_weights_in_either_part_is_a_trained_model_s():
    """A review (2026-11-29): ``then()`` kept the first network's mark only, so a circuit followed by a trained
    model whose metadata had been replaced answered "within_claim: true"."""
    import math

    from expressivity import build_reverse

    circuit, _ = build_reverse(4, math.inf)
    first = dataclasses.replace(circuit, readout=None, output_labels=None)
    width = first.d
    model = Network((FeedForwardLayer(np.eye(width), np.zeros(width), np.eye(width)),), first.labels,
                    metadata={"trained": True})
    bare = dataclasses.replace(model, metadata={})
    assert bare.trained and first.then(model).trained and first.then(bare).trained
    assert not first.then(dataclasses.replace(model, metadata={}, trained_mark=False)).trained


def test_a_saved_layer_reads_back_as_it_would_be_built():
    """A review (2026-11-29): ``from_dict`` read causal "no" as True and left 1.7 as 1, past the constructors'
    refusals."""
    from expressivity.network.serial import InlineArrays

    head = Head(np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    layer = AttentionLayer((head,), causal=True)
    arrays = InlineArrays()
    d = layer.to_dict(arrays)
    assert AttentionLayer.from_dict(d, arrays).causal is True
    with pytest.raises(NetworkError, match="causal must be True or False, got 'no'"):
        AttentionLayer.from_dict({**d, "causal": "no"}, arrays)
    conv = MixingHead(np.ones((1, 1)), np.ones((1, 1)), kernel=np.ones((3, 1)), left=2)
    arrays = InlineArrays()
    d = conv.to_dict(arrays)
    assert MixingHead.from_dict(d, arrays).left == 2
    with pytest.raises(NetworkError, match="left must be a whole number of tokens, got 1.7"):
        MixingHead.from_dict({**d, "left": 1.7}, arrays)


def test_deleting_no_claim_from_the_metadata_in_place_does_not_restore_the_claim(tmp_path):
    """Left open since 2026-11-28, closed 2026-11-29: the metadata dict is the one mutable part of a network, and
    ``del net.metadata["no_claim"]`` made a network that claims nothing read as within its claim, also once saved
    and read back. The reason is kept where the dict cannot reach it; a mark added in place still counts."""
    from expressivity import build_reverse
    from expressivity.export import load_network, save_network

    net, _ = build_reverse(4, math.inf)
    doubled = dataclasses.replace(net, readout=2 * net.readout)
    reason = doubled.no_claim
    assert reason is not None
    del doubled.metadata["no_claim"]
    assert doubled.no_claim == reason
    X = np.stack([np.arange(1.0, 5.0), np.zeros(4)], axis=1)
    assert doubled.outside_claim(X) == reason
    with pytest.raises(NetworkError, match="carries no claim"):
        evaluate(doubled, X)
    save_network(doubled, tmp_path / "saved")
    assert load_network(tmp_path / "saved").no_claim is not None
    kept = dataclasses.replace(net, name="kept")
    kept.metadata["no_claim"] = "marked by hand"                  # withdrawing a claim in place still works
    assert kept.no_claim == "marked by hand"
    kept.metadata["trained"] = True
    assert kept.trained


def test_a_trained_mark_added_to_the_metadata_in_place_counts():
    from expressivity import build_reverse

    net, _ = build_reverse(4, math.inf)
    assert not net.trained
    net.metadata["model_config"] = {"d_model": 4}
    assert net.trained


def test_copies_own_their_metadata():
    """A review (2026-11-29): copies shared one metadata dict, so a no_claim added to a copy in place withdrew the
    original's claim. (A changed copy with its no_claim dropped and claimed_weights=None claims its new weights: the
    documented way to attest them, whether the entry is dropped in place or in the copy's metadata.)"""
    from expressivity import build_reverse

    net, _ = build_reverse(4, math.inf)
    kept = dataclasses.replace(net, name="kept")
    kept.metadata["no_claim"] = "by hand"
    assert kept.no_claim == "by hand" and net.no_claim is None and kept.metadata is not net.metadata
    changed = dataclasses.replace(net, readout=3 * net.readout)
    del changed.metadata["no_claim"]
    assert changed.no_claim is not None                                         # deleting it in place: still none
    assert dataclasses.replace(changed, readout=net.readout).no_claim is None   # the claimed weights put back
    assert dataclasses.replace(changed, claimed_weights=None).no_claim is None  # attested, explicitly
