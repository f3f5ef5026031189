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

import datetime

import numpy as np

from expressivity.errors import EvaluationError
from expressivity.network.network import Network

DTYPES = ("exact", "float64", "float32", "torch-float64")


def evaluate(network: Network, X, dtype: str = "float64", *, allow_length: bool = False,
             allow_outside: bool = False, return_residuals: bool = False, check_finite: bool = True):
    """Run ``network`` on ``X`` (``(n, d_in)`` or ``(batch, n, d_in)``, tokens as rows; ``d_in``
    is the input width, :attr:`Network.d_in`, not the residual width ``d``).

    Returns an object array of exact numbers for ``"exact"``, else float64 values (float32
    results are widened after the fact, so they carry float32 rounding). With
    ``return_residuals`` returns ``(output, [H_0, H_1, ...])`` from the same pass: the residual
    stream after the input and after every layer, each shaped like ``X`` with ``d`` columns.
    Lengths outside ``network.valid_lengths`` are refused unless ``allow_length`` (then the
    result is outside the construction's claim), and so are values outside ``network.input_domain``
    unless ``allow_outside``, and a dtype outside the domain's ``arithmetic`` likewise. A float dtype
    evaluates ``X`` rounded to it: its claim covers the rounded numbers (``run`` checks a float answer
    of an exact claim against exact arithmetic on the typed input). Wrong types raise a one-line :class:`EvaluationError`, and so does a
    float result that is not finite (an overflow: no answer, not ``inf``), unless ``check_finite``
    is false (for callers that report it themselves).
    """
    X = check_evaluation(network, X, dtype)
    for name, value in (("allow_length", allow_length), ("allow_outside", allow_outside),
                        ("return_residuals", return_residuals), ("check_finite", check_finite)):
        if not isinstance(value, (bool, np.bool_)):   # "no" would read as true
            raise EvaluationError(f"{name} must be True or False, got {value!r}")
    options = {"allow_length": allow_length, "allow_outside": allow_outside, "return_residuals": return_residuals}
    _check_float_scores(network, X, dtype)
    if dtype == "exact":
        from expressivity.network.exact import forward_exact

        return forward_exact(network, X, **options)
    try:
        # an overflow is refused below (or asked for, with check_finite=False): NumPy's warning would repeat it
        with np.errstate(over="ignore", invalid="ignore"):
            if dtype == "float64":
                from expressivity.network.reference import forward

                result = forward(network, X, **options)
            else:
                from expressivity.network.torch_eval import forward_torch

                result = forward_torch(network, X, dtype="float32" if dtype == "float32" else "float64", **options)
    except OverflowError:
        raise EvaluationError(
            f"a weight or input of network {network.name!r} is beyond the float range; evaluate it with dtype 'exact'"
        ) from None
    output = result[0] if return_residuals else result
    if check_finite and not np.all(np.isfinite(output)):
        raise EvaluationError(f"network {network.name!r} gives non-finite outputs in {dtype} on this input (an "
                              "overflow the float evaluation cannot carry, or a query whose every key a -inf position "
                              "bias masks); use smaller values, or dtype 'exact' where the network allows it"
                              + (" or float64" if dtype == "float32" else ""))
    return result


MAX_FLOAT_SCORES = 2**28   # attention scores of one float pass (2 GiB in float64 for each array of them)


def _check_float_scores(network: Network, X, dtype: str) -> None:
    """Refuse a float pass whose ``(batch, n, n)`` attention scores are above :data:`MAX_FLOAT_SCORES`
    before it allocates them (20,000 tokens of an any-length mean raised NumPy's MemoryError: a
    fresh audit, 2026-11-28); the exact pass has its own budget (:func:`~expressivity.network.exact.exact_chunk`)."""
    if dtype == "exact" or not any(layer.kind == "attention" for layer in network.layers):
        return
    shape = np.shape(X)   # rectangular: check_evaluation refused a ragged X
    if len(shape) not in (2, 3):
        return
    batch, n = (1, shape[0]) if len(shape) == 2 else shape[:2]
    if batch * n * n > MAX_FLOAT_SCORES:
        raise EvaluationError(f"a {dtype} pass over {batch:,} sequence(s) of {n:,} tokens holds {batch * n * n:,} "
                              f"attention scores a head, about {batch * n * n * 8 / 2**30:.3g} GiB, above the budget of "
                              f"{MAX_FLOAT_SCORES:,}; evaluate fewer or shorter sequences at once")


_DATES = (np.datetime64, np.timedelta64, datetime.date, datetime.time, datetime.timedelta)


def _numpy_floats():
    """The torch float dtypes numpy holds (torch is imported only by callers that pass a tensor)."""
    import torch

    return (torch.float16, torch.float32, torch.float64)


def check_evaluation(network, X, dtype):
    """``X`` as the evaluators take it (a torch tensor as NumPy), or a one-line :class:`EvaluationError`
    unless ``network`` is a Network, ``X`` a real numeric array and ``dtype`` known."""
    if not isinstance(network, Network):
        raise EvaluationError(f"evaluate takes a Network first, got {type(network).__name__}; build or load one "
                              "(expressivity.load_network)")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise EvaluationError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    if isinstance(X, (str, bytes, dict)) or X is None:
        raise EvaluationError(f"X must be an array (n, d_in) or (batch, n, d_in) of numbers, got {type(X).__name__}")
    if hasattr(X, "detach") and hasattr(X, "cpu"):   # a torch tensor (one that requires grad has no .numpy())
        X = X.detach().cpu()
        if getattr(X, "is_floating_point", lambda: False)() and X.dtype not in _numpy_floats():
            X = X.double()   # bfloat16 and the float8s, which numpy lacks, widen to float64 exactly
        X = X.numpy()
    try:
        complex_entries = np.iscomplexobj(X)
    except (TypeError, ValueError):   # a ragged nesting of lists
        raise EvaluationError("X must be a rectangular array (n, d_in) or (batch, n, d_in) of numbers") from None
    if complex_entries:
        raise EvaluationError("X holds complex numbers; give real ones")
    try:
        raw = np.asarray(X)
    except (TypeError, ValueError):
        raise EvaluationError("X must be a rectangular array (n, d_in) or (batch, n, d_in) of numbers") from None
    # before any conversion: float64 reads dates as days since 1970 and strings as the numbers they spell, which
    # the exact pass refused (a fresh audit, 2026-11-28: a datetime64 X was evaluated as numbers)
    if raw.dtype.kind not in "biufO":
        raise EvaluationError(f"X must hold numbers, got {raw.dtype} entries")
    if raw.dtype.kind == "O":   # the same dates held as objects (a review, 2026-11-29)
        dated = next((v for v in raw.flat if isinstance(v, _DATES)), None)
        if dated is not None:
            raise EvaluationError(f"X must hold numbers, got {type(dated).__name__} entries")
    try:
        arr = raw if dtype == "exact" else raw.astype(np.float64)
    except OverflowError:
        raise EvaluationError(f"X holds a number beyond the {dtype} range; evaluate it with dtype 'exact'") from None
    except (TypeError, ValueError):
        raise EvaluationError("X must be a rectangular array (n, d_in) or (batch, n, d_in) of numbers") from None
    if dtype != "exact" and not np.all(np.isfinite(arr)):
        raise EvaluationError("X holds NaN or infinite values; give finite numbers")
    return X


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
