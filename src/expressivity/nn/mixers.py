"""Token mixers: each maps a residual stream ``(batch, n, d)`` (tokens as rows) to the update it
adds (the residual connection lives in :class:`expressivity.nn.model.Block`).

* :class:`Attention`: ``sum_h softmax_j(scale * q_i . k_j + B_h[i, j]) v_j W_O^h`` with the
  positional bias ``B`` from :mod:`expressivity.nn.positional` and optional rotary on ``q, k``.
* :class:`DPFree`: the same with the ``q . k`` term removed, so each head is an input-independent
  kernel ``w_h(r) = exp(p_h(r)) / sum_r' exp(p_h(r'))`` over the offsets a length-``n`` window
  holds; applied as a (causal) convolution, evaluated through its Toeplitz matrix. Normalising over the full window is the
  zero-padded past of Wang & E §7: at position ``t`` the missing keys ``t - s < 0`` are zero
  tokens, so early positions see less than unit mass (unlike masked attention).
* :class:`Bilinear`: Yun et al. §5 ``X + W_O X W_P``; in rows ``P[:n, :n] @ X @ O`` (``P`` lower
  triangular when causal). Its parameters depend on ``max_len``.
* :class:`SepConv`: Yun et al. §5 ``X + W_O (X * W_C)``; every channel convolved along the
  sequence with its own length-``k`` filter (left-padded when causal, centred otherwise).

Positional biases act on ``attention`` and ``dpfree``, rotary on ``attention``; ``bilinear`` and ``sepconv``
are position-aware by construction and ignore them.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from expressivity.nn.positional import RelativeBias, Rotary

MIXER_NAMES = ("attention", "dpfree", "bilinear", "sepconv")


def _softmax(scores: torch.Tensor) -> torch.Tensor:
    """Max-subtracted softmax over the last axis.

    Spelled out because torch's CPU kernel is several times slower on the short rows (n <= 64)
    of our sequences; for long rows the fused kernel wins.
    """
    if scores.shape[-1] > 64:
        return torch.softmax(scores, dim=-1)
    e = (scores - scores.amax(-1, keepdim=True).detach()).exp()
    return e / e.sum(-1, keepdim=True)


class Attention(nn.Module):
    """Multi-head dot-product attention, no bias on K/V/O (optional query bias ``b_Q``)."""

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: RelativeBias | None,
                 rotary: bool, q_bias: bool = False, scale: float | None = None):
        super().__init__()
        self.heads, self.d_head, self.causal = heads, d_head, causal
        self.scale = 1.0 / math.sqrt(d_head) if scale is None else scale
        self.q = nn.Linear(d, heads * d_head, bias=q_bias)
        self.k = nn.Linear(d, heads * d_head, bias=False)
        self.v = nn.Linear(d, heads * d_head, bias=False)
        self.o = nn.Linear(heads * d_head, d, bias=False)
        self.bias = bias
        self.rotary = Rotary(d_head) if rotary else None

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
        return _softmax(scores), v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        # Explicit softmax rather than F.scaled_dot_product_attention: the fused CPU kernel has no
        # vmap batching rule (ensembles) and measured no faster at these sizes.
        A, v = self._attend(x)
        return self.o((A @ v).transpose(1, 2).reshape(b, n, -1))


class DPFree(nn.Module):
    """RPE-only attention: an input-independent per-head kernel applied as a convolution."""

    def __init__(self, d: int, heads: int, d_head: int, causal: bool, bias: RelativeBias | None):
        super().__init__()
        self.heads, self.d_head, self.causal = heads, d_head, causal
        self.v = nn.Linear(d, heads * d_head, bias=False)
        self.o = nn.Linear(heads * d_head, d, bias=False)
        self.bias = bias

    def kernel(self, n: int) -> torch.Tensor:
        """``(heads, K)`` weights for offsets ``r = n-1-j``, ``j = 0..K-1`` (``K = n`` causal, else ``2n-1``)."""
        size = n if self.causal else 2 * n - 1
        offsets = (n - 1) - torch.arange(size, device=self.v.weight.device)
        if self.bias is None:
            logits = torch.zeros(self.heads, size, device=offsets.device, dtype=self.v.weight.dtype)
        else:
            logits = self.bias.by_offset(offsets)
        return torch.softmax(logits, dim=-1)

    def toeplitz(self, n: int) -> torch.Tensor:
        """``(heads, n, n)`` matrix ``T[h, t, t'] = w_h(t - t')`` (zero where the kernel has no entry)."""
        w = self.kernel(n)
        pos = torch.arange(n, device=w.device)
        idx = (n - 1) - (pos[:, None] - pos[None, :])  # kernel index j of offset r = t - t'
        if self.causal:
            T = w[:, idx.clamp(max=n - 1)]
            return T * (idx <= n - 1)
        return w[:, idx]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        # batch folded into columns: one (n, n) @ (n, b*m) product per head
        v = self.v(x).view(b, n, self.heads, self.d_head).permute(2, 1, 0, 3).reshape(self.heads, n, b * self.d_head)
        # The convolution sum_s w_h(s) v_{t-s} as a product with its Toeplitz matrix: with a
        # full-length kernel this is the same O(n^2) work as conv1d, and on CPU it is several
        # times faster (conv1d's weight-gradient kernel is slow for long depth-wise filters).
        out = (self.toeplitz(n) @ v).view(self.heads, n, b, self.d_head).permute(2, 1, 0, 3)
        return self.o(out.reshape(b, n, -1))


class Bilinear(nn.Module):
    """``P[:n, :n] @ X @ O`` (rows), the bilinear projection ``W_O X W_P`` of Yun et al."""

    def __init__(self, d: int, max_len: int, causal: bool):
        super().__init__()
        self.causal = causal
        self.P = nn.Parameter(torch.randn(max_len, max_len) / math.sqrt(max_len))
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        P = self.P[:n, :n]
        if self.causal:
            P = P.tril()
        return self.o(P @ x)


class SepConv(nn.Module):
    """Depth-wise convolution along the sequence (filter length ``k`` per channel), then ``W_O``."""

    def __init__(self, d: int, kernel_size: int, causal: bool):
        super().__init__()
        self.causal, self.k = causal, kernel_size
        self.filters = nn.Parameter(torch.randn(d, 1, kernel_size) / math.sqrt(kernel_size))
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.k
        pad = (k - 1, 0) if self.causal else ((k - 1) // 2, k // 2)
        h = F.conv1d(F.pad(x.transpose(1, 2), pad), self.filters, groups=x.shape[-1])
        return self.o(h.transpose(1, 2))
