"""Positional schemes. Relative schemes share ONE interface: an additive attention bias.

Every relative scheme is a module ``bias(n) -> (heads, n, n)`` whose entry ``[h, i, j]`` is a
function of the offset ``r = i - j`` (query ``i``, key ``j``) alone, computed by
``by_offset(r) -> (heads, *r.shape)``. Attention adds the bias to its logits; DP-free attention
uses ``by_offset`` directly to build its convolution kernel. Distances are ``s = r`` for causal
models (only ``r >= 0`` is ever unmasked) and ``s = |r|`` for bidirectional ones.

Formulas (``s`` the distance, ``h = 1..H``):

* ``t5``: a learned scalar per (head, bucket); bucket from the standard T5 formula
  (:func:`t5_bucket`), 32 buckets, max distance 128.
* ``lin`` (ALiBi): ``-beta_h * s``, ``beta_h = 2^(-8h/H)`` fixed, or learnable (initialised there).
* ``log``: ``-beta_h * log(1 + s)`` (the KERPLE convention, so ``s = 0`` is defined).
* ``free``: a learned scalar per (head, offset) for offsets ``|r| < max_len`` (clamped beyond).

Absolute encodings (:class:`SinusoidalEncoding`, learned ``nn.Embedding``) return ``(n, d)`` and
are added to the input; rotary (:class:`Rotary`) rotates queries and keys.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from expressivity.network.positional import sinusoidal_encoding

RPE_NAMES = ("none", "t5", "lin", "log", "free")
APE_NAMES = ("none", "sinusoidal", "learned")


def alibi_slopes(heads: int) -> torch.Tensor:
    """ALiBi slopes ``2^(-8h/H)`` for ``h = 1..H``; shape ``(H,)``."""
    h = torch.arange(1, heads + 1, dtype=torch.float64)
    return torch.pow(2.0, -8.0 * h / heads).float()


def t5_bucket(offset: torch.Tensor, causal: bool, num_buckets: int = 32, max_distance: int = 128) -> torch.Tensor:
    """T5's relative-position bucket of offset ``r = i - j`` (Raffel et al. 2020, as in HF/Mesh TF).

    Causal: ``s = max(r, 0)``; ``s < nb/2`` gets its own bucket, larger ``s`` gets
    ``min(nb-1, nb/2 + floor(log(s/(nb/2)) / log(max_distance/(nb/2)) * (nb - nb/2)))``.
    Bidirectional: half the buckets for each sign, keys to the right (``r < 0``) in the upper half.
    """
    rel = -offset  # T5 writes memory_position - query_position
    bucket = torch.zeros_like(rel)
    if causal:
        s = torch.clamp(-rel, min=0)
    else:
        num_buckets //= 2
        bucket = bucket + (rel > 0).long() * num_buckets
        s = rel.abs()
    max_exact = num_buckets // 2
    is_small = s < max_exact
    large = max_exact + (
        torch.log(s.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return bucket + torch.where(is_small, s, large)


class RelativeBias(nn.Module):
    """Base class: ``forward(n)`` gives the ``(heads, n, n)`` additive bias from :meth:`by_offset`."""

    def __init__(self, heads: int, causal: bool):
        super().__init__()
        self.heads = heads
        self.causal = causal

    def distance(self, offset: torch.Tensor) -> torch.Tensor:
        return offset.clamp(min=0) if self.causal else offset.abs()

    def by_offset(self, offset: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, n: int) -> torch.Tensor:
        pos = torch.arange(n, device=self._device())
        return self.by_offset(pos[:, None] - pos[None, :])

    def _device(self):
        p = next(iter(self.parameters()), None)
        if p is None:
            p = next(iter(self.buffers()), None)
        return None if p is None else p.device


class T5Bias(RelativeBias):
    def __init__(self, heads: int, causal: bool, num_buckets: int = 32, max_distance: int = 128):
        super().__init__(heads, causal)
        self.num_buckets, self.max_distance = num_buckets, max_distance
        self.table = nn.Parameter(torch.zeros(heads, num_buckets))

    def by_offset(self, offset):
        return self.table[:, t5_bucket(offset, self.causal, self.num_buckets, self.max_distance)]


class SlopeBias(RelativeBias):
    """``-beta_h * phi(s)`` with ``phi(s) = s`` (``lin``) or ``log(1 + s)`` (``log``).

    Learnable slopes are stored as ``log beta`` so they stay positive.
    """

    def __init__(self, heads: int, causal: bool, kind: str, learnable: bool):
        super().__init__(heads, causal)
        self.kind = kind
        log_beta = torch.log(alibi_slopes(heads))
        if learnable:
            self.log_beta = nn.Parameter(log_beta)
        else:
            self.register_buffer("log_beta", log_beta)

    @property
    def beta(self) -> torch.Tensor:
        return self.log_beta.exp()

    def by_offset(self, offset):
        s = self.distance(offset).to(self.log_beta.dtype)
        phi = s if self.kind == "lin" else torch.log1p(s)
        return -self.beta.view(-1, *([1] * offset.ndim)) * phi


class FreeBias(RelativeBias):
    """A learned scalar per (head, offset), offsets ``-(max_len-1) .. max_len-1``."""

    def __init__(self, heads: int, causal: bool, max_len: int):
        super().__init__(heads, causal)
        self.max_len = max_len
        self.table = nn.Parameter(torch.zeros(heads, 2 * max_len - 1))

    def by_offset(self, offset):
        idx = offset.clamp(-(self.max_len - 1), self.max_len - 1) + self.max_len - 1
        return self.table[:, idx]


def make_relative_bias(name: str, heads: int, causal: bool, max_len: int, learnable_slopes: bool = False) -> RelativeBias | None:
    """``name`` in :data:`RPE_NAMES` -> bias module (``None`` for ``"none"``)."""
    if name == "none":
        return None
    if name == "t5":
        return T5Bias(heads, causal)
    if name in ("lin", "log"):
        return SlopeBias(heads, causal, name, learnable_slopes)
    if name == "free":
        return FreeBias(heads, causal, max_len)
    raise ValueError(f"unknown relative position bias {name!r}; use one of {', '.join(RPE_NAMES)}")


def sinusoidal_table(n: int, d: int) -> torch.Tensor:
    """The sinusoidal encoding of :func:`expressivity.network.positional.sinusoidal_encoding` as a float32 ``(n, d)`` tensor."""
    return torch.as_tensor(sinusoidal_encoding(n, d), dtype=torch.float32)


class SinusoidalEncoding(nn.Module):
    def __init__(self, max_len: int, d: int):
        super().__init__()
        self.register_buffer("table", sinusoidal_table(max_len, d), persistent=False)

    def forward(self, n: int) -> torch.Tensor:
        return self.table[:n]


class LearnedEncoding(nn.Module):
    def __init__(self, max_len: int, d: int):
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d) * 0.02)

    def forward(self, n: int) -> torch.Tensor:
        return self.table[:n]


class Rotary(nn.Module):
    """Rotary position embedding (Su et al. 2021), half-split (GPT-NeoX) layout.

    Dimension pair ``(k, k + m/2)`` of a head of width ``m`` at position ``p`` is rotated by the
    angle ``p * 10000^(-2k/m)``, so ``<rot(q, p), rot(k, p')>`` depends on ``p - p'`` only.
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary needs an even head width, got {head_dim}")
        inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    def angles(self, n: int) -> torch.Tensor:
        """``(n, m/2)`` rotation angles."""
        return torch.arange(n, dtype=self.inv_freq.dtype, device=self.inv_freq.device)[:, None] * self.inv_freq

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` of shape ``(..., n, m)`` by position along axis ``-2``."""
        ang = self.angles(x.shape[-2])
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
