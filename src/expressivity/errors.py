"""Exceptions that carry a user-facing one-line message.

The CLI turns every :class:`ExpressivityError` into ``error: <message>`` on stderr and exit
code 2, with no traceback. Messages name the problem and, where there is one, the fix.
"""


import re

# A message quotes the values it refuses; a huge one (1e999 written out, a 5000-character
# argument) would make the one line thousands of characters long. Longer runs of digits and longer
# words are shown shortened, with their size (shorten_values).
MAX_DIGITS = 30
MAX_WORD = 200
_DIGITS = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))
_WORD = re.compile(r"\S{%d,}" % (MAX_WORD + 1))


def shorten_values(message: str) -> str:
    """``message`` with every run of more than :data:`MAX_DIGITS` digits shown as its first and last
    digits and their count (``1000000000…000 (1,001 digits)``) and every word longer than
    :data:`MAX_WORD` characters as its start and its length: one readable line whatever was typed."""
    message = _DIGITS.sub(lambda m: f"{m.group()[:12]}…{m.group()[-3:]} ({len(m.group()):,} digits)", message)
    return _WORD.sub(lambda m: f"{m.group()[:60]}… ({len(m.group()):,} characters)", message)


class ExpressivityError(ValueError):
    """Base class for errors caused by input the user can correct; the message's huge values are
    shortened (:func:`shorten_values`)."""

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], str):
            args = (shorten_values(args[0]),)
        super().__init__(*args)


class NetworkError(ExpressivityError):
    """A network is malformed (shapes, activations, lengths)."""


class EvaluationError(ExpressivityError):
    """A network cannot be evaluated as asked (e.g. softmax in exact mode)."""


class BudgetError(ExpressivityError):
    """A requested object would exceed a size budget; the message carries the estimate."""


# ---- argument checks shared by the public API (one-line messages, like the CLI's) -----------

def require_int(value, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int within ``[lo, hi]``, or an :class:`ExpressivityError` naming ``name``."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ExpressivityError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        where = f">= {lo}" if hi is None else (f"<= {hi}" if lo is None else f"between {lo} and {hi}")
        raise ExpressivityError(f"{name} must be {where}, got {value}")
    return value


def require_number(value, name: str, *, lo: float | None = None, positive: bool = False,
                   allow_inf: bool = False) -> float:
    """``value`` as a float (finite unless ``allow_inf``; ``> 0`` if ``positive``; ``>= lo``), else one line."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise ExpressivityError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ExpressivityError(f"{name} must be a number, got {value!r}") from None
    if math.isnan(number) or (math.isinf(number) and not allow_inf):
        raise ExpressivityError(f"{name} must be a finite number, got {value!r}")
    if positive and number <= 0:
        raise ExpressivityError(f"{name} must be positive, got {value!r}")
    if lo is not None and number < lo:
        raise ExpressivityError(f"{name} must be >= {lo:g}, got {value!r}")
    return number


def require_type(value, kinds, name: str, hint: str = "") -> None:
    """One-line :class:`ExpressivityError` unless ``value`` is an instance of ``kinds``."""
    if not isinstance(value, kinds):
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        want = " or ".join(k.__name__ for k in kinds)
        raise ExpressivityError(f"{name} must be a {want}, got {type(value).__name__}" + (f"; {hint}" if hint else ""))


def require_path(value, name: str, optional: bool = False):
    """``value`` (a ``str`` or ``os.PathLike``, not empty) as a :class:`pathlib.Path`; ``None`` passes when ``optional``."""
    import os
    from pathlib import Path

    if value is None and optional:
        return None
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ExpressivityError(f"{name} must be a path (str or Path){' or None' if optional else ''}, got {value!r}")
    return Path(value)
