"""Which input lengths a network is built and verified for: part of its contract.

A construction's claim holds at the lengths it was built and checked for, not at every length
its weights happen to accept: a shift circuit built for 8 tokens runs on 9 without complaint
and returns numbers its claim says nothing about. :class:`ValidLengths` records the lengths a
claim covers; :class:`~expressivity.network.network.Network` carries one
(``Network.valid_lengths``) and its evaluators refuse other lengths unless asked explicitly
(``allow_length=True``; ``--allow-length`` on the command line), in which case results are
marked as outside the construction's claim.

Three shapes cover every construction: ``any()`` (no limit), ``range(lo, hi)`` (every length
in ``lo..hi``, ``hi`` possibly ``None`` for "no upper limit") and ``of(lengths)`` (a finite set).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from expressivity.errors import NetworkError

MAX_LISTED = 8   # describe() names at most this many lengths of a set


def _length(value, what: str) -> int:
    """``value`` as a positive int, or a one-line :class:`NetworkError`."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise NetworkError(f"{what} must be a positive integer, got {value!r}")
    value = int(value)
    if value < 1:
        raise NetworkError(f"{what} must be a positive integer, got {value}")
    return value


@dataclass(frozen=True)
class ValidLengths:
    """A set of sequence lengths (token counts, all >= 1).

    Build one with :meth:`any`, :meth:`range` or :meth:`of` (the constructor checks the same). Either
    ``values`` (a sorted tuple) is set, or ``lo``/``hi`` bound a range (``hi=None``: unbounded).
    """

    lo: int = 1
    hi: int | None = None
    values: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        # the constructor called directly (it is exported at the package top) is held to what range() and of()
        # check: ValidLengths(5, 2), (0), (1.5) and (values=()) were accepted, saved, and then refused on loading
        # "re-export the network with save_network" (an audit, 2026-11-28)
        if self.values is not None:
            if isinstance(self.values, (str, bytes)) or not hasattr(self.values, "__iter__"):
                raise NetworkError(f"valid lengths must be a collection of positive integers, got {self.values!r}")
            values = tuple(sorted({_length(n, "a valid length") for n in self.values}))
            if not values:
                raise NetworkError("valid lengths must name at least one length")
            object.__setattr__(self, "values", values)
            object.__setattr__(self, "lo", values[0])
            object.__setattr__(self, "hi", values[-1])
            return
        object.__setattr__(self, "lo", _length(self.lo, "the shortest valid length"))
        if self.hi is not None:
            object.__setattr__(self, "hi", _length(self.hi, "the longest valid length"))
            if self.hi < self.lo:
                raise NetworkError(f"valid lengths {self.lo}..{self.hi} are empty; give lo <= hi")

    # ---- constructors ------------------------------------------------------------------
    @classmethod
    def any(cls) -> "ValidLengths":
        """Every length."""
        return cls(1, None, None)

    @classmethod
    def range(cls, lo: int, hi: int | None) -> "ValidLengths":
        """Every length from ``lo`` to ``hi`` inclusive (``hi=None``: no upper limit)."""
        return cls(lo, hi, None)   # checked by the constructor

    @classmethod
    def of(cls, lengths: Iterable[int]) -> "ValidLengths":
        """Exactly the given lengths (at least one)."""
        return cls(values=lengths)   # checked, sorted and bounded by the constructor

    # ---- questions ---------------------------------------------------------------------
    def contains(self, n: int) -> bool:
        """True when ``n`` tokens are within the contract."""
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            return False
        n = int(n)
        if self.values is not None:
            return n in self.values
        return n >= self.lo and (self.hi is None or n <= self.hi)

    __contains__ = contains

    @property
    def is_any(self) -> bool:
        return self.values is None and self.lo == 1 and self.hi is None

    @property
    def longest(self) -> int | None:
        """The longest valid length, or ``None`` when there is no upper limit."""
        return self.hi

    def describe(self) -> str:
        """For messages: ``any length``, ``length 8``, ``lengths 1..8``, ``lengths 4, 8, 16``."""
        if self.values is not None:
            if len(self.values) == 1:
                return f"length {self.values[0]}"
            shown = ", ".join(map(str, self.values[:MAX_LISTED]))
            more = f", ... ({len(self.values)} lengths up to {self.values[-1]})" if len(self.values) > MAX_LISTED else ""
            return f"lengths {shown}{more}"
        if self.hi is None:
            return "any length" if self.lo == 1 else f"lengths >= {self.lo}"
        return f"length {self.lo}" if self.lo == self.hi else f"lengths {self.lo}..{self.hi}"

    def __str__(self) -> str:
        return self.describe()

    def closest(self, n: int) -> int:
        """The valid length nearest ``n`` (the shorter one on a tie): a default that stays within the claim."""
        if self.contains(n):
            return int(n)
        if self.values is not None:
            return min(self.values, key=lambda v: (abs(v - n), v))
        return max(self.lo, n if self.hi is None else min(n, self.hi))

    def within(self, longest: int | None) -> bool:
        """True when no valid length exceeds ``longest`` (``None``: no limit)."""
        return longest is None or (self.hi is not None and self.hi <= longest)

    # ---- serialisation -----------------------------------------------------------------
    def to_dict(self) -> dict:
        if self.values is not None:
            return {"kind": "set", "values": list(self.values)}
        if self.is_any:
            return {"kind": "any"}
        return {"kind": "range", "lo": self.lo, "hi": self.hi}

    @classmethod
    def from_dict(cls, d) -> "ValidLengths":
        """Inverse of :meth:`to_dict`; a one-line :class:`NetworkError` on anything else."""
        if not isinstance(d, dict) or d.get("kind") not in ("any", "range", "set"):
            raise NetworkError(f"valid_lengths must be {{'kind': 'any' | 'range' | 'set', ...}}, got {d!r}")
        if d["kind"] == "any":
            return cls.any()
        if d["kind"] == "range":
            return cls.range(d.get("lo"), d.get("hi"))
        return cls.of(d.get("values") or ())


def refusal(name: str, valid: ValidLengths, n: int, flag: str = "allow_length=True") -> str:
    """The one-line message for an input of ``n`` tokens outside ``valid``."""
    return (f"network {name!r} is built and verified for {valid.describe()}, got {n} tokens; give an input of a valid "
            f"length (or pass {flag} to run it outside its construction's claim)")


def common_lengths(a: ValidLengths | None, b: ValidLengths | None) -> ValidLengths | None:
    """The lengths valid for both ``a`` and ``b`` (``None`` stands for no recorded claim, so it adds no limit).

    Used for compositions and exports (a network's claim within a model's ``n_ctx``); a one-line
    :class:`NetworkError` when no length is left."""
    if a is None or b is None:
        return a if b is None else b
    if a.values is None and b.values is None:
        lo, his = max(a.lo, b.lo), [h for h in (a.hi, b.hi) if h is not None]
        hi = min(his) if his else None
        if hi is not None and hi < lo:
            raise NetworkError(f"no length is valid for both {a.describe()} and {b.describe()}")
        return ValidLengths.range(lo, hi)
    finite = a if a.values is not None else b
    common = [n for n in finite.values if a.contains(n) and b.contains(n)]
    if not common:
        raise NetworkError(f"no length is valid for both {a.describe()} and {b.describe()}")
    return ValidLengths.of(common)
