"""The trained model family: one residual stack with independent switches (tokens as rows).

``forward(x)``: ``x`` is ``(batch, n)`` token ids (``vocab_size > 0``) or ``(batch, n, d_in)``
floats; output ``(batch, n, d_out)``. Per layer ``l``:
``h <- h + mixer_l(norm(h))`` (no mixer for ``"none"``), then, if ``ffn_width > 0``,
``h <- h + W_2 act_l(W_1 norm(h) + b_1) + b_2``; finally ``y = readout(norm(h))``. ``norm`` is
the identity (``"none"``, the Network semantics) or LayerNorm (``"pre"``, with a final
LayerNorm). :func:`expressivity.nn.convert.to_network` gives the same function as a
:class:`~expressivity.network.Network`.

Ensembles: ``Model(cfg, members=K)`` is K independent models of one configuration whose every
parameter has a leading axis ``K`` (:mod:`expressivity.nn.layers`); it maps ``(K, batch, n)``
(or ``(K, batch, n, d_in)``) to ``(K, batch, n, d_out)``. One model is the same code with an
ensemble axis of 1. :meth:`Model.stack` builds an ensemble from models, :meth:`Model.member`
takes one out.

The model's facts, from its configuration alone: :func:`parameter_count`,
:func:`flops_per_token`, :func:`head_count`, :func:`length_limit` (each mixer declares its
share, :mod:`expressivity.nn.mixers.base`).
"""

from __future__ import annotations

import torch
from torch import nn

from expressivity.errors import ExpressivityError
from expressivity.network.activations import Activation
from expressivity.network.layers import FeedForwardLayer, LayerNorm
from expressivity.network.torch_functions import activation_function
from expressivity.nn.config import ModelConfig
from expressivity.nn.layers import EnsembleModule, Embedding, LayerNorm as NormModule, Linear, without_initial_values
from expressivity.nn.mixers import MIXERS
from expressivity.nn.mixers.base import Footprint
from expressivity.nn.positional import APES

__all__ = ["Block", "FeedForward", "Footprint", "Model", "ModelConfig", "activation_footprint", "flops_per_token",
           "head_count", "length_limit", "parameter_count"]


class FeedForward(EnsembleModule):
    """``W_2 act(W_1 x + b_1) + b_2`` with a network activation (ReLU, GELU, piecewise-linear)."""

    def __init__(self, d: int, width: int, activation: Activation, members: int | None = None):
        super().__init__(members)
        self.w1, self.w2 = Linear(d, width, members=members), Linear(width, d, members=members)
        self.activation = activation
        self.act = activation_function(activation)

    def run(self, x):
        return self.w2.run(self.act(self.w1.run(x)))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> FeedForwardLayer:
        if self.members is not None:
            raise ValueError("convert one member of an ensemble (Model.member(k)), not the whole ensemble")
        w = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
        return FeedForwardLayer(w(self.w1.weight).T, w(self.w1.bias), w(self.w2.weight).T, w(self.w2.bias),
                                self.activation, name, norm)

    def load_layer(self, layer: FeedForwardLayer) -> None:
        """Copy ``layer`` in (hidden units zero-padded to this width: they add nothing)."""
        r = layer.width
        for param, value in ((self.w1.weight[:r], layer.W_1.T), (self.w1.bias[:r], layer.b_1),
                             (self.w2.weight[:, :r], layer.W_2.T), (self.w2.bias, layer.b_2)):
            param.copy_(torch.as_tensor(value.astype(float), dtype=param.dtype))


class Block(EnsembleModule):
    def __init__(self, cfg: ModelConfig, mixer: str, activation: Activation, members: int | None = None):
        super().__init__(members)
        d = cfg.d_model
        kind = MIXERS[mixer]
        self.mixer = None if kind is None else kind.from_config(cfg, members)
        pre = cfg.norm == "pre"
        self.norm1 = NormModule(d, members) if pre and self.mixer is not None else nn.Identity()
        self.ffn = FeedForward(d, cfg.ffn_width, activation, members) if cfg.ffn_width > 0 else None
        self.norm2 = NormModule(d, members) if pre and self.ffn is not None else nn.Identity()

    def run(self, h):
        if self.mixer is not None:
            h = h + self.mixer.run(_run(self.norm1, h))
        if self.ffn is not None:
            h = h + self.ffn.run(_run(self.norm2, h))
        return h


def _run(module: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """A norm (or the identity) on a stacked stream."""
    return module.run(h) if isinstance(module, EnsembleModule) else h


class Model(EnsembleModule):
    """The model family of :class:`ModelConfig`. Input ``(batch, n)`` ids or ``(batch, n, d_in)``
    (with a leading ``K`` for an ensemble of ``members=K``)."""

    def __init__(self, cfg: ModelConfig, members: int | None = None):
        super().__init__(members)
        self.cfg = cfg
        d = cfg.d_model
        self.embed = Embedding(cfg.vocab_size, d, members) if cfg.vocab_size > 0 else Linear(cfg.d_in, d, members=members)
        ape = APES[cfg.ape]
        self.ape = None if ape is None else ape(cfg.max_len, d, members)
        self.blocks = nn.ModuleList(Block(cfg, m, a, members) for m, a in zip(cfg.layer_mixers(), cfg.layer_activations()))
        self.norm = NormModule(d, members) if cfg.norm == "pre" else nn.Identity()
        self.readout = Linear(d, cfg.d_out, members=members)
        self._limit = length_limit(cfg)
        # the lengths a constructed network holds its claim for (set by nn.convert.from_network): the
        # model refuses others, as evaluate does (reverse at 3 tokens of a 6-token construction answered 2, 2, 2)
        self.valid_lengths = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``(batch, n)`` token ids (a token model) or ``(batch, n, d_in)`` values in the parameters' dtype,
        with a leading ``K`` for an ensemble; anything else is a one-line error (an unbatched ``(n, d_in)`` was
        refused as "input length d_in is not one the network was built for", a float32 input to a float64 model
        raised torch's "Input dtypes must be the same": an audit, 2026-11-28)."""
        if not isinstance(x, torch.Tensor):
            raise ExpressivityError(f"a model takes a torch.Tensor, got {type(x).__name__}; torch.as_tensor(x) makes one")
        tokens = self.cfg.vocab_size > 0
        axes = (2 if tokens else 3) + (self.members is not None)
        shape = ("(K, batch, n)" if self.members is not None else "(batch, n)") if tokens else \
            ("(K, batch, n, d_in)" if self.members is not None else "(batch, n, d_in)")
        if x.dim() != axes:
            raise ExpressivityError(f"input of shape {tuple(x.shape)}: this model takes {shape}"
                                    + ("; add a batch axis with x[None]" if x.dim() == axes - 1 else ""))
        dtype = next(self.parameters()).dtype
        if tokens and (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool):
            raise ExpressivityError(f"token ids must be integers, got {x.dtype}; use x.long()")
        if not tokens:
            if x.shape[-1] != self.cfg.d_in:
                raise ExpressivityError(f"input of shape {tuple(x.shape)}: this model takes d_in = {self.cfg.d_in} "
                                        "values per token")
            if x.dtype != dtype:
                raise ExpressivityError(f"input dtype {x.dtype} is not the model's {dtype}; use x.to({dtype})")
        return super().forward(x)

    def run(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[2]
        if self._limit is not None and n > self._limit:
            raise ExpressivityError(f"input length {n} exceeds max_len {self.cfg.max_len} of this model")
        if self.valid_lengths is not None and not self.valid_lengths.contains(n):
            raise ExpressivityError(f"input length {n} is not one the network was built for "
                                    f"({self.valid_lengths.describe()}); give one of those")
        h = self.embed.run(x)
        if self.ape is not None:
            pe = self.ape(n)
            h = h + (pe.unsqueeze(1) if pe.dim() == 3 else pe)   # a learned table per member, or one shared table
        for block in self.blocks:
            h = block.run(h)
        return self.readout.run(_run(self.norm, h))

    def parameter_count(self) -> int:
        """Stored parameters of one model (of each member of an ensemble), including position-table entries a
        causal model never reads (negative offsets, upper triangles: see docs/training.md)."""
        return sum(p.numel() for p in self.parameters()) // self.size

    def weight_matrix_names(self) -> set[str]:
        """The parameters weight decay applies to (each module names its own; see :mod:`expressivity.nn.layers`)."""
        from expressivity.nn.layers import weight_matrix_names

        return weight_matrix_names(self)

    @classmethod
    def stack(cls, models: list["Model"]) -> "Model":
        """An ensemble whose member ``k`` is a copy of ``models[k]`` (one configuration, one device and dtype)."""
        first = models[0]
        with without_initial_values():   # every parameter is overwritten by the members' below
            ensemble = cls(first.cfg, members=len(models))
        states = [m.state_dict() for m in models]
        ensemble.load_state_dict({name: torch.stack([s[name] for s in states]) for name in states[0]})
        return ensemble.to(next(first.parameters()).device, next(first.parameters()).dtype)

    def member(self, k: int) -> "Model":
        """Member ``k`` of an ensemble as one model (a copy, on the CPU)."""
        if self.members is None:
            raise ValueError("member() takes a model out of an ensemble; this is one model")
        model = Model(self.cfg)
        model.load_state_dict({name: t[k].detach().cpu() for name, t in self.state_dict().items()})
        return model


def _mixer_classes(cfg: ModelConfig) -> list:
    return [MIXERS[m] for m in cfg.layer_mixers() if MIXERS[m] is not None]


def parameter_count(cfg: ModelConfig, *, embeddings: bool = True) -> int:
    """Stored parameters of ``Model(cfg)`` (as :meth:`Model.parameter_count`) from the configuration alone (the mixers', FFNs', norms',
    embedding's, position table's and readout's own counts); ``embeddings=False`` leaves out the
    token embedding, the absolute position table and the readout (the usual "non-embedding" count)."""
    d, w = cfg.d_model, cfg.ffn_width
    pre = cfg.norm == "pre"
    blocks = sum(c.parameter_count(cfg) + (2 * d if pre else 0) for c in _mixer_classes(cfg))
    if w > 0:
        blocks += cfg.layers * (2 * d * w + w + d + (2 * d if pre else 0))
    blocks += 2 * d if pre else 0
    if not embeddings:
        return blocks
    embed = cfg.vocab_size * d if cfg.vocab_size > 0 else cfg.d_in * d + d
    ape = cfg.max_len * d if cfg.ape == "learned" else 0
    return blocks + embed + ape + d * cfg.d_out + cfg.d_out


def flops_per_token(cfg: ModelConfig, n: int) -> int:
    """Forward multiply-adds x 2 per token for sequences of ``n`` tokens (training: about 3x):
    each mixer's :meth:`~expressivity.nn.mixers.base.Mixer.flops_per_token`, ``4 d w`` per
    feed-forward layer and ``2 d d_out`` for the readout. Position biases, norms, activations and
    the softmax are left out (lower order)."""
    total = sum(c.flops_per_token(cfg, n) for c in _mixer_classes(cfg))
    total += cfg.layers * 4 * cfg.d_model * cfg.ffn_width + 2 * cfg.d_model * cfg.d_out
    return int(round(total))


def activation_footprint(cfg: ModelConfig, n: int) -> Footprint:
    """What ``Model(cfg)`` holds per member on ``n``-token sequences (float32 values; see
    :class:`~expressivity.nn.mixers.base.Footprint`), from the configuration alone: each mixer's
    declared share (:meth:`~expressivity.nn.mixers.base.Mixer.activations`) plus the feed-forward
    layers (input, pre-activation, activation), the layer norms (input and normalised), the
    embedding and the readout with its loss (logits and their log-softmax). ``saved`` also counts
    the backward pass's working set, about one more copy of the largest layer's saved values;
    ``working`` is the busiest layer of a pass without gradients plus the residual stream and the
    readout's logits, log-softmax and scores."""
    d, w, out = cfg.d_model, cfg.ffn_width, cfg.d_out
    norms = 2 * n * d + 2 * n if cfg.norm == "pre" else 0
    ffn = Footprint(n * (d + 2 * w) + norms, 2 * n * w, 0) if w > 0 else Footprint(0, 0, 0)
    layers = [ffn] * cfg.layers
    for mixer in _mixer_classes(cfg):
        share = mixer.activations(cfg, n)
        layers.append(Footprint(share.saved + norms, share.working, share.fixed))
    stream = n * d * (2 if cfg.ape != "none" else 1)
    head = n * (d + 2 * out + 1) + norms
    largest = max((layer.saved for layer in layers), default=0)
    saved = stream + head + sum(layer.saved for layer in layers) + largest
    working = max((layer.working for layer in layers), default=0) + 2 * n * d + 3 * n * out
    return Footprint(saved, working, sum(layer.fixed for layer in layers))


def head_count(cfg: ModelConfig) -> int:
    """Heads of the network ``Model(cfg)`` converts to: each mixer's ``head_count`` summed (an
    attention or DP-free layer has ``heads``, a bilinear or convolution layer one mixing head);
    the same number :func:`expressivity.network.layers.head_count` gives for the network."""
    return sum(c.head_count(cfg) for c in _mixer_classes(cfg))


def length_limit(cfg: ModelConfig) -> int | None:
    """The longest input ``Model(cfg)`` accepts, or ``None`` when any length works: ``max_len``
    when an absolute encoding or a length-limited mixer (bilinear, a matrix position bias) has one
    row per position up to it."""
    limited = cfg.ape != "none" or any(c.length_limited(cfg) for c in _mixer_classes(cfg))
    return cfg.max_len if limited else None
