"""Network inputs from token ids."""

from __future__ import annotations

import numpy as np

from expressivity.errors import NetworkError


def one_hot(ids, vocab_size: int) -> np.ndarray:
    """Token ids ``(..., n)`` -> float64 one-hot rows ``(..., n, vocab_size)`` (the input of a token network)."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" or (ids.size and (ids.min() < 0 or ids.max() >= vocab_size)):
        raise NetworkError(f"token ids must be integers in [0, {vocab_size}); got {ids.dtype} ids")
    return np.eye(vocab_size)[ids]
