"""Run a circuit on values and check it against its exact target and its proven error bound.

The check belongs to the construction: the output of the built network on the given values
must equal the target exactly (hardmax, exact arithmetic) or within the proven bound of the
report (softmax), plus the rounding of the chosen float arithmetic, which the bound (proven in
exact arithmetic) does not cover. The allowance for rounding is ``8 * eps * L * (1 + sum|v| +
max|target|)`` with ``eps`` the unit round-off of the dtype; it is reported with the result.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from expressivity.constructions.circuits import get_circuit
from expressivity.constructions.circuits.build import DEFAULT_TOLERANCE, MAX_LENGTH, UNIT_ROUNDOFF, embed
from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate
from expressivity.errors import ExpressivityError
from expressivity.network import Network, evaluate
from expressivity.network.domain import EXACT_AGREEMENT, short
from expressivity.network.exact import to_exact

DTYPES = ("exact", "float64", "float32")
ARITHMETIC = {"exact": "exact rationals (Python int/Fraction)", "float64": "NumPy float64 reference pass",
              "float32": "PyTorch float32, max-subtracted softmax"}


def arithmetic_of(dtype: str, net: Network) -> str:
    """How ``net`` is evaluated in ``dtype``, in words (:data:`ARITHMETIC`; a network without a
    softmax says no softmax)."""
    softmax = any(getattr(layer, "normalization", None) == "softmax" for layer in net.layers)
    return ARITHMETIC[dtype] if softmax or dtype != "float32" else "PyTorch float32"


_UNIT_ROUNDOFF = {"exact": 0.0, **UNIT_ROUNDOFF}


@dataclass(frozen=True)
class CircuitRun:
    """A built circuit, run on ``values`` and checked.

    ``output`` and ``target`` are ``(L, d_out)``: object arrays of exact numbers for
    ``dtype="exact"``, float64 otherwise (float32 results widened after the fact).
    """

    network: Network
    report: ConstructionReport
    values: list
    output: np.ndarray
    target: np.ndarray
    dtype: str
    max_abs_error: float
    max_abs_error_exact: Fraction | None


def default_values(length: int | None, seed: int | None) -> np.ndarray:
    """The tutorial's input ``1..L`` (``L = 6`` by default), or uniform values in [-1, 1) from ``seed``."""
    length = 6 if length is None else length
    if seed is None:
        return np.arange(1, length + 1, dtype=np.float64)
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=length)


def rounding_allowance(dtype: str, floats: np.ndarray, target: np.ndarray) -> float:
    """Float rounding on top of a bound proven in exact arithmetic (0 for ``exact``)."""
    eps = _UNIT_ROUNDOFF[dtype]
    if eps == 0:
        return 0.0
    with np.errstate(over="ignore"):
        # eps times each term before they are summed: the mean of 1e308 and 1e308 has an allowance
        # (1e308 + 1e308 has not)
        scaled = eps + float((np.abs(floats) * eps).sum()) + float(np.max(np.abs(target), initial=0.0)) * eps
        allowance = 8 * max(len(floats), 1) * scaled
    if not math.isfinite(allowance):
        # An infinite allowance would let any output pass: refuse instead.
        raise ExpressivityError(f"the inputs are too large to bound {dtype} rounding (the sum of |v| overflows); "
                                "use smaller values, or --dtype exact (with --scale inf where the circuit takes one)")
    return allowance


def score_rounding_allowance(net: Network, X: np.ndarray, dtype: str) -> float:
    """What the rounding of a softmax's scores adds to the output error of a one-attention-layer network on ``X``
    ``(n, d)`` (its embedded input), a first-order bound: a score ``q . k`` of ``d_k`` products of entries that are
    themselves sums of ``d`` products rounds by at most ``delta = (2d + d_k + 4) eps max sum_k |q_k| |k_k|``, a weight
    moves by at most a factor ``e^{2 delta}``, and the output by ``2 (e^{2 delta} - 1) max|v W_O|``. The allowance
    ``8 eps L (1 + sum|v| + max|target|)`` grows with ``|v|``, score rounding with ``|v|^2``: the tutorial's attention
    circuit failed its check on near-ties at ``|v| = 1e7`` although the network and the formula agree up to rounding
    (an audit, 2026-11-29)."""
    from expressivity.network import AttentionLayer

    eps = _UNIT_ROUNDOFF[dtype]
    if eps == 0:
        return 0.0
    A = np.abs(np.asarray(X, dtype=np.float64))
    total = 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        for layer in net.layers:
            if not isinstance(layer, AttentionLayer) or layer.normalization != "softmax":
                continue
            for head in layer.heads:
                Q = A @ np.abs(head.W_Q) + (0.0 if head.b_Q is None else np.abs(head.b_Q))
                K = A @ np.abs(head.W_K)
                scores = float(np.max(Q @ K.T, initial=0.0)) * float(layer.inverse_temperature)
                delta = (2 * A.shape[1] + head.W_Q.shape[1] + 4) * eps * scores
                if not 2 * math.expm1(min(2 * delta, 700.0)) < 1:
                    # an allowance as large as the values themselves checks nothing (a convex combination is never
                    # further than that): refuse, as an infinite allowance is refused
                    raise ExpressivityError(f"{dtype} rounding of the attention scores (up to {scores:.3g}) can move the "
                                            "softmax weights by more than they are, so the check could not fail on "
                                            "these values; use smaller values")
                values = float(np.max(A @ np.abs(head.W_V) @ np.abs(head.W_O), initial=0.0))
                total += 2 * math.expm1(2 * delta) * values
    return total if math.isfinite(total) else math.inf


def run_circuit(name: str, values, *, scale="auto", dtype: str = "float64", seed: int = 0, shift: int = 1,
                tolerance: float = DEFAULT_TOLERANCE, input_range: float | None = None,
                measure_outside: bool = False) -> CircuitRun:
    """Build circuit ``name`` for ``len(values)`` tokens, run it in ``dtype`` and check it.

    Args:
        values: the scalars ``v_0 .. v_{L-1}`` (numbers or Fractions).
        scale: softmax sharpness, ``math.inf`` (hardmax) or ``"auto"`` (smallest scale whose
            proven bound is below ``tolerance`` for ``input_range``); ignored by circuits
            without a scale only when left at ``"auto"``.
        seed: the weights of the ``attention`` circuit.
        input_range: the spread ``max - min`` of the inputs the network is built for (its
            claim's domain, recorded with it); default the spread of ``values``. Only circuits whose
            softmax bound depends on it take one (``Circuit.ranged``), and not under hardmax.
        measure_outside: run even where ``dtype``'s rounding can exceed the proven bound on these
            values (the domain's arithmetic; refused otherwise, as the check would allow more rounding
            than the bound it checks): the demo's float32 column measures that rounding.
    Returns the run, whose report carries the check ``output = target within the bound`` and
    the measured ``max_abs_error``.
    """
    circuit = get_circuit(name)
    if dtype not in DTYPES:
        raise ExpressivityError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    if not 1 <= len(values) <= MAX_LENGTH:
        raise ExpressivityError(f"give between 1 and {MAX_LENGTH} values, got {len(values)}")
    _refuse_scale(circuit, scale)
    if dtype == "exact" and circuit.fixed_softmax:
        raise ExpressivityError(f"circuit {name!r} is a softmax with a fixed sharpness, which has no exact value; "
                                "use --dtype float64")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise ExpressivityError(f"tolerance must be a finite number > 0, got {tolerance}; e.g. --tolerance 1e-10")
    exact_values = to_exact(np.asarray(list(values), dtype=object))
    floats = _as_floats(exact_values, dtype)
    spread = _spread(exact_values)
    input_range = _input_range(circuit, scale, spread, input_range, _run_spread(spread, floats, dtype))
    net, report = circuit.make(len(floats), scale if circuit.scaled else None, input_range=input_range,
                                tolerance=tolerance, seed=seed, shift=shift)
    started = time.perf_counter()
    inputs = exact_values if dtype == "exact" else floats
    # the reason alone: the advice is given after it, once
    rounding = None if dtype == "exact" else net.input_domain.arithmetic_violation(embed(net, inputs), dtype,
                                                                                    with_fix=False)
    if rounding is not None and not measure_outside:   # the check would allow more rounding than the bound it checks
        raise ExpressivityError(f"{dtype} rounding can exceed circuit {name!r}'s proven error bound "
                                f"{report.bounds['max_abs_error']:.3g} on these values ({rounding}); use "
                                + ("--dtype float64, " if dtype != "float64" else "")   # a fuzz pass: it advised float64 to float64
                                + "smaller values, a larger --tolerance, or --scale inf (hardmax: exact)")
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, as one line
        output = evaluate(net, embed(net, inputs), dtype, check_finite=False,   # said below, with the cause
                          allow_outside=rounding is not None)
        # the target of the values as given (exact), not of their float rounding: the sum of 1e30, 1, -1e30 is 1;
        # a softmax of fixed sharpness has no exact value, and its target is computed in float64
        target = circuit.target(floats if circuit.fixed_softmax else exact_values, seed=seed, shift=shift)
        if dtype != "exact" and not circuit.fixed_softmax:
            target = _target_floats(np.asarray(target, dtype=object))
    if dtype != "exact" and not (np.isfinite(output).all() and np.isfinite(target).all()):
        raise ExpressivityError(_overflow_message(circuit, dtype, report))
    seconds = time.perf_counter() - started
    if dtype == "exact":
        diffs = [abs(a - b) for a, b in zip(output.flat, target.flat)]
        err_exact = max(diffs, default=Fraction(0))
        max_err, failures = float(err_exact), sum(d != 0 for d in diffs)
        bound, err_exact = 0.0, Fraction(err_exact)
    else:
        diffs = np.abs(output - target)
        bound = report.bounds["max_abs_error"] + rounding_allowance(dtype, floats, target)
        built_for = net.input_domain.built_for if net.input_domain is not None else {}
        if rounding is None and "tolerance" in built_for and dtype in net.input_domain.arithmetic:
            # inside its float claim, the claim itself: error <= bound + accuracy (the domain's float analysis). The
            # allowance above grows like L^2 eps max|v| and let reverse-dot at L = 4096 pass 76 times its bound
            # (an audit, 2026-11-29): the check is never looser than the claim it certifies
            accuracy = max(report.bounds["max_abs_error"], float(built_for["tolerance"]))
            bound = min(bound, report.bounds["max_abs_error"] + accuracy)
        if circuit.fixed_softmax:   # the target is the same float formula: the scores' rounding is the difference
            bound += score_rounding_allowance(net, embed(net, floats), dtype)
            if not math.isfinite(bound):
                raise ExpressivityError(f"the inputs are too large to bound {dtype} rounding of the attention scores "
                                        "(|v|^2 overflows); use smaller values")
        max_err, err_exact = float(diffs.max()), None
        far = diffs > bound
        if net.input_domain.exact:
            # An exact claim in floats: the answer must also be the exact one up to the rounding of the
            # output itself (as `run` checks): the allowance above grows with |v| and can exceed the answer
            # (the sum of 1e30, 1, -1e30 in float64 is -1.5e13, within an allowance of 5.3e15)
            far |= diffs > EXACT_AGREEMENT[dtype] * np.abs(target)
            if far.any() and not measure_outside:
                i, k = np.unravel_index(int(np.argmax(far)), far.shape)
                raise ExpressivityError(
                    f"the {dtype} answer differs from the exact one ({net.output_labels[k]} at token {i}: "
                    f"{output[i, k]:.12g} against {target[i, k]:.12g}, off by {diffs[i, k]:.2g}): {dtype} rounding on "
                    "these values is larger than "
                    f"circuit {name!r}'s exact claim allows ({EXACT_AGREEMENT[dtype]:g} of the exact answer); use --dtype exact"
                    + (" or float64" if dtype == "float32" else "") + ", or values that do not cancel")
        failures = int(np.count_nonzero(far))
    check = Check(f"output equals {report.claim} within the proven bound", points=int(output.size), failures=failures,
                  arithmetic=arithmetic_of(dtype, net), seconds=seconds,
                  details={"bound": bound, "rounding_allowance": bound - report.bounds["max_abs_error"],
                           **({"outside_the_claim": rounding} if rounding is not None else {})})
    error = ErrorEstimate("max_abs_error", max_err, f"max over the {len(floats)} given inputs, {arithmetic_of(dtype, net)}",
                          bound=bound)
    values = list(inputs.flat) if dtype == "exact" else inputs.tolist()   # plain Python numbers
    return CircuitRun(net, report.with_results([check], [error]), values, output, np.asarray(target), dtype,
                      max_err, err_exact)


def _spread(exact_values: np.ndarray) -> float:
    """``max - min`` of the values as a float no smaller than the exact spread (the domain recorded
    with the network must hold the values it was built on, exactly)."""
    exact = max(exact_values.flat) - min(exact_values.flat)
    try:
        spread = float(exact)    # correctly rounded: at most one step below
    except OverflowError:       # beyond float64 (exact hardmax runs only): the scale does not depend on it
        return sys.float_info.max
    return math.nextafter(spread, math.inf) if Fraction(spread) < exact else spread


def _run_spread(spread: float, floats: np.ndarray, dtype: str) -> float:
    """The spread of the values the network is run on, given ``spread``, the typed values' (:func:`_spread`): in
    floats, that of their rounding too, which can exceed it (0.3, 1.1: exactly 0.8, in float64 0.8 + 1.1e-16), and a
    network built for the exact spread then refused the run it was built for (an audit, 2026-11-29)."""
    if dtype == "exact":
        return spread
    with np.errstate(over="ignore"):
        run = floats.astype(np.float32).astype(np.float64) if dtype == "float32" else floats
    if not np.isfinite(run).all():   # beyond float32: refused as an overflow where it is run
        return spread
    return max(spread, _spread(to_exact(np.asarray(run, dtype=object))))


def _input_range(circuit, scale, spread: float, input_range, run_spread: float | None = None) -> float:
    """The input range to build for: ``input_range`` when given (refused where the circuit takes none,
    or below the spread of the values typed), else the values' own spread; at least ``run_spread``, the
    spread of the values as rounded for the run (a rounding step above ``spread`` at most)."""
    run_spread = spread if run_spread is None else run_spread
    if input_range is None:
        return max(spread, run_spread, 1e-300)
    if not circuit.ranged or (not isinstance(scale, str) and math.isinf(scale)):
        why = "its claim holds for any values" if circuit.ranged or not circuit.scaled else "its bound holds for any input"
        raise ExpressivityError(f"circuit {circuit.name!r}{' under hardmax' if circuit.ranged else ''} takes no input "
                                f"range ({why}); drop --input-range")
    if isinstance(input_range, bool) or not isinstance(input_range, (int, float)) or not (0 < input_range < math.inf):
        raise ExpressivityError(f"input_range must be a finite number > 0, got {input_range!r}; e.g. --input-range 10")
    if spread > input_range:
        raise ExpressivityError(f"the values span {short(spread)} (max - min), more than the input range "
                                f"{short(input_range)} the network would be built for; give --input-range >= "
                                f"{short(spread)}, or leave it out to build for the values' own range")
    return max(float(input_range), run_spread)


def _target_floats(target: np.ndarray) -> np.ndarray:
    """The exact target as float64 (``inf`` beyond float64: reported as an overflow by the caller)."""
    out = np.empty(target.shape, dtype=np.float64)
    for k, v in enumerate(target.flat):
        try:
            out.flat[k] = float(v)
        except OverflowError:
            out.flat[k] = math.inf if v > 0 else -math.inf
    return out


def _as_floats(exact_values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values; numbers beyond float64 are refused unless the run is exact (then they are
    only clipped here, to choose a scale, and the run itself uses the exact values)."""
    out = np.empty(exact_values.shape, dtype=np.float64)
    for k, v in enumerate(exact_values.flat):
        try:
            out.flat[k] = float(v)
        except OverflowError:
            if dtype != "exact":
                raise ExpressivityError(f"the input value at position {k} is beyond the float64 range (|v| > 1.8e308); "
                                        "use smaller "
                                        "values or --dtype exact (hardmax circuits)") from None
            out.flat[k] = 1e300 if v > 0 else -1e300
    return out


def _refuse_scale(circuit, scale) -> None:
    if not circuit.scaled and scale not in ("auto", None):
        why = ("its softmax has the tutorial's fixed sharpness" if circuit.fixed_softmax
               else "it is exact by construction")
        raise ExpressivityError(f"circuit {circuit.name!r} takes no scale ({why}); drop --scale")


def _overflow_message(circuit, dtype: str, report: ConstructionReport) -> str:
    scale = report.constants.get("scale")
    if circuit.fixed_softmax:
        cause, fix = f"its attention scores (products of the inputs) overflow {dtype}", "use smaller inputs"
    elif scale is not None and math.isfinite(scale):
        cause, fix = (f"scale {scale:.3g} times the inputs overflows {dtype}",
                      "use a smaller --scale, --scale auto, or --scale inf (exact hardmax)")
    else:   # hardmax, or exact by construction (a sum)
        cause = f"the outputs{' (e.g. a sum of the inputs)' if scale is None else ''} exceed the {dtype} range"
        fix = "use smaller inputs or --dtype exact"
    return f"circuit {circuit.name!r} produced non-finite outputs in {dtype}: {cause}; {fix}"


# The equivariance check evaluates (permutations + 1) x samples inputs, each with L^2 scores per
# head: about 2e9 float score entries take a minute on a 2-core CPU; exact rationals are about a
# thousand times slower. Above the budget it is refused (memory is bounded by evaluating in chunks).
EQUIVARIANCE_BUDGET = {"float64": 2 * 10 ** 9, "float32": 2 * 10 ** 9, "exact": 2 * 10 ** 6}


def circuit_equivariance(name: str, length: int = 6, samples: int = 16, permutations: int = 8, seed: int = 0,
                         dtype: str = "float64", scale="auto", budget: int | None = None):
    """Check ``f(PX) = P f(X)`` for circuit ``name`` on random inputs (multiples of 1/8 in [-1, 1] for
    ``exact``, uniform in [-1, 1) otherwise: the input range, 2, the network is built for). Returns ``(EquivarianceReport, ConstructionReport)``.

    The work is estimated first (score entries over every evaluation) and refused above ``budget``
    (default :data:`EQUIVARIANCE_BUDGET` of the dtype).
    """
    from expressivity.verify.equivariance import check_equivariance

    circuit = get_circuit(name)
    if dtype not in DTYPES:
        raise ExpressivityError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    _refuse_scale(circuit, scale)
    budget = EQUIVARIANCE_BUDGET[dtype] if budget is None else budget
    work = samples * (permutations + 1) * length * length
    if work > budget:
        raise ExpressivityError(f"{samples} samples x {permutations + 1} evaluations x L^2 = {length}^2 is about "
                                f"{work:.2g} attention scores (budget {budget:.0e} in {dtype}); use fewer --samples "
                                "or --permutations, or a shorter --length")
    net, report = circuit.make(length, scale if circuit.scaled else None, input_range=2.0, seed=seed)
    rng = np.random.default_rng(seed)
    if dtype == "exact":   # integers in [-8, 8] were outside the range 2 the network is built for: refused every time
        values = to_exact(rng.integers(-8, 9, size=(samples, length))) / 8
    else:
        values = rng.uniform(-1, 1, size=(samples, length))
    X = embed(net, values)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite outputs are reported in the result
        result = check_equivariance(net, X, permutations=permutations, seed=seed, dtype=dtype)
    return result, report
