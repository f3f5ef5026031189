"""Lemma 4.3: the value map ``g_v`` as width-1 feed-forward layers (tokens as rows).

1. Kill: columns whose id ``x @ u`` lies outside ``[t_l, t_r]`` get ``-(M+1)`` in every
   entry (``M`` bounds every entry after the contextual map; enumerated on the grid).
2. ``d`` zeroing layers: negative entries become 0.
3. One layer per (permutation class, token): the column whose id equals that class's
   contextual value ``v`` is replaced by ``sigma * A_L[j]``. Layers come in *decreasing* ``v``:
   the lemma allows any order, and in this one every column a layer leaves alone lies to the
   left of its window (unmapped ids are smaller, mapped and zeroed columns sit below ``t_l``),
   which is where the softened ReLU units are all inactive, so float64 adds no rounding there.
4. If ``sigma != 1`` one width-``d`` layer multiplies the output by ``1/sigma``.
5. With ``clamp`` (the default), ``CLAMP_PASSES * d`` width-1 layers clamp each output entry to ``[lo, hi]``, the
   smallest interval holding 0 and every target value: the identity on every grid input (each output
   is 0 or a target value), so the verified network is unchanged there. Not in the paper: off the
   grid, on the softened quantizer's ramps, the hit units fire in part and leave residues of the
   contextual values (5 10^5 at delta 1/16), which made d_2(f, g) over the cube 264 where the
   approximation off the ramps is 0.17; the clamp bounds them by the target's range, and the network
   stays in ``T^{2,1,4}`` (one unit of two breakpoints per layer, four ReLUs softened). Softened and
   in float64, ``x - ReLU(x - hi)`` rounds: one pass leaves an output up to ``2^-53 X`` past ``hi`` (``X``
   the value clamped; 1.75e-11 at delta 1/16, where ``X`` is near 5 10^5), so each entry is clamped twice.
   The second pass lands exactly on the end: ``x - hi`` is exact for ``x`` in ``(hi, 2 hi]`` (Sterbenz)
   and so is ``x - (x - hi)``; that holds where the first pass's excess is at most ``hi`` (``lo`` alike;
   an end at 0 is reached exactly by one pass), otherwise the excess shrinks by another ``2^-53``. On
   ``[lo, hi]`` itself no unit is active and nothing rounds, so the second pass changes nothing there.

``sigma`` handles the hidden precondition (spec §4): a mapped column ``sigma*A`` must not sit
in a later layer's window, which holds when ``max u . (sigma*A) < t_l - delta/2``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import CLAMP_PASSES, YunParams
from expressivity.constructions.yun.quantize import labels
from expressivity.network.layers import FeedForwardLayer, PiecewiseLinear
from expressivity.network.network import Network


def _col(values) -> np.ndarray:
    a = np.empty((len(values), 1), dtype=object)
    a[:, 0] = list(values)
    return a


def _row(values) -> np.ndarray:
    a = np.empty((1, len(values)), dtype=object)
    a[0, :] = list(values)
    return a


def choose_sigma(p: YunParams, A: np.ndarray, t_l: Fraction) -> tuple[Fraction, Fraction]:
    """Return ``(sigma, max u.A)`` (exact) so that ``max u.(sigma A) < t_l - delta/2``."""
    u = p.u
    top = max((sum(Fraction(float(a)) * ui for a, ui in zip(col, u)) for col in A.reshape(-1, p.d)), default=Fraction(0))
    sigma = Fraction(1)
    limit = t_l - p.delta / 2
    while top * sigma >= limit:
        sigma /= 2
    return sigma, top


def clamp_range(columns) -> tuple[Fraction, Fraction]:
    """``(lo, hi)``, exact: the smallest interval holding 0 and every entry of every target column ``A``
    (as the value map stores them, ``Fraction(float(a))``), so clamping to it changes no grid output; ``[0, 1]``
    for a target that is 0 on every cube centre (a clamp needs ``lo < hi``)."""
    values = [Fraction(0)] + [Fraction(float(a)) for _, _, A in columns for a in A]
    lo, hi = min(values), max(values)
    return (lo, hi) if lo < hi else (lo, lo + 1)


def clamp_layers(d: int, lo: Fraction, hi: Fraction, passes: int = CLAMP_PASSES) -> list[FeedForwardLayer]:
    """``passes`` rounds of one width-1 layer per output entry ``i``: ``x_i + phi(x_i)`` with ``phi = lo - t``
    below ``lo``, 0 on ``[lo, hi]``, ``hi - t`` above, that is ``clamp(x_i, lo, hi)``; no jump, so softening adds
    no ramp and the middle piece passes with no ReLU unit active (no rounding). In exact arithmetic a clamp is
    idempotent; the second pass takes up what float64 rounds in the first (step 5 of the module notes)."""
    pieces = PiecewiseLinear((lo, hi), (-1, 0, -1), (lo, 0, hi))
    layers = []
    for k in range(passes):
        for i in range(d):
            e = [0] * d
            e[i] = 1
            again = "" if k == 0 else f" (pass {k + 1}: float64's rounding)"
            layers.append(FeedForwardLayer(_col(e), np.array([0], dtype=object), _row(e), activation=pieces,
                                           name=f"clamp x[{i}] to [{lo}, {hi}]{again}"))
    return layers


def value_map(p: YunParams, columns: list[tuple[Fraction, tuple[Fraction, ...], tuple[float, ...]]],
              M: Fraction, t_l: Fraction, t_r: Fraction, sigma: Fraction, clamp: bool = True) -> Network:
    """Build ``g_v``.

    Args:
        columns: per (class, token): ``(v, Z, A)`` with ``v`` the contextual value, ``Z`` the
            column after the contextual map (length ``d``), ``A`` the target column.
        M: bound on every entry after the contextual map over the extended grid.
        clamp: end with the output clamp (step 5 of the module notes); ``False`` is the paper's value map.
    """
    d, u = p.d, p.u
    uu = _col(u)
    layers = []
    # Ids are multiples of delta/2, so [t_l, t_r + delta/2) holds exactly the ids in [t_l, t_r].
    kill = PiecewiseLinear((t_l, t_r + p.delta / 2), (0, 0, 0), (1, 0, 1))
    layers.append(FeedForwardLayer(uu, np.array([0], dtype=object), _row([-(M + 1)] * d), activation=kill,
                                   name="kill ids outside [t_l, t_r]"))
    zero = PiecewiseLinear((0,), (-1, 0), (0, 0))
    for i in range(d):
        e = [0] * d
        e[i] = 1
        layers.append(FeedForwardLayer(_col(e), np.array([0], dtype=object), _row(e), activation=zero,
                                       name=f"zero negative x[{i}]"))
    hit = PiecewiseLinear((-p.delta / 2, p.delta / 2), (0, 0, 0), (0, 1, 0))
    for v, Z, A in sorted(columns, key=lambda col: col[0], reverse=True):
        w2 = [sigma * Fraction(float(a)) - z for a, z in zip(A, Z)]
        layers.append(FeedForwardLayer(uu, np.array([-v], dtype=object), _row(w2), activation=hit,
                                       name=f"map context {v}"))
    if sigma != 1:
        lo = min([Fraction(0)] + [sigma * Fraction(float(a)) for _, _, A in columns for a in A]) - 1
        ident = np.zeros((d, d), dtype=object)
        np.fill_diagonal(ident, 1)
        scale = np.zeros((d, d), dtype=object)
        np.fill_diagonal(scale, 1 / sigma - 1)
        # constant lo left of lo (no value on the grid comes below it): continuous, where (0, 0) jumped by lo and the
        # softened ramp's slopes lo/epsilon (5e6 for a target of size 1e6 taking signs) multiplied float64's rounding
        # past the agreement bound, failing a correct network (a fresh audit, 2026-11-29)
        layers.append(FeedForwardLayer(ident, np.zeros(d, dtype=object), scale,
                                       activation=PiecewiseLinear((lo,), (0, 1), (lo, 0)),
                                       name=f"rescale by {1 / sigma}"))
    bounds = clamp_range(columns) if clamp else None
    if bounds is not None:
        layers += clamp_layers(d, *bounds)
    return Network(tuple(layers), labels(d), name="yun value map",
                   metadata={"stage": "value", "M": M, "sigma": sigma, "clamp": bounds})
