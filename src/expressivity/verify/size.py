"""Size of the Yun construction against the counting lower bound (spec §7), before building.

Parameter counts follow the stored layers: a width-1 FF layer on ``d`` dims stores
``W_1 (d), b_1 (1), W_2 (d), b_2 (d)`` = ``3d + 1``; a size-1 head stores
``W_Q, W_K, W_V (d each), W_O (d), b_Q (1)`` = ``4d + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

from expressivity.constructions.yun.constants import YunParams
from expressivity.errors import BudgetError

DEFAULT_BUDGET = 2_000_000  # parameters


@dataclass(frozen=True)
class SizeEstimate:
    layers: dict[str, int]
    params: int
    lower_bound: float
    ratio: float
    grid_points: int

    def as_dict(self) -> dict:
        return {"layers": self.layers, "params": self.params, "lower_bound": self.lower_bound,
                "ratio_to_lower_bound": self.ratio, "grid_points": self.grid_points}


def lower_bound(p: YunParams) -> float:
    """``d n delta^{-dn} / n!`` (Theorem 2) or ``d n delta^{-dn}`` (Theorem 3) reals."""
    count = p.d * p.n * p.N ** (p.d * p.n)
    return count if p.positional else count / factorial(p.n)


def estimate(p: YunParams, rescale: bool = False) -> SizeEstimate:
    """Layer and parameter counts of the modified network, without building it."""
    layers = p.layer_counts(rescale)
    d = p.d
    ff1 = 3 * d + 1
    head = 4 * d + 1
    windows = layers["contextual"] - 1
    params = layers["quantize"] * ff1 + windows * 2 * head + head + (layers["value"] - (1 if rescale else 0)) * ff1
    if rescale:
        params += 3 * d * d + d
    if p.positional:
        params += p.n * d
    lb = lower_bound(p)
    return SizeEstimate(layers, params, lb, params / lb, p.extended_grid_points)


def check_budget(p: YunParams, budget: int = DEFAULT_BUDGET) -> SizeEstimate:
    """Raise :class:`BudgetError` (estimate in the message) when the network would exceed ``budget`` parameters."""
    est = estimate(p)
    if est.params > budget:
        raise BudgetError(
            f"{p.describe()} needs about {est.params:,} parameters in {est.layers['total']:,} layers "
            f"(budget {budget:,}); use a larger delta or smaller n, or raise --budget"
        )
    if est.grid_points > 20 * budget:
        raise BudgetError(
            f"{p.describe()}: exhaustive verification would enumerate {est.grid_points:,} extended-grid points "
            f"(limit {20 * budget:,}); use a larger delta or smaller n, or raise --budget"
        )
    return est
