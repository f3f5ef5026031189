"""Save and load a :class:`~expressivity.network.network.Network` as safetensors + JSON.

``DIR/weights.safetensors`` holds every array as float64 (for other tools to load).
``DIR/network.json`` describes the layers and refers to arrays by tensor name; arrays with
exact entries (ints / Fractions in object arrays) are *also* stored exactly in the JSON, as
integers and ``"p/q"`` strings, and loading prefers that exact copy. Shapes follow the
network's row convention (tokens as rows).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from expressivity.records import jsonable
from expressivity.errors import ExpressivityError
from expressivity.network.layers import (AttentionLayer, FeedForwardLayer, Head, MatrixBias, PiecewiseLinear,
                                         RelativeBias, ReLU)
from expressivity.network.network import Network

FORMAT = "expressivity.network/1"


def _num(v):
    if isinstance(v, str):
        return Fraction(v)
    return v


def _exact_encode(v):
    return jsonable(Fraction(v)) if not isinstance(v, float) else v


class _Writer:
    def __init__(self) -> None:
        self.tensors: dict[str, np.ndarray] = {}

    def array(self, name: str, arr) -> dict:
        arr = np.asarray(arr)
        self.tensors[name] = np.ascontiguousarray(np.asarray(arr, dtype=np.float64)) if arr.size else np.zeros(arr.shape)
        ref = {"tensor": name, "shape": list(arr.shape)}
        if arr.dtype == object:
            ref["exact"] = [_exact_encode(v) for v in arr.flat]
        return ref


def save_network(network: Network, directory: Path) -> tuple[Path, Path]:
    """Write ``network.json`` and ``weights.safetensors`` under ``directory``; returns both paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    w = _Writer()
    layers = []
    for k, layer in enumerate(network.layers):
        if isinstance(layer, AttentionLayer):
            heads = []
            for h_i, h in enumerate(layer.heads):
                pre = f"layers.{k}.heads.{h_i}."
                head = {"name": h.name, **{a: w.array(pre + a, getattr(h, a)) for a in ("W_Q", "W_K", "W_V", "W_O", "b_Q")}}
                if isinstance(h.position_bias, RelativeBias):
                    head["position_bias"] = {"kind": "relative", "table": [[o, _exact_encode(v)] for o, v in h.position_bias.table],
                                             "default": _exact_encode(h.position_bias.default)}
                elif isinstance(h.position_bias, MatrixBias):
                    head["position_bias"] = {"kind": "matrix", "values": w.array(pre + "position_bias", h.position_bias.values)}
                heads.append(head)
            layers.append({"type": "attention", "name": layer.name, "normalization": layer.normalization,
                           "inverse_temperature": _exact_encode(layer.inverse_temperature), "causal": layer.causal,
                           "heads": heads})
        else:
            pre = f"layers.{k}."
            act = layer.activation
            act_d = {"kind": "relu"} if isinstance(act, ReLU) else {
                "kind": "piecewise", "breakpoints": [_exact_encode(c) for c in act.breakpoints],
                "slopes": [_exact_encode(c) for c in act.slopes], "intercepts": [_exact_encode(c) for c in act.intercepts]}
            layers.append({"type": "feedforward", "name": layer.name, "activation": act_d,
                           **{a: w.array(pre + a, getattr(layer, a)) for a in ("W_1", "b_1", "W_2", "b_2")}})
    desc = {
        "format": FORMAT, "name": network.name, "labels": list(network.labels),
        "positional_encoding": None if network.positional_encoding is None else w.array("positional_encoding", network.positional_encoding),
        "readout": None if network.readout is None else w.array("readout", network.readout),
        "output_labels": None if network.output_labels is None else list(network.output_labels),
        "layers": layers, "metadata": jsonable(_plain(network.metadata)),
        "summary": {"layers": network.layer_counts(), "parameters": network.parameter_count()},
    }
    jpath, wpath = directory / "network.json", directory / "weights.safetensors"
    save_file(w.tensors, str(wpath))
    jpath.write_text(json.dumps(desc, indent=1) + "\n")
    return jpath, wpath


def _plain(meta: dict) -> dict:
    out = {}
    for k, v in meta.items():
        if hasattr(v, "__dataclass_fields__"):
            v = {f: getattr(v, f) for f in v.__dataclass_fields__}
        out[k] = v
    return out


def load_network(directory: Path) -> Network:
    """Read a network written by :func:`save_network` (exact arrays come back exact)."""
    directory = Path(directory)
    try:
        desc = json.loads((directory / "network.json").read_text())
        tensors = load_file(str(directory / "weights.safetensors"))
    except FileNotFoundError as exc:
        raise ExpressivityError(f"no saved network in {directory}: {exc.filename} is missing") from None
    if desc.get("format") != FORMAT:
        raise ExpressivityError(f"{directory}/network.json is not in format {FORMAT}")

    def arr(ref):
        if ref is None:
            return None
        if "exact" in ref:
            out = np.empty(len(ref["exact"]), dtype=object)
            out[:] = [_num(v) for v in ref["exact"]]
            return out.reshape(ref["shape"])
        return tensors[ref["tensor"]].reshape(ref["shape"])

    layers = []
    for L in desc["layers"]:
        if L["type"] == "attention":
            heads = []
            for h in L["heads"]:
                pb = h.get("position_bias")
                bias = None
                if pb and pb["kind"] == "relative":
                    bias = RelativeBias(tuple((o, _num(v)) for o, v in pb["table"]), _num(pb["default"]))
                elif pb and pb["kind"] == "matrix":
                    bias = MatrixBias(arr(pb["values"]))
                heads.append(Head(arr(h["W_Q"]), arr(h["W_K"]), arr(h["W_V"]), arr(h["W_O"]), arr(h["b_Q"]),
                                  position_bias=bias, name=h["name"]))
            layers.append(AttentionLayer(tuple(heads), L["normalization"], _num(L["inverse_temperature"]), L["causal"], L["name"]))
        else:
            a = L["activation"]
            act = ReLU() if a["kind"] == "relu" else PiecewiseLinear(
                tuple(_num(v) for v in a["breakpoints"]), tuple(_num(v) for v in a["slopes"]), tuple(_num(v) for v in a["intercepts"]))
            layers.append(FeedForwardLayer(arr(L["W_1"]), arr(L["b_1"]), arr(L["W_2"]), arr(L["b_2"]), act, L["name"]))
    return Network(tuple(layers), tuple(desc["labels"]), arr(desc["positional_encoding"]), arr(desc["readout"]),
                   None if desc["output_labels"] is None else tuple(desc["output_labels"]), desc["name"], desc["metadata"])
