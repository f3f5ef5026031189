"""Random well-typed RASP programs for the compiler's fuzz suite (tests/rasp/test_fuzz.py).

``random_program(rng, depth)`` draws a program over integer tokens from every construct the
compiler takes: Maps and SequenceMaps (one SOp twice included), LinearSequenceMaps, numerical and
categorical annotations, Selects with Comparisons and lambdas, selector ``& | ~`` on one key/query
pair, categorical and numerical Aggregates (defaults ``None`` and 0), SelectorWidths. Functions
are total on integers and bools (two give ``None``, which later Maps must not see), and keep values small, so
value sets stay within the budgets.
"""

from __future__ import annotations

import random

from expressivity import rasp

UNARY = [
    ("x+1", lambda x: x + 1), ("x-1", lambda x: x - 1), ("-x", lambda x: -x), ("x%3", lambda x: x % 3),
    ("x//2", lambda x: x // 2), ("min(x,2)", lambda x: min(x, 2)), ("x>1", lambda x: x > 1),
    ("x==0", lambda x: x == 0), ("2x", lambda x: 2 * x), ("abs", lambda x: abs(x)), ("not x", lambda x: not x),
    ("1 if x else 0", lambda x: 1 if x else 0), ("x/2", lambda x: x / 2),
    ("str-ish", lambda x: "odd" if x % 2 else "even"), ("None at 0", lambda x: None if x == 0 else x),
]
BINARY = [
    ("x+y", lambda x, y: x + y), ("x*y", lambda x, y: x * y), ("x-y", lambda x, y: x - y), ("max", max),
    ("min", min), ("x==y", lambda x, y: x == y), ("x<y", lambda x, y: x < y), ("(x+y)%3", lambda x, y: (x + y) % 3),
    ("x if y else 0", lambda x, y: x if y else 0), ("x and y", lambda x, y: x and y),
    ("None if x==y", lambda x, y: None if x == y else x),
    ("(x,y)", lambda x, y: (x, y) if not isinstance(x, tuple) else x),
]
PREDICATES = list(rasp.Comparison) + [
    lambda k, q: k == q + 1, lambda k, q: k % 2 == q % 2, lambda k, q: k == 0, lambda k, q: q == k + 1,
    lambda k, q: k <= 1,
]


def _numbers(sop) -> bool:
    """Whether a random function of numbers suits ``sop`` (a tuple- or string-valued one would fail)."""
    return not getattr(sop, "_fuzz_text", False)


def random_program(rng: random.Random, depth: int):
    """A random program of at most ``depth`` levels (see the module notes)."""
    if depth == 0 or rng.random() < 0.2:
        leaf = rng.choice([rasp.tokens, rasp.indices, rasp.Full(rng.randint(0, 2)), rasp.numerical(rasp.tokens)])
        return leaf
    kind = rng.choices(["map", "seqmap", "linear", "width", "cat_agg", "num_agg"], [3, 3, 1, 2, 3, 2])[0]
    a = random_program(rng, depth - 1)
    if kind == "map":
        name, f = rng.choice(UNARY if _numbers(a) else [("id", lambda x: x)])
        out = rasp.Map(f, _recode(a, rasp.categorical) if rng.random() < 0.5 else a)
        out._fuzz_text = name == "str-ish" or not _numbers(a)
        return _annotate(rng, out)
    if kind == "seqmap":
        b = a if rng.random() < 0.2 else random_program(rng, depth - 1)
        name, f = rng.choice(BINARY if _numbers(a) and _numbers(b) else [("(x,y)", BINARY[-1][1])])
        out = rasp.SequenceMap(f, a, b)
        out._fuzz_text = name == "(x,y)" or not (_numbers(a) and _numbers(b))
        return _annotate(rng, out)
    if kind == "linear":
        b = random_program(rng, depth - 1)
        if not (_numbers(a) and _numbers(b)):
            return a
        return rasp.numerical(rasp.LinearSequenceMap(_recode(a, rasp.numerical), _recode(b, rasp.numerical),
                                                     rng.choice([1, -1, 2]), rng.choice([1, -1, 3])))
    select = _select(rng, a, random_program(rng, depth - 1))
    if kind == "width":
        return _annotate(rng, rasp.SelectorWidth(select))
    values = random_program(rng, depth - 1)
    if kind == "cat_agg":
        out = rasp.Aggregate(select, _recode(values, rasp.categorical))
        out._fuzz_text = not _numbers(values)
        return out
    if not _numbers(values):
        return a
    weights = rasp.numerical(rasp.Map(rng.choice([lambda x: x == 1, lambda x: x % 2, lambda x: min(abs(x), 2)]),
                                      values))
    return rasp.numerical(rasp.Aggregate(select, weights, default=None if rng.random() < 0.25 else 0))


def _select(rng: random.Random, keys, queries):
    keys, queries = _recode(keys, rasp.categorical), _recode(queries, rasp.categorical)
    if not (_numbers(keys) and _numbers(queries)):
        return rasp.Select(keys, queries, rasp.Comparison.EQ)
    select = rasp.Select(keys, queries, rng.choice(PREDICATES))
    roll = rng.random()
    if roll < 0.1:
        return select & rasp.Select(keys, queries, rng.choice(PREDICATES))
    if roll < 0.2:
        return select | rasp.Select(keys, queries, rng.choice(PREDICATES))
    if roll < 0.25:
        return ~select
    return select


def _recode(sop, encoding):
    """``sop`` with ``encoding``: an annotated copy, or (for an Aggregate, whose encoding fixes what it
    averages) an identity Map of it with that encoding."""
    if isinstance(sop, rasp.Aggregate) and encoding(sop).encoding is not sop.encoding:
        out = encoding(rasp.Map(lambda x: x, sop))
    else:
        out = encoding(sop)
    out._fuzz_text = getattr(sop, "_fuzz_text", False)
    return out


def _annotate(rng: random.Random, sop):
    roll = rng.random()
    if roll < 0.25 and _numbers(sop):
        out = rasp.numerical(sop)
    elif roll < 0.35:
        out = rasp.categorical(sop)
    else:
        return sop
    out._fuzz_text = getattr(sop, "_fuzz_text", False)
    return out
