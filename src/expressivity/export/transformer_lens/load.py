"""TransformerLens -> Network: a native model (live, or a folder) as a :class:`Network` computing the same function.

Native models with no norm, LayerNorm or LNPre; ReLU or GELU; attention-only or not; standard or
rotary positions; grouped keys/values import, on one-hot token inputs (``b_K`` cancels in
softmax; ``b_V W_O + b_O`` is added by a width-0 feed-forward layer). Classic
``HookedTransformer`` checkpoints are converted first with TransformerLens's ``convert_tl_checkpoint``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.export.transformer_lens.bridge import require_transformer_lens
from expressivity.export.transformer_lens.export import ExportError
from expressivity.export.transformer_lens.folder import read_folder_config
from expressivity.network.activations import GELU, ReLU
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, LayerNorm
from expressivity.network.network import Network
from expressivity.records import jsonable

# TransformerBridgeConfig defaults (4.3.0) for the fields the native model reads; a test checks them.
CONFIG_DEFAULTS = {"n_heads": -1, "d_vocab": -1, "d_vocab_out": -1, "d_mlp": None, "act_fn": "relu",
                   "normalization_type": "LN", "eps": 1e-5, "attention_dir": "causal",
                   "positional_embedding_type": "standard", "attn_only": False, "gated_mlp": False, "final_rms": False,
                   "n_key_value_heads": None, "rotary_dim": None, "rotary_base": 10000, "use_attn_scale": True,
                   "attn_scale": -1.0, "attn_scores_soft_cap": -1.0, "output_logits_soft_cap": -1.0,
                   "parallel_attn_mlp": False, "post_embedding_ln": False, "rope_scaling": None}


def _int(config: dict, key: str, low: int = 1) -> int:
    v = config.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ExpressivityError(f"TransformerLens config field {key} must be an integer >= {low}, got {v!r}")
    return v


def _settings(config: dict) -> dict:
    c = CONFIG_DEFAULTS | {k: v for k, v in config.items() if k in CONFIG_DEFAULTS or k in
                           ("d_model", "d_head", "n_layers", "n_ctx")}
    for key in ("d_model", "d_head", "n_layers", "n_ctx"):
        _int(c, key)
    if c["n_heads"] == -1:
        c["n_heads"] = c["d_model"] // c["d_head"]
    _int(c, "n_heads")
    if c["d_mlp"] is None:
        c["d_mlp"] = 4 * c["d_model"]
    refuse = []
    if c["gated_mlp"]:
        refuse.append("gated_mlp (a product of two projections is not a ReLU/GELU layer)")
    norm = None if c["normalization_type"] is None else str(c["normalization_type"]).upper()
    if norm not in (None, "LN", "LNPRE"):
        refuse.append(f"normalization_type {c['normalization_type']!r} (RMS norms are not layer norms; use None or LN)")
    if c["final_rms"]:
        refuse.append("final_rms")
    act = str(c["act_fn"] or "gelu").lower()
    if act not in ("relu", "gelu"):
        refuse.append(f"act_fn {c['act_fn']!r} (only relu and the exact gelu are network activations)")
    pos = str(c["positional_embedding_type"] or "standard").lower()
    if pos not in ("standard", "rotary"):
        refuse.append(f"positional_embedding_type {pos!r}")
    for cap in ("attn_scores_soft_cap", "output_logits_soft_cap"):
        if float(c[cap]) > 0:
            refuse.append(f"{cap} (tanh soft-capping)")
    if c["rope_scaling"]:
        refuse.append("rope_scaling")
    if c["post_embedding_ln"]:
        refuse.append("post_embedding_ln")
    if refuse:
        raise ExpressivityError("the TransformerLens model uses " + "; ".join(refuse) + ", which a Network does not "
                                "have; import a native model with no norm or LayerNorm, ReLU or GELU, standard or "
                                "rotary positions")
    rd = c["rotary_dim"] if c["rotary_dim"] is not None else c["d_head"]
    if pos == "rotary" and rd != c["d_head"]:
        raise ExpressivityError(f"rotary_dim {rd} is not d_head {c['d_head']}; a Network's rotary heads rotate every "
                                "query/key dimension")
    if pos == "rotary" and float(c["rotary_base"]) != 10000:
        raise ExpressivityError(f"rotary_base {c['rotary_base']} is not 10000, the base of a Network's rotary heads")
    scale = (float(c["attn_scale"]) if c["use_attn_scale"] and float(c["attn_scale"]) > 0 else math.sqrt(c["d_head"]))
    return c | {"norm": norm, "act": act, "rotary": pos == "rotary", "scale": scale,
                "kv_heads": c["n_key_value_heads"] or c["n_heads"], "causal": c["attention_dir"] == "causal"}


class _Weights:
    """A state dict (float64 NumPy) read by name with the shape its config implies, and its layer norms."""

    def __init__(self, c: dict, sd: dict[str, np.ndarray]):
        self.c, self.sd = c, sd

    def __contains__(self, key: str) -> bool:
        return key in self.sd

    def get(self, key: str, shape: tuple[int, ...]) -> np.ndarray:
        """``sd[key]``, or a one-line error when it is missing, of another shape, or not finite."""
        if key not in self.sd:
            raise ExpressivityError(f"the state dict lacks {key!r}; it does not match its config")
        a = self.sd[key]
        if a.shape != shape:
            raise ExpressivityError(f"{key!r} has shape {a.shape}, the config implies {shape}")
        if not np.all(np.isfinite(a)):
            raise ExpressivityError(f"{key!r} has a non-finite entry")
        return a

    def norm(self, prefix: str) -> LayerNorm | None:
        """The layer norm at ``prefix`` (``LNPre``: no gain or bias; ``None``: no norms)."""
        if self.c["norm"] is None:
            return None
        D, eps = self.c["d_model"], float(self.c["eps"])
        if self.c["norm"] == "LNPRE":
            return LayerNorm(np.ones(D), np.zeros(D), eps)
        return LayerNorm(self.get(prefix + ".weight", (D,)), self.get(prefix + ".bias", (D,)), eps)


def _state_arrays(config: dict, state_dict: dict) -> dict[str, np.ndarray]:
    """The state dict as float64 NumPy arrays under the bridge's names (classic names converted)."""
    sd = {k: np.asarray(v.detach().double().cpu().numpy() if hasattr(v, "detach") else v, dtype=np.float64)
          for k, v in state_dict.items()}
    if any(".W_Q" in k or k.endswith(".W_E") for k in sd):
        sd = _convert_classic(config, state_dict)
    return sd


def _attention_layers(c: dict, w: _Weights, b: int) -> list:
    """Block ``b``'s attention as an :class:`AttentionLayer`, plus a width-0 feed-forward layer adding
    ``b_O + sum_h b_V W_O`` when that is not zero."""
    D, H, dh, kvh = c["d_model"], c["n_heads"], c["d_head"], c["kv_heads"]
    pre = f"blocks.{b}."
    perm = np.arange(dh)
    if c["rotary"]:   # TransformerLens pairs (2k, 2k + 1); ours (k, k + dh/2)
        perm = np.concatenate([np.arange(0, dh, 2), np.arange(1, dh, 2)])
    Wq, bq = w.get(pre + "attn.q.weight", (H * dh, D)), w.get(pre + "attn.q.bias", (H * dh,))
    Wk = w.get(pre + "attn.k.weight", (kvh * dh, D))
    if np.any(w.get(pre + "attn.k.bias", (kvh * dh,))) and c["rotary"]:
        raise ExpressivityError(f"block {b} has a key bias in a rotary model: the rotated bias changes the scores, and "
                                "a Network head has no key bias (set attn.k.bias to zero)")
    # without rotary, b_K adds a per-query constant to the scores, which softmax ignores
    Wv, bv = w.get(pre + "attn.v.weight", (kvh * dh, D)), w.get(pre + "attn.v.bias", (kvh * dh,))
    Wo, bo = w.get(pre + "attn.o.weight", (D, H * dh)), w.get(pre + "attn.o.bias", (D,))
    heads, const = [], bo.copy()
    for h in range(H):
        g = h // (H // kvh)
        rows, kv = slice(h * dh, (h + 1) * dh), slice(g * dh, (g + 1) * dh)
        W_O = Wo[:, rows].T
        const += bv[kv] @ W_O          # pattern rows sum to 1: b_V passes through unchanged
        heads.append(Head(W_Q=Wq[rows][perm].T / c["scale"], W_K=Wk[kv][perm].T, W_V=Wv[kv].T, W_O=W_O,
                          b_Q=bq[rows][perm] / c["scale"], rotary=c["rotary"], name=f"head {h}"))
    layers = [AttentionLayer(tuple(heads), "softmax", 1, c["causal"], f"block {b} attn", norm=w.norm(pre + "ln1"))]
    if np.any(const):
        layers.append(FeedForwardLayer(np.zeros((D, 0)), np.zeros(0), np.zeros((0, D)), const,
                                       name=f"block {b} attn output bias (b_O + sum_h b_V W_O)"))
    return layers


def _mlp_layer(c: dict, w: _Weights, b: int) -> FeedForwardLayer:
    """Block ``b``'s MLP as a :class:`FeedForwardLayer` (weights transposed from ``[out, in]``)."""
    D, M, pre = c["d_model"], c["d_mlp"], f"blocks.{b}."
    act = ReLU() if c["act"] == "relu" else GELU()
    return FeedForwardLayer(w.get(pre + "mlp.in.weight", (M, D)).T, w.get(pre + "mlp.in.bias", (M,)),
                            w.get(pre + "mlp.out.weight", (D, M)).T, w.get(pre + "mlp.out.bias", (D,)),
                            activation=act, name=f"block {b} mlp", norm=w.norm(pre + "ln2"))


def _assemble(config: dict, c: dict, w: _Weights, layers: list, desc: dict | None) -> Network:
    """The :class:`Network` of ``layers`` with the model's embedding, positions, readout, labels and final norm."""
    D = c["d_model"]
    V = w.get("embed.weight", (_int(c, "d_vocab"), D))
    V_out = c["d_vocab_out"] if c["d_vocab_out"] > 0 else c["d_vocab"]
    pos = None if c["rotary"] else w.get("pos_embed.weight", (c["n_ctx"], D))
    tokens = not desc or bool(desc.get("tokens"))
    ins = _labels(desc, "input_labels", V.shape[0]) or tuple(f"token {k}" for k in range(V.shape[0]))
    outs = _labels(desc, "output_labels", V_out) or tuple(f"logit[{k}]" for k in range(V_out))
    name = str(config.get("model_name") or "TransformerLens model").removeprefix("expressivity: ")
    # a rotary export's embedding bias travels beside the weights (``bridge(X @ embed.weight + input_bias)``,
    # expressivity.json): left out, a trained rotary model answered other numbers within its claim
    input_bias = None if not desc or desc.get("input_bias") is None else _input_bias(desc["input_bias"], D)
    return Network(tuple(layers), _labels(desc, "labels", D) or tuple(f"resid[{k}]" for k in range(D)),
                   positional_encoding=pos, readout=w.get("unembed.weight", (V_out, D)).T, output_labels=outs,
                   name=name, metadata={"source": "transformer-lens", "input": "tokens" if tokens else "floats",
                                        "transformer_lens_config": jsonable({k: v for k, v in config.items()
                                                                             if k != "dtype"})},
                   embedding=V, embedding_bias=input_bias, input_labels=ins, readout_bias=w.get("unembed.bias", (V_out,)) if "unembed.bias" in w else None,
                   final_norm=w.norm("ln_final"), max_length=c["n_ctx"])


def _input_bias(values, D: int) -> np.ndarray:
    """expressivity.json's ``input_bias``: ``D`` finite numbers."""
    try:
        bias = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        bias = None
    if bias is None or bias.shape != (D,) or not np.all(np.isfinite(bias)):
        raise ExpressivityError(f"expressivity.json's input_bias must be {D} finite numbers (d_model); re-export the model")
    return bias


def network_from_config(config: dict, state_dict: dict, desc: dict | None = None) -> Network:
    """A :class:`Network` computing what ``boot_native(TransformerBridgeConfig(**config))`` with
    ``state_dict`` (bridge names, or classic ``HookedTransformer`` names) computes on one-hot token inputs.

    ``desc`` (an export's ``expressivity.json``) restores residual labels and output size.
    """
    c = _settings(config)
    w = _Weights(c, _state_arrays(config, state_dict))
    if c["n_heads"] % c["kv_heads"]:
        raise ExpressivityError(f"n_heads {c['n_heads']} is not a multiple of n_key_value_heads {c['kv_heads']}")
    layers = []
    for b in range(c["n_layers"]):
        layers += _attention_layers(c, w, b)
        if not c["attn_only"]:
            layers.append(_mlp_layer(c, w, b))
    return _assemble(config, c, w, layers, desc)


def _labels(desc: dict | None, key: str, size: int) -> tuple[str, ...] | None:
    labels = (desc or {}).get(key)
    if isinstance(labels, list) and len(labels) == size and all(isinstance(x, str) for x in labels):
        return tuple(labels)
    return None


def _convert_classic(config: dict, state_dict: dict) -> dict:
    """Classic ``HookedTransformer`` names through TransformerLens's own ``convert_tl_checkpoint``."""
    import torch

    require_transformer_lens()
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.utilities.tl_checkpoint_conversion import convert_tl_checkpoint

    tensors = {k: torch.tensor(np.asarray(v)) if not hasattr(v, "detach") else v for k, v in state_dict.items()}
    try:
        converted = convert_tl_checkpoint(tensors, TransformerBridgeConfig(**config))
    except ValueError as exc:
        raise ExpressivityError(f"convert_tl_checkpoint refused the checkpoint: {' '.join(str(exc).split())}") from None
    return {k: v.double().numpy() for k, v in converted.items()}


def from_transformer_lens(bridge) -> Network:
    """The :class:`Network` of a live ``TransformerBridge`` built by ``boot_native``."""
    cfg = getattr(bridge, "cfg", None)
    if cfg is None:
        raise ExportError(f"from_transformer_lens reads a TransformerLens bridge (load_bridge(folder)), got "
                          f"{type(bridge).__name__}")
    if getattr(cfg, "architecture", None) not in (None, "TransformerLensNative"):
        raise ExpressivityError(f"only native TransformerLens models import; this one is {cfg.architecture!r}")
    config = {k: v for k, v in cfg.to_dict().items() if k in CONFIG_DEFAULTS or k in ("d_model", "d_head", "n_layers",
                                                                                       "n_ctx", "model_name")}
    config["rope_scaling"] = getattr(cfg, "rope_scaling", None)
    return network_from_config(config, bridge.state_dict())


def load_transformer_lens(directory: Path) -> Network:
    """The :class:`Network` of a TransformerLens folder (``config.json`` + ``model.safetensors``); no TransformerLens needed
    unless the weights use classic ``HookedTransformer`` names."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    directory = Path(directory)
    config, desc = read_folder_config(directory)
    try:
        tensors = load_file(str(directory / "model.safetensors"))
    except (SafetensorError, OSError, ValueError, TypeError) as exc:   # TypeError: a dtype numpy lacks (bfloat16)
        raise ExpressivityError(f"{directory}/model.safetensors is not a readable safetensors file "
                                f"({' '.join(str(exc).split())})") from None
    try:
        net = network_from_config(config, tensors, desc)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ExpressivityError):
            raise
        raise ExpressivityError(f"{directory} holds an inconsistent model ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())})") from None
    return _with_rebuilt_circuit(exported_claim(net, desc or {}, directory), desc or {}, config, tensors)


def _with_rebuilt_circuit(net: Network, desc: dict, config: dict, tensors: dict) -> Network:
    """An export of a tutorial circuit (``circuit`` and ``circuit_constants`` in ``expressivity.json``), built again and
    exported again at the folder's ``n_ctx``, compared value for value with ``config.json`` and ``model.safetensors``:
    where they differ it carries no claim; where they agree its lengths and input domain are the rebuilt ones. (As
    for a saved circuit, :func:`expressivity.export.folders.load_saved`: digests anyone who edits a folder can write
    again, and a forged folder kept its claim, an audit, 2026-11-28.)"""
    import json
    from dataclasses import replace

    name = desc.get("circuit")
    if net.no_claim is not None or name is None:
        return net
    from expressivity.export.folders import rebuild_circuit
    from expressivity.export.transformer_lens.export import to_transformer_lens
    from expressivity.network.lengths import ValidLengths, common_lengths

    rebuilt, _, reason = rebuild_circuit(name, desc.get("circuit_constants"))
    if reason is None:
        try:
            again = to_transformer_lens(replace(rebuilt, valid_lengths=None), n_ctx=config.get("n_ctx"))
        except (ExpressivityError, TypeError, ValueError) as exc:
            reason = f"circuit {name!r} built again cannot be exported at this n_ctx ({' '.join(str(exc).split())[:160]})"
        else:
            same = (json.loads(json.dumps(again.config)) == config and set(again.state_dict) == set(tensors)
                    and all(np.array_equal(np.asarray(again.state_dict[k], dtype=np.float64), tensors[k])
                            for k in tensors))
            if not same:
                reason = f"its model is not circuit {name!r} built again from the constants it records and exported"
    if reason is not None:
        return replace(net, metadata={**net.metadata, "no_claim": reason + " (the folder was changed after the export, or "
                                      "made by a version whose circuit differs); export it again"})
    valid = None if rebuilt.valid_lengths is None else common_lengths(rebuilt.valid_lengths,
                                                                     ValidLengths.range(1, int(config["n_ctx"])))
    if (net.input_domain is not None and rebuilt.input_domain != net.input_domain) or \
            (net.valid_lengths is not None and valid != net.valid_lengths):
        # a constant the weights do not show (the tolerance) edited and the description's digest written again took a
        # reversal's float64 limit from 56,295 to 1.8e308 "within the claim", as saved folders were refused for (a
        # fresh audit, 2026-11-29): the claim recorded must be the rebuilt one
        return replace(net, metadata={**net.metadata, "no_claim": (
            f"the constants it records build circuit {name!r} with another claim (input domain or lengths) than the "
            "one its expressivity.json records (the folder was changed after the export, or made by a version "
            "whose circuit differs); export it again")})
    return replace(net, valid_lengths=valid, input_domain=rebuilt.input_domain)


def exported_claim(net: Network, desc: dict, path: Path) -> Network:
    """The valid lengths, input domain, answers and no-claim mark an export recorded in ``expressivity.json``
    (absent in older exports and in models TransformerLens saved itself): without them a hardmax
    construction's softmax copy read from Python answered 5.09 for the reversal's 5 with no mark."""
    from dataclasses import replace

    from expressivity.errors import NetworkError
    from expressivity.network.domain import InputDomain
    from expressivity.network.lengths import ValidLengths

    try:
        if isinstance(desc.get("valid_lengths"), dict):
            net = replace(net, valid_lengths=ValidLengths.from_dict(desc["valid_lengths"]))
        if isinstance(desc.get("input_domain"), dict):
            net = replace(net, input_domain=InputDomain.from_dict(desc["input_domain"]))
    except NetworkError as exc:
        raise ExpressivityError(f"{path}/expressivity.json records an invalid claim ({exc}); export it again") from None
    if isinstance(desc.get("answers"), dict):
        net = replace(net, metadata={**net.metadata, "answers": desc["answers"]})
    if desc.get("trained") is True:   # a trained model's export stays one, read in Python too
        net = replace(net, metadata={**net.metadata, "trained": True})
    from expressivity.export.transformer_lens.folder import edited

    reasons = [r for r in (desc.get("no_claim"), edited(Path(path), desc)) if isinstance(r, str) and r]
    if reasons:
        net = replace(net, metadata={**net.metadata, "no_claim": "; ".join(reasons)})
    return net
