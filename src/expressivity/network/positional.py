"""Absolute positional encodings shared by constructions and trained models."""

from __future__ import annotations

import numpy as np


def sinusoidal_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequencies ``omega_k = base^(-2k/d)`` for ``k = 0 .. ceil(d/2)-1`` (radians per position)."""
    return base ** (-2.0 * np.arange((d + 1) // 2) / d)


def sinusoidal_encoding(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The Transformer's sinusoidal encoding, ``(n, d)``: ``PE[p, 2k] = sin(p omega_k)``, ``PE[p, 2k+1] = cos(p omega_k)``."""
    angles = np.arange(n)[:, None] * sinusoidal_frequencies(d, base)[None, :]
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)[:, : d // 2]
    return pe
