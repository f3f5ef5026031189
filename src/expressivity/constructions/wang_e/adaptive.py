"""Task II (adaptive memories) as a network, on finite sequences with a start (spec §3.2.3, option 1).

The task (``adaptive-memory`` / ``nested-memory``): token ``t`` carries a value ``v_t``, a start
flag (1 at ``t = 0`` only) and a one-hot pointer ``p_t`` in ``1..T``; a chain of depth ``k`` is
``t_0 = t``, ``t_{i+1} = t_i - p_{t_i}``, and ``y_t = v_{t_k}`` (depth 1: ``y_t = v_{t - p_t}``).

One attention layer with keys from local content cannot retrieve an input-dependent lag on
bi-infinite inputs (spec §3.2.3; :func:`one_layer_counterexample` shows it numerically). With a
start, the position is computable, and then a dot product can point at any absolute position:

1. *position*: a DP-free head attends uniformly over the visible prefix and writes the mean of
   the start flag, ``1/(t+1)``; a ReLU layer turns it into ``tau = t`` and ``tau^2`` by
   piecewise-linear interpolation through the points ``(1/(k+1), k)``, exact at every position
   ``< max_length``, and sets the first address ``a_1 = t - p_t`` (linear in the one-hot pointer).
2. *hops* ``i = 1..k``: a head with query ``beta (2 a_i, -1)`` and key ``(tau, tau^2)`` scores key
   ``tau`` by ``beta (2 a_i tau - tau^2) = -beta (tau - a_i)^2 + const``, so it selects position
   ``a_i`` and copies its value and pointer; a ReLU layer sets ``a_{i+1} = a_i - p`` (not after
   the last hop, whose copied value is the output).

Depth ``k`` uses ``k + 1`` attention layers (the position layer and one per hop). With
``beta = inf`` (hardmax) every retrieval is exact, checked in exact arithmetic for every pointer at
every position; with a finite ``beta`` the weight off the selected key is at most
``2 sum_{m>=1} e^{-beta m^2} <= 2 e^{-beta} / (1 - e^{-3 beta})`` per hop, so a value in
``[-1, 1]`` is off by at most twice that.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from expressivity.constructions.wang_e import arguments as args
from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate, Size
from expressivity.constructions.wang_e.domains import pointer_domain
from expressivity.constructions.wang_e.readouts import relu_layer
from expressivity.errors import ExpressivityError, require_int, require_number
from expressivity.network import AttentionLayer, FeedForwardLayer, Head, Network
from expressivity.network.exact import forward_exact
from expressivity.network.reference import forward
from expressivity.network.lengths import ValidLengths

MAX_LENGTH = 512  # the position layer has 2 units per position: keep it small and exact


def _labels(max_lag: int, depth: int) -> tuple[str, ...]:
    hops = [f"{name}{i}" for i in range(1, depth + 1) for name in ("val", "addr")]
    ptrs = [f"ptr{i}[{j}]" for i in range(1, depth) for j in range(1, max_lag + 1)]
    return ("v", "start", *(f"p[{j}]" for j in range(1, max_lag + 1)), "pos_inv", "tau", "tau2", *hops, *ptrs)


def hop_error_bound(beta: float) -> float:
    """Weight a hop puts off its selected key when every other key scores ``beta`` or more below
    it (``beta = inf``: 0): ``2 sum_{m>=1} e^{-beta m^2} <= 2 e^{-beta} / (1 - e^{-3 beta})``."""
    if math.isinf(beta):
        return 0.0
    return 2 * math.exp(-beta) / -math.expm1(-3 * beta)


def chain_error_bound(beta: float, depth: int, max_lag: int) -> float:
    """Bound on ``|y - v_{t_depth}|`` for values in ``[-1, 1]``.

    A hop whose address is off by ``delta`` (an earlier hop copied a slightly mixed pointer) still
    peaks at the right key, with its gap shrunk from ``beta`` to ``beta (1 - 2 delta)``; the pointer
    it copies is off by at most ``T w`` in value, which is added to the next address. ``inf`` if
    an address could drift by half a position.
    """
    delta, w = 0.0, 0.0
    for _ in range(depth):
        if delta >= 0.5:
            return math.inf
        w = hop_error_bound(beta * (1 - 2 * delta))
        delta += max_lag * w
    return 2 * w


def build_adaptive_memory(max_lag: int = 8, depth: int = 1, length: int = 32,
                          beta: float = math.inf) -> tuple[Network, ConstructionReport]:
    """The construction for pointers in ``1..max_lag``, chains of ``depth``, sequences of at most ``length``.

    ``beta = inf`` builds hardmax heads with exact (Fraction) weights; a finite ``beta`` builds
    softmax heads with inverse temperature ``beta``.
    """
    t0 = time.perf_counter()
    max_lag, depth = require_int(max_lag, "max-lag", 1, 64), require_int(depth, "depth", 1, 8)
    length, beta = require_int(length, "length", 2, MAX_LENGTH), args.beta(beta)
    hard = math.isinf(beta)
    labels = _labels(max_lag, depth)
    d, T = len(labels), max_lag
    ix = {name: k for k, name in enumerate(labels)}
    zero = _zeros if hard else np.zeros

    layers = [_position_attention(d, ix, hard), _position_ffn(d, ix, T, length, hard)]
    for hop in range(1, depth + 1):
        layers.append(_hop_attention(d, ix, T, hop, depth, beta))
        if hop < depth:
            layers.append(_address_ffn(d, ix, T, hop))
    embedding = zero((2 + T, d))
    for k, name in enumerate(("v", "start", *(f"p[{j}]" for j in range(1, T + 1)))):
        embedding[k, ix[name]] = 1
    readout = zero((d, 1))
    readout[ix[f"val{depth}"], 0] = 1
    net = Network(tuple(layers), labels, embedding=embedding, input_labels=("v", "start", *labels[2:2 + T]),
                  readout=readout, output_labels=("y",), max_length=None,
                  # positions are decoded by a table over 0..length-1, and checked for every pointer there
                  valid_lengths=ValidLengths.range(1, length),
                  # a hardmax hop copies any value exactly; a softmax hop's bound is for values in [-1, 1]
                  input_domain=pointer_domain(max_lag, bounded_values=not hard, exact=hard),
                  name=f"Wang & E Task II: pointer chains of depth {depth}, lags 1..{T}")
    per_hop, bound = hop_error_bound(beta), chain_error_bound(beta, depth, max_lag)
    if not math.isfinite(bound):
        raise ExpressivityError(f"beta={beta:g} is too soft for chains of depth {depth} with lags up to {max_lag}: an "
                                "address could drift by half a position; use a larger beta (or inf for hardmax)")
    if bound >= 2:
        # any average of values in [-1, 1] is within 2 of the target: such a check passes a network that retrieves
        # nothing (--beta 0.5: bound 3.12, "checks passed"; a fresh audit, 2026-11-29)
        raise ExpressivityError(f"beta={beta:g} bounds the error by {bound:.3g}, no better than any average of values "
                                "in [-1, 1] (2): its check could not tell this network from one that retrieves nothing; "
                                "use a larger beta (at depth 1 the bound is below 1 from beta = 1.5 on)")
    report = ConstructionReport(
        construction="wang-e adaptive memory (Task II)" if depth == 1 else "wang-e nested memory (Task II-b)",
        claim=f"y_t = v_(t_{depth}) exactly (hardmax) or within the bound, for every pointer at every position < {length}",
        size=Size.of(net),
        bounds={"sup_error": bound, "hop_weight_off_target": per_hop},
        margins={"score_gap": 1.0 if hard else beta},
        constants={"max_lag": T, "depth": depth, "length": length, "beta": beta, "attention_layers": depth + 1,
                   "arithmetic": "exact rationals (hardmax)" if hard else "float64 (softmax)",
                   "seconds": round(time.perf_counter() - t0, 3)},
        notes="positions from the start token by uniform attention and exact piecewise-linear interpolation; "
              "hops by a dot product -beta (tau - a)^2")
    return net, report


def _zeros(shape):
    out = np.empty(shape, dtype=object)
    out.fill(0)
    return out


def _position_attention(d: int, ix: dict, hard: bool) -> AttentionLayer:
    W_V = (_zeros if hard else np.zeros)((d, 1))
    W_V[ix["start"], 0] = 1
    W_O = (_zeros if hard else np.zeros)((1, d))
    W_O[0, ix["pos_inv"]] = 1
    head = Head.dp_free(W_V, W_O, name="mean of the start flag = 1/(t+1)")
    # All scores are 0: hardmax splits the ties evenly, softmax is uniform: both give 1/(t+1).
    return AttentionLayer((head,), normalization="hardmax" if hard else "softmax", causal=True, name="position")


def _position_ffn(d: int, ix: dict, T: int, length: int, hard: bool) -> FeedForwardLayer:
    """``tau += t``, ``tau2 += t^2`` from ``u = 1/(t+1)`` (exact at ``u = 1/(k+1)``), ``addr1 += t - p_t``."""
    num = Fraction if hard else float
    u = [num(1, k + 1) if hard else 1.0 / (k + 1) for k in range(length)]   # decreasing in k
    columns, rows = [], []
    # Interpolate through (u_k, f(k)) in increasing u (k = length-1 .. 0): the constant f(length-1)
    # (in b_2) plus, at each knot but the last, a ReLU carrying the change of slope. Inputs never
    # fall below the first knot (positions are < length).
    for name, f in (("tau", lambda k: k), ("tau2", lambda k: k * k)):
        knots = list(range(length - 1, -1, -1))  # u increasing
        slopes = [num(f(b) - f(a)) / (u[b] - u[a]) for a, b in zip(knots, knots[1:])]
        previous = num(0)
        for a, slope in zip(knots, slopes):
            columns.append(({ix["pos_inv"]: num(1)}, -u[a]))
            rows.append({ix[name]: slope - previous, **({ix["addr1"]: slope - previous} if name == "tau" else {})})
            previous = slope
    for j in range(1, T + 1):  # addr1 -= j p_j  (p_j in {0, 1})
        columns.append(({ix[f"p[{j}]"]: num(1)}, num(0)))
        rows.append({ix["addr1"]: -num(j)})
    layer = relu_layer(d, columns, rows, "positions tau, tau^2 and the first address", exact=hard)
    b2 = layer.b_2.copy()
    b2[ix["tau"]] = num(length - 1)
    b2[ix["tau2"]] = num((length - 1) ** 2)
    b2[ix["addr1"]] = num(length - 1)
    return FeedForwardLayer(layer.W_1, layer.b_1, layer.W_2, b2, name=layer.name)


def _hop_attention(d: int, ix: dict, T: int, hop: int, depth: int, beta: float) -> AttentionLayer:
    """Select position ``a_hop``: query ``(2 a, -1)`` (times ``beta``), key ``(tau, tau^2)``; copy ``v`` and ``p``."""
    hard = math.isinf(beta)
    zeros = _zeros if hard else np.zeros
    W_Q, W_K, b_Q = zeros((d, 2)), zeros((d, 2)), zeros(2)
    W_Q[ix[f"addr{hop}"], 0] = 2
    b_Q[1] = -1
    W_K[ix["tau"], 0] = 1
    W_K[ix["tau2"], 1] = 1
    copies = [("v", f"val{hop}")] + ([(f"p[{j}]", f"ptr{hop}[{j}]") for j in range(1, T + 1)] if hop < depth else [])
    W_V, W_O = zeros((d, len(copies))), zeros((len(copies), d))
    for k, (src, dst) in enumerate(copies):
        W_V[ix[src], k] = 1
        W_O[k, ix[dst]] = 1
    head = Head(W_Q, W_K, W_V, W_O, b_Q=b_Q, name=f"select a{hop}")
    return AttentionLayer((head,), normalization="hardmax" if hard else "softmax",
                          inverse_temperature=1 if hard else beta, causal=True, name=f"hop {hop}")


def _address_ffn(d: int, ix: dict, T: int, hop: int) -> FeedForwardLayer:
    """``a_{hop+1} = a_hop - p`` with ``p`` the pointer the hop copied (``ReLU(a) = a``: addresses are >= 0).

    Integer weights: exact in float64 and in exact arithmetic alike."""
    columns = [({ix[f"addr{hop}"]: 1}, 0)] + [({ix[f"ptr{hop}[{j}]"]: 1}, 0) for j in range(1, T + 1)]
    rows = [{ix[f"addr{hop + 1}"]: 1}] + [{ix[f"addr{hop + 1}"]: -j} for j in range(1, T + 1)]
    return relu_layer(d, columns, rows, f"address {hop + 1}")


# ---- inputs, target, checks -----------------------------------------------------------------------


def every_pointer_inputs(max_lag: int, length: int, depth: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sequences whose pointers cover every value ``1..min(T, t)`` at every position ``t``, with
    random values; returns ``(values (batch, n), pointers (batch, n))`` (position 0 is the start)."""
    rng = np.random.default_rng(seed)
    batch = max_lag
    t = np.arange(length)
    p = np.zeros((batch, length), dtype=np.int64)
    for r in range(batch):
        p[r] = 1 + (t + r) % np.clip(t, 1, max_lag)   # shift r: each t sees every allowed value once
    p[:, 0] = 0
    extra = 1 + rng.integers(0, max_lag, size=(4 * depth, length)) % np.clip(t, 1, max_lag)
    extra[:, 0] = 0
    v = rng.integers(-8, 9, size=(batch + len(extra), length)) / 8
    v[:, 0] = 0
    return v, np.concatenate([p, extra])


def features(values: np.ndarray, pointers: np.ndarray, max_lag: int) -> np.ndarray:
    """The task's input features ``[v_t, start_t, onehot(p_t)]``, ``(batch, n, 2 + T)``."""
    b, n = values.shape
    X = np.zeros((b, n, 2 + max_lag))
    X[..., 0] = values
    X[:, 0, 1] = 1.0
    for j in range(1, max_lag + 1):
        X[..., 1 + j] = pointers == j
    return X


def chain_target(values: np.ndarray, pointers: np.ndarray, depth: int) -> np.ndarray:
    """``y_t = v_{t_depth}`` by following the pointers (independent of the network)."""
    b, n = values.shape
    pos = np.tile(np.arange(n), (b, 1))
    for _ in range(depth):
        pos = pos - np.take_along_axis(pointers, pos, axis=1)
    return np.take_along_axis(values, pos, axis=1)


# Seconds of the exact check per sequence and layer: a * length^2 (the scores) + b * length * width (the
# products), fitted on the 2-core AMD EPYC where it was written (2026-11-28) to ten sizes from 6 s to 175 s
# (a = 1.17e-6, b = 1.24e-6, every size within 1.5x of its time) and taken 1.5x larger, so that it errs long.
# depth 8, T 64 at 512 tokens ran past 5 minutes with nothing printed (about 27 by this estimate); a first
# estimate by length^2 alone was 4x short at 32 tokens of that width (a review).
EXACT_SECONDS_PER_SCORE = 1.8e-6
EXACT_SECONDS_PER_PRODUCT = 1.9e-6
CHECK_BUDGET_S = 300


def exact_check_seconds(net: Network, report: ConstructionReport) -> float:
    """About how long :func:`check_adaptive_memory` takes in exact arithmetic (hardmax) here."""
    c = report.constants
    sequences = len(every_pointer_inputs(c["max_lag"], 2, c["depth"])[0])   # the count does not depend on the length
    n = c["length"]
    return sequences * len(net.layers) * (EXACT_SECONDS_PER_SCORE * n * n + EXACT_SECONDS_PER_PRODUCT * n * net.d)


def report_construction(report) -> str:
    return str(getattr(report, "construction", ""))


def check_adaptive_memory(net: Network, report: ConstructionReport, seed: int = 0, progress: bool = False,
                          budget_s: float | None = CHECK_BUDGET_S) -> ConstructionReport:
    """Every pointer at every position: exact equality (hardmax, exact arithmetic) or the bound.

    The exact check is estimated first (:func:`exact_check_seconds`) and refused above ``budget_s``
    (``None``: no limit); ``progress`` shows a bar on a terminal's stderr."""
    from expressivity.progress import in_chunks

    t0 = time.perf_counter()
    prefix = "wang-e nested memory" if report_construction(report).startswith("wang-e nested") else "wang-e adaptive"
    c = args.construction(net, report, prefix, "check_adaptive_memory")
    seed = args.seed(seed)
    if budget_s is not None:
        budget_s = require_number(budget_s, "budget_s", positive=True)
    hard = math.isinf(c["beta"])
    if hard and budget_s is not None and (seconds := exact_check_seconds(net, report)) > budget_s:
        raise ExpressivityError(f"the exact check of every pointer at every position takes about {seconds / 60:,.0f} "
                                f"minutes here ({len(net.layers)} layers of width {net.d} x {c['length']}^2 scores a "
                                f"sequence), over the budget of {budget_s / 60:g} minutes; use a smaller --length, "
                                "--depth or --max-lag, or a finite --beta (checked in float64)")
    values, pointers = every_pointer_inputs(c["max_lag"], c["length"], c["depth"], seed)
    want = chain_target(values, pointers, c["depth"])
    X = features(values, pointers, c["max_lag"])
    evaluate = forward_exact if hard else forward
    out = in_chunks(lambda rows: evaluate(net, rows)[..., 0], X, 4,   # a few sequences at a time, so the bar moves
                    f"checking {len(X)} sequences of {c['length']} tokens{' exactly' if hard else ''}", progress)
    if hard:
        diffs = np.vectorize(lambda a, b: abs(a - Fraction(b)), otypes=[object])(out, want)
        failures = int(sum(v != 0 for v in diffs.flat))
        worst = float(max(diffs.flat))
        arithmetic, bound = "exact rationals (Fraction)", 0.0
    else:
        diffs = np.abs(out - want)
        # float64 rounding of scores of size beta tau^2 <= beta L^2 (a few roundings each, 2^-52 apiece), which
        # moves the softmax weights by as much relatively; 1e-9 L^2 here (2.6e-4 at L = 512) was a fifth of the bound
        bound = report.bounds["sup_error"] + 16 * 2.0**-52 * c["beta"] * c["length"] ** 2
        failures, worst = int(np.count_nonzero(diffs > bound)), float(diffs.max())
        arithmetic = "float64 (reference pass)"
    check = Check(f"y_t = v_(t_{c['depth']}) for every pointer value at every position", int(diffs.size), failures,
                  arithmetic, time.perf_counter() - t0, {"sequences": len(values), "bound": bound})
    return report.with_results([check], [ErrorEstimate("sup_error", worst, f"max over every position, {arithmetic}",
                                                       bound=bound)])


def one_layer_counterexample(restarts: int = 8, steps: int = 400, head_dim: int = 4, seed: int = 0) -> dict:
    """Why one attention layer cannot focus on an input-dependent lag (spec §3.2.3), numerically.

    Four inputs of 12 tokens with the query last and no position information beyond relative
    offsets: the query is ``a`` (pointer 3) or ``a'`` (pointer 5), and the contents at lags 3 and 5
    are ``(+1, -1)`` or swapped; every other token is zero. For scores ``q(x_t) . k(x_s) + p(t-s)``
    the logit gaps satisfy ``Delta_A + Delta_B = Delta_C + Delta_D = 2 (p(3) - p(5))``: the two
    swapped cases of one query cannot both favour their lag unless the other query's cases cannot,
    so some case puts weight ``<= 1/2`` on its target lag. We maximise the smallest target weight
    over query/key weights and a free relative bias (Adam, ``restarts`` random starts) and report
    the best found; the theory says it cannot exceed 1/2.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    n, lags = 12, (3, 5)
    X = torch.zeros(4, n, 3)   # features: content value, pointer-is-3, pointer-is-5
    targets = []
    for case, (pointer, swap) in enumerate(((3, False), (3, True), (5, False), (5, True))):
        X[case, n - 1, 1 if pointer == 3 else 2] = 1.0
        X[case, n - 1 - 3, 0], X[case, n - 1 - 5, 0] = (-1.0, 1.0) if swap else (1.0, -1.0)
        targets.append(n - 1 - pointer)
    best = 0.0
    for _ in range(restarts):
        W_Q = torch.randn(3, head_dim, generator=gen, requires_grad=True)
        W_K = torch.randn(3, head_dim, generator=gen, requires_grad=True)
        p = torch.zeros(n, requires_grad=True)   # bias by lag t - s = 0 .. n-1
        opt = torch.optim.Adam([W_Q, W_K, p], lr=0.05)
        for _ in range(steps):
            q = X[:, n - 1] @ W_Q                                  # (4, m)
            scores = torch.einsum("bm,bsm->bs", q, X @ W_K) + p.flip(0)   # key s has lag n-1-s
            w = torch.softmax(scores, dim=-1)[torch.arange(4), targets]
            loss = torch.logsumexp(-20 * w, 0) / 20                 # a smooth -min
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            q = X[:, n - 1] @ W_Q
            w = torch.softmax(torch.einsum("bm,bsm->bs", q, X @ W_K) + p.flip(0), -1)[torch.arange(4), targets]
            best = max(best, float(w.min()))
    construction, rep = build_adaptive_memory(max_lag=5, depth=1, length=n, beta=math.inf)
    rep = check_adaptive_memory(construction, rep)
    return {"best_min_target_weight_one_layer": best, "theory_upper_bound": 0.5, "restarts": restarts,
            "steps": steps, "two_layer_construction_error": rep.error("sup_error").value,
            "two_layer_check_passed": rep.ok,
            "setting": "bi-infinite-like: 12 tokens, query last, zero tokens elsewhere, lags 3 and 5 swapped"}
