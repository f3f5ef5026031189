"""DP-free attention: the ``q . k`` term removed, so each head is an input-independent kernel
``A_h[i, j]`` built from the position bias alone and applied as one ``(n, n)`` product per head.

``visible``: the softmax of ``B_h`` over the keys the query sees (the network's DP-free head);
``infinite`` (causal, lin/log bias): ``exp(B_h[i, j]) / Z_inf`` with the closed-form infinite
mass, the zero-padded infinite past of Wang & E §7 (early positions see less than unit mass).
"""

from __future__ import annotations

import torch
from torch import nn

from expressivity.errors import NetworkError
from expressivity.network.layers import AttentionLayer, Head, LayerNorm
from expressivity.nn.layers import Linear
from expressivity.nn.mixers.base import Footprint, HeadMixer, Placed, agreed, keys_seen, set_param, softmax, to_numpy
from expressivity.nn.positional import bias_parameter_count, make_relative_bias, offsets, spread_offsets
from expressivity.mixer_switches import MIXER_SWITCHES


class DPFree(HeadMixer):
    """RPE-only attention: an input-independent per-head kernel applied as an ``(n, n)`` product."""

    layer_kind = "attention"
    switches = MIXER_SWITCHES["dpfree"]
    holds_what = "DP-free heads only (W_Q, W_K of width 0) under softmax"

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: nn.Module | None, normaliser: str = "visible",
                 members: int | None = None):
        super().__init__(members)
        self.heads, self.d_head, self.causal, self.normaliser = heads, d_head, causal, normaliser
        self.v = Linear(d, heads * d_head, bias=False, members=members)
        self.o = Linear(heads * d_head, d, bias=False, members=members)
        self.bias = bias

    @classmethod
    def from_config(cls, cfg, members: int | None = None) -> "DPFree":
        # a log bias normalised over an infinite past needs beta > 1 (zeta(beta) finite)
        beta_min = 1.0 if cfg.dpfree_normaliser == "infinite" and cfg.rpe == "log" else 0.0
        return cls(cfg.d_model, cfg.heads, cfg.head_dim, cfg.causal, make_relative_bias(cfg, beta_min, members),
                   cfg.dpfree_normaliser, members)

    @staticmethod
    def parameter_count(cfg) -> int:
        return 2 * cfg.d_model * cfg.heads * cfg.head_dim + bias_parameter_count(cfg)

    @staticmethod
    def flops_per_token(cfg, n: int) -> float:
        # W_V and W_O; the kernel applied to the values
        hm = cfg.heads * cfg.head_dim
        return 4 * cfg.d_model * hm + 2 * hm * keys_seen(cfg, n)

    @staticmethod
    def activations(cfg, n: int) -> Footprint:
        # per sequence the input and the values before and after the kernel; the kernel itself is
        # input-independent: one (heads, n, n) per member with its bias, mask and gradients
        d, hm = cfg.d_model, cfg.heads * cfg.head_dim
        return Footprint(n * (d + 2 * hm), n * (d + 2 * hm), 4 * cfg.heads * n * n)

    @classmethod
    def holds(cls, layer: AttentionLayer) -> bool:
        return all(h.is_dp_free for h in layer.heads) and layer.normalization == "softmax"

    @classmethod
    def load_switches(cls, placed: Placed) -> dict:
        """The shared head fields, plus ``dpfree_normaliser`` (one for every DP-free layer; the
        infinite past needs the family's finite-mass biases, lin or log)."""
        shared = super().load_switches(placed)
        normaliser = agreed([(k, layer.normaliser) for k, layer in placed.get(cls, [])],
                            lambda v: f"normalises DP-free heads over {v} keys")
        if normaliser == "infinite" and shared["rpe"] not in ("none", "lin", "log"):
            raise NetworkError("a DP-free layer over an infinite past loads only when every head has a lin bias or every "
                               "head a log bias (the family's finite-mass biases); normalise over the visible keys instead")
        return shared | dict(dpfree_normaliser=normaliser)

    def kernel(self, n: int) -> torch.Tensor:
        """``(heads, n, n)`` weights ``A[h, i, j]`` of key ``j`` for query ``i`` (``(K, heads, n, n)`` for an ensemble)."""
        return self.unstacked(self._kernel(n))

    def _kernel(self, n: int) -> torch.Tensor:
        dtype, device = self.v.weight.dtype, self.v.weight.device
        if self.normaliser == "infinite":
            # exp(B[i, j]) / Z_inf depends on i - j alone (a relative bias, one mass per head), so
            # it is computed on the 2n - 1 offsets and spread, not on the K H n^2 entries, whose
            # exponential, mask and division, forward and backward, cost an ensemble of 8 about
            # 0.4 ms a step more than one model on claim 3's model (kernel-memory, n = 64)
            r = offsets(n, device)
            values = self.stacked(self.bias.by_offset(r))
            visible = r >= 0 if self.causal else torch.ones_like(r, dtype=torch.bool)
            mass = self.stacked(self.bias.infinite_mass())[..., None]
            return spread_offsets(torch.where(visible, values.exp(), 0.0) / mass, n)
        if self.bias is None:
            B = torch.zeros(self.size, self.heads, n, n, dtype=dtype, device=device)
        else:
            B = self.stacked(self.bias(n))
        visible = torch.ones(n, n, dtype=torch.bool, device=device)
        if self.causal:
            visible = visible.tril()
        return softmax(B.masked_fill(~visible, float("-inf")))

    def run(self, x: torch.Tensor) -> torch.Tensor:
        K, b, n, d = x.shape
        H, m = self.heads, self.d_head
        # Three batched products and no copies: the values are computed with tokens last,
        # vT = W_V x^T of shape (K, H*m, b*n), which is (K*H, m*b, n): per member and head, rows
        # (value channel, sequence) and the tokens as contiguous columns; the kernel mixes those
        # columns (vT A^T), and W_O reads the result as a transposed view. Moving the values of
        # (K, b, n, H, m) to heads first and back instead copies them in runs of only m floats,
        # forward and backward: 9-14% of a training step on claim 4's cell (m = 2), measured.
        vT = torch.bmm(self.stacked(self.v.weight), x.reshape(K, b * n, d).transpose(1, 2))
        mixed = torch.bmm(vT.view(K * H, m * b, n), self._kernel(n).reshape(K * H, n, n).transpose(1, 2))
        out = torch.bmm(mixed.view(K, H * m, b * n).transpose(1, 2), self.stacked(self.o.weight).transpose(1, 2))
        return out.view(K, b, n, -1)

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> AttentionLayer:
        """This mixer as an :class:`AttentionLayer` of DP-free heads with its normaliser."""
        self.check_single()
        m = self.d_head
        heads = tuple(Head.dp_free(to_numpy(self.v.weight[h * m:(h + 1) * m]).T, to_numpy(self.o.weight[:, h * m:(h + 1) * m]).T,
                                   None if self.bias is None else self.bias.to_network(h), name=f"head {h}")
                      for h in range(self.heads))
        return AttentionLayer(heads, causal=self.causal, name=name, normaliser=self.normaliser, norm=norm)

    def load_layer(self, layer: AttentionLayer) -> None:
        """Copy ``layer``'s DP-free heads in (zero-padded to this width and count)."""
        self.check_single()
        m = self.d_head
        for k, h in enumerate(layer.heads):
            rows = slice(k * m, k * m + h.W_V.shape[1])
            set_param(self.v.weight, h.W_V.T, rows)
            set_param(self.o.weight, h.W_O.T, slice(None), rows)
            if self.bias is not None:
                self.bias.load(k, h.position_bias)
