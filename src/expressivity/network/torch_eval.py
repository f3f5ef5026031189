"""PyTorch evaluator: the reference semantics, batched, in float32 or float64, on any device.

:func:`to_torch` converts a :class:`Network` into a ``torch.nn.Module`` whose forward pass is
tested against :mod:`expressivity.network.reference`. Heads of one layer are stacked so a layer
is a handful of batched matmuls. Softmax is max-subtracted (large logits cannot overflow);
hardmax splits ties evenly, like the reference.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from expressivity.network.layers import AttentionLayer, FeedForwardLayer, LayerNorm, MixingLayer, rule_for
from expressivity.network.network import Network
from expressivity.network.reference import ROTARY_BASE
from expressivity.network.torch_functions import activation_function, hardmax

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _t(a, dtype) -> torch.Tensor:
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)   # a copy: network weights are read-only


def _pad(a, shape) -> np.ndarray:
    """``a`` zero-padded to ``shape`` (padding a head changes nothing it computes)."""
    out = np.zeros(shape)
    a = np.asarray(a, dtype=np.float64)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


class TorchLayerNorm(nn.Module):
    """A :class:`LayerNorm`, or the identity for ``None``."""

    def __init__(self, norm: LayerNorm | None, dtype: torch.dtype):
        super().__init__()
        self.eps = None if norm is None else float(norm.eps)
        self.register_buffer("gain", None if norm is None else _t(norm.gain, dtype))
        self.register_buffer("bias", None if norm is None else _t(norm.bias, dtype))

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        if self.eps is None:
            return H
        return F.layer_norm(H, self.gain.shape, self.gain, self.bias, self.eps)


class TorchAttention(nn.Module):
    """One :class:`AttentionLayer` with heads stacked along a leading axis.

    Heads may differ in size; they are zero-padded to the largest, which changes nothing (a
    rotary head is rotated within its own width, see :meth:`_rotary`).
    """

    def __init__(self, layer: AttentionLayer, dtype: torch.dtype):
        super().__init__()
        heads = layer.heads
        m = max(h.size for h in heads)
        mv = max(h.W_V.shape[1] for h in heads)
        d = layer.d
        self.norm = TorchLayerNorm(layer.norm, dtype)
        self.register_buffer("W_Q", _t(np.stack([_pad(h.W_Q, (d, m)) for h in heads]), dtype))
        self.register_buffer("W_K", _t(np.stack([_pad(h.W_K, (d, m)) for h in heads]), dtype))
        self.register_buffer("b_Q", _t(np.stack([_pad(h.b_Q, (m,)) for h in heads]), dtype))
        self.register_buffer("W_V", _t(np.stack([_pad(h.W_V, (d, mv)) for h in heads]), dtype))
        self.register_buffer("W_O", _t(np.stack([_pad(h.W_O, (mv, d)) for h in heads]), dtype))
        self.layer = layer
        self.lam = float(layer.inverse_temperature)
        self.infinite = layer.normaliser == "infinite"
        if self.infinite:
            self.register_buffer("mass", _t([h.position_bias.infinite_mass() for h in heads], dtype))
        self._cache: dict[tuple, torch.Tensor | None] = {}

    def _cached(self, key, make) -> torch.Tensor | None:
        if key not in self._cache:
            value = make()
            self._cache[key] = None if value is None else torch.as_tensor(value, dtype=self.W_Q.dtype)
        value = self._cache[key]
        return None if value is None else value.to(self.W_Q.device)

    def _bias(self, n: int) -> torch.Tensor | None:
        """``(heads, n, n)`` position biases (``None`` if no head has one)."""
        biases = [h.position_bias for h in self.layer.heads]
        if all(b is None for b in biases):
            return None
        return self._cached(("bias", n), lambda: np.stack(
            [np.zeros((n, n)) if b is None else np.asarray(b.matrix(n), dtype=np.float64) for b in biases]))

    def _rotary(self, n: int):
        """``(cos, sin, partner)`` that rotate stacked, padded queries: ``q * cos + q[..., partner] * sin``.

        Head ``h`` of width ``m_h`` pairs dimension ``k < m_h/2`` with ``k + m_h/2``; padding and
        non-rotary heads get ``cos = 1``, ``sin = 0``.
        """
        heads, m = self.layer.heads, self.W_Q.shape[-1]
        if not any(h.rotary for h in heads):
            return None
        cos, sin = np.ones((len(heads), n, m)), np.zeros((len(heads), n, m))
        partner = np.tile(np.arange(m), (len(heads), 1))
        for k, h in enumerate(heads):
            if h.rotary:
                half = h.size // 2
                ang = np.arange(n, dtype=np.float64)[:, None] * ROTARY_BASE ** (-2.0 * np.arange(half) / h.size)
                cos[k, :, :h.size] = np.tile(np.cos(ang), 2)
                sin[k, :, :h.size] = np.concatenate([-np.sin(ang), np.sin(ang)], axis=1)
                partner[k, :h.size] = np.concatenate([np.arange(half, h.size), np.arange(half)])
        return (self._cached(("cos", n), lambda: cos), self._cached(("sin", n), lambda: sin),
                torch.as_tensor(partner, device=self.W_Q.device))

    def weights(self, H: torch.Tensor) -> torch.Tensor:
        """Attention weights ``(batch, heads, n, n)`` on the residual stream ``H`` ``(batch, n, d)``."""
        Z = self.norm(H)
        n = Z.shape[1]
        queries = torch.einsum("bnd,hdm->bhnm", Z, self.W_Q) + self.b_Q[None, :, None, :]
        keys = torch.einsum("bnd,hdm->bhnm", Z, self.W_K)
        rotary = self._rotary(n)
        if rotary is not None:
            cos, sin, partner = rotary
            rot = lambda x: x * cos + torch.gather(x, -1, partner[None, :, None, :].expand_as(x)) * sin  # noqa: E731
            queries, keys = rot(queries), rot(keys)
        # DP-free heads have zero-width (here: zero-padded) queries, so their dot product is 0.
        scores = self.lam * queries @ keys.transpose(-1, -2) if self.W_Q.shape[-1] else torch.zeros(
            Z.shape[0], len(self.layer.heads), n, n, dtype=Z.dtype, device=Z.device)
        bias = self._bias(n)
        if bias is not None:
            scores = scores + bias
        visible = torch.ones(n, n, dtype=torch.bool, device=H.device)
        if self.layer.causal:
            visible = visible.tril()
        if self.infinite:
            return torch.where(visible, scores.exp(), 0.0) / self.mass[:, None, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        return hardmax(scores) if self.layer.normalization == "hardmax" else torch.softmax(scores, dim=-1)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        A = self.weights(H)
        values = torch.einsum("bnd,hdv->bhnv", self.norm(H), self.W_V)
        return H + torch.einsum("bhij,bhjv,hvd->bid", A, values, self.W_O)


class TorchMixing(nn.Module):
    """One :class:`MixingLayer`: per head, values mixed by a convolution or a fixed matrix, then ``W_O``."""

    def __init__(self, layer: MixingLayer, dtype: torch.dtype):
        super().__init__()
        self.layer = layer
        self.norm = TorchLayerNorm(layer.norm, dtype)
        for k, h in enumerate(layer.heads):
            self.register_buffer(f"W_V{k}", _t(h.W_V, dtype))
            self.register_buffer(f"W_O{k}", _t(h.W_O, dtype))
            self.register_buffer(f"mix{k}", _t(h.kernel if h.matrix is None else h.matrix, dtype))

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        Z = self.norm(H)
        n = Z.shape[1]
        out = H
        for k, head in enumerate(self.layer.heads):
            W_V, W_O, mix = (getattr(self, f"{name}{k}") for name in ("W_V", "W_O", "mix"))
            V = Z @ W_V
            if head.matrix is not None:
                M = mix[:n, :n] @ V
            else:
                K = mix.shape[0]
                # conv1d correlates: output j reads padded input j .. j+K-1, here keys j-P .. j-P+K-1, so output i
                # (keys i-left .. i-left+K-1) is j = i - left + P. Zeros on both sides, P past either end: a shift
                # reaching past the sequence (left > K-1 + n, or left < 0) made F.pad crop more than the sequence,
                # a raw RuntimeError where the reference answers (an audit, 2026-11-29)
                P = max(abs(head.left), abs(K - 1 - head.left))
                padded = F.pad(V.transpose(1, 2), (P, P))
                M = F.conv1d(padded, mix.T[:, None, :], groups=V.shape[-1])[:, :, P - head.left:P - head.left + n]
                M = M.transpose(1, 2)
            out = out + M @ W_O
        return out


class TorchFeedForward(nn.Module):
    """One :class:`FeedForwardLayer`; piecewise-linear activations use half-open pieces."""

    def __init__(self, layer: FeedForwardLayer, dtype: torch.dtype):
        super().__init__()
        self.norm = TorchLayerNorm(layer.norm, dtype)
        for name in ("W_1", "b_1", "W_2", "b_2"):
            self.register_buffer(name, _t(getattr(layer, name), dtype))
        self.act = activation_function(layer.activation)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        return H + self.act(self.norm(H) @ self.W_1 + self.b_1) @ self.W_2 + self.b_2


# layer kind -> its torch module (the torch evaluator's one table)
_MODULES = {"attention": TorchAttention, "mixing": TorchMixing, "feedforward": TorchFeedForward}


class TorchNetwork(nn.Module):
    """A :class:`Network` as a module. Input ``(batch, n, d_in)``, output ``(batch, n, d_out)``."""

    def __init__(self, network: Network, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.network = network
        self.layers = nn.ModuleList(rule_for(_MODULES, layer, "torch evaluator")(layer, dtype) for layer in network.layers)
        for name in ("embedding", "embedding_bias", "positional_encoding", "readout", "readout_bias"):
            value = getattr(network, name)
            self.register_buffer(name, None if value is None else _t(value, dtype))
        self.final_norm = TorchLayerNorm(network.final_norm, dtype)

    def embed(self, X: torch.Tensor) -> torch.Tensor:
        """The residual stream ``(batch, n, d)`` before the first layer: embedding, its bias, positions."""
        H = X if self.embedding is None else X @ self.embedding
        if self.embedding_bias is not None:
            H = H + self.embedding_bias
        if self.positional_encoding is not None:
            H = H + self.positional_encoding[: X.shape[1]]
        return H

    def forward(self, X: torch.Tensor, return_residuals: bool = False):
        """Outputs ``(batch, n, d_out)`` of inputs ``X`` ``(batch, n, d_in)`` (tokens as rows).

        With ``return_residuals``: the pair ``(outputs, residuals)``, ``residuals`` a list of
        ``len(layers) + 1`` tensors ``(batch, n, d)``: the stream after the input (embedded, with
        positions) and after every layer, before the final norm and readout.
        """
        H = self.embed(X)
        residuals = [H]
        for layer in self.layers:
            H = layer(H)
            residuals.append(H)
        out = self.final_norm(H)
        if self.readout is not None:
            out = out @ self.readout
        if self.readout_bias is not None:
            out = out + self.readout_bias
        return (out, residuals) if return_residuals else out


def to_torch(network: Network, dtype: str | torch.dtype = "float64") -> TorchNetwork:
    """Convert ``network`` to a :class:`TorchNetwork` of the given float dtype."""
    if isinstance(dtype, str):
        dtype = _DTYPES[dtype]
    return TorchNetwork(network, dtype)


def forward_torch(network: Network, X, dtype: str = "float64", device: str = "cpu", *,
                  return_residuals: bool = False, allow_length: bool = False, allow_outside: bool = False):
    """Evaluate ``network`` on ``X`` (``(n, d_in)`` or ``(batch, n, d_in)``) with PyTorch; returns float64 NumPy.

    Returns the outputs (``(n, d_out)`` or ``(batch, n, d_out)``, like ``X``), or with
    ``return_residuals`` the pair ``(outputs, [H_0, H_1, ...])`` as the reference pass gives it:
    ``H_0`` the stream after the input, ``H_k`` after layer ``k - 1``, each ``(n, d)`` or
    ``(batch, n, d)`` like ``X`` (computed in ``dtype``, widened to float64).
    ``allow_length``: run on a length outside ``network.valid_lengths`` (outside its claim);
    ``allow_outside``: on values outside ``network.input_domain`` (outside its claim)."""
    X = np.asarray(X, dtype=np.float64)
    network.check_input(X, allow_length=allow_length, allow_outside=allow_outside, arithmetic=dtype)
    single = X.ndim == 2
    module = to_torch(network, dtype).to(device)
    with torch.no_grad():
        out, residuals = module(torch.as_tensor(X[None] if single else X, dtype=_DTYPES[dtype], device=device),
                                return_residuals=True)

    def numpy(t: torch.Tensor) -> np.ndarray:
        a = t.double().cpu().numpy()
        return a[0] if single else a

    return (numpy(out), [numpy(H) for H in residuals]) if return_residuals else numpy(out)
