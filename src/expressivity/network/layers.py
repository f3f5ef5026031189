"""Layer types of an explicitly weighted Transformer.

Layout convention: tokens are **rows**. An input is ``(n, d)`` (or ``(batch, n, d)``); the
papers write ``X in R^{d x n}`` with tokens as columns, so a paper's ``W X`` is our ``X @ W.T``.
All weight matrices here are stored in the row convention: a query is ``x @ W_Q + b_Q``.

Weights are NumPy arrays (see :mod:`expressivity.network.numbers`): ``float64``, or ``object``
arrays of exact numbers. What each layer computes is written once, in
:mod:`expressivity.network.reference`.

Every layer type answers the same questions, so :class:`~expressivity.network.network.Network`,
the summary and the exporter never ask which type they hold: ``kind`` (its JSON name), ``d``,
``norm`` (its optional pre-norm), ``length`` (the positions it is built for, or ``None``),
``uses_position``, ``head_count``, ``parameter_count()``, ``arrays()``, ``describe(labels)``,
``to_dict(arrays)`` / ``from_dict(d, arrays)``.

What a layer *computes* is each evaluator's business: every evaluator keeps one table from
``kind`` to its rule and looks layers up with :func:`rule_for`, so a kind it has no rule for is
an error naming the evaluator and the kind, never a layer silently skipped.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Sequence

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.activations import GELU, Activation, PiecewiseLinear, ReLU, activation_from_dict
from expressivity.network.biases import MatrixBias, PositionBias, RelativeBias, SlopeBias, bias_from_dict
from expressivity.network.equality import equal_by_value
from expressivity.network.labels import summarise_labels
from expressivity.network.numbers import Number, as_weight, fmt
from expressivity.network.serial import ArrayStore, number_from_json, number_to_json

__all__ = [
    "GELU", "LAYERS", "Activation", "AttentionLayer", "FeedForwardLayer", "Head", "Layer", "LayerNorm", "MatrixBias",
    "MixingHead", "MixingLayer", "PiecewiseLinear", "PositionBias", "ReLU", "RelativeBias", "SlopeBias",
    "head_count", "layer_from_dict", "rule_for",
]


def support(mask: np.ndarray, labels: Sequence[str]) -> str:
    """``{a,b}``: the labels of the dimensions where ``mask`` is true."""
    return "{" + summarise_labels([labels[k] for k in range(len(labels)) if mask[k]]).replace(", ", ",") + "}"


def _nonzero_rows(*mats: np.ndarray) -> np.ndarray:
    """Which rows (input dimensions) any of ``mats`` reads."""
    return np.any(np.concatenate([m != 0 for m in mats], axis=1), axis=1)


def _nonzero_cols(*mats: np.ndarray) -> np.ndarray:
    """Which columns (output dimensions) any of ``mats`` writes."""
    return np.any(np.concatenate([m != 0 for m in mats], axis=0), axis=0)


# --------------------------------------------------------------------------------------------
# Layer norm
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerNorm:
    """``(x - mean) / sqrt(var + eps) * gain + bias`` over the ``d`` features of each token.

    ``var`` is the biased (population) variance, as in ``torch.nn.LayerNorm``. Shapes: ``gain``,
    ``bias``: ``(d,)``.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    gain: np.ndarray
    bias: np.ndarray
    eps: float = 1e-5

    def __post_init__(self) -> None:
        gain = as_weight(self.gain, name="layer-norm gain")
        if gain.ndim != 1:
            raise NetworkError(f"layer-norm gain must be (d,), got {gain.shape}")
        object.__setattr__(self, "gain", gain)
        object.__setattr__(self, "bias", as_weight(self.bias, gain.shape, "layer-norm bias"))
        if not float(self.eps) > 0:
            raise NetworkError(f"layer-norm eps must be > 0, got {self.eps}")

    @property
    def d(self) -> int:
        return int(self.gain.shape[0])

    def parameter_count(self) -> int:
        return 2 * self.d

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"gain": arrays.put("gain", self.gain), "bias": arrays.put("bias", self.bias), "eps": float(self.eps)}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "LayerNorm":
        return cls(arrays.get(d["gain"]), arrays.get(d["bias"]), float(d["eps"]))


def _common_length(parts, where: str) -> int | None:
    """The one length that the position-indexed ``parts`` (each ``.length`` or ``None``) are built for."""
    lengths = {p.length for p in parts if p is not None} - {None}
    if len(lengths) > 1:
        raise NetworkError(f"{where}: position-indexed weights are built for different lengths {sorted(lengths)}")
    return next(iter(lengths), None)


def _check_norm(norm: LayerNorm | None, d: int, what: str) -> None:
    if norm is not None and (not isinstance(norm, LayerNorm) or norm.d != d):
        raise NetworkError(f"{what}: its norm must be a LayerNorm of width {d}")


def _norm_to_dict(norm: LayerNorm | None, arrays: ArrayStore) -> dict | None:
    return None if norm is None else norm.to_dict(arrays.scope("norm."))


def _norm_from_dict(d: dict | None, arrays: ArrayStore) -> LayerNorm | None:
    return None if d is None else LayerNorm.from_dict(d, arrays.scope("norm."))


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    """One attention head, row convention.

    ``scores[i, j] = lam * rot_i(x_i @ W_Q + b_Q) . rot_j(x_j @ W_K) + B[i, j]``; the head writes
    ``weights @ (X @ W_V) @ W_O`` into the residual stream. ``rot_p`` is the identity unless
    ``rotary``: then dimension pair ``(k, k + m/2)`` is rotated by the angle
    ``p * 10000^(-2k/m)`` (GPT-NeoX half-split layout), so scores depend on ``i - j``.

    A head whose ``W_Q``, ``W_K`` have zero columns (``m = 0``) is **DP-free**: its scores are the
    position bias alone (Wang & E 2024 §1.2); :meth:`dp_free` builds one.

    Shapes: ``W_Q, W_K: (d, m)``, ``b_Q: (m,)``, ``W_V: (d, m_v)``, ``W_O: (m_v, d)``.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: np.ndarray | None = None
    position_bias: PositionBias | None = None
    name: str = ""
    rotary: bool = False

    def __post_init__(self) -> None:
        W_Q, W_K, W_V, W_O = (as_weight(w, name=n) for w, n in
                              ((self.W_Q, "W_Q"), (self.W_K, "W_K"), (self.W_V, "W_V"), (self.W_O, "W_O")))
        if W_Q.ndim != 2 or W_K.shape != W_Q.shape:
            raise NetworkError(f"head {self.name!r}: W_Q {W_Q.shape} and W_K {W_K.shape} must be equal (d, m) matrices")
        d, m = W_Q.shape
        if W_V.ndim != 2 or W_V.shape[0] != d or W_O.ndim != 2 or W_O.shape != (W_V.shape[1], d):
            raise NetworkError(f"head {self.name!r}: W_V {W_V.shape} must be (d, m_v) and W_O {W_O.shape} must be (m_v, d) with d={d}")
        b_Q = as_weight(np.zeros(m) if self.b_Q is None else self.b_Q, (m,), "b_Q")
        if self.rotary and (m == 0 or m % 2):
            raise NetworkError(f"head {self.name!r}: rotary needs an even query width m > 0, got {m}; drop rotary or resize W_Q, W_K")
        for attr, val in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O), ("b_Q", b_Q)):
            object.__setattr__(self, attr, val)

    @classmethod
    def dp_free(cls, W_V, W_O, position_bias: PositionBias | None = None, name: str = "") -> "Head":
        """A head with no dot product: ``W_Q``, ``W_K`` of shape ``(d, 0)``."""
        d = np.shape(W_V)[0]
        return cls(np.zeros((d, 0)), np.zeros((d, 0)), W_V, W_O, position_bias=position_bias, name=name)

    @property
    def d(self) -> int:
        return int(self.W_Q.shape[0])

    @property
    def size(self) -> int:
        """Head size ``m`` (query/key width); 0 for a DP-free head."""
        return int(self.W_Q.shape[1])

    @property
    def is_dp_free(self) -> bool:
        return self.size == 0

    def parameter_count(self) -> int:
        n = sum(w.size for w in (self.W_Q, self.W_K, self.W_V, self.W_O, self.b_Q))
        return int(n + (0 if self.position_bias is None else self.position_bias.parameter_count()))

    def arrays(self) -> list[np.ndarray]:
        out = [self.W_Q, self.W_K, self.W_V, self.W_O, self.b_Q]
        return out + ([self.position_bias.values] if isinstance(self.position_bias, MatrixBias) else [])

    def describe(self, labels: Sequence[str]) -> str:
        kind = "dp-free" if self.is_dp_free else f"m={self.size}"
        reads = support(_nonzero_rows(self.W_Q, self.W_K, self.W_V), labels)
        writes = support(_nonzero_cols(self.W_O), labels)
        bias = "" if self.position_bias is None else f" +{self.position_bias.describe()}-bias"
        return f"{kind} reads {reads} writes {writes}{bias}{' rotary' if self.rotary else ''}"

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"name": self.name, **{a: arrays.put(a, getattr(self, a)) for a in ("W_Q", "W_K", "W_V", "W_O", "b_Q")},
                "position_bias": None if self.position_bias is None else self.position_bias.to_dict(arrays),
                "rotary": self.rotary}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "Head":
        pb = d.get("position_bias")
        return cls(*(arrays.get(d[a]) for a in ("W_Q", "W_K", "W_V", "W_O", "b_Q")),
                   position_bias=None if pb is None else bias_from_dict(pb, arrays), name=d["name"],
                   rotary=bool(d.get("rotary", False)))


@dataclass(frozen=True)
class AttentionLayer:
    """Residual multi-head attention: ``X + sum_h head_h(norm(X))``.

    Attributes:
        heads: the heads, each reading the full (normalised) residual stream.
        normalization: ``"softmax"`` (with inverse temperature ``inverse_temperature``) or
            ``"hardmax"`` (arg-max over keys of the whole score, bias included, ties split
            evenly). Hardmax is the limit of softmax as the *whole* score is scaled up; with a
            position bias that is not scaled along with ``lam``, the ``lam -> inf`` limit instead
            takes the arg-max of the dot product alone, with ties weighted by ``e^B``.
        inverse_temperature: ``lam``; multiplies the dot-product part of the scores only.
        causal: if true, query ``i`` sees keys ``j <= i`` only.
        normaliser: what softmax divides by. ``"visible"``: the sum over the keys the query
            sees. ``"infinite"`` (Wang & E 2024 §7): the sequence continues into an infinite
            zero-padded past, so key ``j`` gets ``exp(B[i, j]) / Z_inf`` with ``Z_inf`` the bias's
            infinite mass; early queries receive less than unit mass. Only for causal softmax
            layers of DP-free heads whose biases have a finite infinite mass.
        norm: optional pre-norm applied to what the layer reads (the residual adds to ``X``).
    """

    heads: tuple[Head, ...]
    normalization: Literal["softmax", "hardmax"] = "softmax"
    inverse_temperature: Number = 1
    causal: bool = False
    name: str = ""
    normaliser: Literal["visible", "infinite"] = "visible"
    norm: LayerNorm | None = None
    kind: ClassVar[str] = "attention"
    title: ClassVar[str] = "attention"   # in size breakdowns ("3 attention"); listed even when 0
    listed_when_absent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.normalization not in ("softmax", "hardmax"):
            raise NetworkError(f"unknown normalization {self.normalization!r}; use 'softmax' or 'hardmax'")
        if not self.heads:
            raise NetworkError(f"attention layer {self.name!r} has no heads")
        if not isinstance(self.causal, bool | np.bool_):   # "no" is truthy: it ran as causal (an audit, 2026-11-29)
            raise NetworkError(f"attention layer {self.name!r}: causal must be True or False, got {self.causal!r}")
        object.__setattr__(self, "causal", bool(self.causal))
        lam = self.inverse_temperature
        try:
            finite = isinstance(lam, numbers.Real) and not isinstance(lam, bool) and math.isfinite(float(lam))
        except OverflowError:   # an exact number beyond float64 (10**400): no evaluator's float holds it
            finite = False
        if not finite:
            raise NetworkError(f"attention layer {self.name!r}: inverse_temperature must be a finite number, got "
                               f"{self.inverse_temperature!r} (hardmax is normalization='hardmax')")
        object.__setattr__(self, "heads", tuple(self.heads))
        dims = {h.d for h in self.heads}
        if len(dims) != 1:
            raise NetworkError(f"attention layer {self.name!r}: heads disagree on the residual width: {sorted(dims)}")
        _check_norm(self.norm, self.d, f"attention layer {self.name!r}")
        _common_length([h.position_bias for h in self.heads], f"attention layer {self.name!r}")
        if self.normaliser == "infinite":
            self._check_infinite()
        elif self.normaliser != "visible":
            raise NetworkError(f"attention layer {self.name!r}: unknown normaliser {self.normaliser!r}; use 'visible' or 'infinite'")

    def _check_infinite(self) -> None:
        where = f"attention layer {self.name!r}"
        if not self.causal or self.normalization != "softmax":
            raise NetworkError(f"{where}: the infinite normaliser needs a causal softmax layer; set causal=True, "
                               "normalization='softmax', or use normaliser='visible'")
        for k, h in enumerate(self.heads):
            if not h.is_dp_free:
                raise NetworkError(f"{where}, head {k}: the infinite normaliser needs DP-free heads (W_Q, W_K with 0 "
                                   "columns); use Head.dp_free or normaliser='visible'")
            if h.position_bias is None or h.position_bias.infinite_mass() is None:
                what = "no position bias" if h.position_bias is None else h.position_bias.describe()
                raise NetworkError(f"{where}, head {k}: {what} has no finite infinite mass; use lin (beta > 0), "
                                   "log (beta > 1) or a relative bias with default -inf, or normaliser='visible'")

    @property
    def d(self) -> int:
        return self.heads[0].d

    @property
    def length(self) -> int | None:
        return _common_length([h.position_bias for h in self.heads], f"attention layer {self.name!r}")

    @property
    def uses_position(self) -> bool:
        return self.causal or any(h.position_bias is not None or h.rotary for h in self.heads)

    @property
    def head_count(self) -> int:
        return len(self.heads)

    def parameter_count(self) -> int:
        return sum(h.parameter_count() for h in self.heads) + (0 if self.norm is None else self.norm.parameter_count())

    def arrays(self) -> list[np.ndarray]:
        return [a for h in self.heads for a in h.arrays()]

    def describe(self, labels: Sequence[str]) -> str:
        norm = "hardmax" if self.normalization == "hardmax" else f"softmax(lam={fmt(self.inverse_temperature)})"
        if self.normaliser == "infinite":
            norm += " over an infinite past"
        flags = (" causal" if self.causal else "") + (" pre-LN" if self.norm is not None else "")
        return f"attn{flags} {norm} {self.name}: " + " | ".join(h.describe(labels) for h in self.heads)

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"type": self.kind, "name": self.name, "normalization": self.normalization,
                "inverse_temperature": number_to_json(self.inverse_temperature), "causal": self.causal,
                "normaliser": self.normaliser, "norm": _norm_to_dict(self.norm, arrays),
                "heads": [h.to_dict(arrays.scope(f"heads.{k}.")) for k, h in enumerate(self.heads)]}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "AttentionLayer":
        heads = tuple(Head.from_dict(h, arrays.scope(f"heads.{k}.")) for k, h in enumerate(d["heads"]))
        # as written: bool() read "no" as causal, and the constructor refuses what is not True or False (a review)
        return cls(heads, d["normalization"], number_from_json(d["inverse_temperature"]), d["causal"], d["name"],
                   d.get("normaliser", "visible"), _norm_from_dict(d.get("norm"), arrays))


# --------------------------------------------------------------------------------------------
# Feed-forward
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedForwardLayer:
    """Residual token-wise feed-forward layer: ``X + act(norm(X) @ W_1 + b_1) @ W_2 + b_2``.

    Shapes: ``W_1: (d, r)``, ``b_1: (r,)``, ``W_2: (r, d)``, ``b_2: (d,)``.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    W_1: np.ndarray
    b_1: np.ndarray
    W_2: np.ndarray
    b_2: np.ndarray | None = None
    activation: Activation = field(default_factory=ReLU)
    name: str = ""
    norm: LayerNorm | None = None
    kind: ClassVar[str] = "feedforward"
    title: ClassVar[str] = "feed-forward"
    listed_when_absent: ClassVar[bool] = True
    length: ClassVar[None] = None
    uses_position: ClassVar[bool] = False

    def __post_init__(self) -> None:
        W_1 = as_weight(self.W_1, name="W_1")
        if W_1.ndim != 2:
            raise NetworkError(f"feed-forward {self.name!r}: W_1 must be (d, r), got {W_1.shape}")
        d, r = W_1.shape
        b_1 = as_weight(self.b_1, (r,), "b_1")
        W_2 = as_weight(self.W_2, (r, d), "W_2")
        b_2 = as_weight(np.zeros(d) if self.b_2 is None else self.b_2, (d,), "b_2")
        if not isinstance(self.activation, (ReLU, GELU, PiecewiseLinear)):
            raise NetworkError(f"feed-forward {self.name!r}: activation must be ReLU, GELU or PiecewiseLinear")
        _check_norm(self.norm, d, f"feed-forward {self.name!r}")
        for attr, val in (("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
            object.__setattr__(self, attr, val)

    @property
    def d(self) -> int:
        return int(self.W_1.shape[0])

    @property
    def width(self) -> int:
        return int(self.W_1.shape[1])

    @property
    def head_count(self) -> int:
        return 0

    def parameter_count(self) -> int:
        n = sum(w.size for w in (self.W_1, self.b_1, self.W_2, self.b_2))
        return int(n + (0 if self.norm is None else self.norm.parameter_count()))

    def arrays(self) -> list[np.ndarray]:
        return [self.W_1, self.b_1, self.W_2, self.b_2]

    def describe(self, labels: Sequence[str]) -> str:
        reads = support(_nonzero_rows(self.W_1), labels)
        writes = support(_nonzero_cols(self.W_2, self.b_2[None]), labels)
        pre = " pre-LN" if self.norm is not None else ""
        return f"ffn{pre} r={self.width} {self.activation.describe()} {self.name}: reads {reads} writes {writes}"

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"type": self.kind, "name": self.name, "activation": self.activation.to_dict(),
                "norm": _norm_to_dict(self.norm, arrays),
                **{a: arrays.put(a, getattr(self, a)) for a in ("W_1", "b_1", "W_2", "b_2")}}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "FeedForwardLayer":
        return cls(*(arrays.get(d[a]) for a in ("W_1", "b_1", "W_2", "b_2")), activation_from_dict(d["activation"]),
                   name=d["name"], norm=_norm_from_dict(d.get("norm"), arrays))


# --------------------------------------------------------------------------------------------
# Input-independent mixing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MixingHead:
    """A fixed (input-independent) mix of values along the sequence, then ``W_O``.

    With values ``V = norm(X) @ W_V`` (``(n, m_v)``) the head writes ``M @ W_O`` where ``M`` is

    * ``kernel`` ``(K, m_v)``, a depth-wise convolution: ``M[i, c] = sum_u kernel[u, c] *
      V[i - left + u, c]``, values outside ``0 .. n-1`` being zero (``left = K - 1``: causal;
      ``left = (K - 1) // 2``: centred); or
    * ``matrix`` ``(L, L)``: ``M = matrix[:n, :n] @ V`` (the bilinear projection of Yun et al.
      §5, ``W_O X W_P`` with tokens as columns).

    Exactly one of ``kernel`` and ``matrix`` is given. Shapes: ``W_V: (d, m_v)``,
    ``W_O: (m_v, d)``.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    W_V: np.ndarray
    W_O: np.ndarray
    kernel: np.ndarray | None = None
    left: int = 0
    matrix: np.ndarray | None = None
    name: str = ""

    def __post_init__(self) -> None:
        W_V, W_O = as_weight(self.W_V, name="W_V"), as_weight(self.W_O, name="W_O")
        if W_V.ndim != 2 or W_O.ndim != 2 or W_O.shape != (W_V.shape[1], W_V.shape[0]):
            raise NetworkError(f"mixing head {self.name!r}: W_V {W_V.shape} must be (d, m_v) and W_O {W_O.shape} (m_v, d)")
        if (self.kernel is None) == (self.matrix is None):
            raise NetworkError(f"mixing head {self.name!r}: give exactly one of kernel (K, m_v) and matrix (L, L)")
        if self.kernel is not None:
            kernel = as_weight(self.kernel, name="kernel")
            if kernel.ndim != 2 or kernel.shape[1] != W_V.shape[1] or kernel.shape[0] < 1:
                raise NetworkError(f"mixing head {self.name!r}: kernel {kernel.shape} must be (K, m_v) with K >= 1, m_v={W_V.shape[1]}")
            object.__setattr__(self, "kernel", kernel)
            # an offset in tokens: 1.7 was truncated to 1 without a word (an audit, 2026-11-29)
            if isinstance(self.left, bool) or not isinstance(self.left, int | np.integer):
                raise NetworkError(f"mixing head {self.name!r}: left must be a whole number of tokens, got {self.left!r}")
            object.__setattr__(self, "left", int(self.left))
        else:
            matrix = as_weight(self.matrix, name="mixing matrix")
            if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
                raise NetworkError(f"mixing head {self.name!r}: matrix must be square (L, L), got {matrix.shape}")
            object.__setattr__(self, "matrix", matrix)
        object.__setattr__(self, "W_V", W_V)
        object.__setattr__(self, "W_O", W_O)

    @property
    def d(self) -> int:
        return int(self.W_V.shape[0])

    @property
    def length(self) -> int | None:
        return None if self.matrix is None else int(self.matrix.shape[0])

    def arrays(self) -> list[np.ndarray]:
        return [self.W_V, self.W_O, self.kernel if self.matrix is None else self.matrix]

    def parameter_count(self) -> int:
        return int(sum(a.size for a in self.arrays()))

    def describe(self, labels: Sequence[str]) -> str:
        how = (f"matrix {self.length}x{self.length}" if self.matrix is not None
               else f"conv K={self.kernel.shape[0]} left={self.left}")
        return f"{how} reads {support(_nonzero_rows(self.W_V), labels)} writes {support(_nonzero_cols(self.W_O), labels)}"

    def to_dict(self, arrays: ArrayStore) -> dict:
        out = {"name": self.name, "W_V": arrays.put("W_V", self.W_V), "W_O": arrays.put("W_O", self.W_O)}
        if self.matrix is not None:
            return out | {"matrix": arrays.put("matrix", self.matrix)}
        return out | {"kernel": arrays.put("kernel", self.kernel), "left": self.left}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "MixingHead":
        if "matrix" in d:
            return cls(arrays.get(d["W_V"]), arrays.get(d["W_O"]), matrix=arrays.get(d["matrix"]), name=d["name"])
        return cls(arrays.get(d["W_V"]), arrays.get(d["W_O"]), kernel=arrays.get(d["kernel"]), left=d["left"],
                   name=d["name"])


@dataclass(frozen=True)
class MixingLayer:
    """Residual input-independent token mixing: ``X + sum_h mixing_head_h(norm(X))``; no normalisation."""

    heads: tuple[MixingHead, ...]
    name: str = ""
    norm: LayerNorm | None = None
    kind: ClassVar[str] = "mixing"
    title: ClassVar[str] = "mixing"
    listed_when_absent: ClassVar[bool] = False
    uses_position: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not self.heads:
            raise NetworkError(f"mixing layer {self.name!r} has no heads")
        object.__setattr__(self, "heads", tuple(self.heads))
        if not all(isinstance(h, MixingHead) for h in self.heads):
            raise NetworkError(f"mixing layer {self.name!r}: heads must be MixingHead")
        if len({h.d for h in self.heads}) != 1:
            raise NetworkError(f"mixing layer {self.name!r}: heads disagree on the residual width")
        _check_norm(self.norm, self.d, f"mixing layer {self.name!r}")
        _common_length(self.heads, f"mixing layer {self.name!r}")

    @property
    def d(self) -> int:
        return self.heads[0].d

    @property
    def length(self) -> int | None:
        return _common_length(self.heads, f"mixing layer {self.name!r}")

    @property
    def head_count(self) -> int:
        return len(self.heads)

    def parameter_count(self) -> int:
        return sum(h.parameter_count() for h in self.heads) + (0 if self.norm is None else self.norm.parameter_count())

    def arrays(self) -> list[np.ndarray]:
        return [a for h in self.heads for a in h.arrays()]

    def describe(self, labels: Sequence[str]) -> str:
        pre = " pre-LN" if self.norm is not None else ""
        return f"mix{pre} {self.name}: " + " | ".join(h.describe(labels) for h in self.heads)

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"type": self.kind, "name": self.name, "norm": _norm_to_dict(self.norm, arrays),
                "heads": [h.to_dict(arrays.scope(f"heads.{k}.")) for k, h in enumerate(self.heads)]}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "MixingLayer":
        heads = tuple(MixingHead.from_dict(h, arrays.scope(f"heads.{k}.")) for k, h in enumerate(d["heads"]))
        return cls(heads, d["name"], _norm_from_dict(d.get("norm"), arrays))


Layer = AttentionLayer | FeedForwardLayer | MixingLayer
LAYERS = {cls.kind: cls for cls in (AttentionLayer, FeedForwardLayer, MixingLayer)}   # JSON type -> class


def head_count(layers: Sequence[Layer]) -> int:
    """The heads of ``layers``: every attention head and every mixing head (a feed-forward layer
    has none). The one count that sizes, summaries and pages print."""
    return sum(layer.head_count for layer in layers)


def rule_for(table: dict, layer, evaluator: str):
    """``table[layer.kind]``: an evaluator's rule for ``layer``; :class:`NetworkError` naming the
    evaluator and the kind when it has none (a new layer kind fails loudly, never silently)."""
    try:
        return table[layer.kind]
    except (KeyError, AttributeError):
        kind = getattr(layer, "kind", type(layer).__name__)
        raise NetworkError(f"the {evaluator} has no rule for layer kind {kind!r} (it knows {', '.join(table)}); "
                           "add one to its table") from None


def layer_from_dict(d: dict, arrays: ArrayStore) -> Layer:
    """The layer a ``to_dict`` result describes; :class:`NetworkError` if its type is unknown."""
    kind = d.get("type") if isinstance(d, dict) else None
    if kind not in LAYERS:
        raise NetworkError(f"unknown layer type {kind!r}; use one of {', '.join(LAYERS)}")
    return LAYERS[kind].from_dict(d, arrays)
