"""Compiler stage 2: the finite set of values every SOp can take on inputs of length 1..L.

``tokens``: the vocabulary; ``indices``: ``0..L-1``; ``Map`` / ``SequenceMap``: the function on
every value (pair); ``SelectorWidth``: ``0..L``; a categorical ``Aggregate``: the values of what
it copies, and ``None`` unless every query provably selects a key (:mod:`.selection`); a
numerical ``Aggregate``: every mean of 1..L values of what it averages, and its default 0 (tracr
takes ``{v / n}``, which misses ``2/3`` in ``frac_prevs``: the means here are all of them). A
value set larger than ``max_values`` is refused with its size. A function raising
``ArithmeticError`` on a value pair that cannot occur together is skipped, as in tracr; where the
pair does occur, ``rasp.evaluate`` raises too.

**Values are typed.** ``True``, ``1`` and ``1.0`` are equal in Python but not to every function
(``str``, ``x / 3`` on a bool or a float gives a float, on an int a ``Fraction``), so a value set
keeps them apart (:func:`value_key`): each gets its own residual dimension, and every block is
proven on each of them. A whole ``Fraction`` is the ``int`` it equals (:func:`canonical`): the
interpreter makes every exact number a function returns or a mean gives canonical, and so do the value
sets, so ``Fraction(2)`` never stands beside ``2`` (where it did, ``x / 3`` was a Fraction on one and a
float on the other, and one network answered ``0.333...`` where ``evaluate`` said ``1/3``, a fresh
audit, 2026-11-28). Their keys differ all the same, so a whole Fraction that a token brings in stays
apart.

**None** (an empty categorical Aggregate, and what Maps of it give) has no dimension: a
categorical SOp holds it as all-zero. A numerical SOp cannot hold it (0 would be read), so a
numerical SOp that may be ``None`` is refused here, with where the ``None`` comes from.

**Float means.** The interpreter averages floats in float64; the network holds the exact mean
of the stored rationals. Where every partial sum is exact in float64 and every mean is a float,
the two agree and downstream blocks are proven on both typed forms. Otherwise a float mean is
compiled only as the program's output, within the tolerance :func:`float_mean_tolerance` states.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.language import RASPError

MAX_VALUES = 4096            # values of a categorical SOp (one residual dimension each)
MAX_NUMERICAL_VALUES = 200_000   # values of a numerical SOp (one dimension; feed-forward knots where f changes)
MAX_PAIRS = 20_000_000       # value pairs a SequenceMap's function is applied to (about 10 s of Python calls)
FLOAT_BITS = 53


def canonical(v):
    """``v`` with a whole ``Fraction`` made the ``int`` it equals (anything else unchanged): the one form
    of an exact number that the interpreter's results and the value sets share."""
    return int(v) if type(v) is Fraction and v.denominator == 1 else v


def value_key(v) -> tuple:
    """A hashable key that tells apart values Python calls equal but functions may not (``True``, ``1``,
    ``Fraction(1)``, ``1.0``, ``-0.0``). Raises ``TypeError`` for unhashable values."""
    if v is None:
        return ("none",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, Fraction):
        return ("fraction", v)
    if isinstance(v, float):
        return ("float", v, math.copysign(1.0, v) < 0)
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, tuple):
        return ("tuple", tuple(value_key(x) for x in v))
    hash(v)
    return ("other", type(v).__qualname__, v)


def unique_values(values) -> list:
    """``values`` without repeats (by :func:`value_key`), in first-seen order."""
    return list({value_key(v): v for v in reversed(list(values))}.values())[::-1]


def index_of(values: list) -> dict:
    """``value_key -> position`` in ``values``."""
    return {value_key(v): k for k, v in enumerate(values)}


def sort_values(values) -> list:
    """Values in a stable order: numbers (bools as numbers; equal ones bool, int, Fraction, -0.0, float) ascending, then
    strings, then the rest by repr."""
    def key(v):
        if isinstance(v, bool):
            return (0, v, 0, "")
        if isinstance(v, int):
            return (0, v, 1, "")
        if isinstance(v, Fraction):
            return (0, v, 1.25, "")
        if isinstance(v, float):
            return (0, v, 2 if v or math.copysign(1.0, v) > 0 else 1.5, "")
        return (1, 0, 0, str(v)) if isinstance(v, str) else (2, 0, 0, repr(v))
    return sorted(unique_values(values), key=key)


def stored(v) -> int | Fraction:
    """The number a numerical SOp's dimension holds for the value ``v`` (bools as 0/1, floats exactly)."""
    if type(v) is int:
        return v
    q = Fraction(v)
    return int(q) if q.denominator == 1 else q


def _apply(f, *args, name: str = "a function"):
    try:
        return True, f(*args)   # a node's function gives canonical numbers already (graph._canonical)
    except ArithmeticError:
        return False, None
    except RASPError:
        raise
    except RecursionError:   # a Map of a Map is one composed function: ~1,000 of them nest past Python's stack
        raise RASPError(f"{name}: its function nests too deeply for Python to call (a chain of about 1,000 or more "
                        "Maps, which compose into one function); shorten the chain, or fold steps into one Map") from None
    except Exception as exc:   # e.g. comparing a string token with a number: the program does not fit the vocab
        raise RASPError(f"{name}: its function fails on {args!r} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:160]}); check the vocabulary") from None


def infer_values(graph: Graph, vocab: list, max_seq_len: int, max_values: int = MAX_VALUES) -> dict[int, list]:
    """Stage 2: node id -> sorted list of the values it can take (``None`` last where it may occur). Also
    computes each Select's predicate table (``node.table``, :mod:`.selection`) and each float mean's tolerance
    (``node.tolerance``)."""
    from expressivity.rasp.selection import always_selects, predicate_table

    values: dict[int, list] = {}
    for node in graph.nodes:
        if node.kind in ("aggregate", "selector_width"):
            node.table = predicate_table(node, graph, values)
            node.nonempty = always_selects(node, graph, values)
        try:
            found = unique_values(_values_of(node, graph, values, vocab, max_seq_len, max_values))
        except TypeError as exc:
            raise RASPError(f"SOp {node.name!r} takes an unhashable value ({exc}); RASP values are numbers, strings, "
                            "bools, None or tuples of them") from None
        values[node.id] = _checked(node, graph, found, max_seq_len, max_values)
    return values


def _checked(node: Node, graph: Graph, found: list, max_seq_len: int, max_values: int) -> list:
    has_none = any(v is None for v in found)
    found = [v for v in found if v is not None]
    limit = max(max_values, MAX_NUMERICAL_VALUES) if node.numerical else max_values
    if len(found) > limit:
        raise RASPError(f"SOp {node.name!r} takes {len(found)} values at max_seq_len {max_seq_len}, above the budget "
                        f"of {limit} for a {node.encoding.value} SOp; shorten max_seq_len or simplify the SOp")
    for v in found:
        if node.numerical and not isinstance(v, (int, float, Fraction)):
            raise RASPError(f"SOp {node.name!r} is numerical but takes the value {v!r}; numerical SOps hold numbers "
                            f"(use rasp.categorical)")
        if isinstance(v, float) and not math.isfinite(v):
            raise RASPError(f"SOp {node.name!r} takes the value {v}, which no network can hold")
    if has_none and node.numerical:
        raise RASPError(f"numerical SOp {node.name!r} may be None ({_none_origin(node, graph)}); a numerical dimension "
                        "holds 0 for None: make it categorical, or give the Aggregate a key every query selects")
    return sort_values(found) + ([None] if has_none else [])


def _none_origin(node: Node, graph: Graph) -> str:
    if node.kind == "aggregate":
        return "an Aggregate with default None that may select nothing"
    source = next((graph.nodes[i].name for i in node.inputs), "its input")
    return f"it reads {source!r}, which may be None"


def _values_of(node: Node, graph: Graph, values: dict, vocab: list, L: int, budget: int):
    ins = [values[i] for i in node.inputs]
    if node.kind == "tokens":
        return vocab
    if node.kind == "indices":
        return range(L)
    if node.kind == "full":
        return [node.fill]
    if node.kind == "map":
        found = []
        for x in ins[0]:
            if x is not None:
                ok, r = _apply(node.f, x, name=node.name)
                if ok:
                    found.append(r)
                elif node.fails_on is None:
                    node.fails_on = (x,)
        return found + ([None] if None in ins[0] else [])
    if node.kind == "sequence_map":
        return _pairs(node, ins[0], ins[1], L, budget)
    if node.kind == "selector_width":
        return range(L + 1)
    if node.kind == "aggregate":
        copied = ins[2]
        empty = [] if node.nonempty else [node.default]
        if not node.numerical:
            return list(copied) + empty
        return _means(node, graph, [v for v in copied if v is not None], L, budget) + empty
    raise RASPError(f"no value rule for {node.kind}")


def _pairs(node: Node, first: list, second: list, L: int, budget: int) -> list:
    """The values a SequenceMap takes over every pair of its inputs' values: refused before the
    product is walked where it has more than :data:`MAX_PAIRS` pairs, and as soon as more distinct
    values than its budget come out (it took minutes and the memory of the whole product, then
    refused: a fresh audit, 2026-11-28)."""
    xs, ys = [x for x in first if x is not None], [y for y in second if y is not None]
    if len(xs) * len(ys) > MAX_PAIRS:
        raise RASPError(f"SOp {node.name!r} applies its function to {len(xs):,} x {len(ys):,} = {len(xs) * len(ys):,} "
                        f"value pairs at max_seq_len {L}, above the budget of {MAX_PAIRS:,}; shorten max_seq_len or "
                        "simplify its inputs")
    limit = max(budget, MAX_NUMERICAL_VALUES) if node.numerical else budget
    found: dict = {}
    for x in xs:
        for y in ys:
            ok, r = _apply(node.f, x, y, name=node.name)
            if ok:
                found.setdefault(value_key(r), r)
            elif node.fails_on is None:
                node.fails_on = (x, y)
        if len(found) > limit:
            raise RASPError(f"SOp {node.name!r} takes more than {limit} values at max_seq_len {L}, above the budget "
                            f"of {limit} for a {node.encoding.value} SOp; shorten max_seq_len or simplify the SOp")
    return list(found.values()) + ([None] if None in first or None in second else [])


def _means(node: Node, graph: Graph, numbers: list, L: int, budget: int) -> list:
    """What a numerical mean of 1..L of ``numbers`` (with repetition) can be, typed as the interpreter types it:
    one selected value is itself; more are an exact mean (int / Fraction) when none is a float, else a float
    (see the module notes)."""
    numbers = [canonical(v) for v in numbers]   # one selected value is itself, canonical as the interpreter gives it
    exact = sorted({stored(v) for v in numbers})
    sums_all = _mean_set(node, exact, L, budget)
    floats = [v for v in numbers if isinstance(v, float)]
    if not floats:
        return list(numbers) + sorted(sums_all)
    exact_only = sorted({stored(v) for v in numbers if not isinstance(v, float)})
    out = list(numbers) + sorted(_mean_set(node, exact_only, L, budget)) if exact_only else list(numbers)
    if _float_sums_exact(exact, L) and all(Fraction(float(r)) == r for r in sums_all):
        return out + [float(r) for r in sums_all]
    if graph.users(node.id):
        example = ", ".join(map(repr, floats[:3]))
        raise RASPError(f"numerical Aggregate {node.name!r} averages floats ({example}) whose float64 means differ "
                        "from the exact means the network holds; such a mean is compiled only as the program's "
                        "output (within a stated tolerance): use exact numbers (ints, Fractions) to feed it on")
    node.tolerance = float_mean_tolerance(exact, L, node.name)
    return out + sorted(sums_all)


def _mean_set(node: Node, numbers: list, L: int, budget: int) -> set:
    """Every mean of 2..L of ``numbers`` (exact rationals, normalised: whole ones as ints)."""
    if not numbers:
        return set()
    if set(numbers) <= {0, 1}:   # the common case, by formula: k/n
        lo, hi = (0 if 0 in numbers else 1), (1 if 1 in numbers else 0)
        return {_normal(Fraction(k, n)) for n in range(2, L + 1) for k in range(lo * n, hi * n + 1)
                if (k == 0 or 1 in numbers) and (k == n or 0 in numbers)}
    out, sums = set(), set(numbers)
    for n in range(2, L + 1):
        sums = {s + v for s in sums for v in numbers}
        if len(sums) * L > 50 * budget:
            raise RASPError(f"numerical Aggregate {node.name!r} averages {len(numbers)} distinct values over up to {L} "
                            "positions: too many possible means; average a 0/1 SOp or shorten max_seq_len")
        out |= {_normal(Fraction(s) / n) for s in sums}
    return out


def _normal(q: Fraction):
    return int(q) if q.denominator == 1 else q


def _float_sums_exact(exact: list, L: int) -> bool:
    """True when every sum of at most ``L`` of these numbers, in any order, is exact in float64: all are
    dyadic and ``L * max|v| * 2^e < 2^53`` for the finest binary exponent ``e``."""
    dens = [Fraction(v).denominator for v in exact]
    if any(d & (d - 1) for d in dens):
        return False
    e = max(d.bit_length() - 1 for d in dens)
    return L * max(abs(v) for v in exact) * 2 ** e < 2 ** FLOAT_BITS


FLOAT_MAX = Fraction(sys.float_info.max)
SUBNORMAL = 2.0 ** -1074   # float64's smallest positive number: below 2^-1022 rounding is absolute, up to half this


def magnitude(q) -> str:
    """An exact number's size for a message (``1e+308``; ``about 10^400`` beyond float64, never an OverflowError)."""
    q = abs(Fraction(q))
    return f"{float(q):.3g}" if q <= FLOAT_MAX else f"about 10^{len(str(int(q))) - 1}"


def float_mean_tolerance(exact: list, L: int, name: str = "") -> float:
    """A bound on ``|evaluate's float64 mean - exact mean|`` of at most ``L`` of these numbers: each of the ``n``
    values is rounded to float64 once (relative ``u = 2^-53``), ``n - 1`` additions each add at most ``u`` times
    the running sum, the division one ``u``: in all below ``2 (L + 1) u max|v|`` while ``L u < 1/2``. Where the
    numbers are subnormal, rounding is absolute: each of the ``L + 1`` operations (and the ``L`` conversions)
    adds up to half of 2^-1074, so ``(L + 1) 2^-1074`` more (a mean of 5e-324 and 0 was 0.0 in evaluate, 2^-1075
    in the network, and the tolerance had underflowed to 0, read as "equal": a fresh audit, 2026-11-29).

    Refused (RASPError) where a sum of ``L`` of them can leave float64 (``L max|v| (1 + 2 L u)`` above its
    largest number): evaluate's mean is then ``inf`` or an OverflowError, which no network holds (1e308 averaged
    over three positions compiled, exit 0, with a tolerance of 8.9e292: the same audit)."""
    largest = max(abs(Fraction(v)) for v in exact)
    if L * largest * (1 + Fraction(2 * L, 2 ** FLOAT_BITS)) > FLOAT_MAX:
        raise RASPError(f"numerical Aggregate {name!r} averages values up to {magnitude(largest)} over up to {L} "
                        f"positions: evaluate's float64 sum of them can overflow (beyond {sys.float_info.max:.3g}); "
                        "scale the values down, or use exact numbers (ints, Fractions) throughout")
    u = 2.0 ** -FLOAT_BITS
    return 2 * (L + 1) * u * float(largest) + (L + 1) * SUBNORMAL
