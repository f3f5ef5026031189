"""Rules an input sequence must keep for a construction's claim to hold, beyond what each token holds.

A rule names input dimensions (labels) and says, per input ``X3`` ``(batch, n, d_in)`` (tokens as
rows), why it is broken (:meth:`check`), how to repair a random sample so it holds
(:meth:`impose`, for example inputs and export checks), and itself in one line. :data:`RULES` is
the table a saved domain is read back through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from expressivity.errors import NetworkError


@dataclass(frozen=True)
class FirstOnly:
    """Input dimension ``dim`` is 1 at the first position and 0 at every other one (RASP's BOS token,
    the start flag of Wang & E's pointer tasks)."""

    dim: str
    kind: ClassVar[str] = "first-only"

    def dims_used(self) -> tuple[str, ...]:
        return (self.dim,)

    def name(self, domain=None) -> str:
        """The token's name where ``dim`` is a one-hot token of ``domain`` (``BOS``), else the label."""
        field = None if domain is None else domain.field_of(self.dim)
        return str(field.names[field.dims.index(self.dim)]) if field is not None and field.kind == "one-hot" else self.dim

    def describe(self, domain=None) -> str:
        return f"{self.name(domain)} at the first position only"

    def check(self, X3: np.ndarray, labels: tuple[str, ...], where, domain=None) -> str | None:
        column = X3[..., labels.index(self.dim)]
        name = self.name(domain)
        missing = np.flatnonzero(np.asarray(column[:, 0] != 1, dtype=bool))
        if missing.size:
            return f"{where(int(missing[0]), 0)} is not {name} (the claim covers inputs that start with it)"
        later = np.argwhere(np.asarray(column[:, 1:] != 0, dtype=bool))
        if later.size:
            return f"{where(int(later[0][0]), int(later[0][1]) + 1)} is {name}, which belongs to the first position only"
        return None

    def impose(self, X: np.ndarray, labels: tuple[str, ...], rng: np.random.Generator, domain) -> None:
        """Set ``dim`` at position 0 (alone in its one-hot field) and nowhere else (other tokens redrawn)."""
        k = labels.index(self.dim)
        field = domain.field_of(self.dim)
        if field is not None and field.kind == "one-hot":
            cols = [labels.index(d) for d in field.dims]
            others = [c for c in cols if c != k]
            X[:, 0, cols] = 0.0
            for b, t in np.argwhere(X[:, 1:, k] != 0):
                X[b, t + 1, cols] = 0.0
                if others:
                    X[b, t + 1, others[rng.integers(0, len(others))]] = 1.0
        X[:, 0, k] = 1.0
        X[:, 1:, k] = 0.0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "dim": self.dim}

    @classmethod
    def from_dict(cls, d: dict) -> "FirstOnly":
        if not isinstance(d.get("dim"), str):
            raise NetworkError(f"rule {cls.kind!r} names its dimension ('dim'), got {str(d)[:60]!r}")
        return cls(d["dim"])


@dataclass(frozen=True)
class PointersBack:
    """A one-hot pointer over ``dims`` (``dims[k]`` stands for the lag ``k + 1``): none at position 0,
    exactly one at every later position ``t``, pointing at most ``t`` back (so every chain of
    pointers stays inside the sequence)."""

    dims: tuple[str, ...]
    kind: ClassVar[str] = "pointers-back"

    def __post_init__(self) -> None:
        if isinstance(self.dims, str) or not self.dims:
            raise NetworkError(f"rule {self.kind!r} names its pointer dimensions, got {self.dims!r}")
        object.__setattr__(self, "dims", tuple(self.dims))

    def dims_used(self) -> tuple[str, ...]:
        return self.dims

    def describe(self, domain=None) -> str:
        return f"pointer {self.dims[0]}..{self.dims[-1]}: none at position 0, lag <= t at position t"

    def check(self, X3: np.ndarray, labels: tuple[str, ...], where, domain=None) -> str | None:
        P = np.asarray(X3[..., [labels.index(d) for d in self.dims]] != 0, dtype=bool)
        counts = P.sum(axis=-1)
        first = np.flatnonzero(counts[:, 0])
        if first.size:
            return f"{where(int(first[0]), 0)} sets a pointer; the first position has none"
        wrong = np.argwhere(counts[:, 1:] != 1)
        if wrong.size:
            b, t = int(wrong[0][0]), int(wrong[0][1]) + 1
            return f"{where(b, t)} sets {int(counts[b, t])} pointer dimensions, not one"
        lags = P.argmax(axis=-1) + 1
        early = np.argwhere(lags[:, 1:] > np.arange(1, X3.shape[1]))
        if early.size:
            b, t = int(early[0][0]), int(early[0][1]) + 1
            return f"{where(b, t)} points {int(lags[b, t])} back, before the start of the sequence"
        return None

    def impose(self, X: np.ndarray, labels: tuple[str, ...], rng: np.random.Generator, domain) -> None:
        cols = [labels.index(d) for d in self.dims]
        X[..., cols] = 0.0
        for t in range(1, X.shape[1]):
            lags = rng.integers(1, min(len(cols), t) + 1, size=X.shape[0])
            X[np.arange(X.shape[0]), t, [cols[lag - 1] for lag in lags]] = 1.0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "dims": list(self.dims)}

    @classmethod
    def from_dict(cls, d: dict) -> "PointersBack":
        if not isinstance(d.get("dims"), list) or not all(isinstance(x, str) for x in d["dims"]):
            raise NetworkError(f"rule {cls.kind!r} lists its pointer dimensions ('dims'), got {str(d)[:60]!r}")
        return cls(tuple(d["dims"]))


RULES = {rule.kind: rule for rule in (FirstOnly, PointersBack)}


def rule_from_dict(d):
    """A rule from its JSON (``{"kind": ..., ...}``), through :data:`RULES`; a one-line error otherwise."""
    if not isinstance(d, dict) or d.get("kind") not in RULES:
        raise NetworkError(f"an input rule must be one of {', '.join(RULES)}, got {str(d)[:60]!r}")
    return RULES[d["kind"]].from_dict(d)
