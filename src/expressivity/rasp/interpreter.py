"""The reference interpreter: what a RASP program means (tracr's semantics, exact arithmetic).

``evaluate(program, xs)`` returns one value per position for an SOp and the boolean matrix
``selected[query][key]`` for a selector. Differences from tracr's evaluator, all in the direction
of exactness: means of integers are ``Fraction`` (an ``int`` when they divide) rather than
floats, and a whole ``Fraction`` a function returns is the ``int`` it equals (one form of every
exact number: :func:`~.values.canonical`); a categorical Aggregate whose query selects several keys holding one value copies that
value (tracr's evaluator averages it: ``[True, True]`` gives ``1.0``, ``["a", "a"]`` raises; tracr's
compiled head copies it, as ours does); a function or predicate that raises (e.g. a division by
zero, comparing a string with a number) is an error of the program, reported in one line with the
SOp's name.
:class:`DefaultRASPEvaluator` is tracr's object form of the same function. Importing this module
installs ``evaluate`` as the meaning of ``expr(xs)`` (:func:`~.language.set_default_evaluator`).
"""

from __future__ import annotations

import abc
import math
import sys
from fractions import Fraction
from typing import Sequence

from expressivity.rasp.language import (Aggregate, ConstantSelector, ConstantSOp, Encoding, Full, IndicesType,
                                        LengthType, Map, RASPError, RASPExpr, Select, SelectorAnd, SelectorNot, SelectorOr,
                                        SelectorWidth, SequenceMap, SOp, TokensType, Value, set_default_evaluator)
from expressivity.rasp.values import canonical, value_key


def mean(values: Sequence[Value], default: Value) -> Value:
    """The mean of ``values`` (``default`` if empty); exact for ints, bools and Fractions."""
    if not values:
        return default
    if len(values) == 1:
        return canonical(values[0])
    if all(isinstance(v, (int, Fraction)) for v in values):   # bool is an int
        q = Fraction(sum(values), len(values))
        return int(q) if q.denominator == 1 else q
    if all(isinstance(v, (int, float, Fraction)) for v in values):
        try:
            total = sum(float(v) for v in values)
        except OverflowError:   # an int or Fraction beyond float64 (a traceback: a fresh audit, 2026-11-29)
            total = math.inf
        if not math.isfinite(total) and all(not isinstance(v, float) or math.isfinite(v) for v in values):
            raise RASPError(f"Aggregate's float64 mean of {len(values)} values overflows (beyond "
                            f"{sys.float_info.max:.3g}); scale the values down, or use exact numbers (ints, "
                            "Fractions) throughout")
        return total / len(values)
    raise RASPError(f"Aggregate can only average numbers and bools; it selected {list(values)[:6]}")


def evaluate(program: RASPExpr, xs: Sequence[Value]):
    """Evaluate ``program`` on the input ``xs`` (a list of tokens); memoised over shared sub-expressions."""
    if not isinstance(program, RASPExpr):
        raise RASPError(f"evaluate needs a RASP SOp or Selector, got {type(program).__name__}")
    try:
        xs = list(xs)
    except TypeError:
        raise RASPError(f"evaluate needs a sequence of tokens, got {type(xs).__name__}") from None
    memo: dict[int, object] = {}
    return _eval(program, xs, memo)


def _eval(expr: RASPExpr, xs: list, memo: dict):
    key = id(expr)
    if key not in memo:
        memo[key] = _EVAL[_kind(expr)](expr, xs, memo)
    return memo[key]


def _kind(expr: RASPExpr) -> type:
    for cls in _EVAL:
        if isinstance(expr, cls):
            return cls
    raise RASPError(f"the interpreter has no rule for {type(expr).__name__}")


def _call(expr, f, *args):
    try:
        return canonical(f(*args))
    except RASPError:
        raise
    except Exception as exc:   # a user's function may raise anything; report it in one line with the SOp's name
        raise RASPError(f"{expr.name}: its function fails on {args!r} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:160]}); check that the input's tokens are ones the program "
                        "takes") from None


def _map(expr: Map, xs, memo):
    return [None if x is None else _call(expr, expr.f, x) for x in _eval(expr.inner, xs, memo)]


def _sequence_map(expr: SequenceMap, xs, memo):
    a, b = _eval(expr.fst, xs, memo), _eval(expr.snd, xs, memo)
    return [None if x is None or y is None else _call(expr, expr.f, x, y) for x, y in zip(a, b)]


def _select(expr: Select, xs, memo):
    keys, queries = _eval(expr.keys, xs, memo), _eval(expr.queries, xs, memo)
    return [[bool(_call(expr, expr.predicate, k, q)) for k in keys] for q in queries]


def copied(values: Sequence[Value], default: Value) -> Value:
    """A categorical Aggregate's value: the one value its query selected, however many keys hold it
    (``[True, True]`` is ``True``, ``["a", "a"]`` is ``"a"``, ``[-0.0, -0.0]`` is ``-0.0``: a copy,
    as the compiled head's average of equal one-hot vectors is), else the :func:`mean`."""
    if len(values) > 1:
        try:
            if len({value_key(v) for v in values}) == 1:
                return values[0]
        except TypeError:   # an unhashable value: the mean says what is wrong with it
            pass
    return mean(values, default)


def _aggregate(expr: Aggregate, xs, memo):
    selected, values = _eval(expr.selector, xs, memo), _eval(expr.sop, xs, memo)
    combine = mean if expr.encoding is Encoding.NUMERICAL else copied
    return [combine([v for s, v in zip(row, values) if s], expr.default) for row in selected]


def _selector_width(expr: SelectorWidth, xs, memo):
    return [sum(row) for row in _eval(expr.selector, xs, memo)]


def _constant(expr, xs, memo):
    if expr.check_length and len(expr.value) != len(xs):
        raise RASPError(f"{expr.name}: the constant has {len(expr.value)} entries but the input {len(xs)} tokens "
                        "(give check_length=False to allow it)")
    return list(expr.value)


def _binary_selector(op):
    def run(expr, xs, memo):
        a, b = _eval(expr.fst, xs, memo), _eval(expr.snd, xs, memo)
        return [[op(x, y) for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
    return run


_EVAL = {
    TokensType: lambda e, xs, memo: list(xs),
    IndicesType: lambda e, xs, memo: list(range(len(xs))),
    LengthType: lambda e, xs, memo: [len(xs)] * len(xs),   # before SelectorWidth: it subclasses it
    Full: lambda e, xs, memo: [e.fill] * len(xs),
    ConstantSOp: _constant,
    ConstantSelector: _constant,
    Map: _map,
    SequenceMap: _sequence_map,
    Aggregate: _aggregate,
    SelectorWidth: _selector_width,
    Select: _select,
    SelectorOr: _binary_selector(lambda a, b: a or b),      # before SelectorAnd: it subclasses it
    SelectorAnd: _binary_selector(lambda a, b: a and b),
    SelectorNot: lambda e, xs, memo: [[not v for v in row] for row in _eval(e.inner, xs, memo)],
}


class RASPEvaluator(abc.ABC):
    """tracr's interface of an evaluator: ``evaluate(expr, xs)``."""

    @abc.abstractmethod
    def evaluate(self, expr: RASPExpr, xs: Sequence[Value]):
        """The value of ``expr`` on the input ``xs``."""


class DefaultRASPEvaluator(RASPEvaluator):
    """The reference interpreter as an object (tracr's name): ``DefaultRASPEvaluator().evaluate(expr, xs)`` is
    :func:`evaluate`."""

    def evaluate(self, expr: RASPExpr, xs: Sequence[Value]):
        return evaluate(expr, xs)


set_default_evaluator(evaluate)
