"""Yun et al. §5 bilinear projection ``X + W_O X W_P``; in rows ``P[:n, :n] @ X @ O`` (``P`` lower
triangular when causal). Its parameters depend on ``max_len``, so it is length-limited."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from expressivity.errors import NetworkError
from expressivity.network.layers import LayerNorm, MixingHead, MixingLayer
from expressivity.nn.layers import Linear
from expressivity.nn.mixers.base import Footprint, Mixer, keys_seen, set_param, to_numpy


class Bilinear(Mixer):
    """``P[:n, :n] @ X @ O`` (rows), the bilinear projection ``W_O X W_P`` of Yun et al."""

    layer_kind = "mixing"
    holds_what = "one matrix head"
    weight_matrices = ("P",)

    def __init__(self, d: int, max_len: int, causal: bool, members: int | None = None):
        super().__init__(members)
        self.causal = causal
        self.P = nn.Parameter(torch.empty(self.shape(max_len, max_len)))
        self.init_members(self.P, lambda t: t.copy_(torch.randn(max_len, max_len) / math.sqrt(max_len)))
        self.o = Linear(d, d, bias=False, members=members)

    @classmethod
    def from_config(cls, cfg, members: int | None = None) -> "Bilinear":
        return cls(cfg.d_model, cfg.max_len, cfg.causal, members)

    @staticmethod
    def parameter_count(cfg) -> int:
        return cfg.max_len**2 + cfg.d_model**2

    @staticmethod
    def flops_per_token(cfg, n: int) -> float:
        return 2 * keys_seen(cfg, n) * cfg.d_model + 2 * cfg.d_model**2

    @staticmethod
    def activations(cfg, n: int) -> Footprint:
        # the input and the mixed rows (W_O's input); the (n, n) slice of P and its gradient
        return Footprint(2 * n * cfg.d_model, 2 * n * cfg.d_model, 2 * n * n)

    @staticmethod
    def length_limited(cfg) -> bool:
        return True

    @classmethod
    def holds(cls, layer: MixingLayer) -> bool:
        return len(layer.heads) == 1 and layer.heads[0].matrix is not None

    @classmethod
    def looks_causal(cls, layer: MixingLayer) -> bool:
        return not np.any(np.triu(np.asarray(layer.heads[0].matrix, dtype=np.float64), 1) != 0)

    @classmethod
    def check_loadable(cls, layer: MixingLayer, causal: bool, where: str) -> None:
        if causal and not cls.looks_causal(layer):
            raise NetworkError(f"{where}: its mixing matrix looks ahead in a causal model; make it lower triangular")

    def run(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[2]
        P = self.stacked(self.P)[:, :n, :n]
        if self.causal:
            P = P.tril()
        return self.o.run(P.unsqueeze(1) @ x)

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> MixingLayer:
        self.check_single()
        P = to_numpy(self.P.tril() if self.causal else self.P)
        d = self.o.weight.shape[0]
        return MixingLayer((MixingHead(np.eye(d), to_numpy(self.o.weight).T, matrix=P),), name, norm)

    def load_layer(self, layer: MixingLayer) -> None:
        """One matrix head: ``P = matrix``, ``O = W_V @ W_O`` (a fixed mix commutes with channel maps)."""
        self.check_single()
        (head,) = layer.heads
        set_param(self.P, head.matrix, slice(None))
        set_param(self.o.weight, (head.W_V.astype(np.float64) @ head.W_O.astype(np.float64)).T, slice(None))
