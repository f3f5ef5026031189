"""How network parts describe themselves in JSON, with their arrays kept aside.

Every layer, position bias and activation has ``to_dict(arrays) -> dict`` and a class method
``from_dict(d, arrays)``: the JSON holds the structure and scalars; ``arrays`` (an
:class:`ArrayStore`) holds the weight arrays and hands back a JSON reference for each. The
exporter's store writes safetensors (:mod:`expressivity.export.safetensors_io`);
:class:`InlineArrays` writes the values into the JSON itself.

Scalars: exact numbers become ``int`` or ``"p/q"``; floats stay floats, with ``inf``/``-inf``
as the strings ``"inf"``/``"-inf"`` so the JSON is strict.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.numbers import MAX_STORED_DIGITS, TooManyDigits, exact_from_text
from expressivity.records import jsonable


def number_to_json(v):
    """An exact number as ``int`` / ``"p/q"``, a float as itself (``"inf"``, ``"-inf"`` for infinities)."""
    if isinstance(v, (np.floating, float)):
        return jsonable(float(v))
    return jsonable(Fraction(v))


def number_from_json(v):
    """Inverse of :func:`number_to_json`; raises :class:`NetworkError` on anything else."""
    if isinstance(v, str):
        if v in ("inf", "-inf", "nan"):
            return float(v)
        try:   # read as typed input is: a corrupt "1e100000000" would otherwise take minutes to expand
            return exact_from_text(v, max_digits=MAX_STORED_DIGITS)
        except TooManyDigits as exc:
            raise NetworkError(str(exc)) from None
        except (ValueError, ZeroDivisionError):
            raise NetworkError(f"{v[:40]!r} is not a number") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise NetworkError(f"{v!r} is not a number")
    return v


class ArrayStore(Protocol):
    """Where a description keeps its arrays."""

    def put(self, name: str, array: np.ndarray) -> dict:
        """Keep ``array`` under ``name`` (unique within this scope); return its JSON reference."""

    def get(self, ref: dict) -> np.ndarray:
        """The array a reference points to (raise :class:`NetworkError` if it is missing or malformed)."""

    def scope(self, prefix: str) -> "ArrayStore":
        """A view whose names are prefixed by ``prefix`` (so nested parts get distinct names)."""


class InlineArrays:
    """An :class:`ArrayStore` that writes every array into the JSON (exact entries stay exact)."""

    def put(self, name: str, array: np.ndarray) -> dict:
        array = np.asarray(array)
        return {"shape": list(array.shape), "values": [number_to_json(v) for v in array.flat]}

    def get(self, ref: dict) -> np.ndarray:
        shape, values = tuple(ref["shape"]), [number_from_json(v) for v in ref["values"]]
        if int(np.prod(shape)) != len(values):
            raise NetworkError(f"array of shape {shape} has {len(values)} values")
        if any(isinstance(v, Fraction) or (isinstance(v, int) and abs(v) > 2**53) for v in values):
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out.reshape(shape)
        return np.asarray(values, dtype=np.float64).reshape(shape)

    def scope(self, prefix: str) -> "InlineArrays":
        return self
