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
gap is 1 per unit scale. A key or query that may be ``None`` (all-zero, e.g. an empty Aggregate)
is read through ``one``: its row or column of the table sits on ``one`` and is subtracted from
every value's dimension, so the head applies the predicate to ``None`` exactly as ``evaluate`` does.
Values are typed (:func:`~.values.value_key`): ``True`` and ``1`` have their own dimensions.

**Feed-forward** (Map, SequenceMap, the second half of SelectorWidth), by input kind:

* categorical inputs: a lookup table, one hidden unit per input value (``relu(x_v)``) or per
  pair (``relu(a_u + b_v - one)``), writing the output's encoding of ``f`` (a SequenceMap of one
  SOp with itself arrives as a Map of ``f(x, x)``, :mod:`.graph`);
* a scalar ``s``, linear in the residual (a numerical SOp, a LinearSequenceMap, a SequenceMap
  additive over categorical inputs ``g(a) + h(b)``, a selector width's ``1/(w+1)``):
  ``f`` through the finite set of values of ``s``, piecewise linear with ReLU units. Hardmax:
  interpolation through the known values (knots only where the slope changes), exact on the
  set. Softmax: steps whose ramps lie in the middle half between consecutive values, so an input
  within a quarter gap of a known value gives the exact output (the margin is reported). A scalar
  form is taken only when equal scalars give typed-equal outputs.

Nothing here is trusted: :mod:`.proofs` checks every block of the assembled network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from expressivity.network import Head
from expressivity.rasp.graph import Graph, Node
from expressivity.rasp.layout import BOS, ONE, Layout, width_label
from expressivity.rasp.language import RASPError
from expressivity.rasp.values import stored, value_key

MAX_HIDDEN = 20_000      # hidden units of one block
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


def encode(node: Node, layout: Layout, value) -> dict[int, object]:
    """The residual entries (dim -> number) that hold ``value`` of ``node`` (typed: ``True`` and ``1`` have
    different dimensions in a categorical SOp); ``None`` is all-zero."""
    if value is None:
        return {}
    if node.numerical:
        v = stored(value)
        return {layout.dims[node.id][0]: v} if v != 0 else {}
    return {layout.dim_of(node.id, value): 1}


# ---------------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------------


def _indicator(W: np.ndarray, dims: list[int], values: list, pattern: list[int], one: int, scale=1) -> None:
    """Columns of ``W`` such that a residual holding ``values[a]`` (one-hot on ``dims``, all-zero for ``None``,
    ``one = 1``) reads ``scale`` in column ``pattern[a]`` and 0 in the others: ``None`` is read through ``one``
    and cancelled on every other value's dimension."""
    none = pattern[-1] if values and values[-1] is None else None
    if none is not None:
        W[one, none] += scale
    for dim, c in zip(dims, pattern):
        W[dim, c] += scale
        if none is not None:
            W[dim, none] -= scale


def _factor_scores(W_Q, W_K, node: Node, layout: Layout, table) -> tuple[int, str]:
    """Fill the first columns of ``W_Q, W_K`` so that ``q . k = 2 * predicate(key, query)`` for every value pair
    (``None`` included where it occurs); returns the number of columns used and how."""
    one = layout.index(ONE)
    kdims, qdims = layout.dims[node.inputs[0]], layout.dims[node.inputs[1]]
    M = table.matrix.astype(np.int64)
    rows = {r: i for i, r in enumerate(dict.fromkeys(map(tuple, M)))}
    cols = {c: i for i, c in enumerate(dict.fromkeys(map(tuple, M.T)))}
    if len(rows) <= len(cols):        # one column per distinct row: the query picks its row, the keys hold it
        _indicator(W_Q, qdims, table.queries, [rows[tuple(r)] for r in M], one)
        for row, c in rows.items():
            _pattern(W_K, kdims, table.keys, np.array(row), c, one)
        return len(rows), f"{len(rows)} distinct rows"
    _indicator(W_K, kdims, table.keys, [cols[tuple(c)] for c in M.T], one)
    for col, c in cols.items():
        _pattern(W_Q, qdims, table.queries, np.array(col), c, one)
    return len(cols), f"{len(cols)} distinct columns"


def _pattern(W: np.ndarray, dims: list[int], values: list, pattern: np.ndarray, c: int, one: int) -> None:
    """Column ``c`` of ``W`` reads ``2 * pattern[a]`` from a residual holding ``values[a]`` (``None`` via ``one``)."""
    base = 2 * int(pattern[-1]) if values and values[-1] is None else 0
    W[one, c] += base
    for dim, p in zip(dims, pattern):
        W[dim, c] += 2 * int(p) - base


def attention_block(node: Node, graph: Graph, layout: Layout, values: dict[int, list], snap: bool) -> AttentionBlock:
    """The head of ``node`` (see the module notes), from its predicate table ``node.table``. ``snap`` (hardmax):
    every score gets ``+ SNAP`` (``one`` or ``tokens:BOS`` on both sides), which leaves exact arithmetic unchanged
    and makes float rounding land every score on the grid of spacing ``ulp(SNAP)``, so scores that tie exactly
    also tie in float64 and float32."""
    table = node.table
    d = len(layout.labels)
    M = table.matrix
    width_m = min(len(set(map(tuple, M))), len(set(map(tuple, M.T))))
    m = width_m + 1 + int(snap)
    W_Q, W_K = np.zeros((d, m), dtype=np.int64), np.zeros((d, m), dtype=np.int64)
    used, factored = _factor_scores(W_Q, W_K, node, layout, table)
    width = node.kind == "selector_width"
    bos_col = used
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
        W_V, W_O = _copy(node, graph, layout, values, d)
        how = ("numerical mean" if node.numerical else "categorical copy") + "; BOS attended when nothing is selected"
    shape = (f"predicate table {len(table.queries)}x{len(table.keys)} factored to {factored}"
             + (f", scores + {SNAP}" if snap else ""))
    return AttentionBlock(node.id, Head(W_Q, W_K, W_V, W_O, name=node.name), f"{how}; {shape}")


def _copy(node: Node, graph: Graph, layout: Layout, values: dict[int, list], d: int) -> tuple[np.ndarray, np.ndarray]:
    """``W_V, W_O`` moving the aggregated SOp's encoding into the output's (the same value, typed)."""
    src = node.inputs[2]
    src_vals = [v for v in values[src] if v is not None]
    W_V = np.zeros((d, len(layout.dims[src])), dtype=np.int64)
    W_O = np.zeros((len(layout.dims[src]), d), dtype=np.int64)
    for j, dim in enumerate(layout.dims[src]):
        W_V[dim, j] = 1
        W_O[j, layout.dims[node.id][0] if node.numerical else layout.dim_of(node.id, src_vals[j])] = 1
    return W_V, W_O


# ---------------------------------------------------------------------------------------------
# feed-forward
# ---------------------------------------------------------------------------------------------


def _table_units(node: Node, graph: Graph, layout: Layout, values: dict[int, list]) -> list[Unit]:
    """One unit per input value (``relu(x_v)``) or value pair (``relu(a_u + b_v - one)``) whose output is not
    ``None``; a value on which ``f`` raises ``ArithmeticError`` gets none (the interpreter raises there)."""
    ins = [graph.nodes[i] for i in node.inputs]
    one = layout.index(ONE)
    units = []
    if len(ins) == 1:
        src = ins[0]
        for dim, x in zip(layout.dims[src.id], [v for v in values[src.id] if v is not None]):
            ok, r = _try(node.f, x)
            w_out = encode(node, layout, r) if ok else {}
            if w_out:
                units.append(Unit({dim: 1}, w_out))
        return units
    a, b = ins
    if a.id == b.id:   # build_graph makes these Maps; a pair unit on one dimension would never fire
        raise AssertionError(f"{node.name}: a SequenceMap of one SOp with itself reached the lookup table")
    a_vals = [v for v in values[a.id] if v is not None]
    b_vals = [v for v in values[b.id] if v is not None]
    if len(a_vals) * len(b_vals) > MAX_HIDDEN:
        raise RASPError(f"{node.name}: a lookup table over {len(a_vals)} x {len(b_vals)} input values is above the "
                        f"budget of {MAX_HIDDEN} hidden units; shorten max_seq_len or simplify the SequenceMap")
    for da, x in zip(layout.dims[a.id], a_vals):
        for db, y in zip(layout.dims[b.id], b_vals):
            ok, r = _try(node.f, x, y)
            w_out = encode(node, layout, r) if ok else {}
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


def _outputs(node: Node, values: dict[int, list]) -> list | None:
    """``[(args, f(*args))]`` over the input values (typed), skipping raising ones; ``None`` when an input may be
    ``None`` (the scalar forms read numbers)."""
    domains = [values[i] for i in node.inputs]
    if any(None in d for d in domains):
        return None
    combos = [(x,) for x in domains[0]] if len(domains) == 1 else [(x, y) for x in domains[0] for y in domains[1]]
    out = []
    for args in combos:
        ok, r = _try(node.f, *args)
        if ok:
            out.append((args, r))
    return out


def _by_scalar(node: Node, outputs: list, scalar) -> dict | None:
    """``{s: output}`` when every input combination with the same scalar ``s = scalar(args)`` has the same typed
    output (else ``None``: the block is not a function of ``s``)."""
    points: dict = {}
    same = (lambda a, b: stored(a) == stored(b)) if node.numerical else (lambda a, b: value_key(a) == value_key(b))
    for args, r in outputs:
        s = scalar(args)
        # a numerical output is held as a number, so 2 and 2.0 are one (whatever reads it as a value is proven
        # on each typed value it may get); a categorical one as its typed value
        if s in points and not same(points[s], r):
            return None
        points.setdefault(s, r)
    return points


def _scalar_form(node: Node, graph: Graph, layout: Layout, values: dict[int, list]):
    """``(form, points)`` when the block's output is ``g(s)`` for a scalar ``s = form . x`` (linear in the
    residual): a Map of a numerical SOp (``s`` its value), or a SequenceMap whose numeric output is additive,
    ``f(x, y) = g(x) + h(y)`` exactly on every pair, and linear in each numerical input. ``points``: ``{s: output}``.
    ``None`` otherwise."""
    ins = [graph.nodes[i] for i in node.inputs]
    linear = _linear_form(node, ins, layout, values)
    if linear is not None:
        return linear
    outputs = _outputs(node, values)
    if outputs is None or not outputs:
        return None
    if len(ins) == 1:
        if not ins[0].numerical:
            return None
        points = _by_scalar(node, outputs, lambda args: stored(args[0]))
        return None if points is None else ({layout.dims[ins[0].id][0]: 1}, points)
    if not all(_number(r) for _, r in outputs):
        return None
    table = {(value_key(x), value_key(y)): stored(r) for (x, y), r in outputs}
    xs, ys = ([v for v in values[i]] for i in node.inputs)
    x0, y0 = xs[0], ys[0]
    try:
        g = {value_key(x): table[value_key(x), value_key(y0)] - table[value_key(x0), value_key(y0)] for x in xs}
        h = {value_key(y): table[value_key(x0), value_key(y)] for y in ys}
    except KeyError:         # f raised on a pair: no scalar form
        return None
    if len(table) != len(xs) * len(ys) or any(v != g[kx] + h[ky] for (kx, ky), v in table.items()):
        return None
    form: dict[int, object] = {}
    for src, part, vals in ((ins[0], g, xs), (ins[1], h, ys)):
        if not _add_part(form, src, part, vals, layout):
            return None
    points = _by_scalar(node, outputs, lambda args: table[value_key(args[0]), value_key(args[1])])
    return None if points is None else ({k: v for k, v in form.items() if v != 0}, points)


def _linear_form(node: Node, ins: list[Node], layout: Layout, values: dict[int, list]):
    """A LinearSequenceMap ``a x + b y`` with exact factors of numerical inputs holding no float and no ``None``:
    its output is ``s = a x + b y`` itself, typed exact, so its points are its own value set (no pair is
    enumerated; the proof enumerates them all)."""
    if node.linear is None or not all(isinstance(c, (int, Fraction)) and not isinstance(c, bool) for c in node.linear):
        return None
    if not all(n.numerical for n in ins) or ins[0].id == ins[1].id:
        return None
    domains = [values[n.id] for n in ins] + [values[node.id]]
    if any(v is None or isinstance(v, float) for d in domains for v in d):
        return None
    form: dict[int, object] = {}
    for n, c in zip(ins, node.linear):
        if c != 0:
            form[layout.dims[n.id][0]] = _simplify(Fraction(c))
    return form, {stored(v): v for v in values[node.id]}


def _add_part(form: dict, src: Node, part: dict, vals: list, layout: Layout) -> bool:
    """Add one input's share of ``s`` to ``form``: a numerical input's part must be linear in its stored value."""
    one = layout.index(ONE)
    if src.numerical:
        xs = sorted(vals, key=stored)
        lo, hi = stored(xs[0]), stored(xs[-1])
        c = 0 if lo == hi else _div(part[value_key(xs[-1])] - part[value_key(xs[0])], hi - lo)
        c0 = part[value_key(xs[0])] - c * lo
        if any(part[value_key(x)] != c * stored(x) + c0 for x in xs):
            return False
        dim = layout.dims[src.id][0]
        form[dim] = _simplify(form.get(dim, 0) + c)
        form[one] = _simplify(form.get(one, 0) + c0)
    else:
        for x in vals:
            if part[value_key(x)] != 0:
                dim = layout.dim_of(src.id, x)
                form[dim] = _simplify(form.get(dim, 0) + part[value_key(x)])
    return True


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
    if node.kind == "selector_width":
        form = {layout.index(width_label(node.name)): 1}
        points = []
        for w in range(max_seq_len, -1, -1):   # s = 1/(w+1) ascending
            ok, r = (True, w) if node.f is None else _try(node.f, w)
            points.append((Fraction(1, w + 1), encode(node, layout, r) if ok else {}))
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
        form, by_s = scalar
        points = [(s, encode(node, layout, by_s[s])) for s in sorted(by_s)]
        units, margin = piecewise_units(form, points, one, robust)
        if table_units is None or len(units) <= len(table_units):
            _check_hidden(node, len(units))
            how = ("steps" if robust else "interpolation") + f" through {len(points)} values of a scalar"
            return MLPBlock(node.id, units, how, margin, {"knots": len(points), "value_gap": _smallest_gap(points)})
    if table_units is None:
        names = ", ".join(graph.nodes[i].name for i in node.inputs)
        if node.linear is not None and any(isinstance(c, float) for c in node.linear):
            # it is linear, but evaluate computes a*x + b*y in float64, which is not exactly linear (the message said
            # "use a linear function" of a LinearSequenceMap(..., 0.1, 0.2): a fresh audit, 2026-11-29)
            raise RASPError(f"{node.name}: LinearSequenceMap({names}) has float coefficients {node.linear}, and "
                            "rasp.evaluate's float64 a*x + b*y is not exactly linear in x and y, so no exact network "
                            "equals it; give the coefficients as ints or Fractions (e.g. Fraction(1, 10))")
        raise RASPError(f"{node.name}: a {'Map' if len(node.inputs) == 1 else 'SequenceMap'} of numerical SOps "
                        f"({names}) is compiled only when it is a function of one linear combination of them (values "
                        "equal as numbers, e.g. True and 1, must give equal results); make its inputs categorical "
                        "(rasp.categorical) or use a linear function")
    _check_hidden(node, len(table_units))
    return MLPBlock(node.id, table_units, f"lookup table over {len(table_units)} input value combinations")


def _check_hidden(node: Node, units: int) -> None:
    if units > MAX_HIDDEN:
        raise RASPError(f"{node.name}: its feed-forward block needs {units} hidden units, above the budget of "
                        f"{MAX_HIDDEN}; shorten max_seq_len or simplify the SOp")
