"""Torch versions of the reference's element-wise pieces, shared by the torch evaluator and the
trained model family (:mod:`expressivity.nn`), so both compute one definition.

Shapes: tokens as rows; rotary acts on ``(..., n, m)``.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F

from expressivity.network.activations import Activation, PiecewiseLinear

ROTARY_BASE = 10000.0


def rotary_angles(n: int, m: int, device=None) -> torch.Tensor:
    """``(n, m/2)`` float64 angles ``p * 10000^(-2k/m)``; computed in float64 whatever the model dtype."""
    inv = ROTARY_BASE ** (-torch.arange(0, m, 2, dtype=torch.float64, device=device) / m)
    return torch.arange(n, dtype=torch.float64, device=device)[:, None] * inv


def rotate(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x`` ``(..., n, m)`` (GPT-NeoX half-split pairs ``(k, k + m/2)``)."""
    ang = rotary_angles(x.shape[-2], x.shape[-1], x.device)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def hardmax(scores: torch.Tensor) -> torch.Tensor:
    """One-hot at the arg-max of the last axis; ``k`` tied maxima get ``1/k`` each (``-inf`` never wins:
    a row whose every score is ``-inf`` gets NaN, as in the reference)."""
    top = scores.amax(dim=-1, keepdim=True)
    is_max = ((scores == top) & (top > float("-inf"))).to(scores.dtype)
    return is_max / is_max.sum(dim=-1, keepdim=True)


def piecewise_linear(act: PiecewiseLinear, t: torch.Tensor) -> torch.Tensor:
    """``act`` element-wise on ``t`` with half-open pieces (a breakpoint belongs to the piece on its right)."""
    out = None
    edges = (None, *act.breakpoints)
    for c, a, b in zip(edges, act.slopes, act.intercepts):
        # a constant piece stays constant where t is infinite (0 * inf would be nan)
        piece = torch.full_like(t, float(b)) if a == 0 else float(a) * t + float(b)
        out = piece if c is None else torch.where(t >= float(c), piece, out)
    return out


def activation_function(act: Activation):
    """The torch function of a network activation (ReLU, exact GELU, piecewise-linear)."""
    if act.kind == "relu":
        return torch.relu
    if act.kind == "gelu":
        return F.gelu
    return partial(piecewise_linear, act)
