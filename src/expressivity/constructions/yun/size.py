"""Size of the Yun construction against the counting lower bound (spec §7), before building.

Parameter counts follow the stored layers: a width-1 FF layer on ``d`` dims stores
``W_1 (d), b_1 (1), W_2 (d), b_2 (d)`` = ``3d + 1``; a size-1 head stores
``W_Q, W_K, W_V (d each), W_O (d), b_Q (1)`` = ``4d + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial, log10
from expressivity.constructions.yun.constants import CLAMP_PASSES, YunParams
from expressivity.errors import BudgetError
from expressivity.verify.size import fmt_size

DEFAULT_BUDGET = 2_000_000  # parameters
DEFAULT_CONTEXTUAL_BUDGET = 2_000_000  # exact operations of ``yun contextual`` (about 20 s)


@dataclass(frozen=True)
class SizeEstimate:
    layers: dict[str, int]
    params: int
    lower_bound: float
    ratio: float
    grid_points: int
    params_softened: int

    def as_dict(self) -> dict:
        return {"layers": self.layers, "params": self.params, "params_softened": self.params_softened,
                "lower_bound": self.lower_bound, "ratio_to_lower_bound": self.ratio, "grid_points": self.grid_points}


def lower_bound(p: YunParams) -> float:
    """``d n delta^{-dn} / n!`` (Theorem 2) or ``d n delta^{-dn}`` (Theorem 3) reals."""
    count = p.d * p.n * p.N ** (p.d * p.n)
    try:
        return float(count) if p.positional else count / factorial(p.n)
    except OverflowError:  # absurd sizes: refused by the budget, the bound is only reported
        return float("inf")


def _relu_layer(units: int, d: int) -> int:
    """Parameters of a ReLU feed-forward layer with ``units`` hidden units on ``d`` dimensions."""
    return units * (2 * d + 1) + d


def estimate(p: YunParams, rescale: bool = False, clamp: bool = True) -> SizeEstimate:
    """Layer and parameter counts of the modified network and of its softened form, without building.

    Softening turns every breakpoint of a width-1 piecewise-linear unit into two ReLU units:
    quantizer, kill, window and output clamp layers have two breakpoints (4 units), zeroing layers
    one (2), the rescale layer ``d`` units of one breakpoint (``2d``). ``ratio`` is the softened count
    (the network that runs and is reported) over the lower bound.
    """
    layers = p.layer_counts(rescale, clamp)
    d = p.d
    ff1 = 3 * d + 1
    head = 4 * d + 1
    windows = layers["contextual"] - 1
    attention = windows * 2 * head + head
    value_width_one = layers["value"] - (1 if rescale else 0)
    params = layers["quantize"] * ff1 + attention + value_width_one * ff1
    clamps = CLAMP_PASSES * d if clamp else 0
    hits = value_width_one - 1 - d - clamps
    softened = (layers["quantize"] * _relu_layer(4, d) + attention + _relu_layer(4, d) + d * _relu_layer(2, d)
                + (hits + clamps) * _relu_layer(4, d))
    if rescale:   # W_1, W_2 (d x d), b_1, b_2 (d): it once counted 3d^2 + d (a review, 2026-11-29)
        params += 2 * d * d + 2 * d
        softened += _relu_layer(2 * d, d)
    if p.positional:
        params += p.n * d
        softened += p.n * d
    lb = lower_bound(p)
    try:
        ratio = softened / lb
    except OverflowError:
        ratio = float("inf")
    return SizeEstimate(layers, params, lb, ratio, p.extended_grid_points, softened)


def check_budget(p: YunParams, budget: int = DEFAULT_BUDGET, rescale: bool = False, clamp: bool = True) -> SizeEstimate:
    """Raise :class:`BudgetError` (estimate in the message) when the softened network, the one
    that runs and is reported, would exceed ``budget`` parameters. Before the target is evaluated
    the output rescale layer (needed only when the target's values are too large for the value
    map's window) is not known: the check counts it with ``rescale``, which the compiler passes once
    it has chosen one, so the budget counts the network the build reports."""
    _refuse_astronomical_grid(p, 20 * budget)
    est = estimate(p, rescale=rescale, clamp=clamp)
    if est.params_softened > budget:
        raise BudgetError(
            f"{p.describe()} needs {fmt_size(est.params_softened)} parameters (softened network"
            f"{', with the output rescale its target needs' if rescale else ''}; "
            f"{fmt_size(est.params)} before softening) in {fmt_size(est.layers['total'])} layers "
            f"(budget {fmt_size(budget)}); use a larger delta or smaller n, or raise --budget"
        )
    check_grid_budget(p, 20 * budget)  # building includes the exhaustive lemma check
    return est


def _log10_grid(p: YunParams) -> float:
    return p.d * p.n * log10(p.N + 1)


def _refuse_astronomical_grid(p: YunParams, limit: int) -> None:
    """Refuse, in log space, sizes so far past ``limit`` that computing them exactly would itself be slow."""
    if _log10_grid(p) > log10(limit) + 100:
        raise BudgetError(f"{p.describe()}: exhaustive verification would enumerate about 10^{int(_log10_grid(p))} "
                          f"extended-grid points (limit {fmt_size(limit)}); use a larger delta or smaller n, "
                          f"or raise --budget")


def check_grid_budget(p: YunParams, budget: int) -> None:
    """Raise :class:`BudgetError` when exhaustive verification would enumerate more than ``budget`` points."""
    _refuse_astronomical_grid(p, budget)
    if p.extended_grid_points > budget:
        raise BudgetError(f"{p.describe()}: the extended grid has {fmt_size(p.extended_grid_points)} points "
                          f"(budget {fmt_size(budget)}); use a larger delta or smaller n, or raise --budget")


def contextual_work(p: YunParams) -> int:
    """Exact operations of quantizer + contextual map on one input (no layer is built).

    Layers ~ ``d/delta + d`` (quantizer) + ``delta^{-d} + 1`` (contextual map; ``n`` times as many
    windows with positional encoding); each layer costs about ``n^2 d`` exact operations. The
    paper-shift variant also enumerates the ``delta^{-nd}`` in-range grid once.
    """
    windows = (p.n if p.positional else 1) * p.N ** p.d
    layers = p.d * p.levels + p.d + windows + 1
    work = layers * p.n * p.n * p.d
    if p.positional and p.shift == "paper":
        work += windows * p.N ** (p.n * p.d) * p.n * p.d
    return work


def check_contextual_budget(p: YunParams, budget: int = DEFAULT_CONTEXTUAL_BUDGET) -> int:
    """Raise :class:`BudgetError` (estimate in the message) when ``yun contextual`` would exceed ``budget``."""
    log_windows = log10(p.n if p.positional else 1) + p.d * log10(p.N)
    if log_windows > log10(budget) + 100:  # too large to compute exactly in reasonable time
        raise BudgetError(f"{p.describe()}: the contextual map needs about 10^{int(log_windows)} layers "
                          f"(budget {fmt_size(budget)} exact operations); use a larger delta or smaller d, "
                          f"or raise --budget")
    work = contextual_work(p)
    if work > budget:
        windows = (p.n if p.positional else 1) * p.N ** p.d
        layers = p.d * p.levels + p.d + windows + 1
        work_text = fmt_size(work)   # "about 10^k" beyond 10^15 already
        raise BudgetError(f"{p.describe()}: the contextual map needs {fmt_size(layers)} layers, "
                          f"{work_text if work_text.startswith('about') else 'about ' + work_text} exact operations "
                          f"(budget {fmt_size(budget)}); use a larger delta "
                          f"or smaller d, or raise --budget")
    return work
