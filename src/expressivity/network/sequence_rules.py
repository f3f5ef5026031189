"""Rules an input sequence must keep for a construction's claim to hold, beyond what each token holds.

A rule names input dimensions (labels) and says, per input ``X3`` ``(batch, n, d_in)`` (tokens as
rows), why it is broken (:meth:`check`), how to repair a random sample so it holds
(:meth:`impose`, for example inputs and export checks), and itself in one line. :data:`RULES` is
the table a saved domain is read back through.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
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


@dataclass(frozen=True)
class NotListed:
    """The input is none of the token sequences ``inputs`` (token ids, in the order of the one-hot ``dims``;
    the first position included): a RASP program's own evaluation raises on them (a function failing on a
    value, ``12 // (x - 2)`` at token 2), so the program has no output there and the compiled network's answer
    is no claim's (``run`` printed one "within the claim": an audit, 2026-11-29). ``why``: one line saying
    why they are left out."""

    dims: tuple[str, ...]
    inputs: tuple[tuple[int, ...], ...]
    why: str = "the program has no output on them"
    kind: ClassVar[str] = "not-listed"

    def __post_init__(self) -> None:
        if isinstance(self.dims, str) or not self.dims:
            raise NetworkError(f"rule {self.kind!r} names its token dimensions, got {self.dims!r}")
        object.__setattr__(self, "dims", tuple(self.dims))
        inputs = tuple(tuple(seq) for seq in self.inputs)
        if not all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < len(self.dims)
                   for seq in inputs for t in seq):
            raise NetworkError(f"rule {self.kind!r} lists inputs of token ids in 0..{len(self.dims) - 1}")
        object.__setattr__(self, "inputs", tuple(sorted(set(inputs))))
        if not isinstance(self.why, str):
            raise NetworkError(f"rule {self.kind!r}: why is text, got {type(self.why).__name__}")

    def dims_used(self) -> tuple[str, ...]:
        return self.dims

    def describe(self, domain=None) -> str:
        return f"none of the {len(self.inputs):,} listed inputs where {self.why}"

    def _ids(self, X3: np.ndarray, labels: tuple[str, ...]) -> np.ndarray:
        """Per row and position the token id (the one-hot's dimension; the field's check ran first)."""
        return np.asarray(X3[..., [labels.index(d) for d in self.dims]] != 0, dtype=bool).argmax(axis=-1)

    def check(self, X3: np.ndarray, labels: tuple[str, ...], where, domain=None) -> str | None:
        listed = set(self.inputs)
        for b, ids in enumerate(self._ids(X3, labels)):
            if tuple(int(t) for t in ids) in listed:
                return (f"{'the input' if X3.shape[0] == 1 else f'input {b}'} is one of the {len(self.inputs):,} "
                        f"inputs where {self.why}: the claim leaves them out")
        return None

    def impose(self, X: np.ndarray, labels: tuple[str, ...], rng: np.random.Generator, domain) -> None:
        """Redraw the tokens after the first of a listed input (up to 100 tries), then take the first unlisted one
        in order: where most inputs are listed, random tries left listed inputs, and `show` refused its own example
        (a review, 2026-11-29). Unchanged where every input of that length is listed."""
        import itertools

        listed, cols = set(self.inputs), [labels.index(d) for d in self.dims]
        for b, ids in enumerate(self._ids(X, labels)):
            ids = [int(t) for t in ids]
            for _ in range(100):
                if tuple(ids) not in listed or len(ids) < 2:
                    break
                ids[1:] = (int(t) for t in rng.integers(1, len(cols), size=len(ids) - 1))
            if tuple(ids) in listed and len(ids) >= 2:
                # among any len(listed) + 1 sequences one is unlisted, where the length has that many
                candidates = itertools.islice(itertools.product(range(1, len(cols)), repeat=len(ids) - 1),
                                              len(listed) + 1)
                ids = next((list(ids[:1]) + list(rest) for rest in candidates
                            if (ids[0], *rest) not in listed), ids)
            X[b, :, cols] = 0.0
            X[b, np.arange(len(ids)), [cols[t] for t in ids]] = 1.0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "dims": list(self.dims), "inputs": [list(seq) for seq in self.inputs],
                "why": self.why}

    @classmethod
    def from_dict(cls, d: dict) -> "NotListed":
        if not isinstance(d.get("dims"), list) or not all(isinstance(x, str) for x in d["dims"]):
            raise NetworkError(f"rule {cls.kind!r} lists its token dimensions ('dims'), got {str(d)[:60]!r}")
        if not isinstance(d.get("inputs"), list) or not all(isinstance(seq, list) for seq in d["inputs"]):
            raise NetworkError(f"rule {cls.kind!r} lists its inputs ('inputs': lists of token ids), got "
                               f"{str(d.get('inputs'))[:60]!r}")
        return cls(tuple(d["dims"]), tuple(tuple(seq) for seq in d["inputs"]), d.get("why", cls.why))


def _received(value) -> str:
    """`` (float64 0.333...)`` where the float64 value the network receives is not the typed one (the distances
    are the received value's: "x[0] = 1/3, 1.85e-17 below the breakpoint 1/3" read as a contradiction, an
    audit, 2026-11-29), else nothing."""
    try:
        received = float(value)
        same = Fraction(received) == Fraction(value)
    except (TypeError, ValueError, OverflowError):
        return ""
    return "" if same else f" (float64 {received!r})"


@dataclass(frozen=True)
class OffRamps:
    """No entry of ``dims`` (plus the token's index where ``positional``) lies within ``left`` below a
    breakpoint ``k / N``, nor within ``right`` above one: Yun et al.'s softened quantizer ramps its steps
    over ``(k/N - epsilon, k/N)`` (``left`` is that width plus float64's drift, which carries an entry near
    one into it; ``right`` the drift, which carries an entry just above a breakpoint down onto the ramp) and
    agrees with the verified network elsewhere. An entry exactly on a breakpoint is not refused where ``N`` is a
    power of two (the ramps are too): it then passes the quantizer exactly. With another ``N`` the breakpoints that
    are float64 numbers (1/2 at N = 6; 1/4, 1/2, 3/4 at N = 12) drift like any entry, onto the ramp below: the
    softened network answered 3,347 for a target in [0, 1] at (0, 1/2), N = 6, "within the claim" (an audit,
    2026-11-29), so they are refused like an entry within ``right`` above one. The entry judged is its float64 value, which the
    network receives (typed 0.25000000000000001 is 0.25). On a ramp the softened network's
    output lies between two cells' and the contextual map amplifies it: 1,069 for a target in [0, 1] (an
    audit, 2026-11-28). The claim there is the d_p average over the cube, not the answer at the input."""

    dims: tuple[str, ...]
    N: int
    left: float
    right: float
    positional: bool = False
    kind: ClassVar[str] = "off-ramps"

    def __post_init__(self) -> None:
        if isinstance(self.dims, str) or not self.dims:
            raise NetworkError(f"rule {self.kind!r} names its dimensions, got {self.dims!r}")
        object.__setattr__(self, "dims", tuple(self.dims))
        if isinstance(self.N, bool) or not isinstance(self.N, int) or self.N < 1:
            raise NetworkError(f"rule {self.kind!r}: N must be a whole number >= 1, got {self.N!r}")
        for name in ("left", "right"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1 / self.N:
                raise NetworkError(f"rule {self.kind!r}: {name} must be a number in [0, 1/N), got {value!r}")

    def dims_used(self) -> tuple[str, ...]:
        return self.dims

    def describe(self, domain=None) -> str:
        offset = " + token index" if self.positional else ""
        return (f"off the softened quantizer's ramps: no {', '.join(self.dims)}{offset} within {self.left:.3g} below "
                f"a breakpoint k/{self.N}" + ((f" or on one or within {self.right:.3g} above it" if self.N & (self.N - 1)
                                               else f" or {self.right:.3g} above one") if self.right else ""))

    def _distances(self, X3: np.ndarray, labels: tuple[str, ...]):
        """Per entry ``(below, above)``: exact distances to the breakpoints just below and above it."""
        cols = [labels.index(d) for d in self.dims]
        entries = np.ndindex(X3.shape[0], X3.shape[1], len(cols))
        if X3.dtype != object:   # floats: only entries near a breakpoint need the exact distances (a batch is large)
            with np.errstate(all="ignore"):
                t = np.asarray(X3[..., cols], dtype=np.float64) + \
                    (np.arange(X3.shape[1])[None, :, None] if self.positional else 0)
                scaled = t * self.N
                frac = scaled - np.floor(scaled)
                slack = 1e-9 * (1 + np.abs(scaled))   # far above float64's error in t * N
                near = ((1 - frac) / self.N < self.left + slack) | (frac / self.N < self.right + slack)
            entries = (tuple(int(i) for i in e) for e in np.argwhere(near))
        for b, t, k in entries:
            value = X3[b, t, cols[k]]
            try:   # the float64 value the softened network receives (it runs in float64 only), not the typed one
                x = Fraction(float(value)) + (t if self.positional else 0)
            except (TypeError, ValueError, OverflowError):   # NaN/inf: the field's check names those
                continue
            cell = (x * self.N).__floor__()
            yield b, t, k, value, x - Fraction(cell, self.N), Fraction(cell + 1, self.N) - x, cell

    def _drifts_down(self, below: Fraction, cell: int) -> bool:
        """Whether an entry ``below`` above the breakpoint ``cell / N`` may drift onto the ramp under it: within
        ``right`` above it, or on it where ``N`` is not a power of two (the class doc); never in the first cell,
        which the first grid layer snaps before any drift."""
        exact_on_breakpoint = below == 0 and not self.N & (self.N - 1)
        return cell != 0 and (0 < below < self.right or (below == 0 and self.right > 0 and not exact_on_breakpoint))

    def check(self, X3: np.ndarray, labels: tuple[str, ...], where, domain=None) -> str | None:
        for b, t, k, value, below, above, cell in self._distances(X3, labels):
            shown = _number(value) + _received(value)
            if above < self.left:
                return (f"{where(b, t)} has {self.dims[k]} = {shown}, {float(above):.3g} below the quantizer breakpoint "
                        f"{Fraction(cell + 1, self.N)}: on the softened ramp (width {self.left:.3g} there), where the network "
                        "is not the verified one")
            if self._drifts_down(below, cell):
                if below == 0:
                    return (f"{where(b, t)} has {self.dims[k]} = {shown}, on the quantizer breakpoint "
                            f"{Fraction(cell, self.N)}: with delta = 1/{self.N} (not a power of two) float64 can move it "
                            f"onto the ramp below it; type a value off the breakpoint")
                return (f"{where(b, t)} has {self.dims[k]} = {shown}, {float(below):.3g} above the quantizer breakpoint "
                        f"{Fraction(cell, self.N)}: within float64's drift ({self.right:.3g}) of the ramp below it")
        return None

    def impose(self, X: np.ndarray, labels: tuple[str, ...], rng: np.random.Generator, domain) -> None:
        """Move an entry on a ramp to its cell's centre."""
        cols = [labels.index(d) for d in self.dims]
        for b, t, k, _, below, above, cell in list(self._distances(X, labels)):
            if above < self.left or self._drifts_down(below, cell):
                X[b, t, cols[k]] = (cell + 0.5) / self.N - (t if self.positional else 0)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "dims": list(self.dims), "N": self.N, "left": self.left, "right": self.right,
                "positional": self.positional}

    @classmethod
    def from_dict(cls, d: dict) -> "OffRamps":
        if not isinstance(d.get("dims"), list) or not all(isinstance(x, str) for x in d["dims"]):
            raise NetworkError(f"rule {cls.kind!r} lists its dimensions ('dims'), got {str(d)[:60]!r}")
        return cls(tuple(d["dims"]), d.get("N"), d.get("left"), d.get("right"), bool(d.get("positional")))


def _number(value) -> str:
    """A float as Python prints it (``0.2``, not ``np.float64(0.2)``), an exact number as itself."""
    return repr(float(value)) if isinstance(value, (float, np.floating)) else str(value)


RULES = {rule.kind: rule for rule in (FirstOnly, PointersBack, OffRamps, NotListed)}


def rule_from_dict(d):
    """A rule from its JSON (``{"kind": ..., ...}``), through :data:`RULES`; a one-line error otherwise."""
    if not isinstance(d, dict) or d.get("kind") not in RULES:
        raise NetworkError(f"an input rule must be one of {', '.join(RULES)}, got {str(d)[:60]!r}")
    return RULES[d["kind"]].from_dict(d)
