"""The fast path of :func:`expressivity.network.exact.forward_exact`: exact arithmetic on scaled integers.

The Fraction path does every multiply-add on ``Fraction`` objects (~2 us each, a gcd each time).
This pass keeps each array as integer numerators over one positive common denominator (Python
ints in NumPy ``object`` arrays), so a matmul is integer multiply-adds and one gcd sweep per
layer: ~30x faster on compiled RASP networks, the same numbers.

The same *types*, too. Python turns ``int op Fraction`` into a ``Fraction`` (even when the value
is whole) and keeps ``int op int`` an ``int``, so which entries the Fraction path returns as
``Fraction`` follows from the operations alone. Beside its numerators every array carries that
boolean mask (``Scaled.fraction``), propagated by the same rules: a matmul entry is a Fraction
when any factor along its row or column is; ReLU gives the ``int`` 0 below zero; hardmax weights
are ``Fraction(1, k)`` on the winners and the ``int`` 0 elsewhere.

What the pass takes, layer kind by layer kind (:data:`_RULES`; :func:`scaled_refusal` says why
not): hardmax attention over the visible keys with any inverse temperature (negative or zero
too), query bias, position bias, causal mask and DP-free heads; ReLU and piecewise-linear
feed-forward layers; embedding (and its bias), positional encoding, readout (and its bias).
Mixing layers run on the Fraction path; softmax, the infinite normaliser, rotary heads, GELU and
layer norms have no exact value at all. A layer kind missing from the table is an error, never a
silent fallback.

Shapes: tokens are rows; ``H`` is ``(batch, n, d)``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, NamedTuple

import numpy as np

from expressivity.errors import EvaluationError
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, rule_for
from expressivity.network.network import Network
from expressivity.network.numbers import exact_number, to_exact


def _is_fraction(values: np.ndarray) -> np.ndarray:
    """Boolean array: which entries of the object array ``values`` are ``Fraction`` objects."""
    out = np.zeros(values.shape, dtype=bool)
    out.flat[:] = [isinstance(v, Fraction) for v in values.flat]
    return out


class Scaled:
    """An exact array: ``numerators / denominator``, with ``fraction`` marking the entries the
    Fraction path holds as ``Fraction`` (the others are whole numbers it holds as ``int``).

    ``numerators``: object array of Python ints; ``denominator``: a positive int; ``fraction``:
    bool array broadcastable to the numerators' shape.
    """

    __slots__ = ("numerators", "denominator", "fraction")

    def __init__(self, numerators: np.ndarray, denominator: int = 1, fraction: np.ndarray | None = None):
        self.numerators, self.denominator = numerators, int(denominator)
        self.fraction = np.zeros(numerators.shape, dtype=bool) if fraction is None else fraction

    @classmethod
    def of(cls, values) -> "Scaled":
        """``values`` (floats, ints, Fractions; any shape) read as :func:`to_exact` reads them."""
        arr = np.asarray(values)
        if arr.dtype != object and arr.dtype != bool and np.all(np.isfinite(arr)) \
                and np.all(arr == np.round(arr)) and (arr.size == 0 or np.max(np.abs(arr)) < 2**53):
            return cls(arr.astype(np.int64).astype(object))      # whole floats: ints, exactly as they are
        exact = to_exact(values)
        fraction = _is_fraction(exact)
        den = math.lcm(1, *(v.denominator for v in exact[fraction].flat))
        numerators = np.empty(exact.shape, dtype=object)
        numerators.flat[:] = [v.numerator * (den // v.denominator) if f else v * den
                              for v, f in zip(exact.flat, fraction.flat)]
        return cls(numerators, den, fraction)

    def matmul(self, other: "Scaled") -> "Scaled":
        """``self @ other`` (NumPy broadcasting); an entry is a Fraction when any factor of its sum is."""
        numerators = self.numerators @ other.numerators
        if self.numerators.shape[-1] == 0:      # an empty sum: NumPy gives the int 0
            return Scaled(numerators, 1)
        fraction = self.fraction.any(axis=-1)[..., :, None] | other.fraction.any(axis=-2)[..., None, :]
        return Scaled(numerators, self.denominator * other.denominator, np.broadcast_to(fraction, numerators.shape))

    def add(self, other: "Scaled") -> "Scaled":
        """``self + other`` (NumPy broadcasting), reduced."""
        den = math.lcm(self.denominator, other.denominator)
        numerators = self.numerators * (den // self.denominator) + other.numerators * (den // other.denominator)
        return Scaled(numerators, den, self.fraction | other.fraction).reduced()

    def times(self, number: int | Fraction) -> "Scaled":
        """``number * self`` for an exact scalar (its sign kept in the numerators)."""
        number = Fraction(number)
        return Scaled(self.numerators * number.numerator, self.denominator * number.denominator, self.fraction)

    def reduced(self) -> "Scaled":
        """The same array over the smallest common denominator."""
        g = math.gcd(self.denominator, *self.numerators.flat)
        if g in (0, 1):
            return self
        return Scaled(self.numerators // g, self.denominator // g, self.fraction)

    def values(self) -> np.ndarray:
        """The object array the Fraction path gives: ``Fraction`` where marked, ``int`` elsewhere."""
        out = np.empty(self.numerators.shape, dtype=object)
        d = self.denominator
        out.flat[:] = [Fraction(v, d) if f else v // d
                       for v, f in zip(self.numerators.flat, np.broadcast_to(self.fraction, out.shape).flat)]
        return out


def _relu(pre: Scaled) -> Scaled:
    positive = np.zeros(pre.numerators.shape, dtype=bool)
    positive.flat[:] = [v > 0 for v in pre.numerators.flat]
    numerators = np.where(positive, pre.numerators, 0)
    return Scaled(numerators, pre.denominator, pre.fraction & positive)    # ``v if v > 0 else 0``: the int 0


def _piecewise(activation, pre: Scaled) -> Scaled:
    """``slopes[k] * t + intercepts[k]`` on the piece ``k`` holding ``t``, breakpoints compared exactly."""
    d, shape = pre.denominator, pre.numerators.shape
    slopes = [exact_number(a) for a in activation.slopes]
    intercepts = [exact_number(b) for b in activation.intercepts]
    den = math.lcm(*(d * Fraction(a).denominator for a in slopes), *(Fraction(b).denominator for b in intercepts))
    # on piece k the numerator v (over d) maps to v * gain[k] + offset[k] (over den)
    gain = [Fraction(a).numerator * (den // (d * Fraction(a).denominator)) for a in slopes]
    offset = [Fraction(b).numerator * (den // Fraction(b).denominator) for b in intercepts]
    # t = v / d is at or above the breakpoint c = p / q exactly when v * q >= p * d (d, q > 0)
    edges = [(Fraction(c).numerator * d, Fraction(c).denominator) for c in activation.breakpoints]
    piece = np.zeros(shape, dtype=int)
    piece.flat[:] = [sum(v * q >= p for p, q in edges) for v in pre.numerators.flat]
    numerators = np.empty(shape, dtype=object)
    numerators.flat[:] = [v * gain[k] + offset[k] for v, k in zip(pre.numerators.flat, piece.flat)]
    piece_is_fraction = np.array([isinstance(a, Fraction) or isinstance(b, Fraction) for a, b in zip(slopes, intercepts)])
    return Scaled(numerators, den, pre.fraction | piece_is_fraction[piece]).reduced()


def _feedforward_update(layer: FeedForwardLayer, H: Scaled) -> Scaled:
    pre = H.matmul(Scaled.of(layer.W_1)).add(Scaled.of(layer.b_1))
    act = _relu(pre) if layer.activation.kind == "relu" else _piecewise(layer.activation, pre)
    return act.matmul(Scaled.of(layer.W_2)).add(Scaled.of(layer.b_2))


def _feedforward_refusal(layer: FeedForwardLayer) -> str | None:
    if layer.norm is not None:
        return "a layer norm (a square root) has no exact value"
    if layer.activation.kind not in ("relu", "piecewise"):
        return f"the {layer.activation.kind} activation has no exact value"
    # an exact breakpoint past the float range is finite (float() of it raised OverflowError: an audit, 2026-11-29)
    if layer.activation.kind == "piecewise" and any(isinstance(c, float) and not math.isfinite(c)
                                                    for c in layer.activation.breakpoints):
        return "a piecewise activation with an infinite breakpoint is left to the Fraction path"
    return None


def _scores(layer: AttentionLayer, head, H: Scaled) -> Scaled:
    """Scores ``(batch, n, n)`` of one head over one positive denominator: ``lam * q . k + B``."""
    batch, n, _ = H.numerators.shape
    if head.is_dp_free:
        scores = Scaled(np.zeros((batch, n, n), dtype=object))
    else:
        queries = H.matmul(Scaled.of(head.W_Q)).add(Scaled.of(head.b_Q))
        keys = H.matmul(Scaled.of(head.W_K))
        dots = Scaled(queries.numerators @ keys.numerators.transpose(0, 2, 1), queries.denominator * keys.denominator)
        scores = dots.times(exact_number(layer.inverse_temperature))    # a negative lam flips the arg-max
    if head.position_bias is not None:
        scores = scores.add(Scaled.of(exact_bias(head.position_bias, n)))
    return scores


def _hardmax(scores: Scaled, causal: bool) -> Scaled:
    """Hardmax weights ``(batch, n, n)``: ``Fraction(1, k)`` on the ``k`` tied winners of each row
    (over keys ``j <= i`` when ``causal``), the int 0 elsewhere; all over one denominator ``M``."""
    S = scores.numerators      # one positive denominator: comparing numerators compares scores
    batch, n, _ = S.shape
    winners = []
    for b in range(batch):
        for i in range(n):
            row = S[b, i, : i + 1] if causal else S[b, i]
            best = max(row)
            winners.append([j for j, v in enumerate(row) if v == best])
    M = math.lcm(1, *(len(w) for w in winners))
    weights = np.zeros((batch, n, n), dtype=object)
    fraction = np.zeros((batch, n, n), dtype=bool)
    for row, w in enumerate(winners):
        b, i = divmod(row, n)
        weights[b, i, w] = M // len(w)
        fraction[b, i, w] = True
    return Scaled(weights, M, fraction)


def _attention_update(layer: AttentionLayer, H: Scaled) -> Scaled:
    update = None
    for head in layer.heads:
        weights = _hardmax(_scores(layer, head, H), layer.causal)
        # the Fraction path's order of products: (weights @ (H @ W_V)) @ W_O
        part = weights.matmul(H.matmul(Scaled.of(head.W_V))).matmul(Scaled.of(head.W_O))
        update = part if update is None else update.add(part)
    return update


def exact_bias(bias, n: int) -> np.ndarray:
    """A position bias's ``(n, n)`` entries for the exact passes: a slope bias computed in exact arithmetic
    (:meth:`SlopeBias.exact_matrix`), the stored entries of any other."""
    return bias.exact_matrix(n) if hasattr(bias, "exact_matrix") else bias.matrix(n)


def logarithmic_bias(bias) -> bool:
    """Whether a position bias is log-type with ``beta != 0``: its entries are float64 roundings of
    ``-beta log(1 + s)``, and read as exact rationals they made ties that are not there (a score
    difference of -2.3e-17 became 0, and hardmax averaged two keys: an audit, 2026-11-29)."""
    return bias is not None and bias.kind == "log" and float(bias.beta) != 0


def _attention_refusal(layer: AttentionLayer) -> str | None:
    if layer.norm is not None:
        return "a layer norm (a square root) has no exact value"
    # the infinite normaliser comes with softmax today; asked first, it stays refused if that changes
    if layer.normaliser != "visible":
        return "the infinite-past normaliser (exp) has no exact value"
    if layer.normalization != "hardmax":
        return "softmax has no exact value; the scaled-integer pass takes hardmax attention"
    if any(head.rotary for head in layer.heads):
        return "rotary heads (cos/sin) have no exact value"
    if any(logarithmic_bias(head.position_bias) for head in layer.heads):
        return "a log-type position bias (-beta log(1 + s)) has no exact value"
    return None


class _Rule(NamedTuple):
    """How the scaled-integer pass treats one layer kind: why not (``refusal(layer)``: a reason or
    ``None``) and what the layer adds to the residual stream (``update(layer, H)``)."""

    refusal: Callable
    update: Callable | None


# layer kind -> its scaled-integer rule; every kind the exact evaluator knows has an entry here
_RULES = {"attention": _Rule(_attention_refusal, _attention_update),
          "feedforward": _Rule(_feedforward_refusal, _feedforward_update),
          # the Fraction path's convolution and matrix heads are exact and rare: not worth a second copy
          "mixing": _Rule(lambda layer: "mixing layers run on the Fraction path", None)}


def scaled_refusal(network: Network) -> str | None:
    """Why the scaled-integer pass does not take ``network`` (``None``: it does); a layer kind it
    has no rule for raises :class:`~expressivity.errors.NetworkError`."""
    for k, layer in enumerate(network.layers):
        reason = rule_for(_RULES, layer, "scaled-integer evaluator").refusal(layer)
        if reason is not None:
            return f"layer {k}: {reason}"
    if network.final_norm is not None:
        return "the final layer norm (a square root) has no exact value"
    return None


def run_scaled(network: Network, X: np.ndarray, return_residuals: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """The readout ``(batch, n, d_out)`` of a network :func:`scaled_refusal` takes, on the exact
    input ``X`` ``(batch, n, d_in)``; with ``return_residuals`` also the residual stream
    ``(batch, n, d)`` after the input and after every layer (else an empty list)."""
    n = X.shape[1]
    H = Scaled.of(X)
    if network.embedding is not None:
        H = H.matmul(Scaled.of(network.embedding))
    if network.embedding_bias is not None:
        H = H.add(Scaled.of(network.embedding_bias))
    if network.positional_encoding is not None:
        H = H.add(Scaled.of(network.positional_encoding[:n]))
    residuals = [H]
    for layer in network.layers:
        H = H.add(_RULES[layer.kind].update(layer, H))
        residuals.append(H)
    out = H if network.readout is None else H.matmul(Scaled.of(network.readout))
    if network.readout_bias is not None:
        out = out.add(Scaled.of(network.readout_bias))
    return out.reduced().values(), [R.values() for R in residuals] if return_residuals else []


def forward_scaled(network: Network, X, *, return_residuals: bool = False):
    """The scaled-integer pass alone, for tests and benchmarks that hold it to the Fraction path
    (everything else calls ``forward_exact``): the readout of ``network`` on ``X``
    ``(batch, n, d_in)``, and with ``return_residuals`` the residual streams; raises
    :class:`EvaluationError` when the network does not qualify."""
    reason = scaled_refusal(network)
    if reason is not None:
        raise EvaluationError(f"the scaled-integer evaluator does not take this network: {reason}")
    out, residuals = run_scaled(network, to_exact(X), return_residuals)
    return (out, residuals) if return_residuals else out
