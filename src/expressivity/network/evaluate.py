"""One entry point for the three evaluators of a :class:`Network`.

``dtype`` selects the arithmetic: ``"exact"`` (Python ints / Fractions; hardmax, no GELU,
layer norm or rotary: see :mod:`~expressivity.network.exact`), ``"float64"`` (the NumPy
reference pass), ``"torch-float64"`` / ``"float32"`` (PyTorch). Every result records which
arithmetic produced it.

Float evaluators read exact weights (``Fraction``, big ``int``) as the nearest float. Where a
network's exactness depends on a value floats cannot hold (a breakpoint at ``1/3``, a grid
offset ``k/3``), an input near that value can land on the other side in float arithmetic: exact
claims are checked with ``dtype="exact"``, which rounds nothing.
"""

from __future__ import annotations

import numpy as np

from expressivity.errors import EvaluationError
from expressivity.network.network import Network

DTYPES = ("exact", "float64", "float32", "torch-float64")


def evaluate(network: Network, X, dtype: str = "float64") -> np.ndarray:
    """Run ``network`` on ``X`` (``(n, d)`` or ``(batch, n, d)``, tokens as rows).

    Returns an object array of exact numbers for ``"exact"``, else float64 values (float32
    results are widened after the fact, so they carry float32 rounding).
    """
    if dtype == "exact":
        from expressivity.network.exact import forward_exact

        return forward_exact(network, X)
    if dtype not in DTYPES:
        raise EvaluationError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    try:
        if dtype == "float64":
            from expressivity.network.reference import forward

            return forward(network, X)
        from expressivity.network.torch_eval import forward_torch

        return forward_torch(network, X, dtype="float32" if dtype == "float32" else "float64")
    except OverflowError:
        raise EvaluationError(
            f"a weight or input of network {network.name!r} is beyond the float range; evaluate it with dtype 'exact'"
        ) from None


def compare_evaluators(network: Network, X, dtypes=("torch-float64", "float32", "exact")) -> dict[str, float | str]:
    """Max abs deviation of each evaluator from the float64 reference pass on ``X``.

    Evaluators that cannot run this network (exact on softmax) are reported with the reason.
    float32 deviations are expected (rounding) and reported, not hidden.
    """
    reference = evaluate(network, X, "float64")
    report: dict[str, float | str] = {}
    for dtype in dtypes:
        try:
            out = evaluate(network, X, dtype)
        except EvaluationError as exc:
            report[dtype] = f"not applicable: {exc}"
            continue
        report[dtype] = float(np.max(np.abs(np.asarray(out, dtype=np.float64) - reference))) if reference.size else 0.0
    return report
