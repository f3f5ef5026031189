"""Explicit ReLU readouts ``f(m_1, .., m_M)`` of extracted memories, with proven error bounds.

Each builder returns feed-forward layers on a given residual layout (tokens as rows; the layers
read the memory dimensions and write the output dimension, or scratch dimensions in between)
and a :class:`Readout` that states the FFN's sup error on the box ``|m_i| <= R`` and the
Lipschitz constant used in the theorem's bound ``||f||_Lip * l1 + FFN error``.

* ``linear``: ``f = sum_i w_i m_i`` (default the mean), exact: ``m = ReLU(m) - ReLU(-m)``.
* ``product`` (two memories): ``ab = ((a + b)^2 - (a - b)^2) / 4`` with each square replaced by its
  piecewise-linear interpolant on ``K`` equal intervals of ``[-2R, 2R]`` (step ``h = 4R/K``; error
  ``h^2/4`` per square, so ``h^2/8`` for the product); width ``2K``.
* any Lipschitz ``f`` of two memories (:data:`FUNCTIONS`): the bilinear interpolant on a ``G x G``
  grid of ``[-R, R]^2`` (step ``h = 2R/G``), whose error is at most ``L h`` (``L`` as below), since
  it is a convex combination of ``f`` at the cell's corners, each at most ``h`` away in every
  coordinate. Two layers: the first writes the tent functions ``p_i(a)``, ``q_j(b)`` into ``2(G+1)``
  scratch dimensions; the second forms ``sum_ij f_ij p_i q_j`` with every product polarised as
  above on ``[-2, 2]`` with ``K`` intervals (symmetric knots, so a product with a zero factor is
  exactly 0; at most four products are nonzero, error ``<= 4 max|f| h_s^2/8``). Width
  ``2(G+2) + 2K`` per nonzero grid value.

Lipschitz constants are stated per function in :data:`FUNCTIONS` as ``L = sup_box sum_i |df/dm_i|``,
so that ``|f(m) - f(m')| <= L max_i |m_i - m'_i|``: memory errors ``e_i <= l1_i sup|x|`` move the
output by at most ``L max_i l1_i sup|x|``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network.layers import FeedForwardLayer


@dataclass(frozen=True)
class Readout:
    """What a readout realises, how wide it is, and its proven sup error on ``|m_i| <= R``.

    ``lipschitz``: ``sup sum_i |df/dm_i|`` on the box, so that memory errors ``e_i`` change ``f``
    by at most ``lipschitz * max_i e_i``.
    """

    name: str
    fn: Callable[[np.ndarray], np.ndarray]
    width: int
    ffn_error: float
    lipschitz: float
    radius: float
    scratch: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"readout": self.name, "width": self.width, "ffn_error_bound": self.ffn_error,
                "lipschitz": self.lipschitz, "radius": self.radius, "scratch_dimensions": len(self.scratch)}


@dataclass(frozen=True)
class Function2:
    """A readout of two memories with its Lipschitz constant ``sup(|f_a| + |f_b|)`` on ``[-R, R]^2``."""

    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    lipschitz: Callable[[float], float]
    description: str


FUNCTIONS: dict[str, Function2] = {
    "product": Function2(lambda a, b: a * b, lambda R: 2 * R, "a b"),
    "sin-product": Function2(lambda a, b: np.sin(4 * np.pi * a * b), lambda R: 8 * np.pi * R,
                             "sin(4 pi a b), the hard readout of claim 4"),
    "max": Function2(np.maximum, lambda R: 1.0, "max(a, b)"),
    "abs-difference": Function2(lambda a, b: np.abs(a - b), lambda R: 2.0, "|a - b|"),
}
READOUTS = ("linear", "product", *(name for name in FUNCTIONS if name != "product"))


def relu_layer(d: int, columns: list[tuple[dict[int, float], float]], rows: list[dict[int, float]], name: str,
               exact: bool = False) -> FeedForwardLayer:
    """A ReLU layer from sparse columns ``({dim: weight}, bias)`` and output rows ``{dim: weight}``.

    ``exact``: object arrays, so ``Fraction`` weights stay exact for the exact evaluator."""
    def zeros(shape):
        if not exact:
            return np.zeros(shape)
        out = np.empty(shape, dtype=object)
        out.fill(0)
        return out

    W1, b1, W2 = zeros((d, len(columns))), zeros(len(columns)), zeros((len(columns), d))
    for u, ((weights, bias), out) in enumerate(zip(columns, rows)):
        for k, w in weights.items():
            W1[k, u] = w
        b1[u] = bias
        for k, w in out.items():
            W2[u, k] = w
    return FeedForwardLayer(W1, b1, W2, zeros(d), name=name)


def square_units(radius: float, intervals: int) -> tuple[list[tuple[float, float]], float, float]:
    """The piecewise-linear interpolant of ``t^2`` on ``[-radius, radius]`` as ReLU units.

    Returns ``(units, constant, error)`` with units ``(knot, coefficient)`` meaning
    ``coefficient * ReLU(t - knot)``, so that ``t^2 ~ constant + sum units`` for ``|t| <= radius``
    with error at most ``error = h^2/4`` (``h = 2 radius / intervals``).
    """
    if isinstance(intervals, bool) or not isinstance(intervals, int) or intervals < 2 or intervals % 2:
        raise ExpressivityError(f"the square needs an even number >= 2 of intervals, got {intervals!r}")
    h = 2 * radius / intervals
    knots = -radius + h * np.arange(intervals)
    first_slope = ((knots[0] + h) ** 2 - knots[0] ** 2) / h
    units = [(float(knots[0]), float(first_slope))] + [(float(k), 2 * h) for k in knots[1:]]
    return units, float(knots[0] ** 2), h * h / 4


def linear_readout(labels: tuple[str, ...], memories: list[int], out: int, radius: float,
                   weights: list[float] | None = None) -> tuple[list[FeedForwardLayer], Readout]:
    """``y += sum_i w_i m_i`` exactly (default ``w_i = 1/M``)."""
    d, M = len(labels), len(memories)
    w = [1.0 / M] * M if weights is None else list(weights)
    columns, rows = [], []
    for k, wi in zip(memories, w):
        for sign in (1.0, -1.0):
            columns.append(({k: sign}, 0.0))
            rows.append({out: sign * wi})
    layer = relu_layer(d, columns, rows, "linear readout")
    return [layer], Readout("linear", lambda m: m @ np.array(w), 2 * M, 0.0, float(np.abs(w).sum()), radius)


def product_readout(labels: tuple[str, ...], memories: list[int], out: int, radius: float,
                    intervals: int) -> tuple[list[FeedForwardLayer], Readout]:
    """``y += a b`` for ``|a|, |b| <= radius`` by polarisation, error ``<= h^2/8`` with ``h = 4 radius/K``."""
    if len(memories) != 2:
        raise ExpressivityError(f"the product readout takes two memories, got {len(memories)}")
    a, b = memories
    units, _, error = square_units(2 * radius, intervals)
    columns, rows = [], []
    for sign_b, gain in ((1.0, 0.25), (-1.0, -0.25)):  # (a + b)^2 / 4 - (a - b)^2 / 4; constants cancel
        for knot, coef in units:
            columns.append(({a: 1.0, b: sign_b}, -knot))
            rows.append({out: gain * coef})
    layer = relu_layer(len(labels), columns, rows, f"product readout, {intervals} intervals per square")
    return [layer], Readout("product", lambda m: m[..., 0] * m[..., 1], 2 * intervals, error / 2, 2 * radius, radius)


def grid_readout(name: str, labels: tuple[str, ...], memories: list[int], out: int, radius: float, grid: int,
                 intervals: int) -> tuple[list[FeedForwardLayer], Readout, tuple[str, ...]]:
    """``y += f(a, b)`` by bilinear interpolation on a ``grid x grid`` mesh of ``[-radius, radius]^2``.

    The caller's ``labels`` must already end with the ``2(grid+1)`` scratch dimensions named by
    :func:`grid_scratch_labels`, in that order.
    """
    if name not in FUNCTIONS:
        raise ExpressivityError(f"unknown readout {name!r}; use one of {', '.join(READOUTS)}")
    if len(memories) != 2:
        raise ExpressivityError(f"readout {name!r} takes two memories, got {len(memories)}")
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
        raise ExpressivityError(f"the grid needs an integer >= 1 cells per side, got {grid!r}")
    spec = FUNCTIONS[name]
    scratch = grid_scratch_labels(grid)
    d = len(labels)
    if tuple(labels[d - len(scratch):]) != scratch:
        raise ExpressivityError("the residual layout must end with the grid readout's scratch dimensions")
    p0 = d - len(scratch)
    h = 2 * radius / grid
    knots = -radius + h * np.arange(grid + 1)
    # Layer 1: tents p_i(m) = max(0, 1 - |m - k_i|/h) from units ReLU(m - k) at every knot and one
    # more at k_0 - h: interior tents are (r_{i-1} - 2 r_i + r_{i+1})/h, the last is (r_{G-1} - r_G)/h
    # (it stays 1 beyond k_G); on [-R, R] the tents sum to 1 and make bilinear weights.
    unit_knots = np.concatenate([[knots[0] - h], knots])  # unit u sits at knot index u - 1
    coef = np.zeros((grid + 2, grid + 1))
    for i in range(grid + 1):
        coef[i, i] += 1.0
        coef[i + 1, i] -= 2.0 if i < grid else 1.0
        if i < grid:
            coef[i + 2, i] += 1.0
    columns, rows = [], []
    for m_dim, offset in ((memories[0], p0), (memories[1], p0 + grid + 1)):
        for u, k in enumerate(unit_knots):
            columns.append(({m_dim: 1.0}, -float(k)))
            rows.append({offset + i: coef[u, i] / h for i in range(grid + 1) if coef[u, i]})
    tents = relu_layer(d, columns, rows, f"tents on a {grid}x{grid} grid")
    # Layer 2: sum_ij f_ij p_i q_j, each product polarised; p, q in [0, 1] so p +- q in [-2, 2].
    units, _, sq_error = square_units(2.0, intervals)
    F = spec.fn(knots[:, None], knots[None, :])
    columns, rows = [], []
    for i in range(grid + 1):
        for j in range(grid + 1):
            if F[i, j] == 0:
                continue
            for sign_q, gain in ((1.0, 0.25), (-1.0, -0.25)):
                for knot, coef in units:
                    columns.append(({p0 + i: 1.0, p0 + grid + 1 + j: sign_q}, -knot))
                    rows.append({out: gain * coef * F[i, j]})
    products = relu_layer(d, columns, rows, f"bilinear {name} readout")
    interp_error = spec.lipschitz(radius) * h  # both coordinates move at most h inside a cell
    product_error = 4 * float(np.abs(F).max()) * sq_error / 2
    width = len(tents.b_1) + len(products.b_1)
    readout = Readout(name, lambda m: spec.fn(m[..., 0], m[..., 1]), width, interp_error + product_error,
                      spec.lipschitz(radius), radius, scratch)
    return [tents, products], readout, scratch


def grid_scratch_labels(grid: int) -> tuple[str, ...]:
    return tuple(f"tent_a[{i}]" for i in range(grid + 1)) + tuple(f"tent_b[{i}]" for i in range(grid + 1))
