"""Token mixers: each maps a residual stream ``(batch, n, d)`` (tokens as rows) to the update it
adds (the residual connection lives in :class:`expressivity.nn.model.Block`). Each computes
the network layer it converts to (``to_layer``), and loads one (``load_layer``); the network
definitions are in :mod:`expressivity.network.reference`.

* :class:`Attention`: ``sum_h norm_j(scale * q_i . k_j + B_h[i, j]) v_j W_O^h`` with the
  position bias ``B`` from :mod:`expressivity.nn.positional`, optional rotary on ``q, k``, and
  ``norm`` the softmax or the hardmax that splits ties evenly (for constructed networks).
* :class:`DPFree`: the same with the ``q . k`` term removed, so each head is an input-independent
  kernel ``A_h[i, j]`` built from the bias alone and applied as one ``(n, n)`` product per head.
  ``visible``: the softmax of ``B_h`` over the keys the query sees (the network's DP-free head);
  ``infinite`` (causal, lin/log bias): ``exp(B_h[i, j]) / Z_inf`` with the closed-form infinite
  mass, the zero-padded infinite past of Wang & E §7 (early positions see less than unit mass).
* :class:`Bilinear`: Yun et al. §5 ``X + W_O X W_P``; in rows ``P[:n, :n] @ X @ O`` (``P`` lower
  triangular when causal). Its parameters depend on ``max_len``.
* :class:`SepConv`: Yun et al. §5 ``X + W_O (X * W_C)``; every channel convolved along the
  sequence with its own length-``k`` filter (left-padded when causal, centred otherwise).

:data:`MIXERS` maps each name to its class (``None`` for ``"none"``, a block with no token
mixing); a class builds itself from a config with ``from_config(cfg)`` and says whether it uses
a position bias (``uses_rpe``) and rotary (``uses_rotary``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from expressivity.network.layers import AttentionLayer, Head, LayerNorm, MixingHead, MixingLayer
from expressivity.network.torch_functions import hardmax
from expressivity.nn.positional import Rotary, make_relative_bias


def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Max-subtracted softmax over the last axis.

    Spelled out because torch's CPU kernel is several times slower on the short rows (n <= 64)
    of our sequences; for long rows the fused kernel wins.
    """
    if scores.shape[-1] > 64:
        return torch.softmax(scores, dim=-1)
    e = (scores - scores.amax(-1, keepdim=True).detach()).exp()
    return e / e.sum(-1, keepdim=True)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def _set(param: torch.Tensor, value, *index) -> None:
    """Copy ``value`` (NumPy, any exact or float dtype) into ``param[index]``."""
    param[index] = torch.as_tensor(np.asarray(value, dtype=np.float64), dtype=param.dtype)


class Attention(nn.Module):
    """Multi-head dot-product attention, no bias on K/V/O (optional query bias ``b_Q``)."""

    uses_rpe, uses_rotary = True, True

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: nn.Module | None,
                 rotary: bool, q_bias: bool = False, scale: float | None = None, hardmax: bool = False):
        super().__init__()
        self.heads, self.d_head, self.causal, self.hardmax = heads, d_head, causal, hardmax
        self.scale = 1.0 / math.sqrt(d_head) if scale is None else scale
        self.q = nn.Linear(d, heads * d_head, bias=q_bias)
        self.k = nn.Linear(d, heads * d_head, bias=False)
        self.v = nn.Linear(d, heads * d_head, bias=False)
        self.o = nn.Linear(heads * d_head, d, bias=False)
        self.bias = bias
        self.rotary = Rotary(d_head) if rotary else None

    @classmethod
    def from_config(cls, cfg) -> "Attention":
        return cls(cfg.d_model, cfg.heads, cfg.head_dim, cfg.causal, make_relative_bias(cfg), cfg.rotary, cfg.q_bias,
                   cfg.qk_scale, cfg.normalization == "hardmax")

    def split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.heads, self.d_head).transpose(1, 2)  # (b, h, n, m)

    def weights(self, x: torch.Tensor) -> torch.Tensor:
        """Attention weights ``(batch, heads, n, n)``."""
        return self._attend(x)[0]

    def _attend(self, x: torch.Tensor):
        n = x.shape[1]
        # One fused projection for q, k, v (fewer, larger matmuls); the three Linear modules
        # remain the parameters, so loaders and checkpoints see W_Q, W_K, W_V separately.
        w = torch.cat([self.q.weight, self.k.weight, self.v.weight])
        b = None if self.q.bias is None else torch.cat([self.q.bias, torch.zeros_like(self.q.bias).repeat(2)])
        q, k, v = (self.split(t) for t in torch.nn.functional.linear(x, w, b).chunk(3, dim=-1))
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        scores = (q * self.scale) @ k.transpose(-1, -2)
        if self.bias is not None:
            scores = scores + self.bias(n)
        if self.causal:
            mask = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        return (hardmax(scores) if self.hardmax else _softmax(scores)), v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        # Explicit softmax rather than F.scaled_dot_product_attention: the fused CPU kernel has no
        # vmap batching rule (ensembles) and measured no faster at these sizes.
        A, v = self._attend(x)
        return self.o((A @ v).transpose(1, 2).reshape(b, n, -1))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> AttentionLayer:
        """This mixer as an :class:`AttentionLayer` (``qk_scale`` folded into ``W_Q`` and ``b_Q``)."""
        m = self.d_head
        heads = []
        for h in range(self.heads):
            rows = slice(h * m, (h + 1) * m)
            b_Q = None if self.q.bias is None else self.scale * _np(self.q.bias[rows])
            heads.append(Head(self.scale * _np(self.q.weight[rows]).T, _np(self.k.weight[rows]).T, _np(self.v.weight[rows]).T,
                              _np(self.o.weight[:, rows]).T, b_Q, None if self.bias is None else self.bias.to_network(h),
                              name=f"head {h}", rotary=self.rotary is not None))
        return AttentionLayer(tuple(heads), "hardmax" if self.hardmax else "softmax", 1, self.causal, name, norm=norm)

    def load_layer(self, layer: AttentionLayer) -> None:
        """Copy ``layer``'s heads in (heads zero-padded to this width and count; ``lam`` folded into ``W_Q``).

        The loader guarantees the layer fits (see :func:`expressivity.nn.convert.from_network`).
        """
        lam = float(layer.inverse_temperature)
        m = self.d_head
        for k, h in enumerate(layer.heads):
            q_rows, v_rows = slice(k * m, k * m + h.size), slice(k * m, k * m + h.W_V.shape[1])
            _set(self.q.weight, lam * h.W_Q.T, q_rows)
            _set(self.q.bias, lam * h.b_Q, q_rows)
            _set(self.k.weight, h.W_K.T, q_rows)
            _set(self.v.weight, h.W_V.T, v_rows)
            _set(self.o.weight, h.W_O.T, slice(None), v_rows)
            if self.bias is not None:
                self.bias.load(k, h.position_bias)
        # Heads beyond len(layer.heads) keep zero W_O: they add nothing.


class DPFree(nn.Module):
    """RPE-only attention: an input-independent per-head kernel applied as an ``(n, n)`` product."""

    uses_rpe, uses_rotary = True, False

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: nn.Module | None, normaliser: str = "visible"):
        super().__init__()
        self.heads, self.d_head, self.causal, self.normaliser = heads, d_head, causal, normaliser
        self.v = nn.Linear(d, heads * d_head, bias=False)
        self.o = nn.Linear(heads * d_head, d, bias=False)
        self.bias = bias

    @classmethod
    def from_config(cls, cfg) -> "DPFree":
        # a log bias normalised over an infinite past needs beta > 1 (zeta(beta) finite)
        beta_min = 1.0 if cfg.dpfree_normaliser == "infinite" and cfg.rpe == "log" else 0.0
        return cls(cfg.d_model, cfg.heads, cfg.head_dim, cfg.causal, make_relative_bias(cfg, beta_min), cfg.dpfree_normaliser)

    def kernel(self, n: int) -> torch.Tensor:
        """``(heads, n, n)`` weights ``A[h, i, j]`` of key ``j`` for query ``i``."""
        dtype, device = self.v.weight.dtype, self.v.weight.device
        B = torch.zeros(self.heads, n, n, dtype=dtype, device=device) if self.bias is None else self.bias(n)
        visible = torch.ones(n, n, dtype=torch.bool, device=device)
        if self.causal:
            visible = visible.tril()
        if self.normaliser == "infinite":
            return torch.where(visible, B.exp(), 0.0) / self.bias.infinite_mass()[:, None, None]
        return _softmax(B.masked_fill(~visible, float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        # batch folded into columns: one (n, n) @ (n, b*m) product per head (on CPU several
        # times faster than conv1d, whose weight gradient is slow for long depth-wise filters)
        v = self.v(x).view(b, n, self.heads, self.d_head).permute(2, 1, 0, 3).reshape(self.heads, n, b * self.d_head)
        out = (self.kernel(n) @ v).view(self.heads, n, b, self.d_head).permute(2, 1, 0, 3)
        return self.o(out.reshape(b, n, -1))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> AttentionLayer:
        """This mixer as an :class:`AttentionLayer` of DP-free heads with its normaliser."""
        m = self.d_head
        heads = tuple(Head.dp_free(_np(self.v.weight[h * m:(h + 1) * m]).T, _np(self.o.weight[:, h * m:(h + 1) * m]).T,
                                   None if self.bias is None else self.bias.to_network(h), name=f"head {h}")
                      for h in range(self.heads))
        return AttentionLayer(heads, causal=self.causal, name=name, normaliser=self.normaliser, norm=norm)

    def load_layer(self, layer: AttentionLayer) -> None:
        """Copy ``layer``'s DP-free heads in (zero-padded to this width and count)."""
        m = self.d_head
        for k, h in enumerate(layer.heads):
            rows = slice(k * m, k * m + h.W_V.shape[1])
            _set(self.v.weight, h.W_V.T, rows)
            _set(self.o.weight, h.W_O.T, slice(None), rows)
            if self.bias is not None:
                self.bias.load(k, h.position_bias)


class Bilinear(nn.Module):
    """``P[:n, :n] @ X @ O`` (rows), the bilinear projection ``W_O X W_P`` of Yun et al."""

    uses_rpe, uses_rotary = False, False

    def __init__(self, d: int, max_len: int, causal: bool):
        super().__init__()
        self.causal = causal
        self.P = nn.Parameter(torch.randn(max_len, max_len) / math.sqrt(max_len))
        self.o = nn.Linear(d, d, bias=False)

    @classmethod
    def from_config(cls, cfg) -> "Bilinear":
        return cls(cfg.d_model, cfg.max_len, cfg.causal)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        P = self.P[:n, :n]
        if self.causal:
            P = P.tril()
        return self.o(P @ x)

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> MixingLayer:
        P = _np(self.P.tril() if self.causal else self.P)
        d = self.o.weight.shape[0]
        return MixingLayer((MixingHead(np.eye(d), _np(self.o.weight).T, matrix=P),), name, norm)

    def load_layer(self, layer: MixingLayer) -> None:
        """One matrix head: ``P = matrix``, ``O = W_V @ W_O`` (a fixed mix commutes with channel maps)."""
        (head,) = layer.heads
        _set(self.P, head.matrix, slice(None))
        _set(self.o.weight, (head.W_V.astype(np.float64) @ head.W_O.astype(np.float64)).T, slice(None))


class SepConv(nn.Module):
    """Depth-wise convolution along the sequence (filter length ``k`` per channel), then ``W_O``."""

    uses_rpe, uses_rotary = False, False

    def __init__(self, d: int, kernel_size: int, causal: bool):
        super().__init__()
        self.causal, self.k = causal, kernel_size
        self.filters = nn.Parameter(torch.randn(d, 1, kernel_size) / math.sqrt(kernel_size))
        self.o = nn.Linear(d, d, bias=False)

    @classmethod
    def from_config(cls, cfg) -> "SepConv":
        return cls(cfg.d_model, cfg.conv_kernel, cfg.causal)

    @property
    def left(self) -> int:
        """Taps reaching into the past: ``k - 1`` causal, ``(k - 1) // 2`` centred."""
        return self.k - 1 if self.causal else (self.k - 1) // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.conv1d(F.pad(x.transpose(1, 2), (self.left, self.k - 1 - self.left)), self.filters, groups=x.shape[-1])
        return self.o(h.transpose(1, 2))

    def to_layer(self, norm: LayerNorm | None, name: str = "") -> MixingLayer:
        d = self.o.weight.shape[0]
        head = MixingHead(np.eye(d), _np(self.o.weight).T, kernel=_np(self.filters[:, 0, :]).T, left=self.left)
        return MixingLayer((head,), name, norm)

    def load_layer(self, layer: MixingLayer) -> None:
        """One convolution head with ``W_V = I`` and ``left`` this mixer's."""
        (head,) = layer.heads
        _set(self.filters, head.kernel.T[:, None, :], slice(None))
        _set(self.o.weight, head.W_O.T, slice(None))


# name -> mixer class (None: a block with no token mixing); classes build with from_config(cfg)
MIXERS = {"attention": Attention, "dpfree": DPFree, "bilinear": Bilinear, "sepconv": SepConv, "none": None}
MIXER_NAMES = tuple(MIXERS)

