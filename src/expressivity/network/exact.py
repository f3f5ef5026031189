"""Exact evaluator: the reference semantics in Python ``int`` / ``fractions.Fraction``.

Every float weight or input is read as the exact rational it denotes, so results are exact
statements about the network as stored. Evaluable exactly: hardmax attention (with any
position bias, read as the rationals it stores), ReLU and piecewise-linear feed-forward
layers, mixing layers, embeddings, encodings and readouts. Refused with
:class:`EvaluationError`: softmax and the infinite normaliser (``exp``), GELU (``erf``), layer
norm (a square root) and rotary heads (``cos``/``sin``).

Two paths, one answer. The Fraction path here is the reference: arrays are NumPy ``object``
arrays and NumPy's matmul on them uses Python arithmetic, so no rounding happens anywhere. Where
a network qualifies, :func:`forward_exact` runs the scaled-integer pass of
:mod:`expressivity.network.exact_scaled` instead: the same numbers of the same types, ~30x
faster (tests hold the two equal). Shapes follow :mod:`expressivity.network.reference`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, NamedTuple

import numpy as np

from expressivity.errors import EvaluationError
from expressivity.network.exact_scaled import exact_bias, logarithmic_bias, run_scaled, scaled_refusal
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, MixingHead, MixingLayer, rule_for
from expressivity.network.network import Network
from expressivity.network.numbers import exact_number, to_exact

__all__ = ["check_exact_evaluable", "exact_activate", "exact_hardmax", "forward_exact", "to_exact"]

_FIX = "evaluate with dtype float64/float32"


def check_exact_evaluable(network: Network) -> None:
    """Raise :class:`EvaluationError` naming the first part of ``network`` with no exact value."""
    for k, layer in enumerate(network.layers):
        if layer.norm is not None:
            raise EvaluationError(f"layer {k} uses a layer norm (a square root), which has no exact value; {_FIX}")
        refusal = rule_for(_RULES, layer, "exact evaluator").refusal(layer, k)
        if refusal is not None:
            raise EvaluationError(refusal)
    if network.final_norm is not None:
        raise EvaluationError(f"the final layer norm (a square root) has no exact value; {_FIX}")


def _attention_refusal(layer: AttentionLayer, k: int) -> str | None:
    if layer.normaliser == "infinite":
        return f"layer {k} normalises over an infinite past (exp), which has no exact value; {_FIX}"
    if layer.normalization == "softmax":
        return (f"layer {k} uses softmax, which has no exact value; {_FIX} (only hardmax attention has one: "
                "build the network with hardmax where its command offers it)")
    for h, head in enumerate(layer.heads):
        if head.rotary:
            return f"layer {k}, head {h} is rotary (cos/sin), which has no exact value; {_FIX}"
        if logarithmic_bias(head.position_bias):
            return f"layer {k}, head {h} has a log-type position bias (-beta log(1 + s)), which has no exact value; {_FIX}"
        if _masks(head.position_bias):
            return (f"layer {k}, head {h} has a -inf position bias (a mask), which exact arithmetic does not "
                    f"hold; {_FIX}")
    return None


def _masks(bias) -> bool:
    """Whether a position bias holds ``-inf`` anywhere (its default, a table entry or a matrix entry)."""
    if bias is None:
        return False
    if bias.kind == "matrix":
        values = np.asarray(bias.values)
        if values.dtype != object:   # a float matrix: one vectorised test, not a Python loop over n^2 entries
            return bool(np.isneginf(values).any())
        return any(isinstance(v, float) and v == -math.inf for v in values.flat)
    if bias.kind == "relative":
        values = [v for _, v in bias.table] + [bias.default, bias.default_negative]
        return any(v is not None and v == -math.inf for v in values)   # a huge int compares without float()
    return False


def _feedforward_refusal(layer: FeedForwardLayer, k: int) -> str | None:
    if layer.activation.kind == "gelu":
        return f"layer {k} uses GELU (erf), which has no exact value; {_FIX}"
    return None


def forward_exact(network: Network, X, *, return_residuals: bool = False, allow_length: bool = False,
                  allow_outside: bool = False, fast: bool = True):
    """Exact forward pass. ``X``: ``(n, d_in)`` or ``(batch, n, d_in)``; returns an object array
    (``(n, d_out)`` or ``(batch, n, d_out)``), with ``return_residuals`` also the residual stream
    after the input and after every layer.

    ``allow_length``: run on a length outside ``network.valid_lengths`` (outside its claim);
    ``allow_outside``: on values outside ``network.input_domain`` (outside its claim).
    ``fast``: run the scaled-integer pass (:mod:`expressivity.network.exact_scaled`: the same
    numbers of the same types; 85-90x faster on a compiled RASP sort, ``bench_exact.py``) when the network qualifies; ``False`` forces the
    Fraction path, the reference that tests hold the fast one to."""
    check_exact_evaluable(network)
    X = to_exact(X)
    network.check_input(X, allow_length=allow_length, allow_outside=allow_outside, arithmetic="exact")
    single = X.ndim == 2
    run = run_scaled if fast and scaled_refusal(network) is None else _forward_fractions
    batch = X[None] if single else X
    chunk = exact_chunk(network, batch.shape[1])
    starts = range(0, len(batch), chunk) or [0]   # an empty batch still runs once, for its shape
    parts = [run(network, batch[i:i + chunk], return_residuals) for i in starts]
    if len(parts) == 1:   # the common case: nothing to join
        out, residuals = parts[0]
    else:
        out = np.concatenate([o for o, _ in parts])
        residuals = [np.concatenate(r) for r in zip(*(res for _, res in parts))]
    if single:
        out, residuals = out[0], [r[0] for r in residuals]
    return (out, residuals) if return_residuals else out


EXACT_SCORES_AT_ONCE = 2**21   # exact attention scores one pass holds per array (a chunk of the batch)
EXACT_MAX_SCORES = 2**25       # a single sequence's scores above this are refused (about 5 GB of Python numbers)


def exact_chunk(network: Network, n: int) -> int:
    """Sequences of ``n`` tokens one exact pass takes at once: each attention head holds an
    ``(n, n)`` array of Python numbers per sequence (about 150 bytes a score: a 4096-token
    circuit's pass peaked at 2.4 GB), so a large batch runs a few sequences at a time (2,040
    sequences of 256 tokens asked for 8 GB at once: a fresh audit, 2026-11-28);
    :class:`EvaluationError` where one sequence alone is above :data:`EXACT_MAX_SCORES`."""
    if not any(layer.kind == "attention" for layer in network.layers):
        return 1 << 62
    if n * n > EXACT_MAX_SCORES:
        raise EvaluationError(f"exact evaluation at {n:,} tokens holds {n * n:,} exact attention scores a head, about "
                              f"{n * n * 150 / 2**30:.3g} GiB, above the budget of {EXACT_MAX_SCORES:,} scores; use "
                              "shorter sequences or float64")
    return max(1, EXACT_SCORES_AT_ONCE // (n * n))


def _forward_fractions(network: Network, H: np.ndarray, return_residuals: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """The Fraction path: the readout ``(batch, n, d_out)`` on the exact input ``H``
    ``(batch, n, d_in)``, every multiply-add on Python ``int`` / ``Fraction``; with
    ``return_residuals`` the residual streams ``(batch, n, d)`` (else an empty list)."""
    if network.embedding is not None:
        H = H @ to_exact(network.embedding)
    if network.embedding_bias is not None:
        H = H + to_exact(network.embedding_bias)
    if network.positional_encoding is not None:
        H = H + to_exact(network.positional_encoding)[: H.shape[1]]
    residuals = [H]
    for layer in network.layers:
        H = H + rule_for(_RULES, layer, "exact evaluator").update(layer, H)
        residuals.append(H)
    out = H if network.readout is None else H @ to_exact(network.readout)
    if network.readout_bias is not None:
        out = out + to_exact(network.readout_bias)
    return out, residuals if return_residuals else []


def _attention_update(layer: AttentionLayer, H: np.ndarray) -> np.ndarray:
    batch, n, d = H.shape
    update = np.zeros((batch, n, d), dtype=object)
    lam = exact_number(layer.inverse_temperature)
    for head in layer.heads:
        scores = np.zeros((batch, n, n), dtype=object)
        if not head.is_dp_free:
            queries = H @ to_exact(head.W_Q) + to_exact(head.b_Q)
            keys = H @ to_exact(head.W_K)
            scores = lam * (queries @ keys.transpose(0, 2, 1))
        if head.position_bias is not None:
            scores = scores + to_exact(exact_bias(head.position_bias, n))
        weights = exact_hardmax(scores, causal=layer.causal)
        update = update + weights @ (H @ to_exact(head.W_V)) @ to_exact(head.W_O)
    return update


def exact_hardmax(scores: np.ndarray, causal: bool = False) -> np.ndarray:
    """Hardmax over the last axis of an object array; ties get ``Fraction(1, k)`` each."""
    *lead, n_q, n_k = scores.shape
    out = np.zeros(scores.shape, dtype=object)
    for idx in np.ndindex(*lead, n_q):
        row = scores[idx]
        visible = range(idx[-1] + 1) if causal else range(n_k)
        best = max(row[j] for j in visible)
        winners = [j for j in visible if row[j] == best]
        share = Fraction(1, len(winners))
        for j in winners:
            out[idx + (j,)] = share
    return out


def _mix(head: MixingHead, V: np.ndarray) -> np.ndarray:
    n = V.shape[1]
    if head.matrix is not None:
        return to_exact(head.matrix)[:n, :n] @ V
    out = np.zeros(V.shape, dtype=object)
    for u, taps in enumerate(to_exact(head.kernel)):   # row u reads key i - left + u
        shift = u - head.left
        lo, hi = max(0, -shift), min(n, n - shift)
        if lo < hi:
            out[:, lo:hi] = out[:, lo:hi] + taps * V[:, lo + shift:hi + shift]
    return out


def _mixing_update(layer: MixingLayer, H: np.ndarray) -> np.ndarray:
    update = np.zeros(H.shape, dtype=object)
    for head in layer.heads:
        update = update + _mix(head, H @ to_exact(head.W_V)) @ to_exact(head.W_O)
    return update


def _feedforward_update(layer: FeedForwardLayer, H: np.ndarray) -> np.ndarray:
    pre = H @ to_exact(layer.W_1) + to_exact(layer.b_1)
    return exact_activate(layer.activation, pre) @ to_exact(layer.W_2) + to_exact(layer.b_2)


class _Rule(NamedTuple):
    """How the exact evaluator treats one layer kind: why it cannot (``refusal(layer, k)``: a
    message, or ``None``) and what the layer adds to the residual stream (``update(layer, H)``)."""

    refusal: Callable
    update: Callable


# layer kind -> its exact rule (the exact evaluator's one table)
_RULES = {"attention": _Rule(_attention_refusal, _attention_update),
          "mixing": _Rule(lambda layer, k: None, _mixing_update),
          "feedforward": _Rule(_feedforward_refusal, _feedforward_update)}


def exact_activate(activation, t: np.ndarray) -> np.ndarray:
    """A :class:`ReLU` or :class:`PiecewiseLinear` applied exactly to the object array ``t``."""
    out = np.empty(t.shape, dtype=object)
    if activation.kind == "relu":
        out.flat[:] = [v if v > 0 else 0 for v in t.flat]
        return out
    slopes = [exact_number(a) for a in activation.slopes]
    intercepts = [exact_number(b) for b in activation.intercepts]
    vals = []
    for v in t.flat:
        k = activation.piece_index(v)  # Python compares Fraction with float exactly
        vals.append(slopes[k] * v + intercepts[k])
    out.flat[:] = vals
    return out
