"""Compiler stage 4: the weights of every node, as attention heads and feed-forward hidden units.

Invariant the blocks keep (and rely on): at the BOS position every SOp dimension is 0. The
embedding writes SOps only at real tokens; every hidden unit reads ``one`` (0 at BOS) for its
constant, so it is 0 there; a query at BOS attends to BOS alone, whose values are 0. The one
exception, a selector width's ``1/(w+1)`` dimension (1 at BOS), is gated by ``-C * tokens:BOS``.

**Attention** (Aggregate, SelectorWidth): the score of key ``k`` for query ``q`` is ``2`` when
the predicate holds, ``0`` when not, and the BOS key scores ``1`` (Aggregate: BOS wins only when
nothing is selected, giving 0, the default) or ``2`` (SelectorWidth: BOS always shares the
weight, so the head writes ``1/(w+1)``). Hardmax splits ties evenly, so an Aggregate is the mean
of the selected values. ``W_Q W_K^T`` is the predicate table factored by its distinct rows or
columns (whichever is fewer): ``EQ`` needs one column per value, ``TRUE`` one in all. The score
gap is 1 per unit scale.

**Feed-forward** (Map, SequenceMap, the second half of SelectorWidth), by input kind:

* categorical inputs: a lookup table, one hidden unit per input value (``relu(x_v)``) or per
  pair (``relu(a_u + b_v - one)``), writing the output's encoding of ``f``;
* a scalar ``s``, linear in the residual (a numerical SOp, a LinearSequenceMap, a SequenceMap
  additive over categorical inputs ``g(a) + h(b)``, a selector width's ``1/(w+1)``):
  ``f`` through the finite set of values of ``s``, piecewise linear with ReLU units. Hardmax:
  interpolation through the known values (knots only where the slope changes), exact on the
  set. Softmax: steps whose ramps lie in the middle half between consecutive values, so an input
  within a quarter gap of a known value gives the exact output (the margin is reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from expressivity.network import Head
from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.layout import BOS, ONE, Layout, width_label
from expressivity.rasp.language import RASPError

MAX_HIDDEN = 20_000      # hidden units of one block
MAX_TABLE = 4_000_000    # predicate-table entries of one head (sort_freq at L = 40: 1640 x 1640)
# Added to every hardmax score: ulp(2^20) is 2^-32 in float64 (1/8 in float32), far below the score gap 1 and far
# above the rounding of a dot product of near-one-hot vectors, so rounding snaps tied scores to one number.
SNAP = 2 ** 20


@dataclass
class Unit:
    """One ReLU hidden unit: ``relu(sum_i w_in[i] x_i) `` added as ``w_out`` to the residual."""

    w_in: dict[int, object]
    w_out: dict[int, object]


@dataclass
class MLPBlock:
    node: int
    units: list[Unit]
    how: str
    margin: object = None            # smallest distance from a known input to a breakpoint (softmax steps)
    facts: dict = field(default_factory=dict)


@dataclass
class AttentionBlock:
    node: int
    head: Head
    how: str


def _exact(v):
    """A number as an exact weight: bools as ints, floats as the rationals they store."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        q = Fraction(v)
        return int(q) if q.denominator == 1 else q
    return v


def encode(node: Node, layout: Layout, values: list, value) -> dict[int, object]:
    """The residual entries (dim -> number) that hold ``value`` of ``node``."""
    if value is None:
        return {}
    dims = layout.dims[node.id]
    if node.numerical:
        v = _exact(value)
        return {dims[0]: v} if v != 0 else {}
    return {dims[[x for x in values if x is not None].index(value)]: 1}


def _call(node: Node, f, *args):
    try:
        return f(*args)
    except Exception as exc:
        raise RASPError(f"{node.name}: its function fails on {args!r} ({type(exc).__name__})") from None


# ---------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------


def attention_block(node: Node, graph: Graph, layout: Layout, values: dict[int, list], snap: bool) -> AttentionBlock:
    """The head of ``node`` (see the module notes). ``snap`` (hardmax): every score gets ``+ SNAP`` (``one`` or
    ``tokens:BOS`` on both sides), which leaves exact arithmetic unchanged and makes float rounding land every
    score on the grid of spacing ``ulp(SNAP)``, so scores that tie exactly also tie in float64 and float32."""
    keys_id, queries_id = node.inputs[:2]
    keys = [v for v in values[keys_id] if v is not None]
    queries = [v for v in values[queries_id] if v is not None]
    if len(keys) * len(queries) > MAX_TABLE:
        raise RASPError(f"{node.name}: its Select compares {len(queries)} query values with {len(keys)} key values "
                        f"({len(keys) * len(queries)} pairs, above the budget {MAX_TABLE}); shorten max_seq_len")
    table = np.zeros((len(queries), len(keys)), dtype=np.int64)
    for a, q in enumerate(queries):
        for b, k in enumerate(keys):
            try:
                table[a, b] = bool(node.predicate(k, q))
            except Exception as exc:   # a user predicate may raise anything on a value pair
                raise RASPError(f"{node.name}: its predicate fails on key {k!r}, query {q!r} "
                                f"({type(exc).__name__}: {exc})") from None
    d = len(layout.labels)
    kdims, qdims = layout.dims[keys_id], layout.dims[queries_id]
    rows = {tuple(r): i for i, r in enumerate(dict.fromkeys(map(tuple, table)))}
    cols = {tuple(c): i for i, c in enumerate(dict.fromkeys(map(tuple, table.T)))}
    by_rows = len(rows) <= len(cols)
    m = (len(rows) if by_rows else len(cols)) + 1 + int(snap)
    W_Q, W_K = np.zeros((d, m), dtype=np.int64), np.zeros((d, m), dtype=np.int64)
    if by_rows:
        for a in range(len(queries)):
            W_Q[qdims[a], rows[tuple(table[a])]] = 1
        for row, c in rows.items():
            W_K[kdims, c] = 2 * np.array(row)
    else:
        for b in range(len(keys)):
            W_K[kdims[b], cols[tuple(table[:, b])]] = 1
        for col, c in cols.items():
            W_Q[qdims, c] = 2 * np.array(col)
    width = node.kind == "selector_width"
    bos_col = m - 1 - int(snap)
    if snap:
        for dim in (layout.index(ONE), layout.index(BOS)):
            W_Q[dim, m - 1], W_K[dim, m - 1] = SNAP, 1
    W_K[layout.index(BOS), bos_col] = 1
    W_Q[layout.index(ONE), bos_col] = 2 if width else 1   # BOS ties with the selected keys, or loses to them
    W_Q[layout.index(BOS), bos_col] = 1                   # a query at BOS sees only BOS
    if width:
        W_V = np.zeros((d, 1), dtype=np.int64)
        W_V[layout.index(BOS), 0] = 1
        W_O = np.zeros((1, d), dtype=np.int64)
        W_O[0, layout.index(width_label(node.name))] = 1
        how = "selector width: BOS always attended, the head writes 1/(w+1)"
    else:
        src, out = node.inputs[2], node.id
        W_V = np.zeros((d, len(layout.dims[src])), dtype=np.int64)
        W_O = np.zeros((len(layout.dims[src]), d), dtype=np.int64)
        src_vals = [v for v in values[src] if v is not None]
        out_vals = [v for v in values[out] if v is not None]
        for j, dim in enumerate(layout.dims[src]):
            W_V[dim, j] = 1
            target = layout.dims[out][0] if node.numerical else layout.dims[out][out_vals.index(src_vals[j])]
            W_O[j, target] = 1
        how = ("numerical mean" if node.numerical else "categorical copy") + "; BOS attended when nothing is selected"
    shape = (f"predicate table {len(queries)}x{len(keys)} factored to {len(rows) if by_rows else len(cols)} distinct "
             f"{'rows' if by_rows else 'columns'}" + (f", scores + {SNAP}" if snap else ""))
    return AttentionBlock(node.id, Head(W_Q, W_K, W_V, W_O, name=node.name), f"{how}; {shape}")


# ---------------------------------------------------------------------------------------------
# feed-forward
# ---------------------------------------------------------------------------------------------


def _table_units(node: Node, graph: Graph, layout: Layout, values: dict[int, list]) -> list[Unit]:
    out_vals = values[node.id]
    ins = [graph.nodes[i] for i in node.inputs]
    one = layout.index(ONE)
    units = []
    if len(ins) == 1:
        src = ins[0]
        for dim, x in zip(layout.dims[src.id], [v for v in values[src.id] if v is not None]):
            w_out = encode(node, layout, out_vals, _call(node, node.f, x))
            if w_out:
                units.append(Unit({dim: 1}, w_out))
        return units
    a, b = ins
    a_vals = [v for v in values[a.id] if v is not None]
    b_vals = [v for v in values[b.id] if v is not None]
    if len(a_vals) * len(b_vals) > MAX_HIDDEN:
        raise RASPError(f"{node.name}: a lookup table over {len(a_vals)} x {len(b_vals)} input values is above the "
                        f"budget of {MAX_HIDDEN} hidden units; shorten max_seq_len or simplify the SequenceMap")
    for da, x in zip(layout.dims[a.id], a_vals):
        for db, y in zip(layout.dims[b.id], b_vals):
            ok, r = _try(node.f, x, y)
            w_out = encode(node, layout, out_vals, r) if ok else {}
            if w_out:
                units.append(Unit({da: 1, db: 1, one: -1}, w_out))
    return units


def _try(f, *args):
    """``(True, f(*args))``, or ``(False, None)`` when ``f`` raises (a pair the value sets skipped)."""
    try:
        return True, f(*args)
    except Exception:   # noqa: BLE001 - the value-set stage reported every other failure already
        return False, None


def _number(v) -> bool:
    return isinstance(v, (int, float, Fraction))


def _scalar_form(node: Node, graph: Graph, layout: Layout, values: dict[int, list]):
    """``(form, s_values, g)`` when the block's output is ``g(s)`` for a scalar ``s = form . x`` (linear in the
    residual), else ``None``. ``s_values`` maps each reachable ``s`` to an input tuple it comes from."""
    ins = [graph.nodes[i] for i in node.inputs]
    vals = [values[i] for i in node.inputs]
    if any(None in v for v in vals):
        return None
    if len(ins) == 1:
        if not ins[0].numerical:
            return None
        dim = layout.dims[ins[0].id][0]
        s_values = {_q(x): (x,) for x in vals[0]}
        return {dim: 1}, s_values, lambda s, f=node.f, sv=s_values: f(*sv[s])
    a, b = ins
    if not all(_number(v) for vs in vals for v in vs):
        return None
    # f(x, y) = g(x) + h(y), checked on every pair in exact arithmetic (a float is the rational it stores); a
    # LinearSequenceMap is additive by construction
    table = {}
    if node.linear is not None and all(isinstance(c, (int, Fraction)) for c in node.linear):
        fa, fb = node.linear
        qa, qb = [(x, fa * _q(x)) for x in vals[0]], [(y, fb * _q(y)) for y in vals[1]]
        table = {(x, y): u + v for x, u in qa for y, v in qb}
    for x in vals[0] if not table else ():
        for y in vals[1]:
            ok, r = _try(node.f, x, y)
            if not ok or not _number(r):
                return None
            table[x, y] = _q(r)
    x0, y0 = vals[0][0], vals[1][0]
    g = {x: table[x, y0] - table[x0, y0] for x in vals[0]}
    h = {y: table[x0, y] for y in vals[1]}
    if any(table[x, y] != g[x] + h[y] for x in vals[0] for y in vals[1]):
        return None
    form: dict[int, object] = {}
    one = layout.index(ONE)
    for src, part in ((a, g), (b, h)):
        if src.numerical:       # the part must be linear in the stored value: part(x) = c * x + c0
            xs = sorted(part)
            c = 0 if len(xs) == 1 else (part[xs[-1]] - part[xs[0]]) / (_q(xs[-1]) - _q(xs[0]))
            c0 = part[xs[0]] - c * _q(xs[0])
            if any(part[x] != c * _q(x) + c0 for x in xs):
                return None
            dim = layout.dims[src.id][0]     # the same SOp may be both inputs: contributions add
            form[dim] = _simplify(form.get(dim, 0) + c)
            form[one] = _simplify(form.get(one, 0) + c0)
        else:
            src_vals = [v for v in values[src.id] if v is not None]
            for dim, x in zip(layout.dims[src.id], src_vals):
                if part[x] != 0:
                    form[dim] = _simplify(form.get(dim, 0) + part[x])
    s_values: dict = {}
    for (x, y), r in table.items():
        s_values.setdefault(r, (x, y))
    return {k: v for k, v in form.items() if v != 0}, s_values, lambda s, f=node.f, sv=s_values: f(*sv[s])


def _q(v) -> Fraction:
    """The exact rational a number stores (bools as 0/1)."""
    return Fraction(v)


def _simplify(v):
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    return v


def _vec_sub(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) - v
    return {k: v for k, v in out.items() if v != 0}


def _vec_scale(a: dict, c) -> dict:
    return {k: _simplify(v * c) for k, v in a.items() if v * c != 0}


def _div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return _simplify(Fraction(a) / Fraction(b))


def piecewise_units(form: dict, points: list[tuple[object, dict]], one: int, robust: bool) -> tuple[list[Unit], object]:
    """ReLU units computing the vector function through ``points`` ``[(s_j, y_j)]`` (``s_j`` ascending) of
    ``s = form . x``. Returns ``(units, margin)``: ``margin`` is the smallest distance from a known ``s_j`` to a
    breakpoint (robust steps: a quarter of the gap; interpolation: 0)."""
    _, y0 = points[0]
    units = [Unit({one: 1}, dict(y0))] if y0 else []
    margin = None
    if robust:
        for (sa, ya), (sb, yb) in zip(points, points[1:]):
            step = _vec_sub(yb, ya)
            if not step:
                continue
            gap = sb - sa
            lo, hi = sa + _div(gap, 4), sb - _div(gap, 4)
            scale = _div(1, hi - lo)
            units.append(Unit(_affine(form, one, scale, lo), _vec_scale(step, 1)))
            units.append(Unit(_affine(form, one, scale, hi), _vec_scale(step, -1)))
            q = _div(gap, 4)
            margin = q if margin is None else min(margin, q)
        return units, margin
    slope_before: dict = {}
    for (sa, ya), (sb, yb) in zip(points, points[1:]):
        slope = {} if ya == yb else _vec_scale(_vec_sub(yb, ya), _div(1, sb - sa))   # flat stretches are common
        change = _vec_sub(slope, slope_before)
        if change:
            units.append(Unit(_affine(form, one, 1, sa), change))
        slope_before = slope
    return units, 0


def _affine(form: dict, one: int, scale, shift) -> dict:
    """Weights of ``scale * (s - shift)``."""
    w = {k: _simplify(v * scale) for k, v in form.items()}
    w[one] = _simplify(w.get(one, 0) - scale * shift)
    return {k: v for k, v in w.items() if v != 0}


def _smallest_gap(points: list) -> object:
    """The smallest distance between consecutive known inputs of a scalar block (``None`` for one value)."""
    return min((b[0] - a[0] for a, b in zip(points, points[1:])), default=None)


def mlp_block(node: Node, graph: Graph, layout: Layout, values: dict[int, list], robust: bool,
              max_seq_len: int) -> MLPBlock:
    """The feed-forward block of ``node`` (see the module notes); ``robust``: steps (softmax) or interpolation."""
    one = layout.index(ONE)
    out_vals = values[node.id]
    if node.kind == "selector_width":
        form = {layout.index(width_label(node.name)): 1}
        points = []
        for w in range(max_seq_len, -1, -1):   # s = 1/(w+1) ascending
            ok, r = (True, w) if node.f is None else _try(node.f, w)
            points.append((Fraction(1, w + 1), encode(node, layout, out_vals, r) if ok else {}))
        units, margin = piecewise_units(form, points, one, robust)
        bos = layout.index(BOS)
        for u in units:   # at BOS s = 1 and one = 0: push every unit below 0 there
            at_bos = sum(v for k, v in u.w_in.items() if k in form)
            if at_bos > 0:
                u.w_in[bos] = -at_bos
        return MLPBlock(node.id, units, ("steps" if robust else "interpolation") + " on 1/(w+1), gated at BOS",
                        margin, {"knots": len(points), "value_gap": _smallest_gap(points)})
    scalar = _scalar_form(node, graph, layout, values)
    table_units = None
    if scalar is None or not robust:
        ins = [graph.nodes[i] for i in node.inputs]
        if all(not n.numerical for n in ins):
            table_units = _table_units(node, graph, layout, values)
    if scalar is not None:
        form, s_values, g = scalar
        points = []
        for s in sorted(s_values):
            ok, r = _try(g, s)
            points.append((s, encode(node, layout, out_vals, r) if ok else {}))
        units, margin = piecewise_units(form, points, one, robust)
        if table_units is None or len(units) <= len(table_units):
            how = ("steps" if robust else "interpolation") + f" through {len(points)} values of a scalar"
            return MLPBlock(node.id, units, how, margin, {"knots": len(points), "value_gap": _smallest_gap(points)})
    if table_units is None:
        names = ", ".join(graph.nodes[i].name for i in node.inputs)
        raise RASPError(f"{node.name}: a SequenceMap of numerical SOps ({names}) is compiled only when it is "
                        "linear in them; make its inputs categorical (rasp.categorical) or use a linear function")
    return MLPBlock(node.id, table_units, f"lookup table over {len(table_units)} input value combinations")

