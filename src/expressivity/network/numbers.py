"""Weight arrays and scalars: exact where a construction is exact, float64 otherwise.

A construction that needs exact arithmetic stores ``dtype=object`` arrays of Python ``int`` /
``fractions.Fraction``; float constructions store ``float64``. The exact evaluator reads float
entries as the exact rationals they are.
"""

from __future__ import annotations

from fractions import Fraction
from numbers import Rational

import numpy as np

from expressivity.errors import EvaluationError, NetworkError

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


def to_exact(values) -> np.ndarray:
    """Object array of ints/Fractions equal to ``values`` (floats converted without rounding)."""
    arr = np.asarray(values, dtype=object)
    flat = [exact_number(v) for v in arr.flat]
    out = np.empty(arr.shape, dtype=object)
    out.flat[:] = flat if flat else []
    return out


def exact_number(v) -> int | Fraction:
    """``v`` as the exact rational it denotes: ``int`` and ``Fraction`` kept, integral floats as ``int``,
    other floats as ``Fraction``; :class:`EvaluationError` for infinities and NaN."""
    if isinstance(v, (int, Fraction)) and not isinstance(v, bool):
        return v
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, bool | np.bool_):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise EvaluationError(f"exact evaluation needs numbers, got {str(v)[:40]!r} ({type(v).__name__})") from None
    if not np.isfinite(f):
        raise EvaluationError(f"exact evaluation needs finite numbers, got {f}")
    return Fraction(f) if not f.is_integer() else int(f)


def fmt(x) -> str:
    """A short human form of a scalar: ``1/3`` for fractions, ``2`` for integral floats."""
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)
