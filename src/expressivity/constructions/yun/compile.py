"""Compile a target into a modified Transformer (Yun et al. 2020, Step 2), stage by stage.

``compile_modified`` reads as its stages: size estimate, quantizer, contextual map,
exhaustive check of P1-P4 (which also yields every class's contextual values and the entry
bound M), value map, composition. Step 3 (softmax/ReLU) is :mod:`.soften`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import contextual_map, resolve_params
from expressivity.constructions.yun.grid import column_table
from expressivity.constructions.yun.quantize import modified_domain, quantizer
from expressivity.constructions.yun.value import choose_sigma, value_map
from expressivity.errors import ExpressivityError
from expressivity.network.network import Network
from expressivity.network.lengths import ValidLengths
from expressivity.targets import Target, evaluate_target, require_equivariant
from expressivity.constructions.yun.size import DEFAULT_BUDGET, SizeEstimate, check_budget

ORDER_LIMIT = 200_000   # target evaluations of the equivariance check at the classes' other orders
from expressivity.constructions.yun.checks.lemmas import LemmaReport, verify_contextual


@dataclass(kw_only=True)
class YunBuild:
    """A compiled modified Transformer and the facts found while building it.

    ``quantizer``, ``contextual`` and ``value`` are the three stages, ``network`` their
    composition. ``rep_keys`` (sorted) and ``A_rep`` ``(classes, n, d)`` define ``f_bar``: class
    ``k``'s representative has tokens in increasing-id order and outputs ``A_rep[k]``; ``sigma``
    is the value map's output rescale and ``max_uA`` the largest id of a target column.
    """

    params: YunParams
    target: Target
    quantizer: Network
    contextual: Network
    value: Network
    network: Network
    lemmas: LemmaReport
    size: SizeEstimate
    sigma: Fraction
    max_uA: Fraction
    rep_keys: np.ndarray
    A_rep: np.ndarray
    rep_values: dict = field(repr=False, default_factory=dict)
    equivariance: dict | None = None   # Theorem 2: where f(pi X) = pi f(X) was checked (check_class_orders)


def compile_modified(target: Target, p: YunParams, budget: int = DEFAULT_BUDGET, sigma: Fraction | None = None,
                     progress=None, clamp: bool = True) -> YunBuild:
    """Target -> hardmax / piecewise-linear network realising ``f_bar`` on distinct-column cubes; ``clamp`` ends it
    with the output clamp (not in the paper, the identity on the grid; see :mod:`~.value`)."""
    size = check_budget(p, budget, clamp=clamp)
    if not p.positional:
        require_equivariant(target, p.n, p.d)
    p = resolve_params(p)  # the paper-shift PE variant needs its enumerated bound before the quantizer
    g_q = quantizer(p)
    g_c = contextual_map(p)
    lemmas = verify_contextual(p, g_c, keep_representatives=True, progress=progress)
    if lemmas.failures:
        raise ExpressivityError(f"contextual map fails Lemma 4.2 on {p.describe()}: {lemmas.failures_by_property}")
    keys, centres, finals, configs = _representatives(p, lemmas.representatives)
    A = evaluate_target(target, centres)
    equivariance = None if p.positional else check_class_orders(target, centres, A)
    chosen, top = choose_sigma(p, A, p.t_l)
    sigma = chosen if sigma is None else Fraction(sigma)
    if sigma != 1:   # the output rescale layer the budget could not count before the target was evaluated
        size = check_budget(p, budget, rescale=True, clamp=clamp)
    columns = _value_columns(p, configs, finals, A)
    M = Fraction(-((-lemmas.max_abs_entry.numerator) // lemmas.max_abs_entry.denominator))  # integer, keeps g_v integral
    g_v = value_map(p, columns, M, p.t_l, p.t_r, sigma, clamp=clamp)
    net = g_q.then(g_c).then(g_v)
    # Lemmas 4.1-4.3 are checked for sequences of exactly n tokens (the grid is over n columns).
    net = Network(net.layers, net.labels, net.positional_encoding, name=f"yun[{target.name}] {p.describe()}",
                  valid_lengths=ValidLengths.of([p.n]), input_domain=modified_domain(p),
                  metadata={"params": p, "t_l": p.t_l, "t_r": p.t_r, "c": p.c, "s": p.s, "M": M,
                            "sigma": sigma, "clamp": g_v.metadata["clamp"],
                            "stages": {"quantize": len(g_q.layers), "contextual": len(g_c.layers),
                                       "value": len(g_v.layers)}})
    return YunBuild(params=p, target=target, quantizer=g_q, contextual=g_c, value=g_v, network=net, lemmas=lemmas,
                    size=size, sigma=sigma, max_uA=top, rep_keys=keys, A_rep=A, rep_values=dict(lemmas.representatives),
                    equivariance=equivariance)


def check_class_orders(target: Target, centres: np.ndarray, A: np.ndarray, limit: int = ORDER_LIMIT,
                       tolerance: float = 1e-9, seed: int = 0) -> dict:
    """Theorem 2 builds ``f_bar`` from one cube per permutation class (``centres`` ``(K, n, d)``, the
    target there ``A``): every other distinct-column cube of a class gets its permuted value, which is
    ``f`` at that cube's centre only if ``f`` is equivariant there. Checks ``f(pi X) = pi f(X)`` at every
    other order of every class's centre (float64, within ``tolerance`` times the largest output |A|), or,
    above ``limit`` evaluations, at ``limit`` of them drawn with ``seed`` (said in the returned facts).
    Refuses (ExpressivityError, pointing to --positional) a target that is not."""
    import itertools

    K, n, _ = centres.shape
    orders = np.array(list(itertools.permutations(range(n)))[1:], dtype=np.int64).reshape(-1, n)
    pairs = [(k, o) for k in range(K) for o in range(len(orders))] if K * len(orders) <= limit else None
    if pairs is None:
        rng = np.random.default_rng(seed)
        pairs = list(zip(rng.integers(0, K, limit).tolist(), rng.integers(0, len(orders), limit).tolist()))
    # relative to the target's size: max(1, max|A|) let a 1e-10-sized target that is not equivariant pass at 100% of
    # its size (an audit, 2026-11-29); the smallest normal float keeps a target 0 at every centre from a 0 tolerance
    scale = max(float(np.max(np.abs(A), initial=0.0)), float(np.finfo(np.float64).tiny))
    worst, where = 0.0, None
    for start in range(0, len(pairs), 4096):
        chunk = np.array(pairs[start:start + 4096], dtype=np.int64).reshape(-1, 2)
        perm = orders[chunk[:, 1]]
        X = np.take_along_axis(centres[chunk[:, 0]], perm[:, :, None], axis=1)
        want = np.take_along_axis(A[chunk[:, 0]], perm[:, :, None], axis=1)
        err = np.max(np.abs(evaluate_target(target, X) - want), axis=(1, 2))
        if err.size and float(err.max()) > worst:
            worst, where = float(err.max()), X[int(err.argmax())]
    if worst > tolerance * scale:
        raise ExpressivityError(
            f"target {target.name!r} is not permutation-equivariant at the cube centre "
            f"{np.round(where.ravel(), 6).tolist()} (f(pi X) - pi f(X) up to {worst:.3g}); Theorem 2 builds f_bar from "
            "one cube per permutation class, so it needs an equivariant target: use --positional (Theorem 3)")
    total = K * len(orders)
    how = (f"at every other order of every class's cube centre ({total})" if len(pairs) == total else
           f"at {len(pairs)} of the {total} other orders of the classes' cube centres (sampled, seed {seed})")
    return {"checked": how, "points": len(pairs), "of": total, "max_deviation": worst, "arithmetic": "float64",
            "tolerance": tolerance * scale}


def _representatives(p: YunParams, reps: dict):
    """Sorted class keys, cube centres ``(K, n, d)`` in [0,1], final scaled ids, configs."""
    keys = np.array(sorted(reps), dtype=np.int64 if p.N ** (p.d * p.n) < 2 ** 62 else object)
    table = column_table(p)
    centres = np.empty((len(keys), p.n, p.d))
    finals, configs = [], []
    for r, k in enumerate(keys):
        cfg, fin = reps[int(k)]
        configs.append(cfg)
        finals.append(fin)
        for j, c in enumerate(cfg):
            tok = j if p.positional else 0  # representatives are in increasing-id order = token order with PE
            centres[r, j] = [(e / (2 * p.N)) - tok + 0.5 / p.N for e in table.entries[tok][c]]
    return keys, centres, finals, configs


def _value_columns(p: YunParams, configs, finals, A):
    table = column_table(p)
    cols = []
    for r, (cfg, fin) in enumerate(zip(configs, finals)):
        for j, c in enumerate(cfg):
            tok = j if p.positional else 0
            entries = table.entries[tok][c]
            shift = fin[j] - table.ids[tok][c]
            Z = (Fraction(entries[0] + shift, 2 * p.N),) + tuple(Fraction(e, 2 * p.N) for e in entries[1:])
            cols.append((Fraction(fin[j], 2 * p.N), Z, tuple(A[r, j])))
    return cols


def f_bar(build: YunBuild, X: np.ndarray, distinct_only: bool = False) -> np.ndarray:
    """The piecewise-constant target on ``X`` ``(batch, n, d)``: ``A_L`` on cube ``S_L``.

    Outside ``[0,1)`` it is 0. With ``distinct_only`` it is 0 also on duplicate-column cubes:
    that is ``g_bar``, the modified network, by the exact identity ``yun_value`` verifies.
    Duplicate-column cubes (Theorem 2) take the target at their centre.
    """
    p = build.params
    X = np.asarray(X, dtype=np.float64)
    k = np.floor(X * p.N).astype(np.int64)
    inside = np.all((X >= 0) & (X < 1), axis=(1, 2))
    k = np.clip(k, 0, p.N - 1)
    code = sum(k[:, :, i] * p.N ** i for i in range(p.d))  # (batch, n)
    out = np.zeros_like(X)
    if p.positional:
        order = np.tile(np.arange(p.n), (X.shape[0], 1))
    else:
        order = np.argsort(code, axis=1, kind="stable")
    sc = np.take_along_axis(code, order, axis=1)
    # With PE every in-range cube is a grid point of its own (token ranges are disjoint).
    distinct = np.ones(X.shape[0], bool) if p.positional else np.all(sc[:, 1:] != sc[:, :-1], axis=1)
    key = np.zeros(X.shape[0], dtype=np.int64)
    for j in range(p.n):
        key = key * (p.N ** p.d) + sc[:, j]
    use = inside & distinct
    pos = np.searchsorted(build.rep_keys, key[use])
    vals = build.A_rep[pos]  # tokens in increasing-id order
    inv = np.argsort(order[use], axis=1)
    out[use] = np.take_along_axis(vals, inv[:, :, None], axis=1)
    if not distinct_only and not p.positional:
        dup = inside & ~distinct
        if np.any(dup):
            centres = (k[dup] + 0.5) / p.N
            out[dup] = evaluate_target(build.target, centres)
    return out
