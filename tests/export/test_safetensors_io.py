import json
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file

from expressivity.constructions.yun.compile import compile_modified
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.soften import soften
from expressivity.errors import ExpressivityError
from expressivity.export import load_network, save_network
from expressivity.network import GELU, AttentionLayer, FeedForwardLayer, Head, Network, SlopeBias, one_hot
from expressivity.network.evaluate import evaluate
from expressivity.nn import Model, ModelConfig, from_network, to_network
from expressivity.targets import get_target
from tests.network.strategies import ROWS, softmax_networks


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


@settings(max_examples=25)
@given(softmax_networks(position=True), st.integers(0, 10**6))
def test_every_layer_feature_round_trips_through_files(net, seed):
    with tempfile.TemporaryDirectory() as tmp:
        save_network(net, Path(tmp))
        back = load_network(Path(tmp))
    X = np.random.default_rng(seed).normal(size=(2, net.length or ROWS, net.d_in))
    assert np.array_equal(evaluate(back, X), evaluate(net, X)) and back.summary() == net.summary()


def _saved(tmp_path) -> Path:
    head = Head.dp_free(np.ones((2, 1)), np.ones((1, 2)), SlopeBias("log", 1.5))
    net = Network((AttentionLayer((head,), causal=True, normaliser="infinite"),
                   FeedForwardLayer(np.ones((2, 3)), np.zeros(3), np.ones((3, 2)), activation=GELU())),
                  labels=("a", "b"), readout=np.array([[Fraction(1, 3)], [1]], dtype=object))
    save_network(net, tmp_path)
    return tmp_path


def _edit_json(path: Path, edit) -> None:
    desc = json.loads((path / "network.json").read_text())
    edit(desc)
    (path / "network.json").write_text(json.dumps(desc))


def _drop_tensor(path: Path, name: str) -> None:
    tensors = load_file(str(path / "weights.safetensors"))
    del tensors[name]
    save_file(tensors, str(path / "weights.safetensors"))


def _as_bfloat16(path: Path) -> None:
    import safetensors.torch
    tensors = safetensors.torch.load_file(str(path / "weights.safetensors"))
    safetensors.torch.save_file({k: v.to(torch.bfloat16) for k, v in tensors.items()}, str(path / "weights.safetensors"))


def _with_sparse_gigabyte(path: Path) -> None:
    """Add an unused 1 GiB tensor to the weights file, sparse on disk (a few KB): read in full, it took 2.1 GB."""
    import struct

    wpath = path / "weights.safetensors"
    data = wpath.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8:8 + n]), data[8 + n:]
    header["unused"] = {"dtype": "F64", "shape": [1 << 27], "data_offsets": [len(body), len(body) + (1 << 30)]}
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(wpath, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + body)
        f.truncate(8 + len(raw) + len(body) + (1 << 30))


def _reshape_tensor(path: Path, name: str) -> None:
    tensors = load_file(str(path / "weights.safetensors"))
    tensors[name] = np.zeros((5, 5))
    save_file(tensors, str(path / "weights.safetensors"))


@pytest.mark.parametrize("damage, match", [
    (lambda p: (p / "network.json").unlink(), "network.json is missing"),
    (lambda p: (p / "weights.safetensors").unlink(), "weights.safetensors is missing"),
    (lambda p: (p / "network.json").write_text('{"format": "expressivity.network/2", "layers": ['), "not valid JSON"),
    (lambda p: (p / "weights.safetensors").write_bytes((p / "weights.safetensors").read_bytes()[:40]), "not a readable safetensors"),
    (lambda p: (p / "weights.safetensors").write_bytes(b"\x00" * 3), "not a readable safetensors"),
    (lambda p: _edit_json(p, lambda d: d.update(format="other/1")), "not in format"),
    (lambda p: _drop_tensor(p, "layers.1.W_2"), "tensor 'layers.1.W_2' is missing"),
    (lambda p: _reshape_tensor(p, "layers.0.heads.0.W_V"), r"has shape \(5, 5\), the description says \(2, 1\)"),
    (lambda p: _edit_json(p, lambda d: d["layers"][1].update(type="conv")), "unknown layer type 'conv'"),
    (lambda p: _edit_json(p, lambda d: d["layers"][1]["activation"].update(kind="tanh")), "unknown activation 'tanh'"),
    (lambda p: _edit_json(p, lambda d: d["layers"][0].pop("heads")), "missing field 'heads'"),
    (lambda p: _edit_json(p, lambda d: d["layers"][0]["heads"][0]["position_bias"].update(beta=0.5)), "no finite infinite mass"),
    (lambda p: _edit_json(p, lambda d: d["layers"][0].update(heads=7)), "malformed"),
    (lambda p: _edit_json(p, lambda d: d["readout"].update(exact=["1/2", 1])), "disagrees with its exact copy"),
    (lambda p: _edit_json(p, lambda d: d["readout"].update(exact=["x", 1])), "'x' is not a number"),
    (lambda p: _edit_json(p, lambda d: d.update(labels=["a"])), "invalid network: layer 0"),
    # a shared folder's hostile files (an audit, 2026-11-28: each was a traceback)
    (lambda p: (p / "network.json").write_text("[" * 200_000), "not valid JSON"),
    (lambda p: _edit_json(p, lambda d: d.update(spread=float("inf"))), "holds a NaN or infinite value"),
    (lambda p: _as_bfloat16(p), "not a readable safetensors file"),
    (lambda p: _with_sparse_gigabyte(p), r"holds 1,07[0-9,]+ bytes, more than the [0-9,]+ bytes of the tensors"),
    # metadata that is not an object: a TypeError traceback (an audit, 2026-11-29)
    (lambda p: _edit_json(p, lambda d: d.update(metadata="x")), "its metadata is a str, not an object"),
    (lambda p: _edit_json(p, lambda d: d.update(metadata=[1, 2])), "its metadata is a list, not an object"),
])
def test_damaged_files_give_one_line_errors(tmp_path, damage, match):
    damage(_saved(tmp_path))
    with pytest.raises(ExpressivityError, match=match) as info:
        load_network(tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kwargs", [dict(vocab_size=5, mixer=("attention", "sepconv"), rpe="t5", rotary=True, norm="pre"),
                                    dict(mixer=("dpfree", "bilinear"), rpe="log", dpfree_normaliser="infinite",
                                         activation="gelu", ape="sinusoidal")])
def test_trained_models_export_and_load_as_networks(tmp_path, kwargs):
    torch.manual_seed(0)
    model = Model(ModelConfig(d_in=2, d_model=4, heads=2, layers=2, max_len=6, ffn_width=3, **kwargs)).double()
    save_network(to_network(model), tmp_path)
    back = from_network(load_network(tmp_path), tokens=model.cfg.vocab_size > 0)
    x = torch.randint(0, 5, (2, 6)) if model.cfg.vocab_size else torch.randn(2, 6, 2, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(back(x), model(x), rtol=1e-12, atol=1e-12)
    X = one_hot(x.numpy(), 5) if model.cfg.vocab_size else x.numpy()
    assert np.allclose(evaluate(load_network(tmp_path), X), model(x).detach().numpy(), rtol=1e-10, atol=1e-10)


def test_a_network_that_cannot_be_written_leaves_no_folder_behind(tmp_path):
    # a fresh audit (2026-11-28): unserialisable metadata raised a raw TypeError after weights.safetensors was
    # written, and that file then blocked saving the network again
    import dataclasses

    from expressivity import build_sum
    from expressivity.errors import ExpressivityError

    net, _ = build_sum(3)
    with pytest.raises(ExpressivityError, match="cannot be written as JSON"):
        save_network(dataclasses.replace(net, metadata={"s": {1, 2}}), tmp_path / "n")
    assert not (tmp_path / "n").exists()
    save_network(net, tmp_path / "n")
    assert load_network(tmp_path / "n").name == net.name


def test_a_name_that_drives_a_terminal_is_refused_when_saved_and_when_read(tmp_path):
    """A network name holding "\\x1b]0;PWNED\\x07\\x1b[2J" retitled and cleared the terminal from `run` (an audit,
    2026-11-28): refused on reading a folder, and on saving (it could not be read back)."""
    from dataclasses import replace

    _saved(tmp_path / "ok")
    _edit_json(tmp_path / "ok", lambda d: d.update(name="shift\x1b]0;PWNED\x07\x1b[2J"))
    with pytest.raises(ExpressivityError, match="terminal control character") as info:
        load_network(tmp_path / "ok")
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value)
    net = load_network(_saved(tmp_path / "clean"))
    with pytest.raises(ExpressivityError, match="terminal control character"):
        save_network(replace(net, labels=tuple("\x1b" + label for label in net.labels)), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    save_network(replace(net, name="a\tname with a tab"), tmp_path / "tab")   # tabs and newlines are text
    assert load_network(tmp_path / "tab").name == "a\tname with a tab"


def test_a_network_of_many_small_tensors_reads_back_whatever_its_header_takes(tmp_path):
    """The size check allowed 2x the tensors' bytes + 1 MiB, and a header takes about 80 bytes a tensor: 5,000
    one-weight layers saved and then could not be read (a review, 2026-11-28)."""
    layers = tuple(FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.zeros((1, 1)), name=f"f{i}") for i in range(5000))
    save_network(Network(layers, ("x",), name="many"), tmp_path / "many")
    assert len(load_network(tmp_path / "many").layers) == 5000


@pytest.mark.parametrize("builder, args", [("build_shift", (8,)), ("build_reverse", (6,)), ("build_sum", (4,)),
                                           ("build_max", (4,)), ("build_attention", (5,)), ("build_reverse_dot", (5,))])
def test_a_circuit_saved_and_edited_with_the_python_api_carries_no_claim_when_read(tmp_path, builder, args):
    """An audit (2026-11-28): the circuit builders recorded no circuit identity (only `circuit --out` did), so a
    circuit built, edited (its readout doubled) and saved with the Python API was read by load_network and by
    `expressivity run` within its claim, answering [1, 1, 0.2, 0.4, ...] for a shift of [0.5, 0.1, 0.2, ...].
    An unedited one keeps its claim; the edited one carries none, whichever reader opens it."""
    import dataclasses

    import expressivity
    from expressivity.export.folders import load_saved

    net, _ = getattr(expressivity, builder)(*args)
    assert net.metadata["circuit"] in ("shift", "reverse", "sum", "max", "attention", "reverse-dot")
    save_network(net, tmp_path / "honest")
    assert load_network(tmp_path / "honest").no_claim is None and load_saved(tmp_path / "honest").network.no_claim is None
    edited = dataclasses.replace(net, readout=2 * np.asarray(net.readout), claimed_weights=None)
    save_network(edited, tmp_path / "edited")
    for read in (load_network(tmp_path / "edited"), load_saved(tmp_path / "edited").network):
        assert "not those of circuit" in read.no_claim
