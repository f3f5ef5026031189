"""Compiler stage 3: residual dimensions and layer allocation.

**Residual space.** ``one`` (1 at every token, 0 at BOS), ``tokens:BOS`` (1 at BOS only),
then per SOp node its dimensions: categorical ``name:value`` (one-hot; all zero where the value
is ``None``), numerical ``name`` (the value). A selector width adds ``name:1/(w+1)``, the
attention output its feed-forward block reads.

**Layers.** Model layer ``k`` is an attention sublayer then a feed-forward sublayer (the
TransformerLens block). Each node goes to the earliest sublayer of its type after everything it
reads: Aggregate -> attention, Map / SequenceMap -> feed-forward, SelectorWidth -> attention
then the feed-forward right after it; nodes in one sublayer run in parallel (heads side by side,
hidden units concatenated). Empty sublayers are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.language import RASPError
from expressivity.rasp.values import value_key

ONE, BOS = "one", "tokens:BOS"


def value_label(name: str, value) -> str:
    return f"{name}:{value}"


def width_label(name: str) -> str:
    return f"{name}:1/(w+1)"


@dataclass(frozen=True)
class Layout:
    """``labels``: residual dimension names; ``dims[node_id]``: the node's dimension indices in value
    order (categorical) or its one dimension (numerical); ``sublayers``: ``(kind, [node ids])`` in
    order, kind ``"attention"`` or ``"mlp"`` (a selector width appears in both)."""

    labels: tuple[str, ...]
    dims: dict[int, list[int]]
    sublayers: tuple[tuple[str, tuple[int, ...]], ...]
    value_dims: dict[int, dict] = field(default_factory=dict)   # node id -> value_key -> dim (categorical)
    sop_names: dict[int, str] = field(default_factory=dict)

    def index(self, label: str) -> int:
        return self.labels.index(label)

    def dim_of(self, node_id: int, value) -> int:
        """The one-hot dimension of ``value`` (typed, see :func:`~.values.value_key`) of a categorical node."""
        try:
            return self.value_dims[node_id][value_key(value)]
        except KeyError:
            raise RASPError(f"internal: the value {value!r} is not in the value set of {self.sop_names.get(node_id)!r}; "
                            "this is a compiler bug, please report it with the program") from None


def _slot(node: Node, ready: int) -> tuple[int, int]:
    """(first, last) half-layer slot of ``node`` given the first slot it may use; attention slots are even."""
    if node.kind in ("tokens", "indices", "full"):
        return -1, -1
    if node.kind in ("map", "sequence_map"):
        s = ready if ready % 2 == 1 else ready + 1
        return s, s
    s = ready if ready % 2 == 0 else ready + 1
    return s, s + (1 if node.kind == "selector_width" else 0)


def allocate(graph: Graph, values: dict[int, list]) -> Layout:
    """Stage 3: lay out the residual stream and put every node in a sublayer (see the module notes)."""
    labels = [ONE, BOS]
    dims: dict[int, list[int]] = {}
    value_dims: dict[int, dict] = {}
    for node in graph.nodes:
        if node.numerical:
            dims[node.id] = [len(labels)]
            labels.append(node.name)
        else:
            shown = [v for v in values[node.id] if v is not None]
            dims[node.id] = list(range(len(labels), len(labels) + len(shown)))
            value_dims[node.id] = {value_key(v): d for v, d in zip(shown, dims[node.id])}
            _distinct_labels(node, shown)
            labels += [value_label(node.name, v) for v in shown]
    for node in graph.nodes:
        if node.kind == "selector_width":
            labels.append(width_label(node.name))
    finish: dict[int, int] = {}
    placed: dict[int, list[tuple[int, int]]] = {}
    for node in graph.nodes:
        ready = max((finish[i] for i in node.inputs), default=-1) + 1
        first, last = _slot(node, ready)
        finish[node.id] = last
        if first >= 0:
            placed.setdefault(first, []).append(node.id)
            if last != first:
                placed.setdefault(last, []).append(node.id)
    sublayers = tuple(("attention" if s % 2 == 0 else "mlp", tuple(placed[s])) for s in sorted(placed))
    if len(set(labels)) != len(labels):
        dup = next(lab for lab in labels if labels.count(lab) > 1)
        # names are made unique in stage 1 (graph._unique_names): this is a compiler bug, said in one line
        raise RASPError(f"internal: the residual label {dup!r} appears twice; this is a compiler bug, please report "
                        "it with the program (renaming the SOp it names avoids it)")
    return Layout(tuple(labels), dims, sublayers, value_dims, {n.id: n.name for n in graph.nodes})


def _distinct_labels(node: Node, shown: list) -> None:
    """Two values printing alike (``1`` and ``'1'``) would share a residual label: refused in one line."""
    seen: dict[str, object] = {}
    for v in shown:
        text = str(v)
        if text in seen:
            raise RASPError(f"SOp {node.name!r} takes both {seen[text]!r} and {v!r}, whose residual dimensions would "
                            f"both be labelled {value_label(node.name, v)!r}; use values of one type (e.g. all strings)")
        seen[text] = v
