"""The RASP language with tracr's names (``from tracr.rasp import rasp`` -> ``from expressivity import rasp``).

A program is a tree of expressions. An **SOp** (sequence operation) maps an input sequence
``xs`` (a list of tokens) to one value per position; a **Selector** maps it to a boolean
matrix ``selected[query][key]``. The primitives:

* ``tokens`` (the input), ``indices`` (``0 .. n-1``), ``length`` (``n`` everywhere), ``Full(fill)``,
  ``ConstantSOp(values)`` (a fixed sequence, for testing the interpreter);
* ``Map(f, sop)``, ``SequenceMap(f, a, b)``, ``LinearSequenceMap(a, b, fa, fb)``: per-position
  functions (a ``Map`` of a ``Map`` is fused into one, as in tracr);
* ``Select(keys, queries, predicate)``: ``selected[q][k] = predicate(keys[k], queries[q])``
  (the key comes first, as in tracr); ``Comparison.EQ|LT|LEQ|GT|GEQ|NEQ|TRUE|FALSE`` or any
  function ``(key, query) -> bool``; selectors combine with ``&``, ``|``, ``~`` (or
  :func:`selector_and`, :func:`selector_or`, :func:`selector_not`); ``ConstantSelector(matrix)``;
* ``Aggregate(selector, sop, default=None)``: the mean of the selected values (``default``
  where nothing is selected); ``SelectorWidth(selector)``: how many keys each query selects.

Every expression carries annotations, read through ``expr.annotations[key]``: a key missing
there is filled lazily by ``DEFAULT_ANNOTATORS[key](expr)``, as in tracr (``name``: the class's
default name and the id; ``encoding``: categorical). An SOp's ``encoding`` is categorical (one
residual dimension per value) or numerical (one dimension holding the value), set with
:func:`numerical` / :func:`categorical`; ``.named(...)`` sets the name. Annotating returns a
copy, as in tracr. The operators ``+ - * / < <= == != > >= & | ~`` on SOps build ``Map`` /
``SequenceMap`` expressions.

What a program means is :func:`expressivity.rasp.evaluate` (:mod:`.interpreter`); this module
holds only the data: ``sop(xs)`` calls the evaluator the interpreter installs with
:func:`set_default_evaluator`, so the language does not import the interpreter.
"""

from __future__ import annotations

import collections.abc
import copy
import enum
import itertools
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, TypeVar, Union

from expressivity.errors import ExpressivityError

# tracr's type names. A value is a token or an SOp value (exact means are Fractions here).
Value = Any
NumericValue = Union[int, float]
SelectorValue = List[List[bool]]
VT = TypeVar("VT")
RASPExprT = TypeVar("RASPExprT", bound="RASPExpr")
SOpT = TypeVar("SOpT", bound="SOp")

_NAME_KEY = "name"
_ENCODING_KEY = "encoding"


class RASPError(ExpressivityError):
    """A RASP program is malformed or cannot be compiled; the message says why and what to do."""


class Encoding(enum.Enum):
    """How an SOp is laid out in the residual stream."""

    CATEGORICAL = "categorical"
    NUMERICAL = "numerical"


class Annotator(Protocol):
    """A default annotation: ``annotator(expr)`` is the value of its key for ``expr`` when none was set."""

    def __call__(self, expr: "RASPExpr") -> Any:
        ...


# key -> Annotator, consulted lazily (and once per expression) for keys an expression was not given; add your own
# entries to give every expression a default annotation (tracr's DEFAULT_ANNOTATORS)
DEFAULT_ANNOTATORS: Dict[str, Annotator] = {}


class Annotations(collections.abc.Mapping):
    """An expression's annotations: read-only to the user; a missing key is filled by ``DEFAULT_ANNOTATORS`` (once).
    A copy of the expression carries the given ones only, so a default name follows the copy's own id."""

    def __init__(self, expr: "RASPExpr", **given: Any):
        self._expr = expr
        self.given: Dict[str, Any] = dict(given)
        self._filled: Dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self.given:
            return self.given[key]
        if key not in self._filled:
            if key not in DEFAULT_ANNOTATORS:
                raise KeyError(f"no annotation {key!r}; available: {sorted(set(self.given) | set(DEFAULT_ANNOTATORS))}")
            self._filled[key] = DEFAULT_ANNOTATORS[key](self._expr)
        return self._filled[key]

    def __iter__(self):
        return iter({**self._filled, **self.given})

    def __len__(self) -> int:
        return len({**self._filled, **self.given})

    def __repr__(self) -> str:
        return f"Annotations({ {**self._filled, **self.given}!r})"


_ids = itertools.count(1)
_evaluator: list[Callable] = []   # the interpreter's evaluate, installed by expressivity.rasp.interpreter


def set_default_evaluator(evaluate: Callable[["RASPExpr", Sequence[Value]], Any]) -> None:
    """Make ``evaluate`` the meaning of ``expr(xs)`` (the interpreter calls this once, when it is imported)."""
    _evaluator[:] = [evaluate]


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.strip():
        raise RASPError(f"a name must be a non-empty string, got {name!r}")
    if any(c in name for c in ":\n"):
        raise RASPError(f"name {name!r} contains ':' or a newline; residual dimensions are labelled 'name:value'")


class RASPExpr:
    """Base of SOps and selectors: annotations (``name``, ``encoding``, any of your own) and a unique id."""

    default_name = "expr"

    def __init__(self) -> None:
        self._annotations = Annotations(self)
        self.unique_id = next(_ids)

    @property
    def children(self) -> tuple["RASPExpr", ...]:
        return ()

    @property
    def annotations(self) -> Annotations:
        return self._annotations

    @annotations.setter
    def annotations(self, annotations: Mapping[str, Any]) -> None:
        annotations = dict(annotations)
        if _NAME_KEY in annotations:
            _check_name(annotations[_NAME_KEY])
        if _ENCODING_KEY in annotations:
            annotations[_ENCODING_KEY] = _as_encoding(annotations[_ENCODING_KEY], self)
        self._annotations = Annotations(self, **annotations)

    @property
    def name(self) -> str:
        return self.annotations[_NAME_KEY]

    @property
    def label(self) -> str:
        return self.name

    def copy(self: RASPExprT) -> RASPExprT:
        """A shallow copy with a new id (and the same annotations)."""
        new = copy.copy(self)
        new._annotations = Annotations(new, **self._annotations.given)
        new.unique_id = next(_ids)
        return new

    def annotated(self: RASPExprT, **annotations) -> RASPExprT:
        """A copy with ``annotations`` added (a new id; the original is unchanged)."""
        return annotate(self, **annotations)

    def named(self: RASPExprT, name: str) -> RASPExprT:
        return annotate(self, name=name)

    def __call__(self, xs: Sequence[Value]):
        if not _evaluator:   # only when the package's __init__ was bypassed
            raise RASPError("no RASP evaluator is installed; import expressivity.rasp")
        return _evaluator[0](self, xs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def annotate(expr: RASPExprT, **annotations) -> RASPExprT:
    """A copy of ``expr`` with ``annotations`` added (new ones replace old ones of the same key), as in tracr."""
    if not isinstance(expr, RASPExpr):
        raise RASPError(f"annotate takes a RASP expression, got {type(expr).__name__}")
    if _NAME_KEY in annotations:
        _check_name(annotations[_NAME_KEY])
    if _ENCODING_KEY in annotations:
        annotations[_ENCODING_KEY] = _as_encoding(annotations[_ENCODING_KEY], expr)
    new = expr.copy()
    new._annotations = Annotations(new, **{**expr.annotations.given, **annotations})
    return new


def _as_encoding(value, expr: RASPExpr) -> Encoding:
    if not isinstance(expr, SOp):
        raise RASPError(f"{expr!r} is not an SOp; only SOps have an encoding")
    try:
        return Encoding(value.value if isinstance(value, Encoding) else value)
    except ValueError:
        raise RASPError(f"encoding must be rasp.Encoding.CATEGORICAL or NUMERICAL, got {value!r}") from None


def default_name(expr: RASPExpr) -> str:
    """The name of an expression nobody named: its kind and its id (``map_12``), unique within a program;
    ``length`` is ``length``."""
    return expr.default_name if isinstance(expr, LengthType) else f"{expr.default_name}_{expr.unique_id}"


def default_encoding(expr: RASPExpr) -> Encoding:
    """SOps are categorical unless annotated otherwise; selectors have no encoding."""
    if not isinstance(expr, SOp):
        raise RASPError(f"{expr!r} is not an SOp; only SOps have an encoding")
    return Encoding.CATEGORICAL


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
        return self.annotations[_ENCODING_KEY]

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
    """The input tokens (always named ``tokens``: the compiler's input dimensions are ``tokens:value``)."""

    default_name = "tokens"

    @property
    def name(self) -> str:
        return "tokens"

    def __repr__(self) -> str:
        return "tokens"


class IndicesType(SOp):
    """The positions ``0 .. n-1`` (always named ``indices``)."""

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


def sop_not(sop: SOp) -> SOp:
    """``not x`` at every position (tracr's ``sop_not``; the same as ``~sop``)."""
    return Map(lambda x: not x, sop)


class ConstantSOp(SOp):
    """A fixed sequence ``value`` (for testing the interpreter, as in tracr; the compiler refuses it). With
    ``check_length`` the input must have as many tokens as ``value``."""

    default_name = "constant_sop"

    def __init__(self, value: Sequence[Value], check_length: bool = True):
        super().__init__()
        if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Sequence):
            raise RASPError(f"ConstantSOp needs a list of values, got {type(value).__name__}")
        self.value, self.check_length = list(value), bool(check_length)


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


class Predicate(Protocol):
    """What a Select compares: ``predicate(key, query) -> bool`` (a :class:`Comparison` or any function)."""

    def __call__(self, key: Value, query: Value) -> bool:
        ...


class Selector(RASPExpr):
    """A boolean matrix ``selected[query][key]``; ``&``, ``|`` and ``~`` combine selectors."""

    default_name = "selector"

    def __and__(self, other: "Selector") -> "Selector":
        return selector_and(self, other)

    def __rand__(self, other: "Selector") -> "Selector":
        return selector_and(other, self)

    def __or__(self, other: "Selector") -> "Selector":
        return selector_or(self, other)

    def __ror__(self, other: "Selector") -> "Selector":
        return selector_or(other, self)

    def __invert__(self) -> "Selector":
        return selector_not(self)


class Select(Selector):
    """``selected[q][k] = predicate(keys[k], queries[q])``."""

    default_name = "select"

    def __init__(self, keys: SOp, queries: SOp, predicate: Predicate):
        super().__init__()
        if not isinstance(keys, SOp) or not isinstance(queries, SOp):
            raise RASPError("Select needs two SOps (keys, queries) and a predicate")
        if not callable(predicate):
            raise RASPError("Select's predicate must be a Comparison or a function (key, query) -> bool")
        self.keys, self.queries, self.predicate = keys, queries, predicate

    @property
    def children(self):
        return (self.keys, self.queries)


class ConstantSelector(Selector):
    """A fixed matrix ``value[query][key]`` (for testing the interpreter, as in tracr; the compiler refuses it)."""

    default_name = "constant_selector"

    def __init__(self, value: SelectorValue, check_length: bool = True):
        super().__init__()
        try:
            rows = [[bool(v) for v in row] for row in value]
        except TypeError:
            raise RASPError(f"ConstantSelector needs a matrix (a list of lists of bools), got {value!r:.80}") from None
        self.value, self.check_length = rows, bool(check_length)


class SelectorAnd(Selector):
    """Selected where both selectors select."""

    default_name = "selector_and"

    def __init__(self, fst: Selector, snd: Selector):
        super().__init__()
        if not isinstance(fst, Selector) or not isinstance(snd, Selector):
            raise RASPError(f"{type(self).__name__} combines two Selectors, got {type(fst).__name__} and "
                            f"{type(snd).__name__}")
        self.fst, self.snd = fst, snd

    @property
    def children(self):
        return (self.fst, self.snd)


class SelectorOr(SelectorAnd):
    """Selected where either selector selects."""

    default_name = "selector_or"


class SelectorNot(Selector):
    """Selected where the inner selector does not select."""

    default_name = "selector_not"

    def __init__(self, inner: Selector):
        super().__init__()
        if not isinstance(inner, Selector):
            raise RASPError(f"SelectorNot takes a Selector, got {type(inner).__name__}")
        self.inner = inner

    @property
    def children(self):
        return (self.inner,)


def selector_not(inner: Selector, simplify: bool = True) -> Selector:
    """``~inner``: a Select with the negated predicate when ``inner`` is a Select (and ``simplify``), else a
    :class:`SelectorNot`."""
    if simplify and isinstance(inner, Select):
        predicate = inner.predicate
        return Select(inner.keys, inner.queries, lambda k, q: not predicate(k, q))
    return SelectorNot(inner)


def selector_and(fst: Selector, snd: Selector, simplify: bool = True) -> Selector:
    """``fst & snd``: one Select when both read the same keys and queries (see :func:`_simplified`), else a
    :class:`SelectorAnd`."""
    combined = _simplified(fst, snd, lambda a, b: a and b) if simplify else None
    return combined or SelectorAnd(fst, snd)


def selector_or(fst: Selector, snd: Selector, simplify: bool = True) -> Selector:
    """``fst | snd``: one Select when both read the same keys and queries, else a :class:`SelectorOr`."""
    combined = _simplified(fst, snd, lambda a, b: a or b) if simplify else None
    return combined or SelectorOr(fst, snd)


def _simplified(fst, snd, combine: Callable[[bool, bool], bool]) -> Optional[Select]:
    """Two Selects as one Select with the combined predicate, when their keys and their queries are the same SOps;
    a ``Full`` keys (queries) SOp matches any, its fill baked into its predicate (tracr's rule). ``None`` otherwise."""
    for sel in (fst, snd):
        if not isinstance(sel, Selector):
            raise RASPError(f"a selector combines only with a Selector, got {type(sel).__name__}")
    if not isinstance(fst, Select) or not isinstance(snd, Select):
        return None
    p, r = fst.predicate, snd.predicate
    keys = queries = None
    if isinstance(fst.keys, Full):
        keys, p = snd.keys, (lambda k, q, p=p, fill=fst.keys.fill: p(fill, q))
    if isinstance(snd.keys, Full):
        keys, r = fst.keys, (lambda k, q, r=r, fill=snd.keys.fill: r(fill, q))
    if isinstance(fst.queries, Full):
        queries, p = snd.queries, (lambda k, q, p=p, fill=fst.queries.fill: p(k, fill))
    if isinstance(snd.queries, Full):
        queries, r = fst.queries, (lambda k, q, r=r, fill=snd.queries.fill: r(k, fill))
    if fst.keys is snd.keys:
        keys = fst.keys
    if fst.queries is snd.queries:
        queries = fst.queries
    if keys is None or queries is None:
        return None
    return Select(keys, queries, lambda k, q: combine(p(k, q), r(k, q)))


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


class LengthType(SelectorWidth):
    """The input's length ``n`` at every position (tracr's ``rasp.length``): the width of the all-true selector on
    ``tokens``, which is how the compiler builds it (tracr's ``lib.make_length``)."""

    default_name = "length"

    def __init__(self):
        super().__init__(Select(tokens, tokens, Comparison.TRUE))

    def __repr__(self) -> str:
        return "length"


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


length = LengthType()
DEFAULT_ANNOTATORS[_NAME_KEY] = default_name
DEFAULT_ANNOTATORS[_ENCODING_KEY] = default_encoding
