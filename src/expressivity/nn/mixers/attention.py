"""Multi-head dot-product attention: ``sum_h norm_j(scale * q_i . k_j + B_h[i, j]) v_j W_O^h`` with
the position bias ``B`` from :mod:`expressivity.nn.positional`, optional rotary on ``q, k``, and
``norm`` the softmax or the hardmax that splits ties evenly (for constructed networks)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from expressivity.errors import NetworkError
from expressivity.network.layers import AttentionLayer, Head, LayerNorm
from expressivity.network.torch_functions import hardmax
from expressivity.nn.layers import Linear, linear
from expressivity.nn.mixers.base import (FUSED_SOFTMAX_FROM, Footprint, HeadMixer, Placed, agreed, keys_seen, set_param,
                                         softmax, to_numpy)
from expressivity.nn.positional import Rotary, bias_parameter_count, make_relative_bias
from expressivity.mixer_switches import MIXER_SWITCHES


class Attention(HeadMixer):
    """Multi-head dot-product attention, no bias on K/V/O (optional query bias ``b_Q``)."""

    layer_kind = "attention"
    switches = MIXER_SWITCHES["attention"]
    holds_what = "heads with a dot product, or any heads under hardmax"
    # how softmax heads compute: "explicit" (the reference: scores, bias, mask, softmax, values)
    # or "sdpa" (torch's scaled_dot_product_attention with the bias as an additive mask: fused
    # kernels on a GPU); a choice of the training execution, not of the model (never saved)
    kernel = "explicit"

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: nn.Module | None,
                 rotary: bool, q_bias: bool = False, scale: float | None = None, hardmax: bool = False,
                 members: int | None = None):
        super().__init__(members)
        self.heads, self.d_head, self.causal, self.hardmax = heads, d_head, causal, hardmax
        self.scale = 1.0 / math.sqrt(d_head) if scale is None else scale
        self.q = Linear(d, heads * d_head, bias=q_bias, members=members)
        self.k = Linear(d, heads * d_head, bias=False, members=members)
        self.v = Linear(d, heads * d_head, bias=False, members=members)
        self.o = Linear(heads * d_head, d, bias=False, members=members)
        self.bias = bias
        self.rotary = Rotary(d_head) if rotary else None

    @classmethod
    def from_config(cls, cfg, members: int | None = None) -> "Attention":
        return cls(cfg.d_model, cfg.heads, cfg.head_dim, cfg.causal, make_relative_bias(cfg, members=members), cfg.rotary,
                   cfg.q_bias, cfg.qk_scale, cfg.normalization == "hardmax", members)

    @staticmethod
    def parameter_count(cfg) -> int:
        hm = cfg.heads * cfg.head_dim
        return 4 * cfg.d_model * hm + (hm if cfg.q_bias else 0) + bias_parameter_count(cfg)

    @staticmethod
    def flops_per_token(cfg, n: int) -> float:
        # q, k, v projections; W_O; scores and the weighted sum of values
        d, hm = cfg.d_model, cfg.heads * cfg.head_dim
        return 2 * d * 3 * hm + 2 * hm * d + 4 * hm * keys_seen(cfg, n)

    @staticmethod
    def activations(cfg, n: int) -> Footprint:
        # kept for backward: the input, the fused q|k|v (k and v are views of it), the scaled
        # queries, the attention weights (the spelled-out softmax of short rows keeps its
        # exponentials too) and the heads' outputs laid out for W_O; rotary keeps rotated q and k
        d, H, hm = cfg.d_model, cfg.heads, cfg.heads * cfg.head_dim
        weights = H * n * n * (1 if n >= FUSED_SOFTMAX_FROM else 2)
        saved = n * (d + 5 * hm + (4 * hm if cfg.rotary else 0)) + weights
        working = 5 * n * hm + 2 * H * n * n   # q|k|v, scores and the next of their chain
        fixed = 2 * H * n * n if cfg.rpe != "none" else 0   # the bias table and its gradient
        return Footprint(saved, working, fixed)

    @classmethod
    def holds(cls, layer: AttentionLayer) -> bool:
        # a softmax layer of DP-free heads only is the DP-free mixer's (no W_Q, W_K to train)
        return not (all(h.is_dp_free for h in layer.heads) and layer.normalization == "softmax")

    @classmethod
    def load_switches(cls, placed: Placed) -> dict:
        """The shared head fields, plus ``normalization``, ``rotary`` (one choice for every
        dot-product head; a rotary head fixes the head width), and ``q_bias`` with ``qk_scale`` 1
        (the network's ``b_Q`` and inverse temperature are folded into ``W_Q``)."""
        shared = super().load_switches(placed)
        mine = placed.get(cls, [])
        for k, layer in mine:
            if not np.isfinite(float(layer.inverse_temperature)):
                raise NetworkError(f"layer {k} has an infinite inverse temperature; use hardmax with a finite one")
        dot = [(k, h) for k, layer in mine for h in layer.heads if not h.is_dp_free]
        rotary = bool(agreed([(k, h.rotary) for k, h in dot], lambda r: "has a rotary head" if r else "has a plain head"))
        if rotary:
            width = agreed([(k, h.size) for k, h in dot], lambda m: f"has rotary query width {m}")
            if width < shared["d_head"]:
                raise NetworkError(f"a value width {shared['d_head']} exceeds the rotary query width {width}; the family "
                                   "has one head width")
        return shared | dict(normalization=agreed([(k, layer.normalization) for k, layer in mine], lambda v: f"uses {v}"),
                             rotary=rotary, q_bias=True, qk_scale=1.0)

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        """Attention weights ``(batch, heads, n, n)`` (``(K, batch, heads, n, n)`` for an ensemble)."""
        return self.unstacked(self._attend(self.stacked(x))[0])

    def _attend(self, x: torch.Tensor):
        n = x.shape[2]
        q, k, v = self._qkv(x)   # (K, b, H, n, m)
        scores = (q * self.scale) @ k.transpose(-1, -2)
        if self.bias is not None:
            scores = scores + self.stacked(self.bias(n)).unsqueeze(1)
        if self.causal:
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        return (hardmax(scores) if self.hardmax else softmax(scores)), v

    def run(self, x: torch.Tensor) -> torch.Tensor:
        K, b, n, _ = x.shape
        if self.kernel == "sdpa" and not self.hardmax:
            return self.o.run(self._fused(x))
        # Explicit softmax by default: measured no faster than F.scaled_dot_product_attention at
        # these sizes on the CPU, and the hardmax needs the scores anyway.
        A, v = self._attend(x)
        return self.o.run((A @ v).transpose(2, 3).reshape(K, b, n, -1))

    def _qkv(self, x: torch.Tensor):
        """Queries, keys and values ``(K, b, H, n, m)`` (rotary applied)."""
        K, b, n, _ = x.shape
        H, m = self.heads, self.d_head
        # One fused projection for q, k, v (fewer, larger matmuls); the three Linear modules
        # remain the parameters, so loaders and checkpoints see W_Q, W_K, W_V separately.
        w = torch.cat([self.stacked(p.weight) for p in (self.q, self.k, self.v)], dim=1)
        qb = self.stacked(self.q.bias)
        bias = None if qb is None else torch.cat([qb, qb.new_zeros(K, 2 * H * m)], dim=1)
        q, k, v = linear(x, w, bias).view(K, b, n, 3, H, m).permute(3, 0, 1, 4, 2, 5).unbind(0)
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        return q, k, v

    def _fused(self, x: torch.Tensor) -> torch.Tensor:
        """The softmax heads through ``F.scaled_dot_product_attention``: members and heads side by
        side as its head axis and the sequences as its batch, so the position bias ``(K, H, n,
        n)`` is one additive mask broadcast over the batch (causal: ``-inf`` above the diagonal).
        Returns the heads' outputs ``(K, b, n, H m)``, as :meth:`run` feeds ``W_O``."""
        K, b, n, _ = x.shape
        H, m = self.heads, self.d_head
        q, k, v = (t.transpose(0, 1).reshape(b, K * H, n, m) for t in self._qkv(x))
        mask = None if self.bias is None else self.stacked(self.bias(n)).reshape(1, K * H, n, n)
        if mask is not None and self.causal:
            above = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
            mask = mask.masked_fill(above, float("-inf"))
        if mask is not None:
            mask = mask.to(q.dtype)   # under autocast the bias joins the products' precision
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal and mask is None,
                                             scale=self.scale)
        return out.view(b, K, H, n, m).permute(1, 0, 3, 2, 4).reshape(K, b, n, H * m)

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> AttentionLayer:
        """This mixer as an :class:`AttentionLayer` (``qk_scale`` folded into ``W_Q`` and ``b_Q``)."""
        self.check_single()
        m = self.d_head
        heads = []
        for h in range(self.heads):
            rows = slice(h * m, (h + 1) * m)
            b_Q = None if self.q.bias is None else self.scale * to_numpy(self.q.bias[rows])
            heads.append(Head(self.scale * to_numpy(self.q.weight[rows]).T, to_numpy(self.k.weight[rows]).T,
                              to_numpy(self.v.weight[rows]).T, to_numpy(self.o.weight[:, rows]).T, b_Q,
                              None if self.bias is None else self.bias.to_network(h), name=f"head {h}",
                              rotary=self.rotary is not None))
        return AttentionLayer(tuple(heads), "hardmax" if self.hardmax else "softmax", 1, self.causal, name, norm=norm)

    def load_layer(self, layer: AttentionLayer) -> None:
        """Copy ``layer``'s heads in (heads zero-padded to this width and count; ``lam`` folded into ``W_Q``).

        The loader guarantees the layer fits (see :func:`expressivity.nn.convert.from_network`).
        """
        self.check_single()
        lam = float(layer.inverse_temperature)
        m = self.d_head
        for k, h in enumerate(layer.heads):
            q_rows, v_rows = slice(k * m, k * m + h.size), slice(k * m, k * m + h.W_V.shape[1])
            set_param(self.q.weight, lam * h.W_Q.T, q_rows)
            set_param(self.q.bias, lam * h.b_Q, q_rows)
            set_param(self.k.weight, h.W_K.T, q_rows)
            set_param(self.v.weight, h.W_V.T, v_rows)
            set_param(self.o.weight, h.W_O.T, slice(None), v_rows)
            if self.bias is not None:
                self.bias.load(k, h.position_bias)
        # Heads beyond len(layer.heads) keep zero W_O: they add nothing.
