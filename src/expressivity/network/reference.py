"""Reference forward pass in NumPy float64: the semantics of a :class:`Network`, written to be read.

This module is the specification. The exact evaluator and the PyTorch evaluator are tested
against it. Shapes: ``X`` is ``(batch, n, d_in)`` (tokens as rows); a single ``(n, d_in)`` input
is accepted and returned unbatched.

Semantics (Yun et al. 2020 eq. 1-2, in the row convention; every optional part is the
identity or zero when absent):

* input: ``H = X @ embedding + embedding_bias + E[:n]`` (``E`` the positional encoding);
* every layer reads ``Z = norm(H)`` (its optional pre-norm, a :class:`LayerNorm`) and adds its
  update to ``H`` itself;
* attention layer: ``H <- H + sum_h A_h @ (Z @ W_V) @ W_O`` with
  ``S_h[i, j] = lam * rot_i(Z_i @ W_Q + b_Q) . rot_j(Z_j @ W_K) + B_h[i, j]`` (no dot-product
  term for a DP-free head, ``rot`` the identity unless the head is rotary). Over the visible
  keys (``j <= i`` when causal, all otherwise), ``A_h`` is the max-subtracted softmax, or the
  hardmax that splits ties evenly; with the ``infinite`` normaliser it is
  ``exp(S_h[i, j]) / Z_inf`` (Wang & E 2024 §7);
* mixing layer: ``H <- H + sum_h mix_h(Z @ W_V) @ W_O``, ``mix`` a depth-wise convolution or a
  fixed ``(L, L)`` matrix (see :class:`MixingHead`);
* feed-forward layer: ``H <- H + act(Z @ W_1 + b_1) @ W_2 + b_2``;
* output: ``final_norm(H) @ readout + readout_bias``.
"""

from __future__ import annotations

import math

import numpy as np

from expressivity.network.layers import AttentionLayer, FeedForwardLayer, LayerNorm, MixingHead, MixingLayer, rule_for
from expressivity.network.network import Network

ROTARY_BASE = 10000.0


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def forward(network: Network, X: np.ndarray, *, return_residuals: bool = False, allow_length: bool = False,
            allow_outside: bool = False):
    """Run ``network`` on ``X`` in float64.

    Args:
        X: ``(n, d_in)`` or ``(batch, n, d_in)`` input, tokens as rows.
        return_residuals: also return the residual stream after the input and after every layer.
        allow_length: run on a length outside ``network.valid_lengths`` (outside its claim).
        allow_outside: run on values outside ``network.input_domain`` (outside its claim).

    Returns:
        ``(batch, n, d_out)`` outputs (``(n, d_out)`` for unbatched input); with
        ``return_residuals`` a pair ``(outputs, [H_0, H_1, ...])``.
    """
    X = _f(X)
    network.check_input(X, allow_length=allow_length, allow_outside=allow_outside, arithmetic="float64")
    single = X.ndim == 2
    H = embed(network, X[None] if single else X)
    residuals = [H]
    for layer in network.layers:
        H = H + rule_for(UPDATES, layer, "float64 reference pass")(layer, H)
        residuals.append(H)
    out = layer_norm(network.final_norm, H)
    if network.readout is not None:
        out = out @ _f(network.readout)
    if network.readout_bias is not None:
        out = out + _f(network.readout_bias)
    out = out[0] if single else out
    if return_residuals:
        return out, [r[0] if single else r for r in residuals]
    return out


def embed(network: Network, X: np.ndarray) -> np.ndarray:
    """The residual stream ``(batch, n, d)`` a network starts from on input ``X`` ``(batch, n, d_in)``."""
    H = X if network.embedding is None else X @ _f(network.embedding)
    if network.embedding_bias is not None:
        H = H + _f(network.embedding_bias)
    if network.positional_encoding is not None:
        H = H + _f(network.positional_encoding)[: X.shape[1]]
    return H


def layer_norm(norm: LayerNorm | None, H: np.ndarray) -> np.ndarray:
    """``norm`` applied to each token of ``H`` ``(batch, n, d)`` (``H`` itself when ``norm`` is ``None``)."""
    if norm is None:
        return H
    centred = H - H.mean(axis=-1, keepdims=True)
    var = np.mean(centred**2, axis=-1, keepdims=True)
    return centred / np.sqrt(var + float(norm.eps)) * _f(norm.gain) + _f(norm.bias)


def rotate(x: np.ndarray) -> np.ndarray:
    """Rotary position embedding of ``x`` ``(batch, n, m)``: pair ``(k, k + m/2)`` at position ``p`` turns by ``p * 10000^(-2k/m)``."""
    n, m = x.shape[-2], x.shape[-1]
    half = m // 2
    angles = np.arange(n, dtype=np.float64)[:, None] * ROTARY_BASE ** (-2.0 * np.arange(half) / m)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def attention_weights(layer: AttentionLayer, H: np.ndarray) -> np.ndarray:
    """Attention weights ``(batch, heads, n_query, n_key)`` of ``layer`` on residual ``H`` ``(batch, n, d)``."""
    Z = layer_norm(layer.norm, H)
    n = Z.shape[1]
    visible = np.tril(np.ones((n, n), dtype=bool)) if layer.causal else np.ones((n, n), dtype=bool)
    weights = []
    for head in layer.heads:
        scores = np.zeros((Z.shape[0], n, n))
        if not head.is_dp_free:
            queries = Z @ _f(head.W_Q) + _f(head.b_Q)          # (batch, n, m)
            keys = Z @ _f(head.W_K)                             # (batch, n, m)
            if head.rotary:
                queries, keys = rotate(queries), rotate(keys)
            scores = float(layer.inverse_temperature) * queries @ keys.transpose(0, 2, 1)
        if head.position_bias is not None:
            scores = scores + _f(head.position_bias.matrix(n))
        if layer.normaliser == "infinite":
            weights.append(np.where(visible, np.exp(scores), 0.0) / head.position_bias.infinite_mass())
            continue
        scores = np.where(visible, scores, -np.inf)
        weights.append(hardmax(scores) if layer.normalization == "hardmax" else softmax(scores))
    return np.stack(weights, axis=1)


def attention_update(layer: AttentionLayer, H: np.ndarray) -> np.ndarray:
    """What ``layer`` adds to the residual stream ``H`` (``(batch, n, d)``)."""
    A = attention_weights(layer, H)
    Z = layer_norm(layer.norm, H)
    update = np.zeros_like(H)
    for k, head in enumerate(layer.heads):
        update += A[:, k] @ (Z @ _f(head.W_V)) @ _f(head.W_O)
    return update


def mix(head: MixingHead, V: np.ndarray) -> np.ndarray:
    """A mixing head's mix of values ``V`` ``(batch, n, m_v)`` along the sequence."""
    n = V.shape[1]
    if head.matrix is not None:
        return _f(head.matrix)[:n, :n] @ V
    out = np.zeros_like(V)
    for u, taps in enumerate(_f(head.kernel)):         # row u reads key i - left + u
        shift = u - head.left
        lo, hi = max(0, -shift), min(n, n - shift)     # queries whose key is inside the sequence
        if lo < hi:
            out[:, lo:hi] += taps * V[:, lo + shift:hi + shift]
    return out


def mixing_update(layer: MixingLayer, H: np.ndarray) -> np.ndarray:
    """What ``layer`` adds to the residual stream ``H`` (``(batch, n, d)``)."""
    Z = layer_norm(layer.norm, H)
    return sum(mix(head, Z @ _f(head.W_V)) @ _f(head.W_O) for head in layer.heads)


def feedforward_update(layer: FeedForwardLayer, H: np.ndarray) -> np.ndarray:
    """What ``layer`` adds to the residual stream ``H`` (``(batch, n, d)``)."""
    pre = _token_rows(layer_norm(layer.norm, H), _f(layer.W_1)) + _f(layer.b_1)
    return _token_rows(activate(layer.activation, pre), _f(layer.W_2)) + _f(layer.b_2)


def _token_rows(A: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``A @ W`` for ``A`` ``(batch, n, k)``, taken as one ``(batch * n, k)`` matrix: the stacked product was
    1.2-1.7x slower at feed-forward widths of 17,000-68,000 (the check of ``wang-e build --readout max --grid
    32``; ``benchmarks/bench_reference_feedforward.py``). The same sums, perhaps in another order."""
    rows = math.prod(A.shape[:-1])   # not -1: a width-0 layer's (batch * n, 0) cannot infer it
    return (A.reshape(rows, A.shape[-1]) @ W).reshape(*A.shape[:-1], W.shape[-1])


# layer kind -> what a layer of that kind adds to the residual stream (the reference's one table)
UPDATES = {"attention": attention_update, "mixing": mixing_update, "feedforward": feedforward_update}


def activate(activation, t: np.ndarray) -> np.ndarray:
    """Apply a :class:`ReLU`, :class:`GELU` or :class:`PiecewiseLinear` element-wise."""
    if activation.kind == "relu":
        return np.maximum(t, 0.0)
    if activation.kind == "gelu":
        return 0.5 * t * (1.0 + _erf(t / math.sqrt(2.0)))
    piece = np.zeros(t.shape, dtype=np.int64)
    for c in activation.breakpoints:
        piece += t >= float(c)   # half-open pieces: a breakpoint belongs to the piece on its right
    slopes = np.array([float(a) for a in activation.slopes])
    intercepts = np.array([float(b) for b in activation.intercepts])
    out = slopes[piece] * t + intercepts[piece]
    # A constant piece must stay constant even where t is infinite (0 * inf would be nan).
    return np.where(slopes[piece] == 0, intercepts[piece], out)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def softmax(scores: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax over the last axis; ``-inf`` entries get weight 0."""
    shifted = scores - np.max(scores, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def hardmax(scores: np.ndarray) -> np.ndarray:
    """One-hot at the arg-max of the last axis; ``k`` tied maxima get ``1/k`` each; a row whose every
    score is ``-inf`` (every key masked) has no arg-max: NaN, as softmax gives (it was uniform)."""
    top = np.max(scores, axis=-1, keepdims=True)
    is_max = (scores == top) & (top > -np.inf)
    return is_max / np.sum(is_max, axis=-1, keepdims=True)
