"""Explicit DP-free networks (no dot product anywhere) for the small-range tasks of claims 6 and 7.

Both read fixed lags with one DP-free attention layer -- head ``j`` has the relative bias 1 at
offset ``lag_j`` and 0 elsewhere, under hardmax, so it copies the token exactly ``lag_j`` back --
and finish with an explicit ReLU layer. Integer weights: the exact (Fraction) evaluator checks them.

* :func:`build_dpfree_pointer` (claim 7, spec §3.2.3 option 2): pointer retrieval ``y_t =
  v_{t - p_t}`` with pointers in ``1..T``. ``T`` heads copy ``v_{t-j}`` into ``lag[j]``; the FFN
  gates them by the one-hot pointer, exactly: for ``g`` in {0, 1} and ``|v| <= 1``, ``g v =
  ReLU(v - 2(1 - g)) - ReLU(-v - 2(1 - g))``. So a DP-free network *can* retrieve an
  input-dependent lag -- with ``T`` heads and ``2T`` FFN units: its width grows with the pointer
  range, which is the paper's point (DP selects first, then reads, at a width independent of T).
* :func:`build_dpfree_boolean` (claim 6): the sparse parity ``y_t = prod_m x_{t - T_m}`` of ``+-1``
  tokens. ``M`` heads copy the arguments into ``arg[m]``; the product is a function of their sum
  ``s`` in {-M, -M+2, ..., M}, ``(-1)^((M - s)/2)``, which a ReLU layer of ``M`` units (one per
  change of slope) interpolates exactly through those points.

For a position ``t`` whose lag reaches before the start, hardmax splits the tie over the visible
keys; the pointer task never asks for that lag there (``p_t <= t``: the gate is 0, and the average
is a value in [-1, 1], so the gate's bound holds), and the Boolean task scores only ``t >= T_M``.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from expressivity.constructions.wang_e import arguments as args
from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate, Size
from expressivity.constructions.wang_e.adaptive import chain_target, every_pointer_inputs, features
from expressivity.constructions.wang_e.domains import parity_domain, pointer_domain
from expressivity.constructions.wang_e.readouts import relu_layer
from expressivity.errors import ExpressivityError, require_int
from expressivity.network import AttentionLayer, Head, Network
from expressivity.network.biases import RelativeBias
from expressivity.network.exact import forward_exact
from expressivity.network.lengths import ValidLengths

MAX_LAG = 32  # the exact check costs ~T^2 n^2 rational operations: 16 takes 8 CPU-seconds, 32 about a minute


def _zeros(shape):
    out = np.empty(shape, dtype=object)
    out.fill(0)
    return out


def _lag_layer(d: int, source: int, targets: list[tuple[int, int]], name: str) -> AttentionLayer:
    """One DP-free hardmax head per ``(lag, target dim)``, copying dim ``source`` from ``lag`` back."""
    heads = []
    for lag, target in targets:
        W_V, W_O = _zeros((d, 1)), _zeros((1, d))
        W_V[source, 0] = 1
        W_O[0, target] = 1
        heads.append(Head.dp_free(W_V, W_O, RelativeBias(((lag, 1),), default=0), name=f"lag {lag}"))
    return AttentionLayer(tuple(heads), normalization="hardmax", causal=True, name=name)


def _check_int(name: str, value, low: int, high: int, why: str = "") -> None:
    if isinstance(value, bool) or not hasattr(value, "__index__") or not low <= int(value) <= high:
        raise ExpressivityError(f"{name} must be an integer in [{low}, {high}]{why}, got {value!r}")


def build_dpfree_pointer(max_lag: int = 8, length: int = 32) -> tuple[Network, ConstructionReport]:
    """The DP-free network for ``y_t = v_{t - p_t}``, ``p_t`` in ``1..max_lag`` (inputs ``[v, start,
    onehot(p)]``, ``(batch, n, 2 + T)`` with tokens as rows), checked on sequences of ``length``."""
    t0 = time.perf_counter()
    _check_int("max-lag", max_lag, 1, MAX_LAG)
    _check_int("length", length, max_lag + 1, 512, " (the checked sequences reach past the largest pointer, --max-lag)")
    max_lag, length = int(max_lag), int(length)   # NumPy's integers too, recorded as plain ones
    T = max_lag
    labels = ("v", "start", *(f"p[{j}]" for j in range(1, T + 1)), *(f"lag[{j}]" for j in range(1, T + 1)), "y")
    ix = {name: k for k, name in enumerate(labels)}
    d = len(labels)
    attention = _lag_layer(d, ix["v"], [(j, ix[f"lag[{j}]"]) for j in range(1, T + 1)], "read every lag 1..T")
    columns, rows = [], []
    for j in range(1, T + 1):  # y += ReLU(v_j - 2 + 2 g_j) - ReLU(-v_j - 2 + 2 g_j)
        columns.append(({ix[f"lag[{j}]"]: 1, ix[f"p[{j}]"]: 2}, -2))
        rows.append({ix["y"]: 1})
        columns.append(({ix[f"lag[{j}]"]: -1, ix[f"p[{j}]"]: 2}, -2))
        rows.append({ix["y"]: -1})
    gate = relu_layer(d, columns, rows, "gate each lag by its pointer bit", exact=True)
    embedding = _zeros((2 + T, d))
    for k in range(2 + T):
        embedding[k, k] = 1
    readout = _zeros((d, 1))
    readout[ix["y"], 0] = 1
    net = Network((attention, gate), labels, embedding=embedding, input_labels=labels[:2 + T], readout=readout,
                  output_labels=("y",), max_length=None, name=f"DP-free pointer retrieval, lags 1..{T}",
                  # causal heads with relative biases: position t's output is the same at every length
                  valid_lengths=ValidLengths.any(),
                  # the gate g v = ReLU(v - 2 + 2g) - ReLU(-v - 2 + 2g) needs |v| <= 1 (2 would do; 1 is checked)
                  input_domain=pointer_domain(T, bounded_values=True, exact=True))
    report = ConstructionReport(
        construction="wang-e DP-free pointer retrieval (spec §3.2.3, option 2)",
        claim=f"y_t = v_(t - p_t) exactly for every pointer 1..{T} at every position < {length}, with no dot product",
        size=Size.of(net), bounds={"sup_error": 0.0}, margins={"score_gap": 1.0},
        constants={"max_lag": T, "depth": 1, "length": length, "heads": T, "ffn_width": 2 * T, "d_model": d,
                   "arithmetic": "exact rationals (hardmax)", "seconds": round(time.perf_counter() - t0, 3)},
        notes="T DP-free heads with a one-hot relative bias read every lag; the FFN gates them by the pointer bits "
              "(g v = ReLU(v - 2 + 2g) - ReLU(-v - 2 + 2g) for |v| <= 1); width grows with T")
    return net, report


def check_dpfree_pointer(net: Network, report: ConstructionReport, seed: int = 0) -> ConstructionReport:
    """Every pointer value at every position (plus random chains), in exact arithmetic."""
    t0 = time.perf_counter()
    c = args.construction(net, report, "wang-e DP-free pointer", "check_dpfree_pointer")
    seed = args.seed(seed)
    values, pointers = every_pointer_inputs(c["max_lag"], c["length"], 1, seed)
    want = chain_target(values, pointers, 1)
    out = forward_exact(net, features(values, pointers, c["max_lag"]))[..., 0]
    diffs = [abs(o - Fraction(w)) for o, w in zip(out[:, 1:].flat, want[:, 1:].flat)]  # position 0 is the start
    failures = sum(1 for x in diffs if x != 0)
    check = Check("y_t = v_(t - p_t) for every pointer value at every position", len(diffs), failures,
                  "exact rationals (Fraction)", time.perf_counter() - t0, {"sequences": len(values)})
    return report.with_results([check], [ErrorEstimate("sup_error", float(max(diffs)), "max over every position, exact",
                                                       bound=0.0)])


def build_dpfree_boolean(lags=(2, 5, 9), length: int = 16) -> tuple[Network, ConstructionReport]:
    """The DP-free network for ``y_t = prod_m x_{t - T_m}`` with ``x = +-1`` (input ``(batch, n, 1)``),
    exact at every scored position ``t >= max(lags)`` of sequences of ``length``."""
    t0 = time.perf_counter()
    if isinstance(lags, (str, bytes)) or not hasattr(lags, "__iter__"):
        raise ExpressivityError(f"lags must be distinct positive integers, got {lags!r}")
    lags = tuple(lags)
    if not lags or any(isinstance(v, bool) or not hasattr(v, "__index__") or v < 1 for v in lags) or \
            len(set(lags)) != len(lags):
        raise ExpressivityError(f"lags must be distinct positive integers, got {lags!r}")
    lags = tuple(int(v) for v in lags)   # NumPy's integers too, recorded as plain ones
    if len(lags) > 8:
        raise ExpressivityError(f"at most 8 lags (the exact check enumerates 2^M sign patterns), got {len(lags)}")
    if max(lags) >= 512:   # the longest sequence checked is 512 tokens, which must reach past the largest lag
        raise ExpressivityError(f"the largest lag is {max(lags)}; lags must be below 512 (the longest sequence this "
                                "construction is checked on)")
    _check_int("length", length, max(lags) + 1, 512, " (the checked sequences reach past the largest of --lags)")
    length = int(length)
    M = len(lags)
    labels = ("x", *(f"arg[{m}]" for m in range(M)), "y")
    ix = {name: k for k, name in enumerate(labels)}
    d = len(labels)
    attention = _lag_layer(d, ix["x"], [(lag, ix[f"arg[{m}]"]) for m, lag in enumerate(lags)], "read the lags")
    # f(s) through (s_k, (-1)^((M - s_k)/2)), s_k = -M + 2k: a constant f(-M) plus slope changes at knots.
    knots = list(range(-M, M + 1, 2))
    values = [(-1) ** ((M - s) // 2) for s in knots]
    slopes = [Fraction(b - a, 2) for a, b in zip(values, values[1:])]
    columns, rows, previous = [], [], Fraction(0)
    every_arg = {ix[f"arg[{m}]"]: 1 for m in range(M)}
    for knot, slope in zip(knots, slopes):  # ReLU(s - knot) carries the change of slope at knot
        columns.append((dict(every_arg), -knot))
        rows.append({ix["y"]: slope - previous})
        previous = slope
    ffn = relu_layer(d, columns, rows, f"(-1)^((M - s)/2) of the sum s of {M} signs", exact=True)
    b2 = ffn.b_2.copy()
    b2[ix["y"]] = values[0]
    from expressivity.network import FeedForwardLayer

    ffn = FeedForwardLayer(ffn.W_1, ffn.b_1, ffn.W_2, b2, name=ffn.name)
    embedding = _zeros((1, d))
    embedding[0, ix["x"]] = 1
    readout = _zeros((d, 1))
    readout[ix["y"], 0] = 1
    net = Network((attention, ffn), labels, embedding=embedding, input_labels=("x",), readout=readout,
                  output_labels=("y",), max_length=None, input_domain=parity_domain(lags),
                  valid_lengths=ValidLengths.any(),   # causal heads with relative biases, as above
                  name=f"DP-free sparse parity of lags {', '.join(map(str, lags))}")
    report = ConstructionReport(
        construction="wang-e DP-free sparse Boolean memory (claim 6)",
        claim=f"y_t = prod x_(t - T_m) over lags {lags} exactly at every scored position, with no dot product",
        size=Size.of(net), bounds={"sup_error": 0.0}, margins={"score_gap": 1.0},
        constants={"lags": list(lags), "length": length, "heads": M, "ffn_width": M, "d_model": d,
                   "arithmetic": "exact rationals (hardmax)", "seconds": round(time.perf_counter() - t0, 3)},
        notes="M DP-free heads read the lags; a ReLU layer interpolates the parity of the sum exactly")
    return net, report


# Seconds of the exact check per token of a checked sequence, here: 8 lags at 24 tokens (99,840 tokens) took 9 s,
# at 48 (494,592) 59 s on a loaded 2-core machine (1.2e-4); at 512 tokens (2^8 x 504 sequences) it ran for hours
# with nothing printed (a fresh audit, 2026-11-29).
BOOLEAN_SECONDS_PER_TOKEN = 1.5e-4
BOOLEAN_CHECK_BUDGET_S = 300


def boolean_check_seconds(lags, n: int, random: int = 64) -> float:
    """About how long :func:`check_dpfree_boolean` takes here: ``random + 2^M (n - T_M)`` sequences of ``n``."""
    return (random + 2 ** len(lags) * (n - max(lags))) * n * BOOLEAN_SECONDS_PER_TOKEN


def check_dpfree_boolean(net: Network, report: ConstructionReport, seed: int = 0, random: int = 64,
                         budget_s: float | None = BOOLEAN_CHECK_BUDGET_S) -> ConstructionReport:
    """Every sign pattern of the lagged tokens at every scored position, plus ``random`` sequences, exactly;
    estimated first (:func:`boolean_check_seconds`) and refused above ``budget_s`` (``None``: no limit)."""
    t0 = time.perf_counter()
    c = args.construction(net, report, "wang-e DP-free sparse Boolean", "check_dpfree_boolean")
    seed, random = args.seed(seed), require_int(random, "random", 0, args.MAX_SAMPLES)
    lags, n = c["lags"], c["length"]
    T = max(lags)
    if budget_s is not None and (seconds := boolean_check_seconds(lags, n, random)) > budget_s:
        raise ExpressivityError(f"the exact check of every sign pattern of {len(lags)} lags at every one of the "
                                f"{n - T} scored positions runs {random + 2 ** len(lags) * (n - T):,} sequences of {n} "
                                f"tokens, about {seconds / 60:,.1f} minutes here, over the budget of {budget_s / 60:g}; "
                                "use a smaller --length or fewer --lags")
    rng = np.random.default_rng(seed)
    seqs = [rng.choice([-1, 1], size=n) for _ in range(random)]
    for bits in range(2 ** len(lags)):  # each pattern placed at every scored position
        for t in range(T, n):
            x = rng.choice([-1, 1], size=n)
            for m, lag in enumerate(lags):
                x[t - lag] = 1 if bits >> m & 1 else -1
            seqs.append(x)
    X = np.array(seqs, dtype=np.int64)
    out = forward_exact(net, X[..., None].astype(object))[..., 0]
    want = np.ones_like(X)
    for lag in lags:
        want[:, T:] *= X[:, T - lag:n - lag]
    diffs = [abs(o - int(w)) for o, w in zip(out[:, T:].flat, want[:, T:].flat)]
    failures = sum(1 for x in diffs if x != 0)
    check = Check("y_t = prod x_(t - T_m) for every sign pattern at every scored position", len(diffs), failures,
                  "exact rationals (Fraction)", time.perf_counter() - t0, {"sequences": len(seqs)})
    return report.with_results([check], [ErrorEstimate("sup_error", float(max(diffs)), "max over every scored position, "
                                                       "exact", bound=0.0)])
