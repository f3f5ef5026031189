"""Sizes for messages and reports: how big a network is, written so huge numbers stay readable."""

from __future__ import annotations

from math import log10


def fmt_size(x: int | float) -> str:
    """A size for a message: ``1,234,567`` up to 10^15, else ``about 10^k`` (never a huge int-to-str)."""
    if x < 10 ** 15:
        return f"{int(x):,}"
    k = int(log10(x))
    if k < 300:
        return f"about {float(x):.3g}".replace("e+", " x 10^")
    return f"about 10^{k}"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, the noun plural unless ``n`` is one: ``1 layer``, ``3 layers``, ``1,024 heads``
    (messages said "1 layers" and "wrote 1 rows")."""
    return f"{fmt_size(n)} {noun}{'' if n == 1 else 's'}"
