"""The RASP language with tracr's names (``from tracr.rasp import rasp`` -> ``from expressivity import rasp``).

A program is a tree of expressions. An **SOp** (sequence operation) maps an input sequence
``xs`` (a list of tokens) to one value per position; a **Selector** maps it to a boolean
matrix ``selected[query][key]``. The primitives:

* ``tokens`` (the input), ``indices`` (``0 .. n-1``), ``Full(fill)``;
* ``Map(f, sop)``, ``SequenceMap(f, a, b)``, ``LinearSequenceMap(a, b, fa, fb)``: per-position
  functions (a ``Map`` of a ``Map`` is fused into one, as in tracr);
* ``Select(keys, queries, predicate)``: ``selected[q][k] = predicate(keys[k], queries[q])``
  (the key comes first, as in tracr); ``Comparison.EQ|LT|LEQ|GT|GEQ|NEQ|TRUE|FALSE`` or any
  function ``(key, query) -> bool``; selectors combine with ``&``, ``|``, ``~``;
* ``Aggregate(selector, sop, default=None)``: the mean of the selected values (``default``
  where nothing is selected); ``SelectorWidth(selector)``: how many keys each query selects.

Every SOp carries an ``encoding`` annotation, categorical (the default: one residual
dimension per value) or numerical (one dimension holding the value), set with
:func:`numerical` / :func:`categorical`, and a ``name`` set with ``.named(...)``. Annotating
returns a copy, as in tracr. The operators ``+ - * / < <= == != > >= & | ~`` on SOps build
``Map`` / ``SequenceMap`` expressions. What a program means is :func:`expressivity.rasp.evaluate`.
"""

from __future__ import annotations

import copy
import enum
import itertools
from typing import Any, Callable, Sequence

from expressivity.errors import ExpressivityError

Value = Any   # a token or an SOp value: int, Fraction, float, str, bool or None


class RASPError(ExpressivityError):
    """A RASP program is malformed or cannot be compiled; the message says why and what to do."""


class Encoding(enum.Enum):
    """How an SOp is laid out in the residual stream."""

    CATEGORICAL = "categorical"
    NUMERICAL = "numerical"


_ids = itertools.count(1)


class RASPExpr:
    """Base of SOps and selectors: annotations (``name``, ``encoding``) and a unique id."""

    default_name = "expr"

    def __init__(self) -> None:
        self._annotations: dict[str, Any] = {}
        self.unique_id = next(_ids)

    @property
    def children(self) -> tuple["RASPExpr", ...]:
        return ()

    @property
    def annotations(self) -> dict[str, Any]:
        return dict(self._annotations)

    @property
    def name(self) -> str:
        return self._annotations.get("name") or f"{self.default_name}_{self.unique_id}"

    @property
    def label(self) -> str:
        return self.name

    def annotated(self, **annotations) -> "RASPExpr":
        """A copy with ``annotations`` added (a new id; the original is unchanged)."""
        new = copy.copy(self)
        new._annotations = {**self._annotations, **annotations}
        new.unique_id = next(_ids)
        return new

    def named(self, name: str) -> "RASPExpr":
        if not isinstance(name, str) or not name.strip():
            raise RASPError(f"a name must be a non-empty string, got {name!r}")
        if any(c in name for c in ":\n"):
            raise RASPError(f"name {name!r} contains ':' or a newline; residual dimensions are labelled 'name:value'")
        return self.annotated(name=name)

    def __call__(self, xs: Sequence[Value]):
        from expressivity.rasp.interpreter import evaluate

        return evaluate(self, xs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def _lift(other, unary: Callable, binary: Callable, sop: "SOp") -> "SOp":
    if isinstance(other, SOp):
        return SequenceMap(binary, sop, other)
    if isinstance(other, RASPExpr):
        raise RASPError(f"cannot combine an SOp with {type(other).__name__}")
    return Map(unary, sop)


class SOp(RASPExpr):
    """A sequence operation: one value per position. Operators build Map / SequenceMap."""

    default_name = "sop"

    @property
    def encoding(self) -> Encoding:
        return self._annotations.get("encoding", Encoding.CATEGORICAL)

    # Comparison operators with constants (as in tracr: they build Maps, they do not compare SOps).
    def __lt__(self, other):
        return _lift(other, lambda x: x < other, lambda x, y: x < y, self)

    def __le__(self, other):
        return _lift(other, lambda x: x <= other, lambda x, y: x <= y, self)

    def __eq__(self, other):  # type: ignore[override]
        return _lift(other, lambda x: x == other, lambda x, y: x == y, self)

    def __ne__(self, other):  # type: ignore[override]
        return _lift(other, lambda x: x != other, lambda x, y: x != y, self)

    def __gt__(self, other):
        return _lift(other, lambda x: x > other, lambda x, y: x > y, self)

    def __ge__(self, other):
        return _lift(other, lambda x: x >= other, lambda x, y: x >= y, self)

    __hash__ = RASPExpr.__hash__

    def __add__(self, other):
        return _lift(other, lambda x: x + other, lambda x, y: x + y, self)

    def __radd__(self, other):
        return Map(lambda x: other + x, self)

    def __sub__(self, other):
        return _lift(other, lambda x: x - other, lambda x, y: x - y, self)

    def __rsub__(self, other):
        return Map(lambda x: other - x, self)

    def __mul__(self, other):
        return _lift(other, lambda x: x * other, lambda x, y: x * y, self)

    def __rmul__(self, other):
        return Map(lambda x: other * x, self)

    def __truediv__(self, other):
        return _lift(other, lambda x: _div(x, other), _div, self)

    def __rtruediv__(self, other):
        return Map(lambda x: _div(other, x), self)

    def __invert__(self):
        return Map(lambda x: not x, self)

    def __and__(self, other):
        return _lift(other, lambda x: x and other, lambda x, y: x and y, self)

    def __rand__(self, other):
        return Map(lambda x: other and x, self)

    def __or__(self, other):
        return _lift(other, lambda x: x or other, lambda x, y: x or y, self)

    def __ror__(self, other):
        return Map(lambda x: other or x, self)


def _div(x, y):
    """``x / y`` kept exact for integers (a ``Fraction``, or an ``int`` when it divides)."""
    from fractions import Fraction

    if isinstance(x, (int, Fraction)) and isinstance(y, (int, Fraction)) and not isinstance(x, bool) \
            and not isinstance(y, bool):
        q = Fraction(x) / Fraction(y)
        return int(q) if q.denominator == 1 else q
    return x / y


class TokensType(SOp):
    """The input tokens."""

    default_name = "tokens"

    @property
    def name(self) -> str:
        return "tokens"

    def __repr__(self) -> str:
        return "tokens"


class IndicesType(SOp):
    """The positions ``0 .. n-1``."""

    default_name = "indices"

    @property
    def name(self) -> str:
        return "indices"

    def __repr__(self) -> str:
        return "indices"


tokens = TokensType()
indices = IndicesType()


class Full(SOp):
    """The constant ``fill`` at every position."""

    default_name = "full"

    def __init__(self, fill: Value):
        super().__init__()
        self.fill = fill


class Map(SOp):
    """``f`` applied to every value of ``inner`` (``None`` stays ``None``); a Map of a Map is fused."""

    default_name = "map"

    def __init__(self, f: Callable[[Value], Value], inner: SOp, simplify: bool = True):
        super().__init__()
        if not isinstance(inner, SOp):
            raise RASPError(f"Map needs an SOp to map over, got {type(inner).__name__}")
        if not callable(f) or isinstance(f, RASPExpr):
            raise RASPError("Map needs a function of one value as its first argument")
        self.f, self.inner = f, inner
        if simplify and isinstance(inner, Map):
            inner_f = inner.f
            self.f = lambda x: f(inner_f(x))
            self.inner = inner.inner

    @property
    def children(self):
        return (self.inner,)


class SequenceMap(SOp):
    """``f(a_i, b_i)`` at every position ``i`` (``None`` if either is ``None``)."""

    default_name = "sequence_map"

    def __init__(self, f: Callable[[Value, Value], Value], fst: SOp, snd: SOp):
        super().__init__()
        if not isinstance(fst, SOp) or not isinstance(snd, SOp):
            raise RASPError("SequenceMap needs two SOps after its function")
        if not callable(f) or isinstance(f, RASPExpr):
            raise RASPError("SequenceMap needs a function of two values as its first argument")
        self.f, self.fst, self.snd = f, fst, snd

    @property
    def children(self):
        return (self.fst, self.snd)


class LinearSequenceMap(SequenceMap):
    """``fst_fac * a + snd_fac * b``: a SequenceMap the compiler knows to be linear."""

    default_name = "linear_sequence_map"

    def __init__(self, fst: SOp, snd: SOp, fst_fac, snd_fac):
        super().__init__(lambda x, y: fst_fac * x + snd_fac * y, fst, snd)
        self.fst_fac, self.snd_fac = fst_fac, snd_fac


class Comparison(enum.Enum):
    """A predicate ``(key, query) -> bool`` for :class:`Select`."""

    EQ = "=="
    LT = "<"
    LEQ = "<="
    GT = ">"
    GEQ = ">="
    NEQ = "!="
    TRUE = "True"
    FALSE = "False"

    def __call__(self, key: Value, query: Value) -> bool:
        if key is None or query is None:
            raise RASPError(f"Select compared None ({'key' if key is None else 'query'}); give the SOp a default value")
        return _COMPARISONS[self](key, query)


_COMPARISONS = {
    Comparison.EQ: lambda k, q: k == q, Comparison.LT: lambda k, q: k < q, Comparison.LEQ: lambda k, q: k <= q,
    Comparison.GT: lambda k, q: k > q, Comparison.GEQ: lambda k, q: k >= q, Comparison.NEQ: lambda k, q: k != q,
    Comparison.TRUE: lambda k, q: True, Comparison.FALSE: lambda k, q: False,
}


class Selector(RASPExpr):
    """A boolean matrix ``selected[query][key]``; ``&``, ``|`` and ``~`` combine selectors."""

    default_name = "selector"

    def __and__(self, other: "Selector") -> "Selector":
        return _combine(self, other, lambda a, b: a and b, SelectorAnd)

    def __or__(self, other: "Selector") -> "Selector":
        return _combine(self, other, lambda a, b: a or b, SelectorOr)

    def __invert__(self) -> "Selector":
        if isinstance(self, Select):
            predicate = self.predicate
            return Select(self.keys, self.queries, lambda k, q: not predicate(k, q))
        return SelectorNot(self)


class Select(Selector):
    """``selected[q][k] = predicate(keys[k], queries[q])``."""

    default_name = "select"

    def __init__(self, keys: SOp, queries: SOp, predicate):
        super().__init__()
        if not isinstance(keys, SOp) or not isinstance(queries, SOp):
            raise RASPError("Select needs two SOps (keys, queries) and a predicate")
        if not callable(predicate):
            raise RASPError("Select's predicate must be a Comparison or a function (key, query) -> bool")
        self.keys, self.queries, self.predicate = keys, queries, predicate

    @property
    def children(self):
        return (self.keys, self.queries)


class SelectorAnd(Selector):
    default_name = "selector_and"

    def __init__(self, fst: Selector, snd: Selector):
        super().__init__()
        self.fst, self.snd = fst, snd

    @property
    def children(self):
        return (self.fst, self.snd)


class SelectorOr(SelectorAnd):
    default_name = "selector_or"


class SelectorNot(Selector):
    default_name = "selector_not"

    def __init__(self, inner: Selector):
        super().__init__()
        self.inner = inner

    @property
    def children(self):
        return (self.inner,)


def _combine(fst, snd, op, cls):
    """Two Selects over the same keys and queries become one Select (as tracr simplifies them)."""
    if not isinstance(snd, Selector):
        raise RASPError(f"cannot combine a selector with {type(snd).__name__}")
    if isinstance(fst, Select) and isinstance(snd, Select) and fst.keys is snd.keys and fst.queries is snd.queries:
        p, r = fst.predicate, snd.predicate
        return Select(fst.keys, fst.queries, lambda k, q: op(p(k, q), r(k, q)))
    return cls(fst, snd)


class SelectorWidth(SOp):
    """How many keys the selector selects, at every query."""

    default_name = "selector_width"

    def __init__(self, selector: Selector):
        super().__init__()
        if not isinstance(selector, Selector):
            raise RASPError(f"SelectorWidth needs a Selector, got {type(selector).__name__}")
        self.selector = selector

    @property
    def children(self):
        return (self.selector,)


class Aggregate(SOp):
    """The mean of the selected values at every query; ``default`` where nothing is selected."""

    default_name = "aggregate"

    def __init__(self, selector: Selector, sop: SOp, default: Value = None):
        super().__init__()
        if not isinstance(selector, Selector) or not isinstance(sop, SOp):
            raise RASPError("Aggregate needs a Selector and an SOp")
        if default is not None and not isinstance(default, (str, int, float, bool)):
            raise RASPError(f"Aggregate's default must be None, a number, a string or a bool, got {default!r}")
        self.selector, self.sop, self.default = selector, sop, default

    @property
    def children(self):
        return (self.selector, self.sop)


def numerical(sop: SOp) -> SOp:
    """A copy of ``sop`` stored as one number (its value) in the residual stream."""
    if not isinstance(sop, SOp):
        raise RASPError(f"numerical() takes an SOp, got {type(sop).__name__}")
    return sop.annotated(encoding=Encoding.NUMERICAL)


def categorical(sop: SOp) -> SOp:
    """A copy of ``sop`` stored one-hot (one dimension per value) in the residual stream."""
    if not isinstance(sop, SOp):
        raise RASPError(f"categorical() takes an SOp, got {type(sop).__name__}")
    return sop.annotated(encoding=Encoding.CATEGORICAL)


def get_encoding(sop: SOp) -> Encoding:
    return sop.encoding


def is_numerical(sop: SOp) -> bool:
    return sop.encoding is Encoding.NUMERICAL


def is_categorical(sop: SOp) -> bool:
    return sop.encoding is Encoding.CATEGORICAL
