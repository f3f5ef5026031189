"""Values held by at most one position of any input: the facts behind "each query selects one position".

:meth:`Uniqueness.unique` gives, for an SOp, the (typed, :func:`~.values.value_key`) values that no
input holds at two positions. ``None`` is never counted. Rules, each proven from the value sets
and the program's shape:

* ``U0``: an SOp that determines ``indices`` (:mod:`.dependence`) holds each value once;
* ``U1``: a Map's value whose only preimage is one unique value of its input;
* ``U2``: a SequenceMap's value whose preimages all share one argument value, unique in that argument;
* ``U3`` (**prefix ranks**): ``S = SequenceMap(f, X, W)`` with ``f`` one-to-one, ``W =
  SelectorWidth(Select(K, Q, p))`` and ``K``, ``Q`` fixed functions of ``(X, indices)``. For a
  value ``x`` of ``X``, let ``R_i`` be the keys selected by the query of a position ``i`` holding
  ``x``. When ``R_0 <= R_1 <= ...`` and each ``R_i`` holds the key of position ``i`` itself,
  which ``R_{i-1}`` does not, then ``W`` strictly grows along the positions holding ``x``, so
  every value ``f(x, w)`` is unique. (An occurrence count ``#{j <= i: t_j = t_i}`` paired with the
  token; a count of marked positions paired with the mark.)
* ``U4``: a categorical Aggregate proven single-valued whose keys are each selected by one query
  position at most (every key value by one query value at most, unique in the queries) passes on
  the unique values it copies: a value held by one key can reach one query only.
"""

from __future__ import annotations

import numpy as np

from expressivity.rasp.dependence import UNDEFINED, Dependence, call
from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.values import value_key


class Uniqueness:
    """The unique values of every node (module notes), computed on demand and remembered."""

    def __init__(self, graph: Graph, values: dict[int, list], dep: Dependence):
        self.graph, self.values, self.dep = graph, values, dep
        self._unique: dict[int, frozenset] = {}
        self.rule: dict[int, str] = {}
        self.index = next((n.id for n in graph.nodes if n.kind == "indices"), None)

    def unique(self, node_id: int) -> frozenset:
        """The value keys of ``node_id`` that occur at one position at most, in any input."""
        if node_id not in self._unique:
            found, rule = self._rules(self.graph.nodes[node_id])
            self._unique[node_id], self.rule[node_id] = frozenset(found), rule
        return self._unique[node_id]

    def why(self, node_id: int) -> str:
        """The rules behind :meth:`unique` for ``node_id``, and those of the SOps it stands on (e.g. 'U4 < U3')."""
        self.unique(node_id)
        return self.rule[node_id]

    def _rules(self, node: Node) -> tuple[set, str]:
        real = {value_key(v) for v in self.values[node.id] if v is not None}
        if self.index is not None and self.index in self.dep.determined_by(node.id):
            return real, "U0"
        if node.kind == "map":
            return self._through(node, [(x,) for x in self.values[node.inputs[0]]]), self._via("U1", node.inputs[:1])
        if node.kind == "sequence_map":
            pairs = [(a, b) for a in self.values[node.inputs[0]] for b in self.values[node.inputs[1]]]
            ranks = self._prefix_ranks(node)
            return self._through(node, pairs) | ranks, "U3" if ranks else self._via("U2", node.inputs)
        if node.kind == "aggregate" and not node.numerical and node.proofs.get("single-valued") \
                and self._one_query_per_key(node):
            return set(self.unique(node.inputs[2])), self._via("U4", node.inputs[2:])
        return set(), ""

    def _via(self, rule: str, inputs) -> str:
        below = [self.rule.get(i) for i in inputs if self.rule.get(i)]
        return rule + (f" < {below[0]}" if below else "")

    def _through(self, node: Node, combos: list[tuple]) -> set:
        """U1 / U2: outputs whose preimages share one argument value that is unique in that argument."""
        shared: dict = {}
        for args in combos:
            out = None if any(a is None for a in args) else call(node.f, *args)
            if out is UNDEFINED or out is None:
                continue
            try:
                k = value_key(out)
            except TypeError:
                return set()
            keys = tuple(value_key(a) for a in args)
            shared[k] = keys if k not in shared else tuple(a if a == b else None for a, b in zip(shared[k], keys))
        unique_in = [self.unique(i) for i in node.inputs]
        return {k for k, keys in shared.items() if any(a is not None and a in u for a, u in zip(keys, unique_in))}

    def _one_query_per_key(self, node: Node) -> bool:
        """U4's condition: every key value is selected by one query value at most, and that value is unique."""
        table = node.table
        counts = table.matrix.sum(axis=0)
        if np.any(counts > 1):
            return False
        unique_queries = self.unique(node.inputs[1])
        selecting = {value_key(table.queries[a]) for a in np.flatnonzero(table.matrix.any(axis=1))}
        return selecting <= unique_queries

    def _prefix_ranks(self, node: Node) -> set:
        """U3 of the module notes, for either argument order."""
        found = set()
        if self.index is None or not (self.dep.one_to_one(node, 0) and self.dep.one_to_one(node, 1)):
            return found
        for x_at, w_at in ((0, 1), (1, 0)):
            x_id, w_id = node.inputs[x_at], node.inputs[w_at]
            width = self.graph.nodes[w_id]
            if width.kind != "selector_width" or width.f is not None or width.table is None:
                continue
            good = self._growing_classes(x_id, width)
            for x in (x for x in self.values[x_id] if value_key(x) in good):
                for w in self.values[w_id]:
                    args = (x, w) if x_at == 0 else (w, x)
                    out = call(node.f, *args)
                    if out is not UNDEFINED and out is not None:
                        found.add(value_key(out))
        return found

    def _growing_classes(self, x_id: int, width: Node) -> set:
        """The values ``x`` of ``X`` along whose positions the width strictly grows (U3)."""
        keys_id, queries_id = width.inputs[:2]
        roots = (x_id, self.index)
        hk, hq = self.dep.function_of(roots, keys_id), self.dep.function_of(roots, queries_id)
        if hk is None or hq is None:
            return set()
        table, L = width.table, len(self.values[self.index])
        good = set()
        for x in self.values[x_id]:
            at = [(value_key(x), value_key(i)) for i in range(L)]
            if any(hk[a] is UNDEFINED or hq[a] is UNDEFINED for a in at):
                continue
            try:
                rows = np.array([table.matrix[table.query_index[value_key(hq[a])]] for a in at])
                own = np.array([table.key_index[value_key(hk[a])] for a in at])
            except (KeyError, TypeError):     # a key or query outside the table: no claim for this class
                continue
            grows = np.all(rows[:-1] <= rows[1:])
            holds_own = np.all(rows[np.arange(L), own])
            new_each_step = not np.any(rows[np.arange(L - 1), own[1:]])
            if grows and holds_own and new_each_step:
                good.add(value_key(x))
        return good

