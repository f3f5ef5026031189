"""Compiler stage 1: a RASP program as a graph of SOp nodes in dependency order.

Each node is one SOp the network computes; selectors are not nodes of their own but the
``select`` of the Aggregate or SelectorWidth that uses them. :func:`build_graph` keeps every SOp
(the proofs of :mod:`.selection` reason about them one by one) with one rewrite:

* a ``SequenceMap`` whose two arguments are the same SOp is the ``Map`` ``x -> f(x, x)`` (its
  lookup table needs only the diagonal; a pair unit ``relu(x_a + x_b - 1)`` on one dimension
  would never fire).

After the proofs, :func:`fuse_maps` makes the network smaller and keeps the meaning: a ``Map``
whose input is a Map, SequenceMap or SelectorWidth used by nothing else (and not the output) is
fused into it: one feed-forward block computes ``f(g(...))`` directly.

Refused here, with the reason: compound selectors over different keys/queries (``&``, ``|``,
``~`` of unrelated Selects), a Select or categorical Aggregate over a numerical SOp, a numerical
Aggregate of a categorical SOp or with a default other than 0 or None.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable

from expressivity.rasp.language import (Aggregate, ConstantSelector, Encoding, Full, IndicesType, LinearSequenceMap,
                                        Map, RASPError, Select, Selector, SelectorWidth, SequenceMap, SOp, TokensType)

KINDS = ("tokens", "indices", "full", "map", "sequence_map", "aggregate", "selector_width")


@dataclass
class Node:
    """One SOp of the compiled program.

    ``inputs``: the node ids this SOp reads (``map``: 1, ``sequence_map``: 2, ``aggregate``:
    keys, queries, values; ``selector_width``: keys, queries). ``f``: the per-position function
    (maps; for a fused selector width, applied to the width). ``predicate``: of the select.
    ``linear``: ``(a, b)`` for a LinearSequenceMap ``a*x + b*y``.
    """

    id: int
    kind: str
    name: str
    encoding: Encoding
    inputs: tuple[int, ...] = ()
    f: Callable | None = None
    predicate: Callable | None = None
    default: object = None
    fill: object = None
    linear: tuple | None = None
    fused: list[str] = field(default_factory=list)
    expr: object = None              # the SOp this node computes (the interpreter evaluates it)
    select: object = None            # the Select of an Aggregate / SelectorWidth
    diagonal: bool = False           # a SequenceMap of one SOp with itself, compiled as a Map
    table: object = None             # the Select's predicate table (rasp/selection.py), set with the values
    nonempty: str | None = None      # the rule proving every query selects a key, if one does
    tolerance: float | None = None   # a float mean's bound |evaluate - network| (rasp/values.py)
    proofs: dict = field(default_factory=dict)   # rule names by property (rasp/selection.py)
    fails_on: tuple | None = None    # the first arguments its function raised an ArithmeticError on (rasp/values.py)

    @property
    def numerical(self) -> bool:
        return self.encoding is Encoding.NUMERICAL


@dataclass
class Graph:
    """The nodes in dependency order (inputs before users); ``output`` is the program's node id."""

    nodes: list[Node]
    output: int

    def users(self, node_id: int) -> list[Node]:
        return [n for n in self.nodes if node_id in n.inputs]


def build_graph(program: SOp) -> Graph:
    """Stage 1: trace ``program`` into a :class:`Graph` (see the module notes for what is refused)."""
    if not isinstance(program, SOp):
        raise RASPError(f"a program is an SOp (e.g. rasp.Aggregate(...)), got {type(program).__name__}"
                        + ("; a Selector has no output sequence: wrap it in SelectorWidth or Aggregate"
                           if isinstance(program, Selector) else ""))
    nodes: list[Node] = []
    by_expr: dict[int, int] = {}

    def visit(expr: SOp) -> int:
        if id(expr) in by_expr:
            return by_expr[id(expr)]
        node = _node_of(expr, visit)
        node.expr = expr
        node.id = len(nodes)
        nodes.append(node)
        by_expr[id(expr)] = node.id
        return node.id

    limit = sys.getrecursionlimit()     # deep programs (long Map chains) recurse once per SOp
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        output = visit(program)
    finally:
        sys.setrecursionlimit(limit)
    graph = Graph(nodes, output)
    _unique_names(graph)
    return graph


def _select_inputs(selector: Selector, visit, where: str) -> tuple[tuple[int, int], Select]:
    if isinstance(selector, ConstantSelector):
        raise RASPError(f"{where}: a ConstantSelector (a fixed matrix, for testing the interpreter) is not compiled; "
                        "build the selector with Select")
    if not isinstance(selector, Select):
        raise RASPError(f"{where}: its selector is {type(selector).__name__} of Selects over different keys or "
                        "queries, which is not compiled; combine the keys (or queries) into one SOp with a "
                        "SequenceMap and Select on it")
    for role, sop in (("keys", selector.keys), ("queries", selector.queries)):
        if sop.encoding is Encoding.NUMERICAL:
            raise RASPError(f"{where}: Select's {role} {sop.name!r} is numerical; attention compares categorical "
                            f"values: use rasp.categorical({sop.name})")
    return (visit(selector.keys), visit(selector.queries)), selector


def _node_of(expr: SOp, visit) -> Node:
    name, enc = expr.name, expr.encoding
    if isinstance(expr, TokensType):
        return Node(0, "tokens", name, enc)
    if isinstance(expr, IndicesType):
        return Node(0, "indices", name, enc)
    if isinstance(expr, Full):
        return Node(0, "full", name, enc, fill=expr.fill)
    if isinstance(expr, Map):
        return Node(0, "map", name, enc, (visit(expr.inner),), f=_canonical(expr.f))
    if isinstance(expr, SequenceMap):
        fst, snd = visit(expr.fst), visit(expr.snd)
        if fst == snd:    # one SOp twice: only the pairs (x, x) occur
            return Node(0, "map", name, enc, (fst,), f=_canonical(lambda x, f=expr.f: f(x, x)), diagonal=True)
        linear = (expr.fst_fac, expr.snd_fac) if isinstance(expr, LinearSequenceMap) else None
        return Node(0, "sequence_map", name, enc, (fst, snd), f=_canonical(expr.f), linear=linear)
    if isinstance(expr, SelectorWidth):
        keys_queries, select = _select_inputs(expr.selector, visit, f"SelectorWidth {name!r}")
        return Node(0, "selector_width", name, enc, keys_queries, predicate=select.predicate, select=select)
    if isinstance(expr, Aggregate):
        where = f"Aggregate {name!r}"
        keys_queries, select = _select_inputs(expr.selector, visit, where)
        values = expr.sop
        if enc is Encoding.NUMERICAL:
            if values.encoding is not Encoding.NUMERICAL:
                raise RASPError(f"{where} is numerical but averages the categorical SOp {values.name!r}; a numerical "
                                f"mean needs numbers: use rasp.numerical({values.name})")
            if expr.default is not None and (not isinstance(expr.default, (int, float)) or expr.default != 0):
                raise RASPError(f"{where}: a numerical Aggregate gives 0 where nothing is selected; its default "
                                f"{expr.default!r} cannot be compiled: use default=0")
        elif values.encoding is Encoding.NUMERICAL:
            raise RASPError(f"{where} is categorical but aggregates the numerical SOp {values.name!r}; make both "
                            "numerical (a mean) or both categorical (a copy)")
        elif expr.default is not None:
            raise RASPError(f"{where}: a categorical Aggregate leaves its output empty (None) where nothing is "
                            f"selected; the default {expr.default!r} cannot be compiled: use default=None")
        return Node(0, "aggregate", name, enc, keys_queries + (visit(values),), predicate=select.predicate,
                    default=expr.default, select=select)
    raise RASPError(f"{name}: {type(expr).__name__} is not compiled (tokens, indices, Full, Map, SequenceMap, "
                    "Select, Aggregate and SelectorWidth are)")


# names the residual stream uses itself (rasp/layout.py): the constant dimension ``one``, and ``tokens:BOS``. A SOp
# named "one", or a Map named "tokens" with the value "BOS", took its label: an AssertionError traceback (an audit,
# 2026-11-29). Such a SOp gets a ``#k`` suffix, as two SOps with one name do.
RESERVED_NAMES = ("one", "tokens")


def _unique_names(graph: Graph) -> None:
    """Residual labels are ``name:value``: two different SOps with one name, or a SOp named like one of
    :data:`RESERVED_NAMES` (other than the first tokens node), get ``#k`` suffixes (the first free one)."""
    tokens = next((node for node in graph.nodes if node.kind == "tokens"), None)   # a second one is renamed too
    used = set(RESERVED_NAMES) | ({tokens.name} if tokens is not None else set())
    for node in graph.nodes:
        if node is tokens:
            continue
        name, k = node.name, 0
        while name in used:
            k += 1
            name = f"{node.name}#{k}"
        used.add(name)
        node.name = name


def _canonical(f: Callable) -> Callable:
    """``f`` with its whole-Fraction results made ints (:func:`~.values.canonical`), as the interpreter
    gives them: every stage (value sets, proofs, fused Maps) then sees the values ``evaluate`` does."""
    from expressivity.rasp.values import canonical

    def canonical_f(*args):
        return canonical(f(*args))
    return canonical_f


def _compose(inner: Callable, outer: Callable) -> Callable:
    """``outer`` after ``inner``, as a Map of a Map evaluates: where ``inner`` gives ``None``, so does the pair
    (the outer Map is not called on ``None``)."""
    def composed(*args):
        value = inner(*args)
        return None if value is None else outer(value)
    return composed


def fuse_maps(graph: Graph, values: dict[int, list]) -> tuple[Graph, dict[int, list]]:
    """Fuse every ``Map`` into its producer when the producer has no other user and is not the output; returns
    the smaller graph (nodes renumbered) and its value sets. The fused node keeps the producer's select, table
    and proofs."""
    fused_into: dict[int, int] = {}
    for node in graph.nodes:
        if node.kind != "map":
            continue
        (src,) = node.inputs
        producer = graph.nodes[src]
        if producer.kind not in ("map", "sequence_map", "selector_width") or src == graph.output:
            continue
        if len(graph.users(src)) != 1:
            continue
        f = node.f if producer.kind == "selector_width" and producer.f is None else _compose(producer.f, node.f)
        node.kind, node.inputs, node.f = producer.kind, producer.inputs, f
        node.predicate, node.linear, node.select = producer.predicate, None, producer.select
        node.table, node.nonempty, node.proofs = producer.table, producer.nonempty, dict(producer.proofs)
        node.diagonal = producer.diagonal
        node.fused = producer.fused + [producer.name]
        fused_into[src] = node.id
    if not fused_into:
        return graph, values
    keep = [n for n in graph.nodes if n.id not in fused_into]
    renumber = {n.id: k for k, n in enumerate(keep)}
    new_values = {renumber[n.id]: values[n.id] for n in keep}
    for n in keep:
        n.inputs = tuple(renumber[i] for i in n.inputs)
        n.id = renumber[n.id]
    return Graph(keep, renumber[graph.output]), new_values
