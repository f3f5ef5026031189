"""The trained model family: one residual stack with independent switches (tokens as rows).

``forward(x)``: ``x`` is ``(batch, n)`` token ids (``vocab_size > 0``) or ``(batch, n, d_in)``
floats; output ``(batch, n, d_out)``. Per layer ``l``:
``h <- h + mixer_l(norm(h))`` (no mixer for ``"none"``), then, if ``ffn_width > 0``,
``h <- h + W_2 act_l(W_1 norm(h) + b_1) + b_2``; finally ``y = readout(norm(h))``. ``norm`` is
the identity (``"none"``, the Network semantics) or LayerNorm (``"pre"``, with a final
LayerNorm). :func:`expressivity.nn.convert.to_network` gives the same function as a
:class:`~expressivity.network.Network`.
"""

from __future__ import annotations

import torch
from torch import nn

from expressivity.errors import ExpressivityError
from expressivity.network.activations import Activation
from expressivity.network.layers import FeedForwardLayer, LayerNorm
from expressivity.network.torch_functions import activation_function
from expressivity.nn.config import ModelConfig
from expressivity.nn.mixers import MIXERS
from expressivity.nn.positional import APES

__all__ = ["Block", "FeedForward", "Model", "ModelConfig"]


class FeedForward(nn.Module):
    """``W_2 act(W_1 x + b_1) + b_2`` with a network activation (ReLU, GELU, piecewise-linear)."""

    def __init__(self, d: int, width: int, activation: Activation):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, width), nn.Linear(width, d)
        self.activation = activation
        self.act = activation_function(activation)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> FeedForwardLayer:
        w = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
        return FeedForwardLayer(w(self.w1.weight).T, w(self.w1.bias), w(self.w2.weight).T, w(self.w2.bias),
                                self.activation, name, norm)

    def load_layer(self, layer: FeedForwardLayer) -> None:
        """Copy ``layer`` in (hidden units zero-padded to this width: they add nothing)."""
        r = layer.width
        for param, value in ((self.w1.weight[:r], layer.W_1.T), (self.w1.bias[:r], layer.b_1),
                             (self.w2.weight[:, :r], layer.W_2.T), (self.w2.bias, layer.b_2)):
            param.copy_(torch.as_tensor(value.astype(float), dtype=param.dtype))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, mixer: str, activation: Activation):
        super().__init__()
        d = cfg.d_model
        kind = MIXERS[mixer]
        self.mixer = None if kind is None else kind.from_config(cfg)
        pre = cfg.norm == "pre"
        self.norm1 = nn.LayerNorm(d) if pre and self.mixer is not None else nn.Identity()
        self.ffn = FeedForward(d, cfg.ffn_width, activation) if cfg.ffn_width > 0 else None
        self.norm2 = nn.LayerNorm(d) if pre and self.ffn is not None else nn.Identity()

    def forward(self, h):
        if self.mixer is not None:
            h = h + self.mixer(self.norm1(h))
        if self.ffn is not None:
            h = h + self.ffn(self.norm2(h))
        return h


class Model(nn.Module):
    """The model family of :class:`ModelConfig`. Input ``(batch, n)`` ids or ``(batch, n, d_in)``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d) if cfg.vocab_size > 0 else nn.Linear(cfg.d_in, d)
        ape = APES[cfg.ape]
        self.ape = None if ape is None else ape(cfg.max_len, d)
        self.blocks = nn.ModuleList(Block(cfg, m, a) for m, a in zip(cfg.layer_mixers(), cfg.layer_activations()))
        self.norm = nn.LayerNorm(d) if cfg.norm == "pre" else nn.Identity()
        self.readout = nn.Linear(d, cfg.d_out)
        self._bounded = self.ape is not None or "bilinear" in cfg.layer_mixers() or cfg.rpe == "matrix"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if n > self.cfg.max_len and self._bounded:
            raise ExpressivityError(f"input length {n} exceeds max_len {self.cfg.max_len} of this model")
        h = self.embed(x)
        if self.ape is not None:
            h = h + self.ape(n)
        for block in self.blocks:
            h = block(h)
        return self.readout(self.norm(h))

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
