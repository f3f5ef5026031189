"""Value equality for the frozen dataclasses that hold weight arrays.

A dataclass's generated ``__eq__`` compares its fields as a tuple, and ``array == array`` is an
array, so ``net == copy`` raised NumPy's "truth value of an array is ambiguous" (an audit,
2026-11-29). :func:`equal_by_value` is the ``__eq__`` of every class holding arrays: two values are
equal when they are of the same class and every compared field is equal, arrays when they have the
same shape, the same dtype (a float64 network is not its exact twin: they compute differently) and
equal entries. Such values stay unhashable, as they were (their arrays are).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np


def same_value(a: object, b: object) -> bool:
    """``a == b`` as one bool, arrays (also inside tuples, lists and dicts) compared whole."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and a.dtype == b.dtype and bool(np.array_equal(a, b)))
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same_value(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (type(a) is type(b) and a.keys() == b.keys()
                and all(same_value(a[k], b[k]) for k in a))
    return bool(a == b)


def equal_by_value(self: object, other: object) -> bool:
    """The ``__eq__`` of a frozen dataclass holding arrays: the compared fields, by :func:`same_value`."""
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(same_value(getattr(self, f.name), getattr(other, f.name)) for f in fields(self) if f.compare)
