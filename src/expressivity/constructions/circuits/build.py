"""The tutorial's hand-built circuits as constructions returning a :class:`Network` and a report.

Each circuit maps a sequence of scalars ``v_0 .. v_{L-1}`` (one per token) to a sequence of
outputs, through a network whose residual stream has a content dimension ``x`` (where the
scalar is embedded) plus the dimensions the circuit needs. :func:`embed` builds the network
input ``(batch, L, d)`` from values ``(batch, L)``.

Sharpness. Circuits that route by attention take a ``scale``: a finite number gives a softmax
network whose error shrinks as the scale grows; ``inf`` gives the hardmax limit, which is exact
and can be evaluated in exact arithmetic; ``"auto"`` picks the smallest scale whose proven error
bound is below ``tolerance`` for inputs whose range (max - min) is at most ``input_range``. The
bound uses the circuit's *margin*: the gap, per unit scale, between the score of the intended key
and every other key. With ``L`` keys and gap ``g``, the weight off the intended key is at most
``(L-1) e^{-g}``, so the output error is at most ``(L-1) e^{-g} * input_range``.

Circuits:

* ``attention``: the tutorial's single head over content + 0.1 x sinusoidal encoding, random
  weights from ``seed``; the target is the textbook formula evaluated by an independent loop.
* ``reverse``: ``y_i = v_{L-1-i}`` by an additive position bias of height ``scale`` at key
  ``j = L-1-i`` (the tutorial's construction).
* ``reverse-dot``: the same by dot-product attention over sinusoidal encodings: the query is the
  encoding of position ``L-1-i`` (a fixed rotation of the encoding of ``i``), so the score
  ``scale * sum_k cos(omega_k (L-1-i-j))`` peaks at ``j = L-1-i``.
* ``sum`` / ``mean``: a query-independent head attends uniformly (every position acts as the
  tutorial's CLS query); a feed-forward layer multiplies the mean by ``L`` for the sum.
* ``shift`` (by ``k``) / ``previous`` (``k = 1``): relative bias ``-scale * |i - j - k|``;
  ``y_i = v_{max(i-k, 0)}`` (positions with no token ``k`` back read the first token).
* ``max``: scores ``scale * v_j`` from a constant query; the error of the softmax version is at
  most ``(L-1) / (e * scale)`` for *any* input, since ``t e^{-scale t} <= 1/(e scale)``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from expressivity.constructions.report import ConstructionReport, Size
from expressivity.errors import ExpressivityError, require_int, require_number, require_type
from expressivity.network import AttentionLayer, FeedForwardLayer, Head, MatrixBias, Network, RelativeBias, ReLU
from expressivity.network.domain import Field, InputDomain
from expressivity.network.lengths import ValidLengths
from expressivity.network.positional import sinusoidal_encoding, sinusoidal_frequencies

MAX_LENGTH = 4096           # lengths above this are refused: attention is O(L^2) per head
DEFAULT_TOLERANCE = 1e-10   # absolute output error targeted by scale="auto"
PE_DIM = 16                 # sinusoidal encoding width of the reverse-dot circuit


# --------------------------------------------------------------------------------------------
# shared pieces
# --------------------------------------------------------------------------------------------


def embed(network: Network, values: np.ndarray) -> np.ndarray:
    """Network input with ``values`` in input dimension ``x``: ``(batch, L, d_in)`` for values ``(batch, L)``,
    ``(L, d_in)`` for values ``(L,)``. The input labels, not the residual stream's: a circuit whose residual
    stream was relabelled (which keeps its claim) had its values put in another input column (an audit,
    2026-11-29)."""
    require_type(network, Network, "embed's network", "pass the network a circuit builder returned")
    labels = network.input_labels
    if "x" not in labels:
        raise ExpressivityError(f"network {network.name!r} has no input dimension 'x' to put values in; embed takes "
                                "a circuit")
    if labels.count("x") > 1:   # embed wrote the first only (an audit, 2026-11-28)
        raise ExpressivityError(f"network {network.name!r} has {labels.count('x')} input dimensions named "
                                "'x'; embed cannot tell which takes the values: relabel them")
    if isinstance(values, (str, bytes, dict)) or values is None:
        raise ExpressivityError(f"values must be an array (L,) or (batch, L) of numbers, got {type(values).__name__}")
    try:
        values = np.asarray(values)
    except ValueError:
        raise ExpressivityError("values must be a rectangular array (L,) or (batch, L) of numbers") from None
    if values.ndim not in (1, 2) or values.shape[-1] < 1 or values.dtype.kind not in "biufO":
        raise ExpressivityError(f"values must be (L,) or (batch, L) numbers, got shape {values.shape} of {values.dtype}")
    single = values.ndim == 1
    values = values[None] if single else values
    # integers float64 cannot hold (2^53 + 1) stay Python ints: the exact pass answered for the rounded input
    # (a fuzz, 2026-11-29)
    exact_ints = values.dtype.kind in "iu" and bool(np.any(np.abs(values.astype(object)) > 2**53))
    if exact_ints:
        values = values.astype(object)
    X = np.zeros(values.shape + (network.d_in,), dtype=object if values.dtype == object else np.float64)
    X[..., labels.index("x")] = values
    return X[0] if single else X


def check_length(length: int) -> None:
    if not isinstance(length, (int, np.integer)) or isinstance(length, bool):
        raise ExpressivityError(f"length must be an integer, got {length!r}")
    if length < 1:
        raise ExpressivityError(f"length must be at least 1, got {length}")
    if length > MAX_LENGTH:
        raise ExpressivityError(
            f"length {length} is above the limit {MAX_LENGTH} (attention stores L^2 = {length**2:.3g} "
            f"scores per head); use a length <= {MAX_LENGTH}"
        )


def _no_scale(name: str, scale, why: str) -> None:
    """An unscaled circuit given a scale: refused, not ignored."""
    if scale is not None:
        raise ExpressivityError(f"circuit {name!r} takes no scale ({why}); drop it")


def _check_scale(scale) -> None:
    if isinstance(scale, str) and scale == "auto":
        return
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise ExpressivityError(f"scale must be a positive number, math.inf (hardmax) or 'auto', got {scale!r}")
    if isinstance(scale, int) and abs(scale) > 2 ** 1023:   # math.isnan(10**400) raised a bare OverflowError
        raise ExpressivityError("scale is beyond float64's range (about 1.8e308); give math.inf for hardmax")
    if math.isnan(scale):
        raise ExpressivityError(f"scale must be a positive number, math.inf (hardmax) or 'auto', got {scale!r}")
    if scale <= 0:
        raise ExpressivityError(f"scale must be positive, got {scale}; larger scales give sharper attention")


def _check_accuracy(input_range, tolerance) -> None:
    """The options every scaled circuit takes: a positive finite input range and tolerance."""
    require_number(input_range, "input_range (max - min of the values the bound covers)", positive=True)
    require_number(tolerance, "tolerance", positive=True)


def auto_scale(margin: float, length: int, input_range: float, tolerance: float) -> float:
    """Smallest scale with ``(L-1) exp(-scale * margin) * input_range <= tolerance`` (at least 1)."""
    if length <= 1 or input_range <= 0 or not math.isfinite(margin):
        return 1.0
    # in logarithms: (L-1) * 1e298 / 1e-10 overflows to inf, which read as hardmax where softmax was asked for
    scale = max(1.0, (math.log(length - 1) + math.log(input_range) - math.log(tolerance)) / margin)
    # the logarithms round: the scale they gave bounded the error by 1.0000000000000012e-10 where 1e-10 was asked
    # (an item earlier notes left open, 2026-11-29); a few ulps more make the bound the one asked for
    for _ in range(64):
        if gap_error_bound(scale, margin, length, input_range) <= tolerance:
            return scale
        scale = math.nextafter(scale, math.inf)
    # exp(-scale * margin) subnormal: an ulp of the scale no longer moves it (a review, 2026-11-29)
    raise ExpressivityError(f"no float64 scale keeps (L-1) exp(-scale * {margin:g}) * {input_range:g} within the "
                            f"tolerance {tolerance:g} for L = {length}; give a larger tolerance or a smaller input "
                            "range")


def gap_error_bound(scale: float, margin: float, length: int, input_range: float) -> float:
    """Bound on the output error of a one-intended-key head: ``(L-1) e^{-scale*margin} * range``."""
    if math.isinf(scale) or length <= 1:
        return 0.0
    return (length - 1) * math.exp(-scale * margin) * input_range


def circuit_domain(name: str, length: int, scale, *, input_range: float | None = None, margin: float | None = None,
                   tolerance: float | None = None, error_bound: float | None = None,
                   scores_scale_x: bool = False, score_size: float | None = None, score_terms: int = 1) -> InputDomain:
    """The inputs a circuit's claim covers: any values in ``x`` (other input dimensions 0), within a
    spread ``max - min <= input_range`` when the claim is a softmax error bound proven for that range.

    ``input_range=None``: the claim holds for any values (hardmax copies, uniform averages, the
    sharp max whose bound holds for every input, the textbook formula). ``scores_scale_x``: the scores are
    ``scale * x`` (the max), which must stay finite: the float limits are capped for it, and their rounding
    counted. ``score_size``: the largest ``|q . k|`` before the scale, a dot product of ``score_terms`` products
    of rounded weights (reverse-dot's), whose rounding ``scale * score_size * (3 terms + 8) eps`` is counted
    (:func:`float_limits`); position-bias scores are single stored numbers, whose rounding (a relative ``eps``
    of a bias far below the intended key's) is within the weights' ``(L + 4) eps``.
    """
    hard = scale is not None and math.isinf(scale)
    exact = hard or scale is None and name in ("mean", "sum")
    ranged = input_range is not None and not hard
    built_for = {} if scale is None else {"scale": float(scale) if not hard else "inf (hardmax)"}
    if margin is not None and not hard:
        built_for["score_gap_per_unit_scale"] = float(margin)
    if tolerance is not None and not hard:
        built_for |= {"tolerance": float(tolerance), "max_abs_error": error_bound}
    fix = (f"rebuild it for that range with expressivity circuit {name} --length {length} --input-range R (the scale is "
           "then chosen for R), or with --scale inf (hardmax: exact for any values)") if ranged else ""
    if not exact and error_bound is not None:
        fix += ("; " if fix else "") + ("values of larger magnitude need a larger --tolerance (float rounding grows with "
                                        "|x|), or --scale inf with --dtype exact")
    arithmetic = {}
    accuracy = max(error_bound or 0.0, tolerance or 0.0)   # a bound far below the tolerance asks no more of floats
    if not exact and error_bound is not None and length and 0 < accuracy < math.inf:
        # reverse-dot's scores: a dot product of score_terms products of rounded weights, then the scale
        gap_rounding = float(scale) * score_size * (3 * score_terms + 8) if score_size is not None and not hard else 0.0
        arithmetic = float_limits(accuracy, length, float(scale) if scores_scale_x and not hard else None,
                                  bound=error_bound or 0.0, score_gap_rounding=gap_rounding)
        built_for["float_rounding"] = ("within the tolerance (or max_abs_error where larger) again, for |x| up to the "
                                       "arithmetic's limit")
    elif hard and score_size is not None and margin is not None:
        # hardmax picks the largest score: a float whose score rounding (the dot products' of reverse-dot, as above)
        # reaches half the gap can pick another key. At L = 711, pe_dim 2 the gap is 1.8e-9, and float32 answered 355
        # at positions 0 and 710 for 710 and 0 (an audit, 2026-11-29)
        arithmetic = {"exact": None} | {dtype: None for dtype, eps in UNIT_ROUNDOFF.items()
                                         if 2 * score_size * (3 * score_terms + 8) * eps < margin}
    return InputDomain((Field.real(("x",), spread=input_range if ranged else None),), exact=exact,
                       built_for=built_for, fix=fix, arithmetic=arithmetic)


UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24}


FLOAT_MAX = {"float64": 1.7976931348623157e308, "float32": 3.4028234663852886e38}


def float_limits(accuracy: float, length: int, score_scale: float | None = None, *, bound: float = 0.0,
                 score_gap_rounding: float = 0.0) -> dict:
    """The largest ``|x|`` each float arithmetic carries a softmax circuit's claim to, ``{dtype: limit}``.

    The bound is proven in exact arithmetic; floats add rounding. A softmax head averages ``L``
    values with weights normalised by a sum of ``L`` exponentials: a first-order error analysis (ours,
    not the sources') puts its float result within ``(2L + 4) eps max|x|`` of the exact one (the weights
    carry relative error ``(L + 4) eps``, the weighted sum ``L eps`` more; the check's rounding allowance,
    ``8 eps L (1 + sum|v| + max|target|)``, is larger). Inside the limit that rounding is at most ``accuracy`` (the
    tolerance the scale was chosen for, or the proven bound where larger), so the float error is at
    most the bound plus that; a dtype whose limit would be below 1 (float32 for a tolerance of 1e-10)
    is left out: the claim does not hold in it, except for values too small to use. A float64 limit of
    0 when neither holds.

    The scores round too. Scores ``scale * x`` (``score_scale``: the max circuit's) round by at most
    ``delta = 3 eps scale |x|``; a key ``g`` below the largest then weighs at most ``e^{-scale g + 2 delta}``,
    and ``g min(1, e^{-scale g + 2 delta}) <= 1/(e scale) + 2 delta / scale``: the proven bound plus
    ``6 (L - 1) eps |x|``. Scores of a fixed gap (reverse-dot's dot products) round by at most
    ``delta = score_gap_rounding * eps`` (``score_gap_rounding``: the rounding in units of ``eps``), independent
    of ``x``, and the leak past the gap grows by ``e^{2 delta}``: the bound becomes ``bound e^{2 delta}``, and
    a dtype where ``bound (e^{2 delta} - 1)`` leaves nothing of ``accuracy`` is left out. Without that,
    reverse-dot at ``pe_dim`` 2 (scores near 6e9, rounded in float32 by about 400 against a gap of 11.5)
    claimed float32 and erred by 0.79 against a claimed 0.02 (an audit, 2026-11-29)."""
    limits = {}
    for dtype, eps in UNIT_ROUNDOFF.items():
        per_x = 2 * length + 4 + (6 * (length - 1) if score_scale else 0)
        leak = bound * math.expm1(min(2 * score_gap_rounding * eps, 700.0)) if score_gap_rounding and bound else 0.0
        limit = max(float(accuracy) - leak, 0.0) / (per_x * eps)
        # scores scale * x (the max circuit's) must stay finite, with room for the softmax's shift by the largest:
        # build_max(4, 1e308) claimed |x| up to 75,060 and overflowed at x = 2 (an audit, 2026-11-28)
        cap = FLOAT_MAX[dtype] / (2 * score_scale) if score_scale else FLOAT_MAX[dtype]
        limit = min(limit, cap, FLOAT_MAX[dtype])
        if limit >= 1:
            limits[dtype] = limit
    return limits or {"float64": 0.0}


def circuit_report(name: str, net: Network, claim: str, length: int, *, scale, margin: float | None, error_bound: float,
                   input_range: float, tolerance: float | None, notes: str, **constants) -> ConstructionReport:
    """The construction report of a circuit at build time: size, the proven error bound, the
    score margin it rests on, and the constants chosen (checks come from :func:`check_circuit`). A bound float64
    cannot hold is refused: a check against it cannot fail (max at scale 5e-324 answered 3.5 for 6, "ok", an
    audit, 2026-11-29)."""
    if not math.isfinite(error_bound):
        raise ExpressivityError(f"circuit {name}: at scale {scale:g} the proven error bound is beyond float64, so no check "
                                "against it could fail; give a larger --scale")
    layer = net.layers[0]
    normalization = layer.normalization if isinstance(layer, AttentionLayer) else "none"
    return ConstructionReport(
        construction=f"circuit {name}", claim=claim, size=Size.of(net),
        bounds={"max_abs_error": error_bound, "input_range": input_range},
        margins={} if margin is None else {"score_gap_per_unit_scale": margin},
        constants={"length": length, "scale": None if scale is None else float(scale),
                   "normalization": normalization, "tolerance": tolerance, **constants},
        notes=notes)


def _copy_head(d: int, src: int, dst: int, **kwargs) -> dict:
    """Value/output weights that copy residual dimension ``src`` into ``dst``."""
    W_V = np.zeros((d, 1))
    W_V[src, 0] = 1.0
    W_O = np.zeros((1, d))
    W_O[0, dst] = 1.0
    return {"W_V": W_V, "W_O": W_O, **kwargs}


def _readout(d: int, dim: int) -> np.ndarray:
    r = np.zeros((d, 1))
    r[dim, 0] = 1.0
    return r


def _routing_circuit(name: str, claim: str, length: int, scale, bias_fn, margin: float, input_range: float,
                     tolerance: float, notes: str) -> tuple[Network, ConstructionReport]:
    """A one-head network ``[x, out]`` whose routing is all in a position bias ``scale * bias_fn(i, j)``."""
    check_length(length)
    _check_scale(scale)
    _check_accuracy(input_range, tolerance)
    if scale == "auto":
        scale = auto_scale(margin, length, input_range, tolerance)
    hard = math.isinf(scale)
    unit = 1 if hard else scale
    bias = MatrixBias(np.array([[unit * bias_fn(i, j) for j in range(length)] for i in range(length)], dtype=float))
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), position_bias=bias, name="route", **_copy_head(2, 0, 1))
    layer = AttentionLayer((head,), normalization="hardmax" if hard else "softmax", name=name)
    bound = gap_error_bound(scale, margin, length, input_range)
    net = Network((layer,), labels=("x", "out"), readout=_readout(2, 1), output_labels=("y",), name=name,
                  valid_lengths=ValidLengths.of([length]),
                  input_domain=circuit_domain(name, length, scale, input_range=input_range, margin=margin,
                                              tolerance=tolerance, error_bound=bound))
    report = circuit_report(name, net, claim, length, scale=scale, margin=margin, error_bound=bound,
                            input_range=input_range, tolerance=tolerance, notes=notes)
    return net, report


# --------------------------------------------------------------------------------------------
# the circuits
# --------------------------------------------------------------------------------------------


SCALED_ARGS = """
    Args:
        length: ``L``, the number of tokens (1..4096); inputs are ``(L, 1)`` values (or
            ``(batch, L, 1)``), which :func:`embed` places in the residual layout ``x, out``.
        scale: the attention sharpness: a number > 0 (softmax), ``math.inf`` (hardmax: exact), or
            ``"auto"``, the smallest scale whose proven output error is at most ``tolerance``.
        input_range: the largest spread (max - min) of the input values the claim covers, which
            ``"auto"`` and the bound use.
        tolerance: the largest absolute output error ``"auto"`` aims for.

    Returns ``(network, report)``; the report holds the proven bound and margin, no check yet:
    :func:`~expressivity.constructions.circuits.check.run_circuit` (``expressivity circuit``) checks it.
    """


def _identified(builder):
    """``builder`` whose network records which circuit it is and the constants that build it again
    (``metadata["circuit"]``, ``["circuit_constants"]``) and that the values go in dimension ``x``
    (``["input_dims"]``): a folder saved from it is rebuilt and compared when read
    (:func:`expressivity.export.folders.rebuild_circuit`). Only ``circuit --out`` recorded them, so a circuit
    built and saved with the Python API, then edited, was read within its claim (an audit, 2026-11-28)."""
    @functools.wraps(builder)
    def build(*args, **kwargs):
        net, report = builder(*args, **kwargs)
        facts = report.as_dict()
        constants = {**facts["constants"], "input_range": (facts.get("bounds") or {}).get("input_range")}
        identity = {"circuit": report.construction.removeprefix("circuit "), "input_dims": ["x"],
                    "circuit_constants": constants}
        return replace(net, metadata={**net.metadata, **identity}), report
    return build


def _scaled_args(builder):
    """``builder``'s docstring followed by the arguments every scaled circuit takes (:data:`SCALED_ARGS`)."""
    builder.__doc__ = builder.__doc__.rstrip() + "\n" + SCALED_ARGS
    return builder


@_identified
@_scaled_args
def build_reverse(length: int, scale="auto", *, input_range: float = 1.0,
                  tolerance: float = DEFAULT_TOLERANCE) -> tuple[Network, ConstructionReport]:
    """Reversal by an additive bias ``scale`` at key ``L-1-i`` (0 elsewhere); margin 1 per unit scale.
    """
    return _routing_circuit("reverse", "y_i = v_(L-1-i)", length, scale, lambda i, j: float(j == length - 1 - i),
                            1.0, input_range, tolerance, "bias scale at key L-1-i, 0 elsewhere")


@_identified
@_scaled_args
def build_shift(length: int, scale="auto", *, shift: int = 1, input_range: float = 1.0,
                tolerance: float = DEFAULT_TOLERANCE) -> tuple[Network, ConstructionReport]:
    """``y_i = v_{max(i-k,0)}`` by relative bias ``-scale |i-j-k|``; margin 1 per unit scale.
    """
    shift = require_int(shift, "shift", lo=0)
    check_length(length)
    _check_scale(scale)
    _check_accuracy(input_range, tolerance)
    if scale == "auto":
        scale = auto_scale(1.0, length, input_range, tolerance)
    hard = math.isinf(scale)
    unit = 1 if hard else scale
    bias = RelativeBias.from_function(lambda o: -unit * abs(o - shift), max_offset=length - 1)
    head = Head(W_Q=np.zeros((2, 1)), W_K=np.zeros((2, 1)), position_bias=bias, name=f"shift{shift}",
                **_copy_head(2, 0, 1))
    layer = AttentionLayer((head,), normalization="hardmax" if hard else "softmax", name=f"shift by {shift}")
    bound = gap_error_bound(scale, 1.0, length, input_range)
    net = Network((layer,), labels=("x", "out"), readout=_readout(2, 1), output_labels=("y",), name=f"shift-{shift}",
                  valid_lengths=ValidLengths.range(1, length),
                  input_domain=circuit_domain("shift", length, scale, input_range=input_range, margin=1.0,
                                              tolerance=tolerance, error_bound=bound))
    report = circuit_report("shift", net, f"y_i = v_max(i-{shift},0)", length, scale=scale, margin=1.0,
                            error_bound=bound, input_range=input_range,
                            tolerance=tolerance, notes="relative bias -scale*|i-j-k|; the bias table covers offsets "
                            "up to L-1", shift=shift)
    return net, report


def reverse_dot_margin(length: int, pe_dim: int = PE_DIM) -> float:
    """Score gap per unit scale of ``reverse-dot``: ``P - max_{1<=D<L} sum_k cos(omega_k D)``.

    ``P`` is the number of frequency pairs. Positive for every length, because the fastest
    frequency is 1 rad/position and no nonzero integer is a multiple of ``2 pi``.
    """
    if length <= 1:
        return math.inf
    omega = sinusoidal_frequencies(pe_dim)[: pe_dim // 2]
    offsets = np.arange(1, length)
    similarity = np.cos(offsets[:, None] * omega[None, :]).sum(axis=1)
    return float(len(omega) - similarity.max())


@_identified
def build_reverse_dot(length: int, scale="auto", *, input_range: float = 1.0, tolerance: float = DEFAULT_TOLERANCE,
                      pe_dim: int = PE_DIM) -> tuple[Network, ConstructionReport]:
    """Reversal by dot-product attention over sinusoidal encodings (inverse temperature = scale).

    Residual: ``x``, ``pe[0..pe_dim-1]``, ``out``. The query maps ``PE(i)`` to ``PE(L-1-i)``: per
    frequency, ``(sin a_i, cos a_i) -> (sin(c - a_i), cos(c - a_i))`` with ``c = omega (L-1)``,
    a linear map. Keys are ``PE(j)``; the score is ``scale * sum_k cos(omega_k (L-1-i-j))``.
    """
    check_length(length)
    _check_scale(scale)
    _check_accuracy(input_range, tolerance)
    pe_dim = require_int(pe_dim, "pe_dim", lo=2)
    if pe_dim % 2:
        raise ExpressivityError(f"pe_dim must be an even number >= 2, got {pe_dim}")
    margin = reverse_dot_margin(length, pe_dim)
    if scale == "auto":
        scale = auto_scale(margin, length, input_range, tolerance)
    hard = math.isinf(scale)
    d = pe_dim + 2
    pe_slice = slice(1, 1 + pe_dim)
    E = np.zeros((length, d))
    E[:, pe_slice] = sinusoidal_encoding(length, pe_dim)
    W_Q = np.zeros((d, pe_dim))
    W_K = np.zeros((d, pe_dim))
    W_K[pe_slice, :] = np.eye(pe_dim)
    for k, omega in enumerate(sinusoidal_frequencies(pe_dim)[: pe_dim // 2]):
        c = omega * (length - 1)
        s_row, c_row = 1 + 2 * k, 2 + 2 * k     # residual rows holding sin(a), cos(a)
        # sin(c - a) = sin c cos a - cos c sin a ;  cos(c - a) = cos c cos a + sin c sin a
        W_Q[s_row, 2 * k], W_Q[c_row, 2 * k] = -math.cos(c), math.sin(c)
        W_Q[s_row, 2 * k + 1], W_Q[c_row, 2 * k + 1] = math.sin(c), math.cos(c)
    head = Head(W_Q=W_Q, W_K=W_K, name="reverse", **_copy_head(d, 0, d - 1))
    layer = AttentionLayer((head,), normalization="hardmax" if hard else "softmax",
                           inverse_temperature=1 if hard else scale, name="reverse by PE dot product")
    labels = ("x", *(f"pe[{k}]" for k in range(pe_dim)), "out")
    bound = gap_error_bound(scale, margin, length, input_range)
    net = Network((layer,), labels=labels, positional_encoding=E, readout=_readout(d, d - 1), output_labels=("y",),
                  name="reverse-dot", valid_lengths=ValidLengths.of([length]),
                  input_domain=circuit_domain("reverse-dot", length, scale, input_range=input_range, margin=margin,
                                              tolerance=tolerance, error_bound=bound,
                                              # |q . k| <= one per (sin, cos) pair: rotations of unit vectors
                                              score_size=pe_dim / 2, score_terms=pe_dim))
    report = circuit_report("reverse-dot", net, "y_i = v_(L-1-i)", length, scale=scale, margin=margin,
                            error_bound=bound, input_range=input_range,
                            tolerance=tolerance, notes=f"query = PE(L-1-i) by a rotation of PE(i); {pe_dim}-dim "
                            "sinusoidal encoding", pe_dim=pe_dim)
    return net, report


def _uniform_head(d: int) -> Head:
    return Head(W_Q=np.zeros((d, 1)), W_K=np.zeros((d, 1)), name="uniform", **_copy_head(d, 0, 1))


@_identified
def build_mean(length: int, scale=None) -> tuple[Network, ConstructionReport]:
    """Mean by uniform attention: all scores 0, so every key gets weight ``1/L`` (exact under hardmax).

    ``length``: ``L`` tokens (1..4096; mean takes any length); inputs are ``(L, 1)`` values placed
    by :func:`embed` in the residual ``x, out``; exact under hardmax. Returns ``(network, report)``
    with no check yet (``expressivity circuit`` runs one).
    """
    _no_scale("mean", scale, "it is exact by construction")
    check_length(length)
    layer = AttentionLayer((_uniform_head(2),), normalization="hardmax", name="uniform attention")
    net = Network((layer,), labels=("x", "out"), readout=_readout(2, 1), output_labels=("mean",), name="mean",
                  valid_lengths=ValidLengths.any(), input_domain=circuit_domain("mean", length, None))
    return net, circuit_report("mean", net, "y_i = mean_j v_j", length, scale=None, margin=None, error_bound=0.0,
                               input_range=math.inf, tolerance=None,
                               notes="constant query; all scores tie, so hardmax and softmax both average")


@_identified
def build_sum(length: int, scale=None) -> tuple[Network, ConstructionReport]:
    """Sum = ``L`` x mean: uniform attention, then ``out += (L-1)(ReLU(out) - ReLU(-out))``.

    ``length``: ``L`` tokens (1..4096; mean takes any length); inputs are ``(L, 1)`` values placed
    by :func:`embed` in the residual ``x, out``; exact under hardmax. Returns ``(network, report)``
    with no check yet (``expressivity circuit`` runs one).
    """
    _no_scale("sum", scale, "it is exact by construction")
    check_length(length)
    attn = AttentionLayer((_uniform_head(2),), normalization="hardmax", name="uniform attention")
    rescale = FeedForwardLayer(W_1=np.array([[0.0, 0.0], [1.0, -1.0]]), b_1=np.zeros(2),
                               W_2=np.array([[0.0, length - 1.0], [0.0, -(length - 1.0)]]), activation=ReLU(),
                               name=f"multiply out by {length}")
    net = Network((attn, rescale), labels=("x", "out"), readout=_readout(2, 1), output_labels=("sum",), name="sum",
                  valid_lengths=ValidLengths.of([length]), input_domain=circuit_domain("sum", length, None))
    return net, circuit_report("sum", net, "y_i = sum_j v_j", length, scale=None, margin=None, error_bound=0.0,
                               input_range=math.inf, tolerance=None,
                               notes="uniform attention then a ReLU pair rescaling by L")


@_identified
def build_max(length: int, scale="auto", *, tolerance: float = DEFAULT_TOLERANCE,
              input_range: float = 1.0) -> tuple[Network, ConstructionReport]:
    """Max by sharp attention: constant query ``b_Q = 1``, key ``v_j``, score ``scale * v_j``.

    Args:
        length: ``L``, the number of tokens (1..4096); inputs are ``(L, 1)`` values (or
            ``(batch, L, 1)``), which :func:`embed` places in the residual layout ``x, out``.
        scale: the attention sharpness: a number > 0 (softmax), ``math.inf`` (hardmax: exact), or
            ``"auto"``, the smallest scale whose proven output error is at most ``tolerance``.
        tolerance: the largest absolute output error ``"auto"`` aims for.
        input_range: validated, then not used: the bound ``(L - 1) / (e scale)`` holds for every input,
            so the claim covers any values (``report.bounds["input_range"]`` is ``inf``); it is taken so
            every circuit builder has one signature (``expressivity circuit max --input-range`` is refused).

    Returns ``(network, report)``; the report holds the proven bound, no check yet:
    :func:`~expressivity.constructions.circuits.check.run_circuit` (``expressivity circuit``) checks it.
    """
    check_length(length)
    _check_scale(scale)
    _check_accuracy(input_range, tolerance)
    if scale == "auto":
        scale = max(1.0, (length - 1) / (math.e * tolerance))
        if math.isinf(scale):   # (L-1)/(e tol) overflowed: read as hardmax where softmax was asked for (an audit,
            # 2026-11-29: --tolerance 1e-310 built hardmax silently)
            raise ExpressivityError(f"tolerance {tolerance:g} asks for a softmax scale (L-1)/(e tolerance) beyond float64; "
                                    "give a larger --tolerance, or --scale inf for hardmax (exact)")
    hard = math.isinf(scale)
    W_K = np.zeros((2, 1))
    W_K[0, 0] = 1.0
    head = Head(W_Q=np.zeros((2, 1)), W_K=W_K, b_Q=np.ones(1), name="argmax", **_copy_head(2, 0, 1))
    layer = AttentionLayer((head,), normalization="hardmax" if hard else "softmax",
                           inverse_temperature=1 if hard else scale, name="sharp max")
    # divided in turn: e * scale overflowed to inf for scale > 6.6e307 and the bound read 0 (a review, 2026-11-29)
    bound = 0.0 if hard else (length - 1) / math.e / scale
    net = Network((layer,), labels=("x", "out"), readout=_readout(2, 1), output_labels=("max",), name="max",
                  valid_lengths=ValidLengths.any() if hard else ValidLengths.range(1, length),
                  # the bound (L-1)/(e scale) holds for every input: no range to record
                  input_domain=circuit_domain("max", length, scale, tolerance=tolerance, error_bound=bound,
                                              scores_scale_x=True))
    return net, circuit_report("max", net, "y_i = max_j v_j", length, scale=scale, margin=None, error_bound=bound,
                               input_range=math.inf, tolerance=tolerance,
                               notes="error <= (L-1)/(e*scale) for any input: t*exp(-scale*t) <= 1/(e*scale)")


# The tutorial's first example: sizes and the positional amplitude it uses.
_ATTN_D_MODEL, _ATTN_D_K, _ATTN_D_V, _ATTN_PE_AMPLITUDE = 6, 4, 4, 0.1


def _attention_weights(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Wq = rng.normal(0.0, 0.2, size=(_ATTN_D_MODEL, _ATTN_D_K))
    Wk = rng.normal(0.0, 0.2, size=(_ATTN_D_MODEL, _ATTN_D_K))
    Wv = rng.normal(0.0, 0.2, size=(_ATTN_D_MODEL, _ATTN_D_V))
    return Wq, Wk, Wv


@_identified
def build_attention(length: int, scale=None, *, seed: int = 0) -> tuple[Network, ConstructionReport]:
    """The tutorial's single head: tokens ``v_i e_0 + 0.1 PE(i)``, scores ``q.k / sqrt(d_k)``.

    Residual: ``x`` (= model dim 0), ``h[1..5]``, ``out[0..3]``; the ``1/sqrt(d_k)`` is folded into ``W_Q``.
    """
    _no_scale("attention", scale, "its softmax has the tutorial's fixed sharpness")
    check_length(length)
    seed = require_int(seed, "seed", lo=0, hi=2**32 - 1)
    Wq, Wk, Wv = _attention_weights(seed)
    dm, dv = _ATTN_D_MODEL, _ATTN_D_V
    d = dm + dv
    pad = lambda W: np.vstack([W, np.zeros((dv, W.shape[1]))])  # noqa: E731 - rows of the out dims read nothing
    W_O = np.hstack([np.zeros((dv, dm)), np.eye(dv)])
    head = Head(W_Q=pad(Wq) / math.sqrt(_ATTN_D_K), W_K=pad(Wk), W_V=pad(Wv), W_O=W_O, name="tutorial head")
    E = np.zeros((length, d))
    E[:, :dm] = _ATTN_PE_AMPLITUDE * sinusoidal_encoding(length, dm)
    labels = ("x", *(f"h[{k}]" for k in range(1, dm)), *(f"out[{k}]" for k in range(dv)))
    readout = np.vstack([np.zeros((dm, dv)), np.eye(dv)])
    layer = AttentionLayer((head,), normalization="softmax", name="single head self-attention")
    net = Network((layer,), labels=labels, positional_encoding=E, readout=readout,
                  output_labels=tuple(f"z[{k}]" for k in range(dv)), name="attention",
                  valid_lengths=ValidLengths.of([length]), input_domain=circuit_domain("attention", length, None))
    return net, circuit_report("attention", net, "the textbook single-head attention formula", length, scale=None,
                               margin=None, error_bound=0.0, input_range=math.inf, tolerance=None,
                               notes=f"random weights N(0, 0.2^2) from seed {seed}; target = the textbook formula "
                               "by loops", seed=seed)


def target_attention(values: np.ndarray, *, seed: int = 0, **_) -> np.ndarray:
    """The tutorial's formula, computed token by token with explicit loops (independent of Network)."""
    values = np.asarray(values, dtype=np.float64)
    batch = values.reshape(-1, values.shape[-1])
    Wq, Wk, Wv = _attention_weights(seed)
    L = batch.shape[1]
    pe = sinusoidal_encoding(L, _ATTN_D_MODEL)
    out = np.zeros(batch.shape + (_ATTN_D_V,))
    for b, row in enumerate(batch):
        tokens = [np.eye(_ATTN_D_MODEL)[0] * row[i] + _ATTN_PE_AMPLITUDE * pe[i] for i in range(L)]
        Q = [t @ Wq for t in tokens]
        K = [t @ Wk for t in tokens]
        V = [t @ Wv for t in tokens]
        for i in range(L):
            logits = np.array([Q[i] @ K[j] / math.sqrt(_ATTN_D_K) for j in range(L)])
            w = np.exp(logits - logits.max())
            w /= w.sum()
            out[b, i] = sum(w[j] * V[j] for j in range(L))
    return out.reshape(values.shape + (_ATTN_D_V,))


def naive_softmax(scores: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Softmax without max subtraction, as a naive implementation writes it.

    In float32, ``exp`` overflows to ``inf`` above ~88.7, and ``inf / inf`` is ``nan``: the
    tutorial's warning about large logits. The evaluators never use this; it exists to show why.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(scores, dtype=dtype))
        return e / e.sum(axis=-1, keepdims=True)
