"""Proofs about selections, before any weight is built: what a hardmax head can realise.

An attention head averages the values of the keys its query selects. That equals the program's
meaning when:

* **single-valued** (every categorical Aggregate): each query's selection holds one value of the
  aggregated SOp ``V`` (a one-hot average of different values is no value; the interpreter
  would average numbers or fail). Rules, tried in order:

  - ``R0``: ``V`` takes one value;
  - ``R1``: each query selects one value of the keys ``K``, or of an SOp ``R`` that ``K`` is a
    Map of, and ``R`` determines ``V`` within an input (:mod:`.dependence`; e.g. ``K`` is
    ``indices``, or a sort's target positions, which determine the sorted values), or that value
    is held by one position at most (:mod:`.uniqueness`; e.g. a token paired with its occurrence
    count);
  - ``R2``: ``V`` is a fixed function of ``R``, constant on the ``R`` values each query selects;
  - ``R3``: checked by the interpreter on every input (when there are at most
    ``exhaustive_limit``), skipping inputs where ``rasp.evaluate`` itself fails.

* **backward only** (every Select, with ``causal=True``): no query selects a key at a later
  position, so the causal mask removes nothing. ``C0``: the predicate is never true; ``C1``:
  keys and queries are fixed functions of ``indices`` and the predicate is false for every key
  index after the query index; ``C2``: checked on every input, as ``R3``.

* **non-empty** (:func:`always_selects`, used by the value sets): every query selects a key on
  every input, so the default never occurs: per query value, its row selects every key value,
  or the keys are the queries and the query selects its own value, or the keys are ``indices``
  and the query selects index 0.

A program none of whose rules applies is refused with one line naming the rules; where ``R3`` /
``C2`` ran, the line gives an input that breaks the property.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from expressivity.rasp.dependence import UNDEFINED, Dependence
from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.interpreter import evaluate
from expressivity.rasp.language import Comparison, RASPError
from expressivity.rasp.uniqueness import Uniqueness
from expressivity.rasp.values import index_of, value_key

MAX_TABLE = 4_000_000    # predicate-table entries of one Select (sort_freq at L = 40: 1640 x 1640)
_OUTER = {Comparison.EQ: np.equal, Comparison.LT: np.less, Comparison.LEQ: np.less_equal, Comparison.GT: np.greater,
          Comparison.GEQ: np.greater_equal, Comparison.NEQ: np.not_equal}


@dataclass
class PredicateTable:
    """``matrix[a, b] = predicate(keys[b], queries[a])`` over the values keys and queries can take (``None``
    last where it can occur)."""

    keys: list
    queries: list
    matrix: np.ndarray
    key_index: dict = field(init=False)
    query_index: dict = field(init=False)

    def __post_init__(self):
        self.key_index = index_of(self.keys)
        self.query_index = index_of(self.queries)

    def selects(self, key, query) -> bool:
        return bool(self.matrix[self.query_index[value_key(query)], self.key_index[value_key(key)]])


def predicate_table(node: Node, graph: Graph, values: dict[int, list]) -> PredicateTable:
    """The predicate of ``node``'s Select on every (key, query) value pair; one-line :class:`RASPError` when the
    table is above :data:`MAX_TABLE` or the predicate fails on a pair (e.g. a Comparison on ``None``)."""
    keys, queries = values[node.inputs[0]], values[node.inputs[1]]
    if len(keys) * len(queries) > MAX_TABLE:
        raise RASPError(f"{node.name}: its Select compares {len(queries)} query values with {len(keys)} key values "
                        f"({len(keys) * len(queries)} pairs, above the budget {MAX_TABLE}); shorten max_seq_len")
    predicate = node.predicate
    matrix = None
    if predicate in _OUTER and None not in keys and None not in queries:
        try:
            matrix = np.asarray(_OUTER[predicate].outer(_objects(keys), _objects(queries)), dtype=bool).T
        except Exception:   # noqa: BLE001 - e.g. str < int: the loop below names the pair
            matrix = None
    if matrix is None:
        matrix = np.zeros((len(queries), len(keys)), dtype=bool)
        for a, q in enumerate(queries):
            for b, k in enumerate(keys):
                matrix[a, b] = _holds(node, graph, predicate, k, q)
    return PredicateTable(list(keys), list(queries), matrix)


def _objects(items: list) -> np.ndarray:
    """A 1-D object array of ``items`` (tuples stay elements, not rows)."""
    out = np.empty(len(items), dtype=object)
    for k, v in enumerate(items):
        out[k] = v
    return out


def _holds(node: Node, graph: Graph, predicate, k, q) -> bool:
    try:
        return bool(predicate(k, q))
    except Exception as exc:   # a user predicate may raise anything on a value pair
        role, sop = ("key", node.inputs[0]) if k is None else ("query", node.inputs[1])
        hint = (f"; the {role}s {graph.nodes[sop].name!r} may be None (an Aggregate that selects nothing): use a "
                "predicate that handles None" if k is None or q is None else "")
        raise RASPError(f"{node.name}: its Select's predicate fails on key {k!r}, query {q!r} "
                        f"({type(exc).__name__}: {' '.join(str(exc).split())[:120]}){hint}") from None


def always_selects(node: Node, graph: Graph, values: dict[int, list]) -> str | None:
    """The rule proving every query of ``node``'s Select selects a key on every input, or ``None``."""
    table = node.table
    keys_id, queries_id = node.inputs[:2]
    first = table.key_index.get(value_key(0)) if graph.nodes[keys_id].kind == "indices" else None
    used = set()
    for a, q in enumerate(table.queries):
        row = table.matrix[a]
        if len(row) and row.all():
            used.add("every key value")
        elif keys_id == queries_id and row[table.key_index[value_key(q)]]:
            used.add("its own value")
        elif first is not None and row[first]:
            used.add("index 0")
        else:
            return None
    return "every query selects " + " or ".join(sorted(used))


# ---------------------------------------------------------------------------------------------
# single-valued and backward-only
# ---------------------------------------------------------------------------------------------


def single_valued(node: Node, graph: Graph, values: dict, dep: Dependence, unique: Uniqueness) -> str | None:
    """Rules R0-R2 of the module notes for the categorical Aggregate ``node``; the rule's text, or ``None``."""
    keys_id, _, values_id = node.inputs
    names = {i: graph.nodes[i].name for i in node.inputs}
    if len(values[values_id]) <= 1:
        return f"R0: {names[values_id]!r} takes one value"
    table = node.table
    selected = [{value_key(table.keys[b]) for b in np.flatnonzero(row)} for row in table.matrix]
    for root in _map_ancestors(graph, keys_id):
        h = dep.function_of(root, keys_id)
        chosen = [[r for r in values[root] if h[value_key(r)] is not UNDEFINED and value_key(h[value_key(r)]) in keys]
                  for keys in selected]
        root_name = graph.nodes[root].name
        if all(len(c) <= 1 for c in chosen) and values_id in dep.determined_by(root):
            return f"R1: each query selects one value of {root_name!r}, which determines {names[values_id]!r}"
        held_once = unique.unique(root)
        if all(len(c) <= 1 and all(value_key(r) in held_once for r in c) for c in chosen):
            return f"R1: each query selects one value of {root_name!r}, held by one position at most ({unique.why(root)})"
        g = dep.function_of(root, values_id)
        if g is not None and all(len({value_key(g[value_key(r)]) for r in c if g[value_key(r)] is not UNDEFINED}) <= 1
                                 for c in chosen):
            return f"R2: {names[values_id]!r} is a function of {root_name!r}, constant on every selection"
    return None


def _map_ancestors(graph: Graph, node_id: int) -> list[int]:
    """``node_id`` and the SOps it is a chain of Maps of (nearest first)."""
    out = [node_id]
    while graph.nodes[out[-1]].kind == "map":
        out.append(graph.nodes[out[-1]].inputs[0])
    return out


def looks_back_only(node: Node, graph: Graph, values: dict, dep: Dependence, max_seq_len: int) -> str | None:
    """Rules C0-C1 of the module notes for ``node``'s Select; the rule's text, or ``None``."""
    table = node.table
    if not table.matrix.any():
        return "C0: the predicate is never true"
    keys_id, queries_id = node.inputs[:2]
    index = next((n.id for n in graph.nodes if n.kind == "indices"), None)
    if index is None:
        return None
    hk, hq = dep.function_of(index, keys_id), dep.function_of(index, queries_id)
    if hk is None or hq is None:
        return None
    for i in range(max_seq_len):
        q = hq[value_key(i)]
        if q is UNDEFINED:
            continue
        for j in range(i + 1, max_seq_len):
            k = hk[value_key(j)]
            if k is not UNDEFINED and table.selects(k, q):
                return None
    return "C1: keys and queries are functions of indices, and no key after its query is selected"


def prove_selections(graph: Graph, values: dict, *, causal: bool, vocab: list, max_seq_len: int,
                     exhaustive_limit: int) -> None:
    """Prove every categorical Aggregate single-valued and, with ``causal``, every Select backward-only; the
    rules go to ``node.proofs``. Raises :class:`RASPError` (one line) for the first property no rule proves."""
    dep = Dependence(graph, values)
    unique = Uniqueness(graph, values, dep)
    pending = []
    for node in graph.nodes:
        if node.kind not in ("aggregate", "selector_width"):
            continue
        if node.nonempty:
            node.proofs["non-empty"] = node.nonempty
        if node.kind == "aggregate" and not node.numerical:
            rule = single_valued(node, graph, values, dep, unique)
            node.proofs["single-valued"] = rule
            if rule is None:
                pending.append((node, "single-valued"))
        if causal:
            rule = looks_back_only(node, graph, values, dep, max_seq_len)
            node.proofs["backward-only"] = rule
            if rule is None:
                pending.append((node, "backward-only"))
    if pending:
        _exhaustive(graph, pending, vocab, max_seq_len, exhaustive_limit)


def _exhaustive(graph: Graph, pending: list, vocab: list, max_seq_len: int, limit: int) -> None:
    """Rules R3 / C2: check the pending properties on every input with the interpreter, or refuse."""
    total = sum(len(vocab) ** n for n in range(1, max_seq_len + 1))
    if total > limit:
        node, prop = pending[0]
        raise RASPError(_refusal(node, prop, graph) + f"; checking every input is over the limit ({total} inputs, "
                        f"limit {limit})")
    for n in range(1, max_seq_len + 1):
        for xs in itertools.product(vocab, repeat=n):
            for node, prop in pending:
                bad = _breaks(node, prop, graph, list(xs))
                if bad:
                    raise RASPError(_refusal(node, prop, graph) + f"; on the input {list(xs)} {bad}")
    for node, prop in pending:
        node.proofs[prop] = f"{'R3' if prop == 'single-valued' else 'C2'}: checked on all {total} inputs (interpreter)"


def _breaks(node: Node, prop: str, graph: Graph, xs: list) -> str | None:
    """How ``xs`` breaks ``prop`` at ``node`` (``None`` if it does not, or if the interpreter fails on ``xs``)."""
    try:
        selected = evaluate(node.select, xs)
        vals = evaluate(graph.nodes[node.inputs[2]].expr, xs) if prop == "single-valued" else None
    except RASPError:
        return None
    for q, row in enumerate(selected):
        if prop == "backward-only" and any(row[q + 1:]):
            return f"query {q} selects key {q + 1 + row[q + 1:].index(True)}"
        if prop == "single-valued":
            chosen = {value_key(v): v for v, s in zip(vals, row) if s}
            if len(chosen) > 1:
                return f"query {q} selects the values {', '.join(map(repr, list(chosen.values())[:3]))}"
    return None


def _refusal(node: Node, prop: str, graph: Graph) -> str:
    keys, queries = (graph.nodes[i].name for i in node.inputs[:2])
    if prop == "backward-only":
        return (f"refused: causal=True, but the Select of {node.name!r} (keys {keys!r}, queries {queries!r}) may select a key "
                "after its query: no rule proves it looks back only (C0 never true, C1 keys and queries functions of "
                "indices with no later key selected); compile without causal=True (--causal at the command line)")
    values = graph.nodes[node.inputs[2]].name
    return (f"refused: Aggregate {node.name!r} is categorical, so each query must select one value of {values!r}, and no rule "
            f"proves it (R1 each query selects one value of the keys {keys!r} or of what they map, and that fixes "
            f"{values!r}; R2 {values!r} a function of the keys, constant on each selection): make it numerical to "
            "average, or select by a unique key such as indices")
