"""Yun et al. §5 separable convolution ``X + W_O (X * W_C)``: every channel convolved along the
sequence with its own length-``k`` filter (left-padded when causal, centred otherwise)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from expressivity.errors import NetworkError
from expressivity.network.layers import LayerNorm, MixingHead, MixingLayer
from expressivity.nn.layers import Linear
from expressivity.nn.mixers.base import Footprint, Mixer, Placed, agreed, set_param, to_numpy
from expressivity.mixer_switches import MIXER_SWITCHES


class SepConv(Mixer):
    """Depth-wise convolution along the sequence (filter length ``k`` per channel), then ``W_O``."""

    layer_kind = "mixing"
    switches = MIXER_SWITCHES["sepconv"]
    holds_what = "one convolution head on the residual itself (W_V = I)"
    weight_matrices = ("filters",)

    def __init__(self, d: int, kernel_size: int, causal: bool, members: int | None = None):
        super().__init__(members)
        self.causal, self.k = causal, kernel_size
        self.filters = nn.Parameter(torch.empty(self.shape(d, 1, kernel_size)))
        self.init_members(self.filters, lambda t: t.copy_(torch.randn(d, 1, kernel_size) / math.sqrt(kernel_size)))
        self.o = Linear(d, d, bias=False, members=members)

    @classmethod
    def from_config(cls, cfg, members: int | None = None) -> "SepConv":
        return cls(cfg.d_model, cfg.conv_kernel, cfg.causal, members)

    @staticmethod
    def parameter_count(cfg) -> int:
        return cfg.d_model * cfg.conv_kernel + cfg.d_model**2

    @staticmethod
    def flops_per_token(cfg, n: int) -> float:
        return 2 * cfg.conv_kernel * cfg.d_model + 2 * cfg.d_model**2

    @staticmethod
    def activations(cfg, n: int) -> Footprint:
        # the padded channels, the convolved ones and their copy laid out for W_O
        return Footprint(3 * n * cfg.d_model, 3 * n * cfg.d_model, 0)

    @classmethod
    def holds(cls, layer: MixingLayer) -> bool:
        """One convolution head that convolves the residual itself (``W_V = I``, which is all
        ``load_layer`` can copy in): a head reading ``X @ W_V`` is left to another mixer, or refused."""
        if len(layer.heads) != 1 or layer.heads[0].matrix is not None:
            return False
        W_V = np.asarray(layer.heads[0].W_V, dtype=np.float64)
        return W_V.shape[0] == W_V.shape[1] and bool(np.all(W_V == np.eye(W_V.shape[0])))

    @classmethod
    def load_switches(cls, placed: Placed) -> dict:
        """``conv_kernel``: one filter length for every convolution."""
        kernel = agreed([(k, layer.heads[0].kernel.shape[0]) for k, layer in placed.get(cls, [])],
                        lambda size: f"has kernel size {size}")
        return {"conv_kernel": kernel}

    @classmethod
    def looks_causal(cls, layer: MixingLayer) -> bool:
        head = layer.heads[0]
        return head.left == head.kernel.shape[0] - 1

    @classmethod
    def check_loadable(cls, layer: MixingLayer, causal: bool, where: str) -> None:
        """The convolution must be padded as this model's are (causal or centred)."""
        head = layer.heads[0]
        K = head.kernel.shape[0]
        if head.left != (K - 1 if causal else (K - 1) // 2):
            side = "causal (left = K-1)" if causal else "centred (left = (K-1)//2)"
            raise NetworkError(f"{where}: a convolution with left={head.left} is not {side} like the rest of the model")

    @property
    def left(self) -> int:
        """Taps reaching into the past: ``k - 1`` causal, ``(k - 1) // 2`` centred."""
        return self.k - 1 if self.causal else (self.k - 1) // 2

    def run(self, x: torch.Tensor) -> torch.Tensor:
        K, b, n, d = x.shape
        # every member's channels side by side: one grouped convolution for the whole ensemble
        channels = x.permute(1, 0, 3, 2).reshape(b, K * d, n)
        filters = self.stacked(self.filters).reshape(K * d, 1, self.k)
        h = F.conv1d(F.pad(channels, (self.left, self.k - 1 - self.left)), filters, groups=K * d)
        return self.o.run(h.view(b, K, d, n).permute(1, 0, 3, 2))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> MixingLayer:
        self.check_single()
        d = self.o.weight.shape[0]
        head = MixingHead(np.eye(d), to_numpy(self.o.weight).T, kernel=to_numpy(self.filters[:, 0, :]).T, left=self.left)
        return MixingLayer((head,), name, norm)

    def load_layer(self, layer: MixingLayer) -> None:
        """One convolution head with ``W_V = I`` and ``left`` this mixer's."""
        self.check_single()
        (head,) = layer.heads
        set_param(self.filters, head.kernel.T[:, None, :], slice(None))
        set_param(self.o.weight, head.W_O.T, slice(None))
