"""What one SOp fixes about another, within one input: the facts the selection proofs stand on.

Two relations over the graph's nodes, both proven from the value sets and the program's shape,
never from sampled inputs:

* **function of** (:meth:`Dependence.function_of`): ``target`` is a fixed function ``g`` of
  ``root`` (or of several roots together) at every position, on every input (``target`` is a
  root, a constant, or Maps and SequenceMaps whose leaves are roots and constants). Returns ``g``
  as a table over the roots' values (annotated copies of ``tokens``, or of ``indices``, are one
  SOp).
* **determines** (:meth:`Dependence.determined_by`): within any one input, two positions with the
  same ``K`` value have the same ``V`` value (typed: ``True`` and ``1`` differ). Rules:

  - ``K`` determines itself, every constant, and whatever ``K``'s determined SOps feed through
    a Map or SequenceMap (all inputs determined), an Aggregate or SelectorWidth (its query
    determined: the selection depends on the query value alone);
  - ``indices`` determines everything (positions differ);
  - **injectivity**: a Map with ``f`` one-to-one on its input's values determines its input; a
    SequenceMap whose value never repeats across different first (second) arguments determines
    that argument;
  - **ranks**: ``SelectorWidth(Select(A, A, p))`` determines ``A`` when the sets ``S(a) = {b :
    p(b, a)}`` form a strict chain in which each step contains one of its two ends (``LT``,
    ``LEQ``, ``GT``, ``GEQ`` on any total order): two positions with different ``A`` values
    then select different numbers of keys.

  The relation is closed under these rules, so it is transitive.
"""

from __future__ import annotations

import itertools
from functools import cached_property

import numpy as np

from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.values import value_key

UNDEFINED = object()   # a function raised here: the interpreter raises on any input where this value occurs


def call(f, *args):
    try:
        return f(*args)
    except Exception:   # noqa: BLE001 - a value the program cannot handle; evaluate raises there too
        return UNDEFINED


class Dependence:
    """The two relations of the module notes for one graph and its value sets (``values[node id]``)."""

    def __init__(self, graph: Graph, values: dict[int, list]):
        self.graph, self.values = graph, values
        self._functions: dict[tuple[int, int], dict | None] = {}
        self._tables: dict[tuple, dict | None] = {}
        self._determined: dict[int, frozenset] = {}

    # ------------------------------------------------------------------ fixed functions

    def function_of(self, root: int | tuple[int, ...], target: int) -> dict | None:
        """``target`` as a fixed function of ``root`` (one node id, or a tuple of them): a table over root's values
        (keyed by ``value_key(r)``; for a tuple, by the tuple of keys of every combination), ``UNDEFINED`` where the
        function raises; ``None`` when ``target`` is not such a function."""
        roots = root if isinstance(root, tuple) else (root,)
        table = self._table(roots, target)
        if table is None or isinstance(root, tuple):
            return table
        if (root, target) not in self._functions:
            self._functions[root, target] = {k[0]: v for k, v in table.items()}
        return self._functions[root, target]

    def _table(self, roots: tuple[int, ...], target: int) -> dict | None:
        if (roots, target) not in self._tables:
            self._tables[roots, target] = self._function(roots, target)
        return self._tables[roots, target]

    def _domain(self, roots: tuple[int, ...]) -> list[tuple]:
        return list(itertools.product(*(self.values[r] for r in roots)))

    def _function(self, roots: tuple[int, ...], target: int) -> dict | None:
        node = self.graph.nodes[target]
        domain = self._domain(roots)
        keys = [tuple(value_key(v) for v in args) for args in domain]
        for k, r in enumerate(roots):
            same = self.graph.nodes[r].kind
            if target == r or node.kind in ("tokens", "indices") and node.kind == same:
                return {key: args[k] for key, args in zip(keys, domain)}   # copies of tokens / indices: the same
        if node.kind == "full":
            return {key: node.fill for key in keys}
        if node.kind not in ("map", "sequence_map"):
            return None
        tables = [self._table(roots, i) for i in node.inputs]
        if any(t is None for t in tables):
            return None
        out = {}
        for key in keys:
            args = [t[key] for t in tables]
            if any(a is UNDEFINED for a in args):
                out[key] = UNDEFINED
            elif any(a is None for a in args):
                out[key] = None
            else:
                out[key] = call(node.f, *args)
        return out

    # ------------------------------------------------------------------ determination

    def determined_by(self, key: int) -> frozenset:
        """The node ids whose value at a position is fixed by ``key``'s value there, within any one input."""
        if key not in self._determined:
            self._determined[key] = self._closure(key)
        return self._determined[key]

    def _closure(self, key: int) -> frozenset:
        nodes = self.graph.nodes
        found = {key} | {n.id for n in nodes if len(self.values[n.id]) <= 1}
        changed = True
        while changed:
            before = len(found)
            if any(nodes[i].kind == "indices" for i in found):
                return frozenset(n.id for n in nodes)
            if any(nodes[i].kind == "tokens" for i in found):     # and annotated copies of tokens with it
                found |= {n.id for n in nodes if n.kind == "tokens"}
            for i in list(found):
                found |= self._injective_inputs[i]
            for n in nodes:
                if n.id not in found and self._fed(n, found):
                    found.add(n.id)
            changed = len(found) != before
        return frozenset(found)

    @staticmethod
    def _fed(node: Node, found: set) -> bool:
        if node.kind in ("map", "sequence_map"):
            return all(i in found for i in node.inputs)
        if node.kind in ("aggregate", "selector_width"):
            return node.inputs[1] in found
        return False

    @cached_property
    def _injective_inputs(self) -> dict[int, set]:
        """node id -> the input ids it determines by injectivity or by ranks."""
        out = {}
        for node in self.graph.nodes:
            if node.kind == "map":
                out[node.id] = set(node.inputs) if self.one_to_one(node, 0) else set()
            elif node.kind == "sequence_map":
                out[node.id] = {i for k, i in enumerate(node.inputs) if self.one_to_one(node, k)}
            elif node.kind == "selector_width" and node.f is None and node.inputs[0] == node.inputs[1] \
                    and node.table is not None and ranks(node.table):
                out[node.id] = {node.inputs[0]}
            else:
                out[node.id] = set()
        return out

    def one_to_one(self, node: Node, argument: int) -> bool:
        """True when equal (typed) outputs of ``node`` always come from equal values of input ``argument``."""
        domains = [self.values[i] for i in node.inputs]
        seen: dict = {}
        pairs = [(x,) for x in domains[0]] if node.kind == "map" else \
            [(x, y) for x in domains[0] for y in domains[1]]
        for args in pairs:
            out = None if any(a is None for a in args) else call(node.f, *args)
            if out is UNDEFINED:
                continue
            try:
                k = value_key(out)
            except TypeError:
                return False
            arg = value_key(args[argument])
            if seen.setdefault(k, arg) != arg:
                return False
        return True


def ranks(table) -> bool:
    """The **ranks** rule of the module notes on a Select of one SOp with itself: its selection sets, sorted by
    size, form a strict chain, and every pair ``a, b`` (``S(a)`` inside ``S(b)``) has ``a`` or ``b`` in
    ``S(b) - S(a)``. ``table.matrix[q, k]``: key ``k`` selected by query ``q``; keys and queries the same list."""
    M = table.matrix
    n = M.shape[0]
    if n <= 1:
        return True
    sizes = M.sum(axis=1)
    order = np.argsort(sizes, kind="stable")
    S = M[order][:, order]        # rows: queries by size; columns: the same values in that order
    if np.any(np.diff(sizes[order]) <= 0) or np.any(S[:-1] & ~S[1:]):
        return False              # not a strict chain
    # first[v]: the first chain step whose set holds value v (n when none does)
    holds = S.T                   # holds[v, i]: value v in S_i
    first = np.where(holds.any(axis=1), holds.argmax(axis=1), n)
    good = first <= np.arange(n)  # a_j lies in its own set S_j
    for i in range(n - 1):
        j = np.arange(i + 1, n)
        own_i = (first[i] <= j) & (first[i] > i)      # a_i in S_j - S_i
        own_j = good[i + 1:] & (first[i + 1:] > i)     # a_j in S_j - S_i
        if not np.all(own_i | own_j):
            return False
    return True
