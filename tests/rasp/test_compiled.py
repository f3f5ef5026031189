"""A compiled program's tracr interface: apply's fields (attention logits, layer outputs), the encoders, tracr's
argument names, and one number type per apply call."""

from fractions import Fraction as F

import numpy as np
import pytest

from expressivity import rasp
from expressivity.network.exact import exact_hardmax
from expressivity.network.numbers import to_exact
from expressivity.rasp import library as lib
from expressivity.rasp.language import RASPError


@pytest.fixture(scope="module")
def reverse():
    return rasp.compile(lib.make_reverse(rasp.tokens), vocab={1, 2, 3}, max_seq_len=4)


def test_apply_returns_tracrs_fields(reverse):
    out = reverse.apply(["BOS", 1, 2, 3])
    n, d = 4, reverse.network.d
    attention = [layer for layer in reverse.network.layers if layer.kind == "attention"]
    assert len(out.layer_outputs) == len(reverse.network.layers) and len(out.attn_logits) == len(attention)
    assert all(a.shape == (len(layer.heads), n, n) for a, layer in zip(out.attn_logits, attention))
    assert out.input_embeddings is out.residuals[0] and out.transformer_output is out.residuals[-1]
    for before, added, after in zip(out.residuals, out.layer_outputs, out.residuals[1:]):
        assert added.shape == (n, d) and (before + added == after).all()


def test_attention_logits_are_the_scores_the_layer_attends_with(reverse):
    out = reverse.apply(["BOS", 3, 1, 2, 2])
    k = 0
    for layer, H, added in zip(reverse.network.layers, out.residuals, out.layer_outputs):
        if layer.kind != "attention":
            continue
        logits = out.attn_logits[k]
        k += 1
        assert all(isinstance(v, (int, F)) for v in logits.flat)            # exact arithmetic, exact scores
        update = sum(exact_hardmax(logits[h]) @ (H @ to_exact(head.W_V)) @ to_exact(head.W_O)
                     for h, head in enumerate(layer.heads))
        assert (update == added).all()
    floats = reverse.apply(["BOS", 3, 1, 2, 2], dtype="float64")
    for exact, approx in zip(out.attn_logits, floats.attn_logits):
        assert np.allclose(np.array(exact, dtype=float), approx)


def test_causal_logits_hide_later_keys():
    model = rasp.compile(lib.make_frac_prevs(rasp.tokens == "x"), vocab={"a", "x"}, max_seq_len=3, causal=True)
    logits = model.apply(["BOS", "x", "a", "x"], dtype="float64").attn_logits[0][0]
    assert np.isneginf(logits[np.triu_indices(4, 1)]).all() and np.isfinite(logits[np.tril_indices(4)]).all()


def test_encoders_map_tokens_and_outputs_as_tracrs_do(reverse):
    enc = reverse.input_encoder
    assert enc.encoding_map == {"BOS": 0, 1: 1, 2: 2, 3: 3} and enc.bos_token == "BOS" and enc.bos_encoding == 0
    assert enc.encode(["BOS", 3, 1]) == [0, 3, 1] and enc.decode([0, 3, 1]) == ["BOS", 3, 1]
    assert enc.pad_token is None and enc.pad_encoding is None and enc.vocab_size == 4
    out = reverse.output_encoder
    assert out.decode([0, 2]) == [1, 3] and out.encoding_map == {1: 0, 2: 1, 3: 2}
    numeric = rasp.compile(lib.make_frac_prevs(rasp.tokens == "x"), vocab={"a", "x"}, max_seq_len=2)
    assert numeric.output_encoder.decode([F(1, 2)]) == [F(1, 2)]
    for bad in (["BOS", 4], [1, 2], ["BOS"], ["BOS", 1, 1, 1, 1, 1], "BOS12", 7):
        with pytest.raises(RASPError) as info:
            enc.encode(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(RASPError):
        enc.decode([9])


def test_tracrs_argument_names_and_padding():
    model = rasp.compile(lib.make_hist(), vocab={1, 2}, max_seq_len=4, compiler_bos="compiler_bos",
                         compiler_pad="compiler_pad")
    assert model.bos == "compiler_bos" and model.input_encoder.pad_encoding == 3
    padded = model.apply(["compiler_bos", 1, 2, 1, "compiler_pad"])
    assert padded.decoded == ["compiler_bos", 2, 1, 2, "compiler_pad"]
    assert padded.decoded[:-1] == model.apply(["compiler_bos", 1, 2, 1]).decoded
    assert padded.residuals[0].shape[0] == 4                    # the padding never enters the network
    with pytest.raises(RASPError, match="PAD only at the end"):
        model.apply(["compiler_bos", 1, "compiler_pad", 2])


@pytest.mark.parametrize("kwargs, words", [
    ({"mlp_exactness": 100}, "mlp_exactness"),
    ({"bos": "START", "compiler_bos": "BEGIN"}, "disagree"),
    ({"compiler_pad": 1}, "compiler_pad"),
    ({"compiler_pad": "BOS"}, "compiler_pad"),
    ({"compiler_pad": "p", "vocab": {"p", "q"}}, "PAD token"),
])
def test_tracr_arguments_that_cannot_apply_are_refused(kwargs, words):
    kwargs = {"vocab": {1, 2}, **kwargs}
    with pytest.raises(RASPError, match=words) as info:
        rasp.compile(lib.make_hist(), max_seq_len=3, **kwargs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float_apply_returns_plain_floats_only(dtype):
    model = rasp.compile(lib.make_pair_balance(rasp.tokens, "(", ")"), vocab={"(", ")", "a"}, max_seq_len=8,
                         samples=8, exact_ops=1)
    tokens = ["a", ")", ")", "(", "(", "(", "a", ")"]
    out = model.apply(["BOS"] + tokens, dtype=dtype)
    assert {type(v) for v in out.decoded[1:]} == {float} and out.off_value_set == []
    assert out.decoded[1:] == [float(v) for v in rasp.evaluate(model.program, tokens)]
    exact = model.apply(["BOS"] + tokens)
    assert exact.decoded[1:] == rasp.evaluate(model.program, tokens) and F(-2, 3) in exact.decoded


def test_float32_values_off_the_value_set_are_listed():
    model = rasp.compile(lib.make_sum((1, 2, 3, 4, 5)), vocab=(1, 2, 3, 4, 5), max_seq_len=12, samples=8, exact_ops=1)
    tokens = [5, 4, 3, 2, 2, 1, 1, 1, 1, 5, 4, 5]
    out = model.apply(["BOS"] + tokens, dtype="float32")
    assert {type(v) for v in out.decoded[1:]} == {float}
    for i in out.off_value_set:          # float32 cannot hold 34 to within 1e-6 here: said, not hidden
        assert abs(out.decoded[i] - 34) > 1e-6 and abs(out.decoded[i] - 34) < 1e-3
    assert model.apply(["BOS"] + tokens).decoded[1:] == [34] * 12


def test_apply_refuses_what_it_cannot_run(reverse):
    with pytest.raises(RASPError, match="dtype"):
        reverse.apply(["BOS", 1], dtype="float16")
    soft = rasp.compile(lib.make_hist(), vocab={1, 2}, max_seq_len=2, attention="softmax")
    with pytest.raises(RASPError, match="no exact value"):
        soft.apply(["BOS", 1], dtype="exact")


def test_encoding_map_refuses_a_vocabulary_whose_tokens_a_dict_cannot_hold_apart():
    """0, False and 0.0 are three tokens to the compiler and one key to a dict: encoding_map mapped 0 and False to
    0.0's id and dropped 1 and True (a fresh audit, 2026-11-29). encode tells them apart; the dict view refuses."""
    model = rasp.compile(rasp.Map(repr, rasp.tokens), vocab=[0, False, 0.0, 1, True, 1.0], max_seq_len=3)
    ids = model.input_encoder.encode(["BOS", 0, False, 0.0])
    assert len(set(ids)) == 4
    with pytest.raises(RASPError, match="encoding_map cannot hold .* use encode"):
        model.input_encoder.encoding_map
