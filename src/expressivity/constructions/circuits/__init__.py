"""The tutorial's circuits: hand-built networks with exact targets (see :mod:`.build`).

``CIRCUITS`` is the registry, name -> :class:`Circuit` (a builder returning ``(Network,
ConstructionReport)`` and the exact target it must realise); :func:`.check.run_circuit` builds
one, runs it on values and checks it against its target and its proven error bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from expressivity.constructions.circuits.build import (DEFAULT_TOLERANCE, MAX_LENGTH, PE_DIM, auto_scale, build_attention,
                                                       build_max, build_mean, build_reverse, build_reverse_dot,
                                                       build_shift, build_sum, check_length, circuit_domain, embed,
                                                       gap_error_bound,
                                                       naive_softmax, reverse_dot_margin, target_attention)
from expressivity.constructions.report import ConstructionReport
from expressivity.errors import ExpressivityError
from expressivity.network import Network


@dataclass(frozen=True)
class Circuit:
    """A named construction and its exact target.

    ``build(length, scale, **options) -> (Network, ConstructionReport)``; ``target(values,
    **options)`` maps values ``(..., L)`` to outputs ``(..., L, d_out)`` (exactly, for object
    arrays of Fractions).
    """

    name: str
    description: str
    build: Callable[..., tuple[Network, ConstructionReport]]
    target: Callable[..., np.ndarray]
    scaled: bool = True          # takes a scale (softmax sharpness)
    positional: bool = True      # uses position information (so is not permutation-equivariant)
    ranged: bool = False         # its softmax error bound is proven for inputs within an input range
    fixed_softmax: bool = False  # unscaled, yet softmax (the tutorial's attention): no exact value, no hardmax

    def make(self, length: int, *scale, **options) -> tuple[Network, ConstructionReport]:
        """``build(length[, scale], ...)`` with those of ``options`` its builder takes (a command passes
        every option to every circuit, having refused those that do not apply; the builders refuse any
        other keyword, as a Python caller's typo should be)."""
        import inspect

        taken = inspect.signature(self.build).parameters
        return self.build(length, *scale, **{k: v for k, v in options.items() if k in taken})


def _mean(v: np.ndarray) -> np.ndarray:
    """Mean over the last axis; exact (``Fraction``) for object arrays."""
    if v.dtype == object:
        return np.vectorize(lambda t: Fraction(t) / v.shape[-1], otypes=[object])(v.sum(-1, keepdims=True))
    return (v / v.shape[-1]).sum(-1, keepdims=True)   # divided first: the mean of 1e308 and 1e308 is no overflow


def _scalar_target(fn):
    def target(values, **kwargs):
        values = np.asarray(values)
        return fn(values, **kwargs)[..., None]
    return target


CIRCUITS: dict[str, Circuit] = {
    c.name: c
    for c in (
        Circuit("attention", "single-head self-attention with sinusoidal encoding (tutorial example 1)",
                build_attention, target_attention, scaled=False, fixed_softmax=True),
        Circuit("reverse", "y_i = v_{L-1-i} by an additive position bias (tutorial example 2)",
                build_reverse, _scalar_target(lambda v, **_: v[..., ::-1]), ranged=True),
        Circuit("reverse-dot", "y_i = v_{L-1-i} by dot-product attention over sinusoidal encodings",
                build_reverse_dot, _scalar_target(lambda v, **_: v[..., ::-1]), ranged=True),
        Circuit("sum", "y_i = sum_j v_j by uniform attention and a feed-forward rescale (tutorial example 3)",
                build_sum, _scalar_target(lambda v, **_: np.broadcast_to(v.sum(-1, keepdims=True), v.shape)),
                scaled=False, positional=False),
        Circuit("mean", "y_i = mean_j v_j by uniform attention", build_mean,
                _scalar_target(lambda v, **_: np.broadcast_to(_mean(v), v.shape)),
                scaled=False, positional=False),
        Circuit("shift", "y_i = v_{max(i-k,0)} by a relative position bias (--shift k)", build_shift,
                _scalar_target(lambda v, shift=1, **_: v[..., np.maximum(np.arange(v.shape[-1]) - shift, 0)]),
                ranged=True),
        Circuit("previous", "y_i = v_{max(i-1,0)}: copy the previous token by relative bias",
                lambda length, scale="auto", *, input_range=1.0, tolerance=DEFAULT_TOLERANCE: build_shift(
                    length, scale, shift=1, input_range=input_range, tolerance=tolerance),
                _scalar_target(lambda v, **_: v[..., np.maximum(np.arange(v.shape[-1]) - 1, 0)]), ranged=True),
        Circuit("max", "y_i = max_j v_j by sharp (large inverse temperature) softmax", build_max,
                _scalar_target(lambda v, **_: np.broadcast_to(v.max(-1, keepdims=True), v.shape)),
                positional=False),
    )
}


def get_circuit(name: str) -> Circuit:
    try:
        return CIRCUITS[name]
    except KeyError:
        raise ExpressivityError(f"unknown circuit {name!r}; choose one of: {', '.join(CIRCUITS)}") from None


__all__ = ["CIRCUITS", "DEFAULT_TOLERANCE", "MAX_LENGTH", "PE_DIM", "Circuit", "auto_scale", "build_attention",
           "build_max", "build_mean", "build_reverse", "build_reverse_dot", "build_shift", "build_sum", "check_length",
           "circuit_domain",
           "embed", "gap_error_bound", "get_circuit", "naive_softmax", "reverse_dot_margin", "target_attention"]
