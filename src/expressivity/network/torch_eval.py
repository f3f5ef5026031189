"""PyTorch evaluator: the reference semantics, batched, in float32 or float64, on any device.

:func:`to_torch` converts a :class:`Network` into a ``torch.nn.Module`` whose forward pass is
tested against :mod:`expressivity.network.reference`. Heads of one layer are stacked so a layer
is a handful of batched matmuls. Softmax is max-subtracted (large logits cannot overflow);
hardmax splits ties evenly, like the reference.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from expressivity.network.layers import AttentionLayer, FeedForwardLayer, PiecewiseLinear
from expressivity.network.network import Network

_DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _t(a, dtype) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=np.float64), dtype=dtype)


class TorchAttention(nn.Module):
    """One :class:`AttentionLayer` with heads stacked along a leading axis.

    Heads may differ in size; they are zero-padded to the largest, which changes nothing.
    """

    def __init__(self, layer: AttentionLayer, dtype: torch.dtype):
        super().__init__()
        m = max(h.size for h in layer.heads)
        mv = max(h.W_V.shape[1] for h in layer.heads)
        d = layer.d

        def pad(a, shape):
            out = np.zeros(shape)
            a = np.asarray(a, dtype=np.float64)
            out[tuple(slice(0, s) for s in a.shape)] = a
            return out

        self.register_buffer("W_Q", _t(np.stack([pad(h.W_Q, (d, m)) for h in layer.heads]), dtype))
        self.register_buffer("W_K", _t(np.stack([pad(h.W_K, (d, m)) for h in layer.heads]), dtype))
        self.register_buffer("b_Q", _t(np.stack([pad(h.b_Q, (m,)) for h in layer.heads]), dtype))
        self.register_buffer("W_V", _t(np.stack([pad(h.W_V, (d, mv)) for h in layer.heads]), dtype))
        self.register_buffer("W_O", _t(np.stack([pad(h.W_O, (mv, d)) for h in layer.heads]), dtype))
        self.biases = [h.position_bias for h in layer.heads]
        self.lam = float(layer.inverse_temperature)
        self.hardmax = layer.normalization == "hardmax"
        self.causal = layer.causal
        self._bias_cache: dict[int, torch.Tensor | None] = {}

    def _bias(self, n: int) -> torch.Tensor | None:
        if n not in self._bias_cache:
            if all(b is None for b in self.biases):
                self._bias_cache[n] = None
            else:
                mats = [np.zeros((n, n)) if b is None else np.asarray(b.matrix(n), dtype=np.float64) for b in self.biases]
                self._bias_cache[n] = torch.as_tensor(np.stack(mats), dtype=self.W_Q.dtype)
        bias = self._bias_cache[n]
        return None if bias is None else bias.to(self.W_Q.device)

    def weights(self, H: torch.Tensor) -> torch.Tensor:
        """Attention weights ``(batch, heads, n, n)``."""
        n = H.shape[1]
        queries = torch.einsum("bnd,hdm->bhnm", H, self.W_Q) + self.b_Q[None, :, None, :]
        keys = torch.einsum("bnd,hdm->bhnm", H, self.W_K)
        scores = self.lam * queries @ keys.transpose(-1, -2)
        bias = self._bias(n)
        if bias is not None:
            scores = scores + bias
        if self.causal:
            mask = torch.ones(n, n, dtype=torch.bool, device=H.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        if self.hardmax:
            is_max = scores == scores.amax(dim=-1, keepdim=True)
            return is_max.to(H.dtype) / is_max.sum(dim=-1, keepdim=True).to(H.dtype)
        return torch.softmax(scores, dim=-1)  # max-subtracted internally

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        A = self.weights(H)
        values = torch.einsum("bnd,hdv->bhnv", H, self.W_V)
        return H + torch.einsum("bhij,bhjv,hvd->bid", A, values, self.W_O)


class TorchFeedForward(nn.Module):
    """One :class:`FeedForwardLayer`; piecewise-linear activations use half-open pieces."""

    def __init__(self, layer: FeedForwardLayer, dtype: torch.dtype):
        super().__init__()
        for name in ("W_1", "b_1", "W_2", "b_2"):
            self.register_buffer(name, _t(getattr(layer, name), dtype))
        act = layer.activation
        self.piecewise = isinstance(act, PiecewiseLinear)
        if self.piecewise:
            self.register_buffer("breaks", _t([float(c) for c in act.breakpoints], dtype))
            self.register_buffer("slopes", _t([float(a) for a in act.slopes], dtype))
            self.register_buffer("intercepts", _t([float(b) for b in act.intercepts], dtype))

    def activate(self, t: torch.Tensor) -> torch.Tensor:
        if not self.piecewise:
            return torch.relu(t)
        piece = (t.unsqueeze(-1) >= self.breaks).sum(-1)
        slope, intercept = self.slopes[piece], self.intercepts[piece]
        return torch.where(slope == 0, intercept, slope * t + intercept)

    def forward(self, H: torch.Tensor) -> torch.Tensor:
        return H + self.activate(H @ self.W_1 + self.b_1) @ self.W_2 + self.b_2


class TorchNetwork(nn.Module):
    """A :class:`Network` as a module. Input ``(batch, n, d)``, output ``(batch, n, d_out)``."""

    def __init__(self, network: Network, dtype: torch.dtype = torch.float64):
        super().__init__()
        self.network = network
        self.layers = nn.ModuleList(
            TorchAttention(layer, dtype) if isinstance(layer, AttentionLayer) else TorchFeedForward(layer, dtype)
            for layer in network.layers
        )
        pe = network.positional_encoding
        self.register_buffer("pe", None if pe is None else _t(pe, dtype))
        ro = network.readout
        self.register_buffer("readout", None if ro is None else _t(ro, dtype))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        H = X if self.pe is None else X + self.pe
        for layer in self.layers:
            H = layer(H)
        return H if self.readout is None else H @ self.readout


def to_torch(network: Network, dtype: str | torch.dtype = "float64") -> TorchNetwork:
    """Convert ``network`` to a :class:`TorchNetwork` of the given float dtype."""
    if isinstance(dtype, str):
        dtype = _DTYPES[dtype]
    return TorchNetwork(network, dtype)


def forward_torch(network: Network, X, dtype: str = "float64", device: str = "cpu") -> np.ndarray:
    """Evaluate ``network`` on ``X`` (``(n, d)`` or ``(batch, n, d)``) with PyTorch; returns float64 NumPy."""
    X = np.asarray(X, dtype=np.float64)
    network.check_input(X)
    single = X.ndim == 2
    module = to_torch(network, dtype).to(device)
    with torch.no_grad():
        out = module(torch.as_tensor(X[None] if single else X, dtype=_DTYPES[dtype], device=device))
    out = out.double().cpu().numpy()
    return out[0] if single else out
