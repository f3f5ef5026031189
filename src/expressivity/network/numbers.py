"""Weight arrays and scalars: exact where a construction is exact, float64 otherwise.

A construction that needs exact arithmetic stores ``dtype=object`` arrays of Python ``int`` /
``fractions.Fraction``; float constructions store ``float64``. The exact evaluator reads float
entries as the exact rationals they are.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from numbers import Rational

import numpy as np

from expressivity.errors import EvaluationError, NetworkError

Number = int | float | Fraction


def as_weight(values, shape: tuple[int, ...] | None = None, name: str = "weight", allow_inf: bool = False) -> np.ndarray:
    """Return ``values`` as a weight array: ``object`` if any entry is a ``Fraction`` or a Python
    int too large for float64 to hold exactly, else ``float64``; :class:`NetworkError` for NaN or
    infinite entries (``allow_inf``: a position bias, where ``-inf`` masks a key, may hold them).

    Keeps exact constructions exact while letting float ones stay fast. The array is a read-only
    copy: a network's weights are those it was built (and verified, and digested) with, so an edit
    in place (``net.layers[0].heads[0].W_O[...] *= 2`` kept the network's name, claim and domain)
    or a later change to the caller's array cannot change them; build a new layer instead.
    """
    if values is None:
        raise NetworkError(f"{name} must hold numbers, got None")
    try:
        if np.iscomplexobj(values):
            raise NetworkError(f"{name} has complex entries; weights are real numbers")
        arr = np.array(values, dtype=object if _needs_object(values) else np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise NetworkError(f"{name} must hold numbers ({' '.join(str(exc).split())[:80]})") from None
    if shape is not None and arr.shape != tuple(shape):
        raise NetworkError(f"{name} has shape {arr.shape}, expected {tuple(shape)}")
    if arr.dtype == object:   # exact entries: each a finite rational (a float among them read exactly)
        if any(isinstance(v, np.integer) for v in arr.flat):   # Python ints: numpy's wrap at 2^63 silently
            arr.flat[:] = [int(v) if isinstance(v, np.integer) else v for v in arr.flat]
        for v in arr.flat:
            if allow_inf and isinstance(v, float) and v == -math.inf:
                continue
            try:
                exact_number(v)
            except EvaluationError:
                raise NetworkError(f"{name} holds {str(v)[:30]!r} ({type(v).__name__}); weights are finite real "
                                   "numbers" + (" (a bias may be -inf)" if allow_inf else "")) from None
    else:
        bad = (np.isnan(arr) | (arr == np.inf)) if allow_inf else ~np.isfinite(arr)
        if bad.any():
            raise NetworkError(f"{name} has {np.count_nonzero(bad)} {'NaN or +inf' if allow_inf else 'non-finite (NaN or inf)'} "
                               f"entries; {'a bias is a finite number or -inf' if allow_inf else 'weights are finite numbers'}")
    arr.flags.writeable = False
    return arr


def _needs_object(values) -> bool:
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "iu":   # numpy's default for integer literals: int64 past 2^53 rounded in float64
            return bool(values.size) and bool(((values > 2**53) | (values < -2**53)).any())
        if values.dtype != object:
            return False
        return any(_exact_scalar(v) for v in values.flat)
    arr = np.asarray(values, dtype=object)
    return any(_exact_scalar(v) for v in arr.flat)


def _exact_scalar(v) -> bool:
    if isinstance(v, Fraction):
        return v.denominator != 1 or abs(v.numerator) > 2**53
    if isinstance(v, int | np.integer) and not isinstance(v, bool):
        return abs(int(v)) > 2**53
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
    other floats as ``Fraction``; any other rational (``sympy.Rational``), a ``Decimal`` or a numeric
    string (``"0.1"``, ``"1/3"``) as the number it writes, not as the float nearest it.
    :class:`EvaluationError` for infinities, NaN, and numbers whose exact value cannot be read
    (``sympy.Float``: pass a ``Fraction``)."""
    if isinstance(v, (int, Fraction)) and not isinstance(v, bool):
        return v
    if isinstance(v, bool | np.bool_ | np.integer):
        return int(v)
    if isinstance(v, np.floating) and v.dtype.itemsize > 8:   # a long double is wider than float64: read it whole
        if not np.isfinite(v):
            raise EvaluationError(f"exact evaluation needs finite numbers, got {v}")
        return _integral(Fraction(*v.as_integer_ratio()))
    if isinstance(v, float | np.floating):
        f = float(v)   # exact: a float64 (or narrower) holds a binary rational
    elif isinstance(v, Rational):
        return _integral(Fraction(int(v.numerator), int(v.denominator)))
    elif isinstance(v, Decimal | str):
        try:   # a Decimal through its text too: the digit limit holds for it (Decimal("1e100000000"))
            return _integral(exact_from_text(str(v)))
        except TooManyDigits as exc:
            raise EvaluationError(f"exact evaluation: {exc}") from None
        except (ValueError, ZeroDivisionError):
            kind = "finite numbers" if _is_float_text(v) else "numbers"
            raise EvaluationError(f"exact evaluation needs {kind}, got {str(v)[:40]!r} ({type(v).__name__})") from None
    elif isinstance(v, np.ndarray) and v.shape == () and v.dtype != object:
        return exact_number(v.item())
    else:
        raise EvaluationError(f"exact evaluation needs numbers it can read exactly (int, Fraction, float, Decimal, "
                              f"a numeric string), got {str(v)[:40]!r} ({type(v).__name__}); pass a Fraction")
    if not np.isfinite(f):
        raise EvaluationError(f"exact evaluation needs finite numbers, got {f}")
    return Fraction(f) if not f.is_integer() else int(f)


MAX_EXACT_DIGITS = 4000   # digits (and decimal exponent) of a typed exact number: Python will not print an int past 4,300
MAX_STORED_DIGITS = 30_000   # the same for a number read from a network file (below the 40,000 digits the CLI prints)


# linear in the text's length: "\d+\.?\d*" backtracked quadratically on 40,000 digits then a letter (20 s; a review)
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+/\d+|(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)", re.ASCII)


class TooManyDigits(ValueError):
    """A typed number past :data:`MAX_EXACT_DIGITS` (its message says so and names the limit)."""


def exact_from_text(text: str, max_digits: int = MAX_EXACT_DIGITS) -> Fraction:
    """The number ``text`` writes (``"0.1"``, ``"1/3"``, ``"-2e-5"``), exactly; :class:`ValueError` for
    text that is no finite number, and :class:`TooManyDigits` for one with more than
    :data:`MAX_EXACT_DIGITS` digits or a decimal exponent beyond it (``1e4400`` made tracebacks where
    its 4,401 digits were printed, and ``1e100000000`` took minutes: a fuzz pass, 2026-11-28); a stored
    network's numbers are read with ``max_digits`` :data:`MAX_STORED_DIGITS`. Only ASCII
    digits, a sign, one ``.``, one ``/`` and an exponent are read: :class:`fractions.Fraction` alone would take
    ``"1_000"`` as 1000 and Arabic-Indic digits as decimal ones, which nobody means typing a network's input."""
    t = text.strip()
    if not _PLAIN_NUMBER.fullmatch(t):
        raise ValueError(f"{t[:40]!r} is not a plain number (ASCII digits, e.g. 2, -0.5, 1e-3 or 1/3)")
    mantissa, _, exponent = t.lower().partition("e")
    digits = sum(ch.isdigit() for ch in mantissa)
    if digits > max_digits or (exponent and (len(exponent.lstrip("+-0")) > 6 or abs(int(exponent)) > max_digits)):
        raise TooManyDigits(f"{t[:24]!r}{'...' if len(t) > 24 else ''} has more than {max_digits} digits or an "
                            f"exponent beyond 1e+-{max_digits}: exact numbers are limited to that")
    return Fraction(t)


def _is_float_text(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _integral(q: Fraction) -> int | Fraction:
    return q.numerator if q.denominator == 1 else q


def fmt(x) -> str:
    """A short human form of a scalar: ``1/3`` for fractions, ``2`` for integral floats."""
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def round_down(x: float, digits: int) -> float:
    """Positive finite ``x`` cut to ``digits`` significant digits, never above ``x``: a limit printed with
    ``.{digits}g`` may round up past itself (and the value shown is then refused when typed back)."""
    step = 10.0 ** (math.floor(math.log10(x)) - (digits - 1))
    return math.floor(x / step) * step
