"""Lemma 4.2: the contextual map ``g_c`` as hardmax attention layers of two size-1 heads.

Tokens are rows. Every head reads the column id ``x @ u`` (``u = (1, N, ..., N^{d-1})``) as
query, key and value, and writes into coordinate 0. Window layer for id ``l`` (increasing
``l``): heads with query biases ``-(l - delta/2)`` and ``-(l + delta/2)`` and output gains
``+s`` and ``-s`` raise exactly the ids inside ``(l - delta/2, l + delta/2)`` by
``s (max id - min id)``. The final layer adds ``c * max id`` to positive ids (``c * min id``
to negative ones). Constants come from :class:`YunParams` (set B / the clean PE variant).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.quantize import labels
from expressivity.network.layers import AttentionLayer, Head
from expressivity.network.network import Network


def _head(p: YunParams, gain, query_bias, name: str) -> Head:
    u = np.array(p.u, dtype=object).reshape(p.d, 1)
    w_o = np.zeros((1, p.d), dtype=object)
    w_o[:] = 0
    w_o[0, 0] = gain
    return Head(u.copy(), u.copy(), u.copy(), w_o, np.array([query_bias], dtype=object), name=name)


def window_layers(p: YunParams) -> list[AttentionLayer]:
    half = p.delta / 2
    return [
        AttentionLayer((_head(p, p.s, -(l - half), "low edge"), _head(p, -p.s, -(l + half), "high edge")),
                       normalization="hardmax", name=f"shift ids near {l}")
        for l in p.window_centers
    ]


def global_layer(p: YunParams) -> AttentionLayer:
    return AttentionLayer((_head(p, p.c, 0, "global"),), normalization="hardmax", name=f"global shift c={p.c}")


def resolve_params(p: YunParams) -> YunParams:
    """Fill in the enumerated bound the paper-shift PE variant needs (other modes unchanged)."""
    if not (p.positional and p.shift == "paper") or p.paper_ub is not None:
        return p
    from expressivity.constructions.yun.grid import parse_rank_one, run_ids

    # Run the window layers on every in-range grid point; UB is one step past the largest id.
    net = Network(tuple(window_layers(p)), labels(p.d))
    layers = parse_rank_one(net, p)
    ids = _in_range_ids(p)
    top = 0
    for start in range(0, ids.shape[0], 1 << 16):
        out = run_ids(layers, ids[start:start + (1 << 16)]).ids
        top = max(top, int(out.max()))
    return replace(p, paper_ub=int(Fraction(top, 2 * p.N) + p.delta) + 1)


def _in_range_ids(p: YunParams) -> np.ndarray:
    grids = np.meshgrid(*[np.arange(p.N)] * (p.n * p.d), indexing="ij")
    k = np.stack([g.reshape(-1) for g in grids], axis=1).reshape(-1, p.n, p.d).astype(object)
    offsets = np.array([2 * p.N * j for j in range(p.n)], dtype=object).reshape(1, p.n, 1)
    entries = 2 * k + offsets
    return (entries * np.array(p.u, dtype=object).reshape(1, 1, p.d)).sum(axis=2)


def contextual_map(p: YunParams) -> Network:
    """``delta^{-d} + 1`` (Theorem 2) or ``n delta^{-d} + 1`` (Theorem 3) attention layers."""
    p = resolve_params(p)
    layers = (*window_layers(p), global_layer(p))
    return Network(layers, labels(p.d), name="yun contextual map",
                   metadata={"stage": "contextual", "params": p, "c": p.c, "t_l": p.t_l, "t_r": p.t_r,
                             "s": p.s, "out_value": p.out_value})
