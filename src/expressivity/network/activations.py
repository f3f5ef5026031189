"""Feed-forward activations. Each describes and serialises itself (``describe``, ``to_dict``,
``from_dict``); the evaluators define what it computes."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

import numpy as np

from expressivity.errors import EvaluationError, NetworkError
from expressivity.network.numbers import Number, exact_number, fmt
from expressivity.network.serial import number_from_json, number_to_json


@dataclass(frozen=True)
class ReLU:
    """``max(t, 0)`` element-wise."""

    kind: Literal["relu"] = "relu"

    def describe(self) -> str:
        return "ReLU"

    def to_dict(self) -> dict:
        return {"kind": self.kind}

    @classmethod
    def from_dict(cls, d: dict) -> "ReLU":
        return cls()


@dataclass(frozen=True)
class GELU:
    """``t * Phi(t) = t (1 + erf(t / sqrt 2)) / 2`` element-wise (the exact GELU, not the tanh form)."""

    kind: Literal["gelu"] = "gelu"

    def describe(self) -> str:
        return "GELU"

    def to_dict(self) -> dict:
        return {"kind": self.kind}

    @classmethod
    def from_dict(cls, d: dict) -> "GELU":
        return cls()


def _piece_number(v, attr: str):
    """``v`` as a piecewise activation stores it: ``int``/``Fraction`` kept, other exact numbers (numpy integers,
    ``Decimal``, ``sympy.Rational``) read exactly, floats (numpy's, sympy's ``Float``, ``oo``) as Python floats;
    :class:`NetworkError` for NaN, for infinite slopes and intercepts, and for what is no real number. numpy
    scalars once passed and failed later (an ``np.float32`` breakpoint in exact evaluation, an ``np.int64`` slope
    when saved), a ``Decimal`` was refused as NaN (a review, 2026-11-29)."""
    what = "real numbers, not NaN" if attr == "breakpoints" else "finite real numbers"
    refusal = NetworkError(f"piecewise-linear activation: {attr} must be {what}, got {str(v)[:30]!r}")
    if isinstance(v, bool | str | bytes) or not (isinstance(v, numbers.Real | Decimal) or hasattr(v, "__float__")):
        raise refusal   # sympy's oo is no numbers.Real, but a float
    try:
        if isinstance(v, float) or isinstance(v, np.floating) and v.dtype.itemsize <= 8:
            out = float(v)
        elif isinstance(v, int | Fraction | np.integer | numbers.Rational | Decimal | np.floating):
            out = exact_number(v)   # a long double too: wider than float64, read whole
        else:   # sympy's Float and oo: real numbers held as floats
            out = float(v)
    except (EvaluationError, OverflowError, TypeError, ValueError):
        raise refusal from None
    if isinstance(out, float) and (out != out or attr != "breakpoints" and math.isinf(out)):
        raise refusal
    return out


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
        for attr in ("breakpoints", "slopes", "intercepts"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        nb = len(self.breakpoints)
        if nb > 2:
            raise NetworkError(f"piecewise-linear activation has {nb + 1} pieces; at most 3 allowed")
        if len(self.slopes) != nb + 1 or len(self.intercepts) != nb + 1:
            raise NetworkError("piecewise-linear activation needs len(slopes) == len(intercepts) == len(breakpoints) + 1")
        if nb == 2 and not self.breakpoints[0] < self.breakpoints[1]:
            raise NetworkError(f"breakpoints must increase, got {self.breakpoints}")
        # NaN made every evaluator skip a breakpoint (an audit, 2026-11-29); a breakpoint may be infinite (open-ended)
        for attr in ("breakpoints", "slopes", "intercepts"):
            object.__setattr__(self, attr, tuple(_piece_number(v, attr) for v in getattr(self, attr)))
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
            lo_s = "(-inf" if lo is None else f"[{fmt(lo)}"
            hi_s = "inf)" if hi is None else f"{fmt(hi)})"
            expr = fmt(b) if a == 0 else (f"{fmt(a)}t" + (f"{'+' if b >= 0 else '-'}{fmt(abs(b))}" if b != 0 else ""))
            parts.append(f"{expr} on {lo_s},{hi_s}")
        return "PL{" + "; ".join(parts) + "}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, **{attr: [number_to_json(v) for v in getattr(self, attr)]
                                      for attr in ("breakpoints", "slopes", "intercepts")}}

    @classmethod
    def from_dict(cls, d: dict) -> "PiecewiseLinear":
        return cls(*(tuple(number_from_json(v) for v in d[attr]) for attr in ("breakpoints", "slopes", "intercepts")))


Activation = ReLU | GELU | PiecewiseLinear
ACTIVATIONS = {cls.kind: cls for cls in (ReLU, GELU, PiecewiseLinear)}   # kind -> type, for from_dict


def activation_from_dict(d: dict) -> Activation:
    """The activation a ``to_dict`` result describes; :class:`NetworkError` if its kind is unknown."""
    kind = d.get("kind") if isinstance(d, dict) else None
    if kind not in ACTIVATIONS:
        raise NetworkError(f"unknown activation {kind!r}; use one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[kind].from_dict(d)
