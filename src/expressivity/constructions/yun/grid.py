"""The extended grid and a fast exact pass of the contextual map on column ids.

Every head of the contextual map has size 1 with ``W_Q = W_K = W_V = u`` (a ``(d, 1)``
column) and writes ``W_O = g e_1``. Then the head's query for token ``j`` is ``id_j + b_Q``,
its key and value for token ``k`` are ``id_k``, and the score ``(id_j + b_Q) id_k`` is
maximised by the largest id when the query is positive, the smallest when negative, and is
flat (hardmax averages all ids) when it is zero. Since ``u_1 = 1`` the head changes the id
by ``g`` times the selected id. So the whole stage is a function of the id vector, shape
``(points, n)``: no scores (squares of ids) are ever formed.

Units: ids are kept in *scaled units* ``2N * value`` so that all of them, and all window
thresholds ``l +- delta/2``, are integers. Arrays are int64 while a per-layer bound proves
no overflow, and Python ints (object arrays) after that; ``arithmetic`` says which ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.errors import NetworkError
from expressivity.network.layers import AttentionLayer
from expressivity.network.network import Network

INT64_SAFE = 2 ** 62


def scaled(p: YunParams, value) -> int:
    """``2N * value`` as an int; raises if ``value`` is not a multiple of ``delta/2``."""
    v = Fraction(value) * 2 * p.N
    if v.denominator != 1:
        raise NetworkError(f"{value} is not a multiple of delta/2 = 1/{2 * p.N}")
    return int(v.numerator)


@dataclass(frozen=True)
class ColumnTable:
    """All possible quantized columns of each token.

    ``ids[j][c]``: scaled id of configuration ``c`` of token ``j`` (Python ints);
    ``oob[c]``: configuration has an out-of-range entry; ``code[c]``: in-range configuration
    number in ``[0, N^d)`` (base-N digits, first coordinate least significant), -1 if oob.
    ``entries[j][c]``: the ``d`` scaled entries. Configurations number ``(N+1)^d``; digit
    ``N`` of a coordinate means the out-of-range value.
    """

    ids: list[list[int]]
    oob: np.ndarray
    code: np.ndarray
    entries: list[list[tuple[int, ...]]]


def column_table(p: YunParams) -> ColumnTable:
    base = p.N + 1
    out_s = scaled(p, p.out_value)
    ids, entries = [], []
    oob = np.zeros(base ** p.d, dtype=bool)
    code = np.zeros(base ** p.d, dtype=np.int64)
    for j in range(p.n):
        offset = 2 * p.N * (j if p.positional else 0)
        ids_j, ent_j = [], []
        for c in range(base ** p.d):
            digits = [(c // base ** i) % base for i in range(p.d)]
            col = tuple(out_s if k == p.N else offset + 2 * k for k in digits)
            ent_j.append(col)
            ids_j.append(sum(ui * e for ui, e in zip(p.u, col)))
            if j == 0:
                oob[c] = p.N in digits
                code[c] = -1 if oob[c] else sum(k * p.N ** i for i, k in enumerate(digits))
        ids.append(ids_j)
        entries.append(ent_j)
    return ColumnTable(ids, oob, code, entries)


def as_int_array(values: list[int] | np.ndarray) -> tuple[np.ndarray, bool]:
    """int64 array if every |value| < 2^62, else an object array of Python ints."""
    arr = np.asarray(values, dtype=object)
    big = max((abs(int(v)) for v in arr.flat), default=0) >= INT64_SAFE
    return (arr if big else arr.astype(np.int64)), big


def enumerate_grid(p: YunParams, table: ColumnTable, chunk: int = 1 << 17) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Yield ``(configs, ids)`` chunks over the whole extended grid.

    ``configs``: ``(P, n)`` configuration numbers per token; ``ids``: ``(P, n)`` scaled ids.
    Points are numbered in mixed radix ``(N+1)^d`` with token 0 least significant.
    """
    per_token = (p.N + 1) ** p.d
    total = per_token ** p.n
    id_tables = [as_int_array(table.ids[j])[0] for j in range(p.n)]
    for start in range(0, total, chunk):
        idx = np.arange(start, min(total, start + chunk), dtype=np.int64)
        configs = np.stack([(idx // per_token ** j) % per_token for j in range(p.n)], axis=1)
        cols = [id_tables[j][configs[:, j]] for j in range(p.n)]
        ids = np.stack(cols, axis=1)
        yield configs, ids


# ---- the contextual stage as rank-1 id updates -----------------------------------------------


@dataclass(frozen=True)
class IdHead:
    """One parsed head: adds ``gain * selected_id`` to each id; query offset ``bias`` (scaled)."""

    gain: int
    bias: int


def parse_rank_one(network: Network, p: YunParams) -> list[list[IdHead]]:
    """Read every attention layer of ``network`` as a list of :class:`IdHead`.

    Raises :class:`NetworkError` unless every head has the rank-1 shape this pass relies on.
    """
    u = np.array(p.u, dtype=object).reshape(p.d, 1)
    layers = []
    for k, layer in enumerate(network.layers):
        if not isinstance(layer, AttentionLayer) or layer.normalization != "hardmax" or layer.causal:
            raise NetworkError(f"layer {k} is not a non-causal hardmax attention layer")
        if not layer.inverse_temperature > 0:
            raise NetworkError(f"layer {k}: hardmax needs a positive inverse temperature")
        heads = []
        for h in layer.heads:
            same = all(np.array_equal(np.asarray(w, dtype=object), u) for w in (h.W_Q, h.W_K, h.W_V))
            w_o = np.asarray(h.W_O, dtype=object).reshape(-1)
            if not same or h.position_bias is not None or any(w_o[1:] != 0):
                raise NetworkError(f"layer {k}: head is not of the form W_Q=W_K=W_V=u, W_O=g*e_1")
            gain = Fraction(w_o[0])
            if gain.denominator != 1:
                raise NetworkError(f"layer {k}: head gain {gain} is not an integer")
            heads.append(IdHead(int(gain), scaled(p, Fraction(h.b_Q[0]))))
        layers.append(heads)
    return layers


@dataclass
class IdPass:
    """Result of :func:`run_ids`: final scaled ids, the arithmetic used, flat-tie count."""

    ids: np.ndarray
    arithmetic: str
    zero_query_ties: np.ndarray  # (P,) points where a zero query averaged unequal ids


def _apply_layer(heads: list[IdHead], v: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """One attention layer on ids ``v`` ``(P, n)`` (exact; hardmax semantics of the module doc)."""
    n = v.shape[1]
    vmax = v.max(axis=1, keepdims=True)
    vmin = v.min(axis=1, keepdims=True)
    total = v.sum(axis=1, keepdims=True)
    update = np.zeros_like(v)
    for h in heads:
        q = v + h.bias
        flat = q == 0
        if np.any(flat):
            bad |= np.any(flat & (total % n != 0), axis=1)
        sel = np.where(q > 0, vmax, np.where(q < 0, vmin, total // n))
        update = update + h.gain * sel
    return v + update


def _window(heads: list[IdHead]) -> tuple[int, int] | None:
    """``(lo, hi)`` if the layer is a selective shift: it can change only ids in ``[lo, hi]``.

    Two heads with opposite gains select the same id (both max or both min) unless the id
    lies between the two query thresholds ``-b``, so their updates cancel outside.
    """
    if len(heads) != 2 or heads[0].gain != -heads[1].gain or heads[0].bias == heads[1].bias:
        return None
    a, b = -heads[0].bias, -heads[1].bias
    return (min(a, b), max(a, b))


def _segments(layers: list[list[IdHead]]):
    """Split layers into runs of increasing, non-overlapping windows and single other layers."""
    out, run = [], []
    for heads in layers:
        w = _window(heads)
        if w is not None and (not run or run[-1][1][1] <= w[0]):
            run.append((heads, w))
            continue
        if run:
            out.append(("windows", run))
            run = []
        if w is not None:
            run = [(heads, w)]
        else:
            out.append(("layer", heads))
    if run:
        out.append(("windows", run))
    return out


def _run_windows(run, v: np.ndarray, bad: np.ndarray) -> np.ndarray | None:
    """Event-driven pass over a run of window layers: each row jumps to the next window that
    holds one of its ids, so the cost is the number of shifts, not the number of layers.

    Returns ``None`` (caller falls back to layer by layer) if an id sits on a window edge.
    """
    lo_obj = np.array([w[0] for _, w in run], dtype=object)
    hi_obj = np.array([w[1] for _, w in run], dtype=object)
    growth = 1 + 2 * max(abs(h.gain) for heads, _ in run for h in heads)
    edges_fit = max(abs(int(x)) for x in (*lo_obj, *hi_obj)) < INT64_SAFE
    K = len(run)
    ptr = np.zeros(v.shape[0], dtype=np.int64)
    active = np.arange(v.shape[0])
    v = v.copy()
    while active.size:
        if v.dtype != object and (not edges_fit or int(np.max(np.abs(v[active]))) * growth >= INT64_SAFE):
            v = v.astype(object)  # the next shift could overflow int64
        lo, hi = (lo_obj, hi_obj) if v.dtype == object else (lo_obj.astype(np.int64), hi_obj.astype(np.int64))
        sub = v[active]
        k = np.searchsorted(lo, sub, side="right") - 1
        kc = np.clip(k, 0, K - 1)
        inside = (k >= 0) & (sub <= hi[kc])
        if np.any(inside & ((sub == lo[kc]) | (sub == hi[kc]))):
            return None
        inside &= kc >= ptr[active][:, None]
        nxt = np.where(inside, kc, K).min(axis=1)
        keep = nxt < K
        active, nxt = active[keep], nxt[keep]
        if not active.size:
            break
        # Every row applies its own next layer; heads' gains and biases are gathered per row.
        sub = v[active]
        n = sub.shape[1]
        vmax = sub.max(axis=1, keepdims=True)
        vmin = sub.min(axis=1, keepdims=True)
        total = sub.sum(axis=1, keepdims=True)
        update = np.zeros_like(sub)
        for h in range(2):
            gain = np.array([run[k][0][h].gain for k in range(K)], dtype=object)[nxt][:, None]
            bias = np.array([run[k][0][h].bias for k in range(K)], dtype=object)[nxt][:, None]
            if sub.dtype != object:
                gain, bias = gain.astype(np.int64), bias.astype(np.int64)
            q = sub + bias
            flat = q == 0
            if np.any(flat):
                bad[active] |= np.any(flat & (total % n != 0), axis=1)
            update = update + gain * np.where(q > 0, vmax, np.where(q < 0, vmin, total // n))
        v[active] = sub + update
        ptr[active] = nxt + 1
    return v


def run_ids(layers: list[list[IdHead]], ids: np.ndarray) -> IdPass:
    """Apply the parsed layers to scaled ids ``(P, n)`` exactly.

    A zero query makes hardmax average all ids; if that average is not an integer in scaled
    units (never on the extended grid, spec §3.3) the point is flagged in ``zero_query_ties``.
    Runs of selective-shift layers are processed event by event (:func:`_run_windows`).
    """
    v = ids.copy()
    promoted = v.dtype == object
    start_obj = promoted
    bad = np.zeros(v.shape[0], dtype=bool)

    def guard(growth: int, biases) -> None:
        nonlocal v, promoted
        bound = int(np.max(np.abs(v))) if v.size else 0
        if not promoted and (bound * growth >= INT64_SAFE or any(abs(b) >= INT64_SAFE // 4 for b in biases)):
            v = v.astype(object)
            promoted = True

    for kind, item in _segments(layers):
        if kind == "windows":
            # Event-driven costs ~4x a plain layer per shift and a row shifts about n times.
            out = _run_windows(item, v, bad) if len(item) > 4 * (v.shape[1] + 1) else None
            if out is not None and out.dtype == object and not promoted:
                promoted = True
            if out is None:
                for heads, _ in item:
                    guard(1 + sum(abs(h.gain) for h in heads), [h.bias for h in heads])
                    v = _apply_layer(heads, v, bad)
            else:
                v = out
        else:
            guard(1 + sum(abs(h.gain) for h in item), [h.bias for h in item])
            v = _apply_layer(item, v, bad)
    arithmetic = "python-int" if start_obj else ("int64->python-int" if promoted else "int64")
    return IdPass(v, arithmetic, bad)
