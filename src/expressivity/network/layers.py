"""Layer types of an explicitly weighted Transformer.

Layout convention: tokens are **rows**. An input is ``(n, d)`` (or ``(batch, n, d)``); the
papers write ``X in R^{d x n}`` with tokens as columns, so a paper's ``W X`` is our ``X @ W.T``.
All weight matrices here are stored in the row convention: a query is ``x @ W_Q + b_Q``.

Weights are NumPy arrays. A construction that needs exact arithmetic stores ``dtype=object``
arrays of Python ``int`` / ``fractions.Fraction``; float constructions store ``float64``. The
exact evaluator reads float entries as the exact rationals they are, so every network can be
evaluated exactly (hardmax only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Rational
from typing import Literal

import numpy as np

from expressivity.errors import NetworkError

Number = int | float | Fraction


def as_weight(values, shape: tuple[int, ...] | None = None, name: str = "weight") -> np.ndarray:
    """Return ``values`` as a weight array: ``object`` if any entry is a ``Fraction`` or a Python
    int too large for float64 to hold exactly, else ``float64``.

    Keeps exact constructions exact while letting float ones stay fast.
    """
    arr = np.asarray(values, dtype=object) if _needs_object(values) else np.asarray(values, dtype=np.float64)
    if shape is not None and arr.shape != tuple(shape):
        raise NetworkError(f"{name} has shape {arr.shape}, expected {tuple(shape)}")
    return arr


def _needs_object(values) -> bool:
    if isinstance(values, np.ndarray):
        if values.dtype != object:
            return False
        return any(_exact_scalar(v) for v in values.flat)
    arr = np.asarray(values, dtype=object)
    return any(_exact_scalar(v) for v in arr.flat)


def _exact_scalar(v) -> bool:
    if isinstance(v, Fraction):
        return v.denominator != 1 or abs(v.numerator) > 2**53
    if isinstance(v, int) and not isinstance(v, bool):
        return abs(v) > 2**53
    return isinstance(v, Rational) and not isinstance(v, (int, np.integer))


# --------------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReLU:
    """``max(t, 0)`` element-wise."""

    kind: Literal["relu"] = "relu"

    def describe(self) -> str:
        return "ReLU"


@dataclass(frozen=True)
class PiecewiseLinear:
    """A piecewise-linear scalar function of at most three pieces on half-open intervals.

    With breakpoints ``c_1 < c_2`` the pieces live on ``(-inf, c_1)``, ``[c_1, c_2)`` and
    ``[c_2, inf)``; piece ``k`` is ``slopes[k] * t + intercepts[k]``. The function may jump at a
    breakpoint (Yun et al.'s class Phi); at least one piece must be constant.

    Attributes:
        breakpoints: 0, 1 or 2 increasing numbers.
        slopes, intercepts: one more entry than ``breakpoints``.
    """

    breakpoints: tuple[Number, ...]
    slopes: tuple[Number, ...]
    intercepts: tuple[Number, ...]
    kind: Literal["piecewise"] = "piecewise"

    def __post_init__(self) -> None:
        nb = len(self.breakpoints)
        if nb > 2:
            raise NetworkError(f"piecewise-linear activation has {nb + 1} pieces; at most 3 allowed")
        if len(self.slopes) != nb + 1 or len(self.intercepts) != nb + 1:
            raise NetworkError("piecewise-linear activation needs len(slopes) == len(intercepts) == len(breakpoints) + 1")
        if nb == 2 and not self.breakpoints[0] < self.breakpoints[1]:
            raise NetworkError(f"breakpoints must increase, got {self.breakpoints}")
        if all(s != 0 for s in self.slopes):
            raise NetworkError("piecewise-linear activation needs at least one constant piece (slope 0)")

    def piece_index(self, t) -> int:
        """Index of the piece containing scalar ``t`` (exact comparison for exact ``t``)."""
        k = 0
        for c in self.breakpoints:
            if t >= c:
                k += 1
        return k

    def describe(self) -> str:
        parts = []
        edges = [None, *self.breakpoints, None]
        for k, (a, b) in enumerate(zip(self.slopes, self.intercepts)):
            lo, hi = edges[k], edges[k + 1]
            lo_s = "(-inf" if lo is None else f"[{_fmt(lo)}"
            hi_s = "inf)" if hi is None else f"{_fmt(hi)})"
            expr = _fmt(b) if a == 0 else (f"{_fmt(a)}t" + (f"{'+' if b >= 0 else '-'}{_fmt(abs(b))}" if b != 0 else ""))
            parts.append(f"{expr} on {lo_s},{hi_s}")
        return "PL{" + "; ".join(parts) + "}"


Activation = ReLU | PiecewiseLinear


def _fmt(x) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)


# --------------------------------------------------------------------------------------------
# Position biases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RelativeBias:
    """Additive attention bias that depends on the offset ``i - j`` (query ``i``, key ``j``).

    ``B[i, j] = table.get(i - j, default)``. Works for any sequence length.
    """

    table: tuple[tuple[int, Number], ...]
    default: Number = 0
    kind: Literal["relative"] = "relative"

    @staticmethod
    def from_function(fn, max_offset: int, default: Number = 0) -> "RelativeBias":
        """Tabulate ``fn(offset)`` for offsets in ``[-max_offset, max_offset]``."""
        return RelativeBias(tuple((o, fn(o)) for o in range(-max_offset, max_offset + 1)), default)

    def matrix(self, n: int) -> np.ndarray:
        """The ``(n, n)`` bias matrix, object dtype if any entry is exact."""
        lookup = dict(self.table)
        rows = [[lookup.get(i - j, self.default) for j in range(n)] for i in range(n)]
        return as_weight(rows)


@dataclass(frozen=True)
class MatrixBias:
    """Additive attention bias given as a full ``(n, n)`` matrix over (query, key) positions.

    Fixes the sequence length of the network that uses it.
    """

    values: np.ndarray
    kind: Literal["matrix"] = "matrix"

    def __post_init__(self) -> None:
        v = as_weight(self.values, name="position bias")
        if v.ndim != 2 or v.shape[0] != v.shape[1]:
            raise NetworkError(f"matrix position bias must be square, got shape {v.shape}")
        object.__setattr__(self, "values", v)

    @property
    def length(self) -> int:
        return int(self.values.shape[0])

    def matrix(self, n: int) -> np.ndarray:
        if n != self.length:
            raise NetworkError(f"this position bias is built for length {self.length}, got input length {n}; rebuild the network for length {n}")
        return self.values


PositionBias = RelativeBias | MatrixBias


# --------------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    """One attention head, row convention.

    ``scores[i, j] = lam * (x_i @ W_Q + b_Q) . (x_j @ W_K) + B[i, j]``; the head writes
    ``weights @ (X @ W_V) @ W_O`` into the residual stream.

    Shapes: ``W_Q, W_K: (d, m)``, ``b_Q: (m,)``, ``W_V: (d, m_v)``, ``W_O: (m_v, d)``.
    """

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: np.ndarray | None = None
    position_bias: PositionBias | None = None
    name: str = ""

    def __post_init__(self) -> None:
        W_Q, W_K, W_V, W_O = (as_weight(w, name=n) for w, n in
                              ((self.W_Q, "W_Q"), (self.W_K, "W_K"), (self.W_V, "W_V"), (self.W_O, "W_O")))
        if W_Q.ndim != 2 or W_K.shape != W_Q.shape:
            raise NetworkError(f"head {self.name!r}: W_Q {W_Q.shape} and W_K {W_K.shape} must be equal (d, m) matrices")
        d, m = W_Q.shape
        if W_V.ndim != 2 or W_V.shape[0] != d or W_O.ndim != 2 or W_O.shape != (W_V.shape[1], d):
            raise NetworkError(f"head {self.name!r}: W_V {W_V.shape} must be (d, m_v) and W_O {W_O.shape} must be (m_v, d) with d={d}")
        b_Q = as_weight(np.zeros(m) if self.b_Q is None else self.b_Q, (m,), "b_Q")
        for attr, val in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O), ("b_Q", b_Q)):
            object.__setattr__(self, attr, val)

    @property
    def d(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def size(self) -> int:
        """Head size ``m`` (query/key width)."""
        return int(self.W_Q.shape[1])

    def parameter_count(self) -> int:
        n = sum(w.size for w in (self.W_Q, self.W_K, self.W_V, self.W_O, self.b_Q))
        if isinstance(self.position_bias, RelativeBias):
            n += len(self.position_bias.table) + 1
        elif isinstance(self.position_bias, MatrixBias):
            n += self.position_bias.values.size
        return int(n)


@dataclass(frozen=True)
class AttentionLayer:
    """Residual multi-head attention: ``X + sum_h head_h(X)``.

    Attributes:
        heads: the heads, each reading the full residual stream.
        normalization: ``"softmax"`` (with inverse temperature ``inverse_temperature``) or
            ``"hardmax"`` (arg-max over keys of the whole score, bias included, ties split
            evenly). Hardmax is the limit of softmax as the *whole* score is scaled up; with a
            position bias that is not scaled along with ``lam``, the ``lam -> inf`` limit instead
            takes the arg-max of the dot product alone, with ties weighted by ``e^B``.
        inverse_temperature: ``lam``; multiplies the dot-product part of the scores only.
        causal: if true, query ``i`` sees keys ``j <= i`` only.
    """

    heads: tuple[Head, ...]
    normalization: Literal["softmax", "hardmax"] = "softmax"
    inverse_temperature: Number = 1
    causal: bool = False
    name: str = ""

    def __post_init__(self) -> None:
        if self.normalization not in ("softmax", "hardmax"):
            raise NetworkError(f"unknown normalization {self.normalization!r}; use 'softmax' or 'hardmax'")
        if not self.heads:
            raise NetworkError(f"attention layer {self.name!r} has no heads")
        object.__setattr__(self, "heads", tuple(self.heads))
        dims = {h.d for h in self.heads}
        if len(dims) != 1:
            raise NetworkError(f"attention layer {self.name!r}: heads disagree on the residual width: {sorted(dims)}")

    @property
    def d(self) -> int:
        return self.heads[0].d

    def parameter_count(self) -> int:
        return sum(h.parameter_count() for h in self.heads)


@dataclass(frozen=True)
class FeedForwardLayer:
    """Residual token-wise feed-forward layer: ``X + act(X @ W_1 + b_1) @ W_2 + b_2``.

    Shapes: ``W_1: (d, r)``, ``b_1: (r,)``, ``W_2: (r, d)``, ``b_2: (d,)``.
    """

    W_1: np.ndarray
    b_1: np.ndarray
    W_2: np.ndarray
    b_2: np.ndarray | None = None
    activation: Activation = field(default_factory=ReLU)
    name: str = ""

    def __post_init__(self) -> None:
        W_1 = as_weight(self.W_1, name="W_1")
        if W_1.ndim != 2:
            raise NetworkError(f"feed-forward {self.name!r}: W_1 must be (d, r), got {W_1.shape}")
        d, r = W_1.shape
        b_1 = as_weight(self.b_1, (r,), "b_1")
        W_2 = as_weight(self.W_2, (r, d), "W_2")
        b_2 = as_weight(np.zeros(d) if self.b_2 is None else self.b_2, (d,), "b_2")
        if not isinstance(self.activation, (ReLU, PiecewiseLinear)):
            raise NetworkError(f"feed-forward {self.name!r}: activation must be ReLU or PiecewiseLinear")
        for attr, val in (("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
            object.__setattr__(self, attr, val)

    @property
    def d(self) -> int:
        return int(self.W_1.shape[0])

    @property
    def width(self) -> int:
        return int(self.W_1.shape[1])

    def parameter_count(self) -> int:
        return int(sum(w.size for w in (self.W_1, self.b_1, self.W_2, self.b_2)))


Layer = AttentionLayer | FeedForwardLayer
