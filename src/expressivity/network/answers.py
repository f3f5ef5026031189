"""How a token network's output reads as a value per position: its answers, not its output columns.

A compiled RASP program's readout has one column per value of its output SOp (``sort:1``,
``sort:2``, ...): the answer at a position is the value whose column is largest, not that
column's index. A trained token model's readout has one logit per class: the answer is the
class (its id, or its name where the task has names). :class:`Answers` records which; a network
carries it in ``metadata["answers"]`` (saved and loaded with it), and :func:`answers_of` reads
it, deriving it for folders saved before it was recorded.

Tokens are rows: an output is ``(n, d_out)``; :meth:`Answers.decode` returns one answer and one
arg-max column per position.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from expressivity.errors import NetworkError
from expressivity.records import jsonable

if TYPE_CHECKING:
    from expressivity.network.network import Network

KINDS = ("categorical", "numerical", "class")


def plain(v):
    """``v`` as a plain Python value (``int``, ``float``, ``Fraction``, ``str``, ``None``): no NumPy scalars."""
    if isinstance(v, (np.integer, np.bool_)):
        return v.item()
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    return v


@dataclass(frozen=True)
class Answers:
    """How to read outputs ``(n, d_out)`` as values.

    * ``categorical``: column ``k`` stands for ``values[k]``; the answer is the value of the largest
      column, ``None`` when no column reaches 1/2 (an empty selection in RASP);
    * ``numerical``: the answer is the one output number itself (exact stays exact);
    * ``class``: the answer is the arg-max class, named ``values[k]`` when names are given.

    ``first``: the answer at position 0 when that position holds a marker, not an answer (RASP's BOS).
    """

    kind: str
    values: tuple | None = None
    first: object = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise NetworkError(f"answers are one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "categorical" and self.values is None:   # none at all: an output that is always None
            raise NetworkError("categorical answers name the value of every output column")
        if self.values is not None:
            object.__setattr__(self, "values", tuple(self.values))

    def decode(self, output) -> tuple[list, list[int]]:
        """``(answers, argmax)`` for ``output`` ``(n, d_out)``: one plain value and one column index per position."""
        rows = np.asarray(output, dtype=object)
        if rows.ndim != 2:
            raise NetworkError(f"answers decode one output (n, d_out), got shape {rows.shape}")
        if self.kind == "categorical" and rows.shape[1] != len(self.values):
            raise NetworkError(f"{rows.shape[1]} output columns for {len(self.values)} answer values")
        argmax = [int(np.argmax(np.asarray(row, dtype=np.float64))) if len(row) else 0 for row in rows]
        answers = [self._answer(row, k) for row, k in zip(rows, argmax)]
        if self.first is not None and answers:
            answers[0] = self.first
        return answers, argmax

    def _answer(self, row, k: int):
        if self.kind == "numerical":
            return plain(row[0])
        if self.kind == "class":
            return plain(self.values[k]) if self.values is not None and k < len(self.values) else k
        if not self.values:
            return None
        top = row[k] if isinstance(row[k], (int, Fraction)) else float(row[k])
        return plain(self.values[k]) if top >= Fraction(1, 2) else None

    def to_dict(self) -> dict:
        return {"kind": self.kind, "values": None if self.values is None else jsonable(list(self.values)),
                "first": jsonable(self.first)}

    @classmethod
    def from_dict(cls, d) -> "Answers":
        if not isinstance(d, dict) or d.get("kind") not in KINDS:
            raise NetworkError(f"answers must be {{'kind': {' | '.join(KINDS)}, ...}}, got {str(d)[:60]!r}")
        values = d.get("values")
        return cls(d["kind"], None if values is None else tuple(values), d.get("first"))


def answers_of(net: "Network") -> Answers | None:
    """The network's :class:`Answers`: recorded in ``metadata["answers"]``, else derived for a RASP
    network (from its output labels ``name:value``) or a token model (the arg-max class); ``None``
    for networks whose outputs are values already."""
    meta = net.metadata or {}
    recorded = meta.get("answers")
    if isinstance(recorded, dict):
        return Answers.from_dict(recorded)
    if meta.get("construction") == "rasp":
        labels = net.output_labels or ()
        if len(labels) == 1 and ":" not in labels[0]:
            return Answers("numerical", first=meta.get("bos"))
        if labels and all(":" in label for label in labels):
            return Answers("categorical", tuple(_value(label.partition(":")[2]) for label in labels), meta.get("bos"))
        return None
    config = meta.get("model_config")
    if isinstance(config, dict) and isinstance(config.get("vocab_size"), int) and config["vocab_size"] > 0:
        return Answers("class")
    return None


def _value(text: str):
    """A RASP value written in a label (``sort:3``): an int when it reads as one, else the text."""
    try:
        return int(text)
    except ValueError:
        return text
