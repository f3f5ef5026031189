"""Exact check that the modified network equals ``f_bar`` on distinct-column cubes, 0 elsewhere.

Every real input is sent by the quantizer to a point of the extended grid ``G_delta^+``
(checked separately, :func:`verify_quantizer`), so it suffices to check
``g_v(g_c(L))`` for every ``L`` in ``G_delta^+``:

* the contextual stage runs on ids (rank-1 pass, exact integers), giving every column after
  ``g_c`` in scaled units ``2N * value``;
* the kill and zeroing layers of ``g_v`` run on all those columns, vectorized, exactly;
* the per-context layers run on each surviving column in Fractions, event-driven: a layer
  fires only when ``u . Z`` lies in its window, and windows are disjoint, so one ``bisect``
  per step finds the only candidate (it fires if it comes later than the last fired layer).

The last rule is where Lemma 4.3's hidden precondition bites: a mapped column that falls in
a later window fires again and the check fails. ``precondition`` reports the margin.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import CLAMP_PASSES, YunParams
from expressivity.constructions.yun.grid import as_int_array, column_table, enumerate_grid, parse_rank_one, run_ids
from expressivity.errors import NetworkError
from expressivity.network.exact import exact_activate, to_exact
from expressivity.network.layers import FeedForwardLayer, PiecewiseLinear


@dataclass
class ValueReport:
    failures: int
    good_points: int
    other_points: int
    mismatches_good: int
    nonzero_other: int
    quantizer_failures: int
    quantizer_points: int
    network_is_stages: bool   # build.network is the checked stages' layers, in order (else one more failure)
    precondition_margin: Fraction
    sigma: Fraction
    seconds: float
    arithmetic: str

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if k == "seconds" else v) for k, v in self.__dict__.items()}


def verify_quantizer(p: YunParams, quantizer) -> tuple[int, int]:
    """Exact symbolic check that every quantizer coordinate equals ``g_q^ent`` on all of the real line.

    The quantizer's layers are width-1 feed-forward layers on one coordinate each, so what they do
    to coordinate ``i`` is a function of one real ``t`` (the entry after the positional row),
    piecewise linear with jumps. It is carried exactly (Fractions) as pieces (:func:`_compose`),
    each an open interval or a single point on which it is affine, refined at ``g_q^ent``'s own
    breakpoints; then slope and intercept are compared on every piece (a value at every point).
    Sampling points around the breakpoints (what this did before a fresh audit, 2026-11-28) passed a
    breakpoint moved by less than its 1/(1000 N) offsets. Returns ``(pieces compared, pieces that
    differ)``; a layer that is not of this form (a unit reading or writing several coordinates, an
    attention layer, an embedding or readout, another positional encoding) counts as a failure.
    """
    from expressivity.constructions.yun.quantize import positional_encoding, quantize_scalar

    layers = [layer for layer in quantizer.layers if isinstance(layer, FeedForwardLayer)
              and getattr(layer, "norm", None) is None and layer.activation.kind in ("relu", "piecewise")]
    foreign = len(quantizer.layers) - len(layers)
    foreign += int(any(getattr(quantizer, k, None) is not None
                       for k in ("embedding", "embedding_bias", "readout", "readout_bias", "final_norm")))
    foreign += int(not _same_array(quantizer.positional_encoding, positional_encoding(p) if p.positional else None))
    edges = sorted({Fraction(0), Fraction(p.range_hi), *(Fraction(k, p.N) for k in range(p.levels + 1))})
    compared = failures = 0
    for i in range(p.d):
        pieces, mixed = _compose(layers, i, p.d)
        failures += mixed
        for lo, hi, a, b in _refine(pieces, edges):
            compared += 1
            if _is_point(lo, hi):
                failures += int(a * lo + b != quantize_scalar(p, lo))
            else:          # an open interval, where g_q^ent is constant
                failures += int(a != 0 or b != quantize_scalar(p, _inside(lo, hi)))
    return compared, failures + foreign


def _compose(layers, i: int, d: int) -> tuple[list, int]:
    """Coordinate ``i`` after ``layers`` as a function of its input ``t``: sorted pieces ``(lo, hi, a, b)``
    (value ``a t + b``; ``lo == hi`` a point; ``None`` an infinite end), and how many units read or write
    coordinate ``i`` together with another (each a failure: the function is then not one of ``t``)."""
    pieces, mixed = [(None, None, Fraction(1), Fraction(0))], 0
    for layer in layers:
        W1, W2 = to_exact(layer.W_1), to_exact(layer.W_2)
        b1, b2 = to_exact(layer.b_1), to_exact(layer.b_2)
        units = []
        for h in range(W1.shape[1]):
            reads = [j for j in range(d) if W1[j, h] != 0]
            writes = [j for j in range(d) if W2[h, j] != 0]
            if i in reads or i in writes:
                if reads != [i] or writes != [i]:
                    mixed += 1
                    continue
                units.append((Fraction(W1[i, h]), Fraction(b1[h]), Fraction(W2[h, i])))
        act = layer.activation
        cuts = [Fraction(c) for c in getattr(act, "breakpoints", (0,))]
        out = []
        for lo, hi, a, b in pieces:
            # where a unit's pre-activation w (a t + b) + beta crosses one of its activation's breakpoints
            inner = sorted({(c - w * b - beta) / (w * a) for w, beta, _ in units if w * a != 0 for c in cuts})
            inner = [] if _is_point(lo, hi) else [t for t in inner if (lo is None or t > lo) and (hi is None or t < hi)]
            for plo, phi_ in _split(lo, hi, inner):
                probe = plo if _is_point(plo, phi_) else _inside(plo, phi_)
                slope, icpt = a, b + Fraction(b2[i])
                for w, beta, v in units:
                    pre = w * (a * probe + b) + beta
                    if act.kind == "relu":
                        ka, kb = Fraction(int(pre > 0)), Fraction(0)
                    else:
                        k = act.piece_index(pre)
                        ka, kb = Fraction(act.slopes[k]), Fraction(act.intercepts[k])
                    slope += v * ka * w * a
                    icpt += v * (ka * (w * b + beta) + kb)
                out.append((plo, phi_, slope, icpt))
        pieces = out
    return pieces, mixed


def _split(lo, hi, inner: list) -> list:
    """The open interval ``(lo, hi)`` cut at the sorted points ``inner``: open pieces and the points."""
    if _is_point(lo, hi):
        return [(lo, hi)]
    parts, left = [], lo
    for t in inner:
        parts += [(left, t), (t, t)]
        left = t
    return parts + [(left, hi)]


def _is_point(lo, hi) -> bool:
    return lo is not None and lo == hi


def _inside(lo, hi):
    """A point strictly inside the open interval ``(lo, hi)`` (``None``: infinite)."""
    if lo is None and hi is None:
        return Fraction(0)
    if lo is None:
        return hi - 1
    if hi is None:
        return lo + 1
    return (lo + hi) / 2


def _refine(pieces: list, edges: list) -> list:
    """``pieces`` cut also at ``edges`` (the reference's breakpoints)."""
    out = []
    for lo, hi, a, b in pieces:
        inner = [] if _is_point(lo, hi) else [t for t in edges if (lo is None or t > lo) and (hi is None or t < hi)]
        out += [(plo, phi_, a, b) for plo, phi_ in _split(lo, hi, inner)]
    return out


def _scaled_ff(layer: FeedForwardLayer, Z: np.ndarray, scale: int) -> np.ndarray:
    """Apply an FF layer to scaled columns ``Z`` ``(m, d)`` exactly, staying in integers."""
    ints = [_as_int(w) for w in (layer.W_1, layer.W_2, np.asarray(layer.b_1, dtype=object) * scale,
                                 np.asarray(layer.b_2, dtype=object) * scale)]
    phi = _scaled_activation(layer.activation, scale)
    params = [*phi.breakpoints, *phi.slopes, *phi.intercepts]
    if any(w is None for w in ints) or any(Fraction(v).denominator != 1 for v in params):
        raise NetworkError(f"layer {layer.name!r} has weights that are not integers in scaled units")
    W1, W2, b1, b2 = ints
    if Z.dtype != object and all(np.max(np.abs(w), initial=0) < 2 ** 20 for w in ints) and \
            max(abs(int(v)) for v in params) < 2 ** 40 and np.max(np.abs(Z), initial=0) < 2 ** 40:
        W1, W2, b1, b2 = (w.astype(np.int64) for w in ints)
    pre = Z @ W1 + b1
    k = sum((pre >= int(c)).astype(np.int64) for c in phi.breakpoints) if phi.breakpoints else np.zeros(pre.shape, np.int64)
    pieces = [int(a) * pre + int(b) for a, b in zip(phi.slopes, phi.intercepts)]
    act = np.choose(k, pieces) if len(pieces) > 1 else pieces[0]
    return Z + act @ W2 + b2


def _as_int(w) -> np.ndarray | None:
    arr = np.asarray(w, dtype=object)
    if any(Fraction(v).denominator != 1 for v in arr.flat):
        return None
    out = np.empty(arr.shape, dtype=object)
    out.flat[:] = [int(Fraction(v)) for v in arr.flat]
    return out


def _scaled_activation(phi: PiecewiseLinear, scale: int) -> PiecewiseLinear:
    # phi(t/scale)*scale: breakpoints and intercepts scale, slopes stay.
    return PiecewiseLinear(tuple(Fraction(c) * scale for c in phi.breakpoints), tuple(phi.slopes),
                           tuple(Fraction(b) * scale for b in phi.intercepts))


def _value_layers(p: YunParams, layers):
    """Windows ``[lo, hi)`` in ``u . Z`` of the per-context layers, their updates, and order."""
    u = np.array(p.u, dtype=object).reshape(p.d, 1)
    wins = []
    for idx, layer in enumerate(layers):
        phi = layer.activation
        if (layer.width != 1 or not np.array_equal(to_exact(layer.W_1), u) or not isinstance(phi, PiecewiseLinear)
                or len(phi.breakpoints) != 2 or any(s != 0 for s in phi.slopes) or phi.intercepts[0] != 0
                or phi.intercepts[2] != 0 or any(b != 0 for b in layer.b_2)):
            raise NetworkError(f"value layer {idx} is not a window layer (w_1 = u, indicator activation)")
        b = Fraction(layer.b_1[0])
        upd = [Fraction(w) * Fraction(phi.intercepts[1]) for w in to_exact(layer.W_2)[0]]
        wins.append((Fraction(phi.breakpoints[0]) - b, Fraction(phi.breakpoints[1]) - b, idx, upd))
    wins.sort(key=lambda w: w[0])
    for a, b in zip(wins, wins[1:]):
        if a[1] > b[0]:
            raise NetworkError("value layers have overlapping windows")
    return wins


def _run_windows(p: YunParams, wins, starts, Z: list[Fraction]) -> list[Fraction]:
    last = -1
    Z = list(Z)
    while True:
        w = sum(ui * z for ui, z in zip(p.u, Z))
        i = bisect_right(starts, w) - 1
        if i < 0 or not w < wins[i][1] or wins[i][2] <= last:
            return Z
        Z = [z + a for z, a in zip(Z, wins[i][3])]
        last = wins[i][2]


def verify_value(build, chunk: int = 1 << 16) -> ValueReport:
    """Check ``build.network`` (a :class:`~expressivity.constructions.yun.compile.YunBuild`) exactly."""
    t0 = time.perf_counter()
    p = build.params
    scale = 2 * p.N
    table = column_table(p)
    id_layers = parse_rank_one(build.contextual, p)
    v_layers = list(build.value.layers)
    head = v_layers[: 1 + p.d]
    # after the windows: the output rescale (sigma != 1) and the output clamp, run exactly as they stand
    tail_length = (1 if build.sigma != 1 else 0) + (CLAMP_PASSES * p.d if build.value.metadata.get("clamp") is not None else 0)
    tail = v_layers[len(v_layers) - tail_length:] if tail_length else []
    body = v_layers[1 + p.d: len(v_layers) - tail_length]
    wins = _value_layers(p, body)
    starts = [w[0] for w in wins]
    entry_tables = [[as_int_array([c[i] for c in table.entries[j]])[0] for i in range(p.d)] for j in range(p.n)]
    rep_out = {}
    for r, key in enumerate(build.rep_keys):
        rep_out[int(key)] = r
    mism = nonzero = good_total = other_total = 0
    arith = "int64"
    zero_col = _finish(p, wins, starts, tail, [Fraction(0)] * p.d)
    if any(z != 0 for z in zero_col):
        nonzero += 1
    codes_base = p.N ** p.d
    cache: dict = {}
    for configs, ids in enumerate_grid(p, table, chunk):
        res = run_ids(id_layers, ids)
        if "python" in res.arithmetic:
            arith = "int64+python-int"
        q = res.ids
        P = ids.shape[0]
        cols = np.empty((P, p.n, p.d), dtype=ids.dtype if q.dtype != object else object)
        for j in range(p.n):
            for i in range(p.d):
                cols[:, j, i] = entry_tables[j][i][configs[:, j]]
        cols[:, :, 0] = cols[:, :, 0] + (q - ids)
        Z = cols.reshape(P * p.n, p.d)
        for layer in head:
            Z = _scaled_ff(layer, Z, scale)
        Z = Z.reshape(P, p.n, p.d)
        oob = table.oob[configs].any(axis=1)
        order = np.argsort(ids, axis=1, kind="stable")
        sids = np.take_along_axis(ids, order, axis=1)
        good = ~oob & np.all(sids[:, 1:] != sids[:, :-1], axis=1)
        # Non-grid points: every column must be exactly zero after kill + zeroing.
        nonzero += int(np.any(Z[~good] != 0, axis=(1, 2)).sum())
        other_total += int((~good).sum())
        # Grid points: columns unchanged by kill + zeroing, and equal to their class's columns.
        gidx = np.flatnonzero(good)
        good_total += gidx.size
        unchanged = np.all(Z[gidx] == cols[gidx], axis=(1, 2))
        mism += int((~unchanged).sum())
        codes = np.take_along_axis(table.code[configs[gidx]], order[gidx], axis=1)
        keys = np.zeros(gidx.size, dtype=object)
        for j in range(p.n):
            keys = keys * codes_base + codes[:, j]
        for row, key, ordr in zip(gidx, keys, order[gidx]):
            r = rep_out.get(int(key))
            if r is None:
                mism += 1
                continue
            A = build.A_rep[r]
            for rank, j in enumerate(ordr):
                ck = tuple(int(z) for z in cols[row, j])
                out = cache.get(ck)
                if out is None:
                    out = cache[ck] = _finish(p, wins, starts, tail, [Fraction(z, scale) for z in ck])
                if any(o != Fraction(float(a)) for o, a in zip(out, A[rank])):
                    mism += 1
                    break
    margin = (p.t_l - p.delta / 2) - build.sigma * build.max_uA
    quantizer_pieces, qf = verify_quantizer(p, build.quantizer)
    stages = (*build.quantizer.layers, *build.contextual.layers, *build.value.layers)
    # the stages are what is checked; the network saved as modified/ must be them (a fresh audit, 2026-11-28:
    # a build whose network alone was altered verified with 0 failures)
    same = len(build.network.layers) == len(stages) and all(a is b for a, b in zip(build.network.layers, stages)) \
        and _same_array(build.network.positional_encoding, build.quantizer.positional_encoding) \
        and all(getattr(build.network, k) is None
                for k in ("embedding", "embedding_bias", "readout", "readout_bias", "final_norm"))
    return ValueReport(mism + nonzero + qf + int(not same), good_total, other_total, mism, nonzero, qf,
                       quantizer_pieces, same,
                       margin, build.sigma,
                       time.perf_counter() - t0, arith + " + Fraction")


def _same_array(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return np.shape(a) == np.shape(b) and all(Fraction(x) == Fraction(y) for x, y in zip(to_exact(a).flat, to_exact(b).flat))


def _finish(p, wins, starts, tail, Z):
    """One column through the window layers, then through ``tail`` (rescale, clamp) as feed-forward layers, exactly."""
    out = _run_windows(p, wins, starts, Z)
    for layer in tail:
        pre = np.array(out, dtype=object) @ to_exact(layer.W_1) + to_exact(layer.b_1)
        out = list(np.array(out, dtype=object) + exact_activate(layer.activation, pre) @ to_exact(layer.W_2)
                   + to_exact(layer.b_2))
    return out
