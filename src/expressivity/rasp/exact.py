"""Exact arithmetic, fast: the compiled networks' forward pass on scaled integers.

:func:`expressivity.network.exact.forward_exact` is the reference for exact evaluation; it does
every multiply-add on ``Fraction`` objects (~2 us each). A compiled RASP network has hardmax
attention without position biases, ReLU feed-forward layers, an embedding, a positional encoding
and a readout, and nothing else, so this pass keeps each array as integer numerators over one
common denominator (Python ints in NumPy object arrays, ~30x faster) and yields exactly the same
numbers. Tests hold it to ``forward_exact``; anything else is refused.

Shapes: ``X`` ``(batch, n, d_in)`` (tokens as rows); returns the readout ``(batch, n, d_out)``
as an object array of ``int`` / ``Fraction``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from expressivity.errors import EvaluationError
from expressivity.network import Network
from expressivity.network.exact import to_exact


class Scaled:
    """``numerators / denominator``: an object array of Python ints and one positive int."""

    def __init__(self, numerators: np.ndarray, denominator: int = 1):
        self.n, self.d = numerators, int(denominator)

    @classmethod
    def of(cls, values) -> "Scaled":
        arr = np.asarray(values)
        if arr.dtype != object and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)) \
                and (arr.size == 0 or np.max(np.abs(arr)) < 2**53):
            return cls(arr.astype(np.int64).astype(object), 1)     # integral floats: exact as they are
        exact = to_exact(values)
        den = 1
        for v in exact.flat:
            if isinstance(v, Fraction):
                den = math.lcm(den, v.denominator)
        out = np.empty(exact.shape, dtype=object)
        out.flat[:] = [int(v * den) for v in exact.flat]
        return cls(out, den)

    def matmul(self, other: "Scaled") -> "Scaled":
        return Scaled(self.n @ other.n, self.d * other.d)

    def add(self, other: "Scaled") -> "Scaled":
        den = math.lcm(self.d, other.d)
        return Scaled(self.n * (den // self.d) + other.n * (den // other.d), den).reduced()

    def reduced(self) -> "Scaled":
        g = self.d
        for v in self.n.flat:
            if g == 1:
                break
            g = math.gcd(g, v)
        return self if g == 1 else Scaled(self.n // g, self.d // g)

    def values(self) -> np.ndarray:
        out = np.empty(self.n.shape, dtype=object)
        out.flat[:] = [v // self.d if v % self.d == 0 else Fraction(v, self.d) for v in self.n.flat]
        return out


def check_supported(net: Network) -> None:
    for k, layer in enumerate(net.layers):
        if layer.norm is not None or layer.kind == "mixing":
            raise EvaluationError(f"layer {k}: the scaled-integer evaluator takes hardmax attention and ReLU layers only")
        if layer.kind == "attention" and (layer.normalization != "hardmax" or any(
                h.position_bias is not None or h.rotary or np.any(np.asarray(h.b_Q, dtype=object) != 0)
                for h in layer.heads)):
            raise EvaluationError(f"layer {k}: the scaled-integer evaluator takes hardmax heads without biases only")
        if layer.kind == "feedforward" and layer.activation.kind != "relu":
            raise EvaluationError(f"layer {k}: the scaled-integer evaluator takes ReLU feed-forward layers only")
    if net.final_norm is not None or net.readout_bias is not None or net.embedding_bias is not None:
        raise EvaluationError("the scaled-integer evaluator takes networks without norms or biases around the layers")


def _relu(a: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    out.flat[:] = [v if v > 0 else 0 for v in a.flat]
    return out


def _hardmax_numerators(scores: np.ndarray, causal: bool) -> tuple[np.ndarray, int]:
    """Hardmax weights ``(batch, n, n)`` as integer numerators over one denominator ``M`` (ties get ``M/k``)."""
    batch, n, _ = scores.shape
    winners = []
    for b in range(batch):
        for i in range(n):
            row = scores[b, i, : i + 1] if causal else scores[b, i]
            best = max(row)
            winners.append([j for j, v in enumerate(row) if v == best])
    M = 1
    for w in winners:
        M = math.lcm(M, len(w))
    A = np.zeros((batch, n, n), dtype=object)
    A[...] = 0
    for idx, w in enumerate(winners):
        b, i = divmod(idx, n)
        for j in w:
            A[b, i, j] = M // len(w)
    return A, M


def forward_scaled(net: Network, X, *, return_residuals: bool = False):
    """The readout of ``net`` on ``X`` ``(batch, n, d_in)``, exactly (see the module notes); with
    ``return_residuals`` also the residual stream after the input and after every layer."""
    check_supported(net)
    X = Scaled.of(X)
    n = X.n.shape[1]
    H = X.matmul(Scaled.of(net.embedding)) if net.embedding is not None else X
    if net.positional_encoding is not None:
        H = H.add(Scaled.of(net.positional_encoding[:n]))
    residuals = [H]
    for layer in net.layers:
        if layer.kind == "feedforward":
            pre = H.matmul(Scaled.of(layer.W_1))
            pre = pre.add(Scaled.of(layer.b_1))
            out = Scaled(_relu(pre.n), pre.d).matmul(Scaled.of(layer.W_2)).add(Scaled.of(layer.b_2))
            H = H.add(out)
            residuals.append(H)
            continue
        update = None
        for head in layer.heads:
            q, k = H.matmul(Scaled.of(head.W_Q)), H.matmul(Scaled.of(head.W_K))
            scores = q.n @ k.n.transpose(0, 2, 1)      # one positive denominator: compare numerators
            A, M = _hardmax_numerators(scores, layer.causal)
            v = H.matmul(Scaled.of(head.W_V)).matmul(Scaled.of(head.W_O))
            part = Scaled(A @ v.n, v.d * M)
            update = part if update is None else update.add(part)
        H = H.add(update)
        residuals.append(H)
    out = H.matmul(Scaled.of(net.readout)) if net.readout is not None else H
    if return_residuals:
        return out.reduced().values(), [R.reduced().values() for R in residuals]
    return out.reduced().values()
