"""Compiler stage 2: the finite set of values every SOp can take on inputs of length 1..L.

``tokens``: the vocabulary; ``indices``: ``0..L-1``; ``Map`` / ``SequenceMap``: the function on
every value (pair); ``SelectorWidth``: ``0..L``; a categorical ``Aggregate``: the values of
what it copies (and ``None`` where nothing is selected); a numerical ``Aggregate``: every mean
of 1..L values of what it averages, and 0. (tracr takes ``{v / n}``, which misses ``2/3`` in
``frac_prevs``: the means here are all of them.) A value set larger than ``max_values`` is
refused with its size. A function raising ``ArithmeticError`` on a value pair that cannot occur
together is skipped, as in tracr; if the pair does occur, verification fails.
"""

from __future__ import annotations

from fractions import Fraction

from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.interpreter import mean
from expressivity.rasp.language import RASPError

MAX_VALUES = 4096            # values of a categorical SOp (one residual dimension each)
MAX_NUMERICAL_VALUES = 200_000   # values of a numerical SOp (one dimension; feed-forward knots where f changes)


def sort_values(values) -> list:
    """Values in a stable order: numbers (bools as numbers) ascending, then strings, then the rest by repr."""
    def key(v):
        if isinstance(v, (int, float, Fraction)):
            return (0, v, "")
        return (1, 0, str(v)) if isinstance(v, str) else (2, 0, repr(v))
    return sorted(values, key=key)


def _apply(f, *args, name: str = "a function"):
    try:
        return True, f(*args)
    except ArithmeticError:
        return False, None
    except RASPError:
        raise
    except Exception as exc:   # e.g. comparing a string token with a number: the program does not fit the vocab
        raise RASPError(f"{name}: its function fails on {args!r} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:160]}); check the vocabulary") from None


def infer_values(graph: Graph, vocab: list, max_seq_len: int, max_values: int = MAX_VALUES) -> dict[int, list]:
    """Stage 2: node id -> sorted list of the values it can take (``None`` last where it may be empty)."""
    values: dict[int, list] = {}
    for node in graph.nodes:
        found = _values_of(node, values, vocab, max_seq_len, max_values)
        has_none = None in found
        found = {v for v in found if v is not None}
        limit = max(max_values, MAX_NUMERICAL_VALUES) if node.numerical else max_values
        if len(found) > limit:
            raise RASPError(f"SOp {node.name!r} takes {len(found)} values at max_seq_len {max_seq_len}, above the budget "
                            f"of {limit} for a {node.encoding.value} SOp; shorten max_seq_len or simplify the SOp")
        for v in found:
            if node.numerical and not isinstance(v, (int, float, Fraction)):
                raise RASPError(f"SOp {node.name!r} is numerical but takes the value {v!r}; numerical SOps hold numbers "
                                f"(use rasp.categorical)")
            if isinstance(v, float) and v != v:
                raise RASPError(f"SOp {node.name!r} takes the value NaN, which no network can hold")
        values[node.id] = sort_values(found) + ([None] if has_none else [])
    return values


def _values_of(node: Node, values: dict, vocab: list, L: int, budget: int) -> set:
    ins = [values[i] for i in node.inputs]
    if node.kind == "tokens":
        return set(vocab)
    if node.kind == "indices":
        return set(range(L))
    if node.kind == "full":
        return {node.fill}
    if node.kind == "map":
        return {r for ok, r in (_apply(node.f, x, name=node.name) for x in ins[0] if x is not None) if ok} | \
            ({None} if None in ins[0] else set())
    if node.kind == "sequence_map":
        out = {r for ok, r in (_apply(node.f, x, y, name=node.name) for x in ins[0] for y in ins[1]
                                     if x is not None and y is not None)
               if ok}
        return out | ({None} if None in ins[0] or None in ins[1] else set())
    if node.kind == "selector_width":
        widths = range(L + 1)
        return set(widths) if node.f is None else {r for ok, r in (_apply(node.f, w, name=node.name) for w in widths) if ok}
    if node.kind == "aggregate":
        copied = ins[2]
        if not node.numerical:
            return set(copied) | {None}
        return _means(node, [v for v in copied if v is not None], L, budget)
    raise RASPError(f"no value rule for {node.kind}")


def _means(node: Node, numbers: list, L: int, budget: int) -> set:
    """Every mean of 1..L of ``numbers`` (with repetition), and the default 0."""
    out = {0}
    if set(numbers) <= {0, 1}:   # the common case, by formula: k/n
        for n in range(1, L + 1):
            out |= {mean([1] * k + [0] * (n - k), 0) for k in range(n + 1) if (k == 0 or 1 in numbers)
                    and (k == n or 0 in numbers)}
        return out
    sums = {0}
    for n in range(1, L + 1):
        sums = {s + v for s in sums for v in numbers}
        if len(sums) * L > 50 * budget:
            raise RASPError(f"numerical Aggregate {node.name!r} averages {len(numbers)} distinct values over up to {L} "
                            "positions: too many possible means; average a 0/1 SOp or shorten max_seq_len")
        out |= {mean([s], 0) if n == 1 else _exact_div(s, n) for s in sums}
    return out


def _exact_div(s, n: int):
    if isinstance(s, float):
        return s / n
    q = Fraction(s) / n
    return int(q) if q.denominator == 1 else q
