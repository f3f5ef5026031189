"""Additive attention position biases ``B[i, j]`` (query ``i``, key ``j``, tokens as rows).

Every bias type answers the same questions, so the summary, the exporter and the loaders never
ask which type they hold:

* ``kind``: its name in JSON (``relative``, ``matrix``, ``lin``, ``log``);
* ``matrix(n)``: the ``(n, n)`` bias for an input of ``n`` tokens;
* ``length``: the number of positions it is built for (``None``: any length);
* ``infinite_mass()``: ``Z_inf = sum_{s >= 0} exp(B(s))`` over an infinite past at distances
  ``s = i - j``, or ``None`` where the sum diverges or ``B`` is not a function of ``i - j``;
* ``describe()``, ``parameter_count()``, ``to_dict(arrays)`` / ``from_dict(d, arrays)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.equality import equal_by_value
from expressivity.network.numbers import Number, as_weight, fmt, to_exact
from expressivity.network.serial import ArrayStore, number_from_json, number_to_json
from expressivity.network.zeta import zeta


def _offsets(n: int) -> np.ndarray:
    """``(n, n)`` integer offsets ``i - j``."""
    pos = np.arange(n)
    return pos[:, None] - pos[None, :]


@dataclass(frozen=True)
class RelativeBias:
    """A bias that depends on the offset ``o = i - j`` only: ``B[i, j] = table[o]``.

    Offsets missing from the table take ``default`` when ``o >= 0`` (keys at or before the
    query) and ``default_negative`` when ``o < 0`` (keys after it; ``None``: ``default``), so a
    clamped table (T5 buckets, the trained ``free`` table) is exact at every length. With
    ``default = -inf`` the bias has finite support and a finite infinite mass.
    """

    table: tuple[tuple[int, Number], ...]
    default: Number = 0
    default_negative: Number | None = None
    kind: Literal["relative"] = "relative"

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", tuple((int(o), v) for o, v in self.table))
        if len({o for o, _ in self.table}) != len(self.table):
            raise NetworkError("relative position bias lists an offset twice; give each offset once")

    @staticmethod
    def from_function(fn, max_offset: int, default: Number = 0, default_negative: Number | None = None) -> "RelativeBias":
        """Tabulate ``fn(offset)`` for offsets in ``[-max_offset, max_offset]``."""
        return RelativeBias(tuple((o, fn(o)) for o in range(-max_offset, max_offset + 1)), default, default_negative)

    @property
    def length(self) -> None:
        return None

    def value(self, offset: int) -> Number:
        """``B`` at offset ``i - j``."""
        lookup = dict(self.table)
        if offset in lookup:
            return lookup[offset]
        return self.default if offset >= 0 or self.default_negative is None else self.default_negative

    def matrix(self, n: int) -> np.ndarray:
        """The ``(n, n)`` bias matrix, object dtype if any entry is exact."""
        by_offset = as_weight([self.value(o) for o in range(-(n - 1), n)], allow_inf=True)
        return by_offset[_offsets(n) + n - 1]

    def infinite_mass(self) -> float | None:
        if float(self.default) != -math.inf:
            return None
        mass = math.fsum(math.exp(float(v)) for o, v in self.table if o >= 0)
        return mass if 0 < mass < math.inf else None

    def describe(self) -> str:
        neg = "" if self.default_negative is None else f", right {fmt(self.default_negative)}"
        return f"relative({len(self.table)} offsets, default {fmt(self.default)}{neg})"

    def parameter_count(self) -> int:
        return len(self.table) + 1 + (self.default_negative is not None)

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"kind": self.kind, "table": [[o, number_to_json(v)] for o, v in self.table],
                "default": number_to_json(self.default),
                "default_negative": None if self.default_negative is None else number_to_json(self.default_negative)}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "RelativeBias":
        neg = d.get("default_negative")
        return cls(tuple((int(o), number_from_json(v)) for o, v in d["table"]), number_from_json(d["default"]),
                   None if neg is None else number_from_json(neg))


@dataclass(frozen=True)
class MatrixBias:
    """A bias given as a full ``(L, L)`` matrix over (query, key) positions.

    An input of ``n <= L`` tokens uses the leading ``[:n, :n]`` block; when the network has no
    ``max_length``, ``L`` is its one input length.
    """

    __eq__ = equal_by_value   # arrays compared whole (see expressivity.network.equality)

    values: np.ndarray
    kind: Literal["matrix"] = "matrix"

    def __post_init__(self) -> None:
        v = as_weight(self.values, name="position bias", allow_inf=True)
        if v.ndim != 2 or v.shape[0] != v.shape[1]:
            raise NetworkError(f"matrix position bias must be square, got shape {v.shape}")
        object.__setattr__(self, "values", v)

    @property
    def length(self) -> int:
        return int(self.values.shape[0])

    def matrix(self, n: int) -> np.ndarray:
        if n > self.length:
            raise NetworkError(f"this position bias is built for length {self.length}, got input length {n}; rebuild the network for length {n}")
        return self.values[:n, :n]

    def infinite_mass(self) -> None:
        return None   # not a function of i - j: there is no infinite past to sum over

    def describe(self) -> str:
        return f"matrix({self.length}x{self.length})"

    def parameter_count(self) -> int:
        return int(self.values.size)

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"kind": self.kind, "values": arrays.put("position_bias", self.values)}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "MatrixBias":
        return cls(arrays.get(d["values"]))


@dataclass(frozen=True)
class SlopeBias:
    """``B[i, j] = -beta * s`` (``lin``, ALiBi) or ``-beta * log(1 + s)`` (``log``), ``s = |i - j|``.

    Infinite mass (Wang & E 2024 §7): ``1 / (1 - e^-beta)`` for ``lin`` (``beta > 0``),
    ``zeta(beta)`` for ``log`` (``beta > 1``); divergent otherwise.
    """

    kind: Literal["lin", "log"]
    beta: Number

    def __post_init__(self) -> None:
        if self.kind not in ("lin", "log"):
            raise NetworkError(f"slope bias kind must be 'lin' or 'log', got {self.kind!r}")
        if not math.isfinite(float(self.beta)):
            raise NetworkError(f"slope bias needs a finite beta, got {self.beta}")

    @property
    def length(self) -> None:
        return None

    def matrix(self, n: int) -> np.ndarray:
        s = np.abs(_offsets(n))
        if self.kind == "lin":
            if isinstance(self.beta, float):
                return -self.beta * s.astype(np.float64)
            return as_weight(-self.beta * s.astype(object), allow_inf=True)   # an exact beta stays exact
        return -float(self.beta) * np.log1p(s.astype(np.float64))

    def exact_matrix(self, n: int) -> np.ndarray:
        """The lin bias's entries ``-beta s`` in exact arithmetic, for the exact passes: a float ``beta`` is exactly
        a rational, and :meth:`matrix` rounds its products (``fl(0.1 * 3)`` is not ``3 fl(0.1)``), which read as
        exact moved scores across ties. The log bias has no exact value (the exact passes refuse it)."""
        if self.kind != "lin":
            if float(self.beta) == 0:   # -0 log(1 + s): zero everywhere, exactly
                return np.zeros((n, n), dtype=np.int64).astype(object)
            raise NetworkError("a log-type position bias has no exact value")
        beta = to_exact(np.asarray([self.beta], dtype=object))[0]
        return -beta * np.abs(_offsets(n)).astype(object)

    def infinite_mass(self) -> float | None:
        beta = float(self.beta)
        if self.kind == "lin":
            return 1.0 / -math.expm1(-beta) if beta > 0 else None
        return float(zeta(beta)) if beta > 1 else None

    def describe(self) -> str:
        return f"{self.kind}(beta={fmt(self.beta)})"

    def parameter_count(self) -> int:
        return 1

    def to_dict(self, arrays: ArrayStore) -> dict:
        return {"kind": self.kind, "beta": number_to_json(self.beta)}

    @classmethod
    def from_dict(cls, d: dict, arrays: ArrayStore) -> "SlopeBias":
        return cls(d["kind"], number_from_json(d["beta"]))


PositionBias = RelativeBias | MatrixBias | SlopeBias
BIASES = {"relative": RelativeBias, "matrix": MatrixBias, "lin": SlopeBias, "log": SlopeBias}   # JSON kind -> type


def bias_from_dict(d: dict, arrays: ArrayStore) -> PositionBias:
    """The bias a ``to_dict`` result describes; :class:`NetworkError` if its kind is unknown."""
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind not in BIASES:
        raise NetworkError(f"unknown position bias {kind!r}; use one of {', '.join(BIASES)}")
    return BIASES[kind].from_dict(d, arrays)
