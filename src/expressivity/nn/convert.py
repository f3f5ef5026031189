"""Convert between the trained model family and the one network representation.

:func:`to_network` gives every :class:`Model` as a :class:`~expressivity.network.Network`
computing the same function (``max_length = cfg.max_len``): per-head weights (the fused
``q/k/v`` projections split, ``qk_scale`` folded into ``W_Q``), every position bias, encoding,
rotary, layer norm, mixer, activation and readout. Token models take one-hot inputs
(:func:`expressivity.network.one_hot`).

:func:`from_network` gives a :class:`Model` for every network whose layers exist in the
family, and otherwise names the first layer that does not and the fix. The stack is regrouped
into blocks ``(mixer, FFN)`` (an FFN with no mixer before it becomes a ``"none"`` block; a
missing FFN becomes zeros); heads of different sizes or counts are zero-padded; the inverse
temperature is folded into ``W_Q``; the family's position bias is the simplest that holds
every head's bias (``lin``/``log`` for slope biases, ``free`` for other relative biases,
``matrix`` for anything else); a positional encoding becomes a ``learned`` one. Which mixer holds
a layer, the switches its layers fix and what it refuses are the mixer's own declarations
(:mod:`expressivity.nn.mixers.base`): this module knows no mixer by name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from expressivity.errors import ExpressivityError, NetworkError, require_int, require_type
from expressivity.network.answers import Answers
from expressivity.network.domain import token_domain
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, LayerNorm, MixingLayer, rule_for
from expressivity.network.network import Network
from expressivity.nn.config import activation_spec
from expressivity.nn.layers import LayerNorm as NormModule
from expressivity.nn.mixers import MIXERS, SWITCH_NEUTRAL, Mixer
from expressivity.nn.mixers.base import agreed
from expressivity.nn.model import Model, ModelConfig


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def _norm(module: nn.Module) -> LayerNorm | None:
    if not isinstance(module, NormModule):
        return None
    return LayerNorm(_np(module.weight), _np(module.bias), module.eps)


def to_network(model: Model) -> Network:
    """``model`` as a :class:`Network`: ``model(x) == reference.forward(net, X)`` for inputs of at most ``max_len`` tokens.

    ``X`` is ``x`` for float models and ``one_hot(x, vocab_size)`` for token models.
    """
    require_type(model, Model, "to_network's model", "give a trained model (RunResult.model or load_trained)")
    if model.members is not None:
        raise NetworkError("to_network converts one model; take a member of the ensemble first (model.member(k))")
    cfg = model.cfg
    layers = []
    for k, (block, mixer) in enumerate(zip(model.blocks, cfg.layer_mixers())):
        if block.mixer is not None:
            layers.append(block.mixer.to_layer(_norm(block.norm1), f"block {k} {mixer}"))
        if block.ffn is not None:
            layers.append(block.ffn.to_layer(_norm(block.norm2), f"block {k} ffn"))
    tokens = cfg.vocab_size > 0
    embed = model.embed
    # a token model's inputs are its vocabulary (one-hot ids) and its answer the arg-max class; a
    # float model has no proven claim on its inputs, so no domain is recorded
    domain = token_domain(range(cfg.vocab_size)) if tokens else None
    return Network(
        tuple(layers), labels=tuple(f"h[{k}]" for k in range(cfg.d_model)),
        positional_encoding=None if model.ape is None else _np(model.ape(cfg.max_len)),
        readout=_np(model.readout.weight).T, output_labels=tuple(f"y[{k}]" for k in range(cfg.d_out)),
        name="trained model",
        metadata={"model_config": cfg.to_dict(), **({"answers": Answers("class").to_dict()} if tokens else {})},
        embedding=_np(embed.weight) if tokens else _np(embed.weight).T,
        embedding_bias=None if tokens else _np(embed.bias),
        input_labels=tuple(f"token {k}" if tokens else f"x[{k}]" for k in range(cfg.vocab_size if tokens else cfg.d_in)),
        readout_bias=_np(model.readout.bias), final_norm=_norm(model.norm), max_length=cfg.max_len, input_domain=domain,
        valid_lengths=model.valid_lengths)


@dataclass
class _Block:
    mixer: AttentionLayer | MixingLayer | None = None
    ffn: FeedForwardLayer | None = None
    index: int = 0   # network layer index of the block's first layer, for messages


# what a network with no layer of some mixer kind gets for the switches only those mixers fix
# (read by no layer of the model): their neutral values, one head of width 1
_UNFIXED = SWITCH_NEUTRAL | {"heads": 1, "d_head": 1}


def _places() -> dict[str, str]:
    """Layer kind -> its place in a block, ``"mixer"`` or ``"ffn"`` (the loader's table: a kind not
    in it is refused by name; a new mixer's layer kind joins it from :data:`MIXERS`)."""
    return {"feedforward": "ffn", **{mixer.layer_kind: "mixer" for mixer in _names()}}


def _blocks(net: Network) -> list[_Block]:
    """Regroup the layers into ``(mixer, FFN)`` blocks."""
    places = _places()
    blocks: list[_Block] = []
    for k, layer in enumerate(net.layers):
        if rule_for(places, layer, "trained-model loader") == "mixer":
            blocks.append(_Block(mixer=layer, index=k))
        elif blocks and blocks[-1].ffn is None:
            blocks[-1].ffn = layer
        else:
            blocks.append(_Block(ffn=layer, index=k))
    return blocks


def _names() -> dict[type[Mixer], str]:
    """Mixer class -> its name in :data:`~expressivity.nn.mixers.MIXERS` (read at each load)."""
    return {mixer: name for name, mixer in MIXERS.items() if mixer is not None}


def _holder(layer, where: str, names: dict[type[Mixer], str]) -> type[Mixer]:
    """The family's mixer that holds a network mixer layer: the first in ``MIXERS`` that does (the
    family's mixers hold disjoint sets of the layers they build; a layer two of them represent
    loads into the first); ``names``: :func:`_names`."""
    candidates = [mixer for mixer in names if mixer.layer_kind == layer.kind]
    for mixer in candidates:
        if mixer.holds(layer):
            return mixer
    count, article = len(layer.heads), "an" if layer.kind[0] in "aeiou" else "a"
    held = " or ".join(f"{mixer.holds_what} ({names[mixer]})" for mixer in candidates)
    raise NetworkError(f"{where}: {article} {layer.kind} layer of {count} head{'s' * (count != 1)} does not load; the "
                       f"family's {layer.kind} mixers hold {held} per layer")


def _mixer_switches(blocks: list[_Block]) -> tuple[list[str], dict]:
    """Each block's mixer name and the config fields the mixer layers fix (each mixer class fixes
    its own: see :mod:`expressivity.nn.mixers.base`); ``causal``, when no layer fixes it, is
    whether no mixer layer reads a later token."""
    placed: dict[type[Mixer], list] = {}
    names, name_of = [], _names()
    for b in blocks:
        if b.mixer is None:
            names.append("none")
            continue
        mixer = _holder(b.mixer, f"layer {b.index}", name_of)
        placed.setdefault(mixer, []).append((b.index, b.mixer))
        names.append(name_of[mixer])
    fixed: dict = {}
    for mixer in placed:
        for field, value in mixer.load_switches(placed).items():
            if fixed.setdefault(field, value) != value:   # mixers sharing a field compute it from the same layers
                raise AssertionError(f"mixers disagree on {field}: {fixed[field]!r} and {value!r}")
    if fixed.get("causal") is None:
        fixed["causal"] = all(mixer.looks_causal(layer) for mixer, pairs in placed.items() for _, layer in pairs)
    for mixer, pairs in placed.items():
        for k, layer in pairs:
            mixer.check_loadable(layer, fixed["causal"], f"layer {k}")
    return names, _UNFIXED | {k: v for k, v in fixed.items() if v is not None}


def _norm_switch(net: Network) -> str:
    """``"pre"`` if every layer and the output are layer-normalised (eps 1e-5), ``"none"`` if none is."""
    norms = [(k, layer.norm) for k, layer in enumerate(net.layers)]
    pre = agreed([(k, n is not None) for k, n in norms], lambda pre: "has a pre-norm" if pre else "has no pre-norm")
    if pre != (net.final_norm is not None):
        have, lack = ("pre-norms", "final norm") if pre else ("a final norm", "pre-norms")
        raise NetworkError(f"the network has {have} but no {lack}; the family's pre-norm models have both, plain ones neither")
    for where, n in norms + [("the final norm", net.final_norm)]:
        if n is not None and float(n.eps) != 1e-5:
            where = f"layer {where}" if isinstance(where, int) else where
            raise NetworkError(f"{where}: layer norm eps {n.eps} differs from the family's 1e-5; rebuild with eps=1e-5")
    return "pre" if pre else "none"


def _ffn_switches(blocks: list[_Block]) -> dict:
    """Width and per-block activations (a block with no FFN gets a zero one: any activation will do)."""
    ffns = [b.ffn for b in blocks if b.ffn is not None]
    first = ffns[0].activation if ffns else "relu"
    acts = [activation_spec(first if b.ffn is None else b.ffn.activation) for b in blocks]
    # at least one unit where an FFN exists: a width-0 FFN still adds its bias b_2
    width = max([max(f.width, 1) for f in ffns], default=0)
    return dict(ffn_width=width, activation=acts[0] if all(a == acts[0] for a in acts) else tuple(acts))


def _plan(net: Network, max_len: int | None, tokens: bool) -> tuple[ModelConfig, list[_Block]]:
    """The config of the model that holds ``net``, and its blocks; :class:`NetworkError` if none does."""
    blocks = _blocks(net)
    if not blocks:
        raise NetworkError("the network has no layers; the trained family needs at least one")
    mixers, switches = _mixer_switches(blocks)
    if tokens and (net.embedding is None or net.embedding_bias is not None):
        raise NetworkError("tokens=True needs an embedding and no embedding bias (one row per token)")
    fixed = net.max_length or net.length
    if max_len is not None and fixed is not None and max_len != fixed:
        raise NetworkError(f"the network is built for {fixed} positions; pass max_len={fixed} or leave it out")
    cfg = ModelConfig(vocab_size=net.d_in if tokens else 0, d_in=net.d_in, d_out=net.d_out, max_len=fixed or max_len or 64,
                      mixer=tuple(mixers), layers=len(blocks), d_model=net.d, norm=_norm_switch(net),
                      ape="learned" if net.positional_encoding is not None else "none",
                      **switches, **_ffn_switches(blocks))
    return cfg, blocks


def _copy(param: torch.Tensor, value) -> None:
    param.copy_(torch.tensor(np.asarray(value, dtype=np.float64), dtype=param.dtype))


def from_network(net: Network, max_len: int | None = None, dtype: torch.dtype = torch.float64, *,
                 tokens: bool = False) -> Model:
    """A :class:`Model` computing ``reference.forward(net, X)`` for ``X`` ``(batch, n, d_in)``.

    Args:
        max_len: the model's ``max_len`` when the network does not fix one (default 64).
        tokens: read inputs as token ids: the embedding's rows are the token vectors, and
            ``model(ids)`` equals ``reference.forward(net, one_hot(ids, d_in))``.

    Raises :class:`NetworkError` naming the first layer outside the family and the fix. A
    network that records valid lengths gets ``max_len`` = the longest of them by default, and
    the model refuses every other length (``model.valid_lengths``), as :func:`evaluate` does; it
    does not check the network's input domain (values), which :func:`evaluate` does.
    """
    require_type(net, Network, "from_network's net", "build or load one first")
    if max_len is not None:
        max_len = require_int(max_len, "max_len", lo=1, hi=1 << 16)
    require_type(tokens, bool, "tokens")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ExpressivityError(f"dtype must be a floating torch dtype such as torch.float64, got {dtype!r}")
    if max_len is None and net.max_length is None and net.length is None and net.valid_lengths is not None:
        max_len = net.valid_lengths.longest
    cfg, blocks = _plan(net, max_len, tokens)
    model = Model(cfg).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for block, planned in zip(model.blocks, blocks):
            if planned.mixer is not None:
                block.mixer.load_layer(planned.mixer)
                _load_norm(block.norm1, planned.mixer.norm)
            if planned.ffn is not None:
                block.ffn.load_layer(planned.ffn)
                _load_norm(block.norm2, planned.ffn.norm)
        _load_norm(model.norm, net.final_norm)
        embedding = np.eye(net.d) if net.embedding is None else net.embedding
        _copy(model.embed.weight, embedding if tokens else np.asarray(embedding, dtype=np.float64).T)
        if not tokens and net.embedding_bias is not None:
            _copy(model.embed.bias, net.embedding_bias)
        if net.positional_encoding is not None:
            _copy(model.ape.table, net.positional_encoding)
        _copy(model.readout.weight, (np.eye(net.d) if net.readout is None else np.asarray(net.readout, dtype=np.float64)).T)
        if net.readout_bias is not None:
            _copy(model.readout.bias, net.readout_bias)
    if net.valid_lengths is not None and not net.valid_lengths.is_any:
        model.valid_lengths = net.valid_lengths
    return model


def _load_norm(module: nn.Module, norm: LayerNorm | None) -> None:
    if norm is not None:
        _copy(module.weight, norm.gain)
        _copy(module.bias, norm.bias)
