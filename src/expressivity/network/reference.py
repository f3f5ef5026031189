"""Reference forward pass in NumPy float64: the semantics of a :class:`Network`, written to be read.

This module is the specification. The exact evaluator and the PyTorch evaluator are tested
against it. Shapes: ``X`` is ``(batch, n, d)`` (tokens as rows); a single ``(n, d)`` input is
accepted and returned unbatched.

Semantics (Yun et al. 2020 eq. 1-2, in the row convention):

* input: ``H = X + E`` (``E`` the optional positional encoding, ``(n, d)``);
* attention layer: ``H <- H + sum_h A_h @ (H @ W_V) @ W_O`` with
  ``S_h[i, j] = lam * (H_i @ W_Q + b_Q) . (H_j @ W_K) + B_h[i, j]``, ``A_h = norm_j(S_h)``,
  ``norm`` the max-subtracted softmax or the hardmax that splits ties evenly, masked to
  ``j <= i`` when causal;
* feed-forward layer: ``H <- H + act(H @ W_1 + b_1) @ W_2 + b_2``;
* output: ``H @ readout`` (identity when there is none).
"""

from __future__ import annotations

import numpy as np

from expressivity.network.layers import AttentionLayer, FeedForwardLayer, PiecewiseLinear, ReLU
from expressivity.network.network import Network


def forward(network: Network, X: np.ndarray, *, return_residuals: bool = False):
    """Run ``network`` on ``X`` in float64.

    Args:
        X: ``(n, d)`` or ``(batch, n, d)`` input, tokens as rows.
        return_residuals: also return the residual stream after the input and after every layer.

    Returns:
        ``(batch, n, d_out)`` outputs (``(n, d_out)`` for unbatched input); with
        ``return_residuals`` a pair ``(outputs, [H_0, H_1, ...])``.
    """
    X = np.asarray(X, dtype=np.float64)
    network.check_input(X)
    single = X.ndim == 2
    H = X[None] if single else X
    if network.positional_encoding is not None:
        H = H + np.asarray(network.positional_encoding, dtype=np.float64)
    residuals = [H]
    for layer in network.layers:
        if isinstance(layer, AttentionLayer):
            H = H + attention_update(layer, H)
        else:
            H = H + feedforward_update(layer, H)
        residuals.append(H)
    out = H if network.readout is None else H @ np.asarray(network.readout, dtype=np.float64)
    out = out[0] if single else out
    if return_residuals:
        return out, [r[0] if single else r for r in residuals]
    return out


def attention_weights(layer: AttentionLayer, H: np.ndarray) -> np.ndarray:
    """Attention weights ``(batch, heads, n_query, n_key)`` of ``layer`` on residual ``H``."""
    n = H.shape[1]
    weights = []
    for head in layer.heads:
        W_Q, W_K, b_Q = (np.asarray(a, dtype=np.float64) for a in (head.W_Q, head.W_K, head.b_Q))
        queries = H @ W_Q + b_Q                       # (batch, n, m)
        keys = H @ W_K                                # (batch, n, m)
        scores = float(layer.inverse_temperature) * queries @ keys.transpose(0, 2, 1)
        if head.position_bias is not None:
            scores = scores + np.asarray(head.position_bias.matrix(n), dtype=np.float64)
        if layer.causal:
            scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        weights.append(hardmax(scores) if layer.normalization == "hardmax" else softmax(scores))
    return np.stack(weights, axis=1)


def attention_update(layer: AttentionLayer, H: np.ndarray) -> np.ndarray:
    """What ``layer`` adds to the residual stream ``H`` (``(batch, n, d)``)."""
    A = attention_weights(layer, H)
    update = np.zeros_like(H)
    for k, head in enumerate(layer.heads):
        values = H @ np.asarray(head.W_V, dtype=np.float64)
        update += A[:, k] @ values @ np.asarray(head.W_O, dtype=np.float64)
    return update


def feedforward_update(layer: FeedForwardLayer, H: np.ndarray) -> np.ndarray:
    """What ``layer`` adds to the residual stream ``H`` (``(batch, n, d)``)."""
    pre = H @ np.asarray(layer.W_1, dtype=np.float64) + np.asarray(layer.b_1, dtype=np.float64)
    return activate(layer.activation, pre) @ np.asarray(layer.W_2, dtype=np.float64) + np.asarray(layer.b_2, dtype=np.float64)


def activate(activation, t: np.ndarray) -> np.ndarray:
    """Apply a :class:`ReLU` or :class:`PiecewiseLinear` element-wise."""
    if isinstance(activation, ReLU):
        return np.maximum(t, 0.0)
    assert isinstance(activation, PiecewiseLinear)
    piece = np.zeros(t.shape, dtype=np.int64)
    for c in activation.breakpoints:
        piece += t >= float(c)   # half-open pieces: a breakpoint belongs to the piece on its right
    slopes = np.array([float(a) for a in activation.slopes])
    intercepts = np.array([float(b) for b in activation.intercepts])
    out = slopes[piece] * t + intercepts[piece]
    # A constant piece must stay constant even where t is infinite (0 * inf would be nan).
    return np.where(slopes[piece] == 0, intercepts[piece], out)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax over the last axis; ``-inf`` entries get weight 0."""
    shifted = scores - np.max(scores, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def hardmax(scores: np.ndarray) -> np.ndarray:
    """One-hot at the arg-max of the last axis; ``k`` tied maxima get ``1/k`` each."""
    is_max = scores == np.max(scores, axis=-1, keepdims=True)
    return is_max / np.sum(is_max, axis=-1, keepdims=True)
