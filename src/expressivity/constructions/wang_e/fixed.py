"""Theorem 1 (fixed, long but sparse memories) as a network: one DP-free attention layer
extracts ``x_{t-T_1}, .., x_{t-T_M}``, an explicit ReLU readout computes ``f`` of them.

Stages (each a function; :func:`build_fixed_memory` reads as their list):

1. :func:`memory_heads`: ``H = T_M + 2`` heads with ``beta_k = k b`` (lin) or ``1 + k b`` (log),
   shared by every memory; memory ``i`` gets the interpolation coefficients that make the heads'
   kernel equal ``delta_{T_i}`` on lags ``0..H-1`` (:func:`.kernels.interpolation_heads`).
2. :func:`attention_layer`: the heads as one causal DP-free layer over an infinite zero-padded past
   (the theory's bi-infinite input with zeros before ``t = 0``); head ``h`` reads ``x`` and writes
   ``c_{h,i}`` into memory dimension ``m[T_i]``.
3. a readout from :mod:`.readouts` writing ``y``.
4. :func:`check_fixed_memory`: the measured sup error over random and adversarial sequences
   against the bound ``L max_i l1_i sup|x| + FFN error + float64 rounding``.

Tokens are scalars in ``[-1, 1]`` (rows ``(batch, n, 1)``); the target is
``y_t = f(x_{t-T_1}, .., x_{t-T_M})`` with ``x_s = 0`` for ``s < 0``. Float64 instantiation is
refused where the coefficients' rounding (about ``H max|c| 2^-51``) exceeds the kernel error
itself: the spec warns that they blow up (``e^{b (T+1)^2/2}``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate, Size
from expressivity.constructions.wang_e import arguments as args
from expressivity.constructions.wang_e.domains import signal_domain
from expressivity.constructions.wang_e.kernels import KernelFit, interpolation_heads
from expressivity.constructions.wang_e.readouts import (FUNCTIONS, READOUTS, Readout, grid_readout, grid_scratch_labels,
                                                        linear_readout, product_readout)
from expressivity.errors import ExpressivityError, require_int, require_number
from expressivity.network import AttentionLayer, Head, Network, SlopeBias
from expressivity.network.layers import FeedForwardLayer, head_count
from expressivity.network.reference import forward
from expressivity.network.lengths import ValidLengths


@dataclass(frozen=True)
class MemoryHeads:
    """Heads shared by all memories: ``betas[h]`` and ``coefficients[h, i]`` (head ``h`` into memory ``i``)."""

    rpe: str
    lags: tuple[int, ...]
    betas: tuple[float, ...]
    coefficients: np.ndarray
    fits: tuple[KernelFit, ...]

    @property
    def l1_errors(self) -> tuple[float, ...]:
        return tuple(f.l1_error for f in self.fits)

    @property
    def rounding(self) -> float:
        """Estimated float64 error of a memory: ``H`` terms of size up to ``max|c|``, each rounded."""
        return len(self.betas) * float(np.abs(self.coefficients).max()) * 2.0 ** -51


def _not_a_lag(value):
    raise ExpressivityError(f"lags must be distinct positive integers like (1, 3); got {value!r} among them")


def parse_lags(lags) -> tuple[int, ...]:
    """Distinct positive lags, sorted; one-line errors otherwise."""
    if isinstance(lags, str):
        try:
            lags = [int(v) for v in lags.split(",")]
        except ValueError:
            raise ExpressivityError(f"lags must be comma-separated positive integers like 1,3; got {lags!r}") from None
    if not hasattr(lags, "__iter__"):
        raise ExpressivityError(f"lags must be distinct positive integers like (1, 3); got {lags!r}")
    lags = tuple(sorted(int(v) if hasattr(v, "__index__") and not isinstance(v, bool) else _not_a_lag(v)
                        for v in lags))
    if not lags or lags[0] < 1 or len(set(lags)) != len(lags):
        raise ExpressivityError(f"lags must be distinct positive integers like 1,3; got {lags!r}")
    if lags[-1] > 60:
        raise ExpressivityError(f"lag {lags[-1]} needs {lags[-1] + 2} interpolation heads whose coefficients exceed "
                                "any float precision; use lags <= 60 (or the kernel-level Chebyshev construction)")
    return lags


def memory_heads(rpe: str, lags: tuple[int, ...], b: float, heads: int | None = None) -> MemoryHeads:
    """Stage 1: one head set for every memory, coefficients by exact interpolation (mpmath)."""
    H = lags[-1] + 2 if heads is None else heads
    fits = tuple(interpolation_heads(rpe, T, b, heads=H) for T in lags)
    if any(f.coefficients is None for f in fits):
        raise ExpressivityError(f"the interpolation coefficients for lags {lags} at b={b} exceed float64's range; "
                                "use a smaller b or smaller lags")
    return MemoryHeads(rpe, lags, fits[0].betas, np.array([f.coefficients for f in fits]).T, fits)


def attention_layer(mh: MemoryHeads, labels: tuple[str, ...]) -> AttentionLayer:
    """Stage 2: the DP-free heads reading ``x`` and writing into the memory dimensions."""
    d = len(labels)
    read_x = np.zeros((d, 1))
    read_x[labels.index("x"), 0] = 1.0
    heads = []
    for h, beta in enumerate(mh.betas):
        W_O = np.zeros((1, d))
        for i, T in enumerate(mh.lags):
            W_O[0, labels.index(f"m[{T}]")] = mh.coefficients[h, i]
        heads.append(Head.dp_free(read_x, W_O, SlopeBias(mh.rpe, float(beta)), name=f"beta={beta:g}"))
    return AttentionLayer(tuple(heads), causal=True, normaliser="infinite", name="extract memories")


def _readout(name: str, labels, memories, out, radius, width: int, grid: int):
    if name == "linear":
        layers, ro = linear_readout(labels, memories, out, radius)
        return layers, ro
    if name == "product":
        return product_readout(labels, memories, out, radius, width)
    layers, ro, _ = grid_readout(name, labels, memories, out, radius, grid, width)
    return layers, ro


def build_fixed_memory(lags, *, readout: str = "product", rpe: str = "lin", b: float = 2.0,
                       heads: int | None = None, width: int = 32, grid: int = 16) -> tuple[Network, ConstructionReport]:
    """The Theorem-1 network for ``lags`` with an explicit readout (see the module notes).

    ``width``: intervals per polarised square (the product readout, and each product of the grid
    readout); ``grid``: cells per side of the grid readout. Returns the network and a report whose
    checks are filled in by :func:`check_fixed_memory`.
    """
    t0 = time.perf_counter()
    lags = parse_lags(lags)
    width, grid = require_int(width, "width", 2, args.MAX_WIDTH), require_int(grid, "grid", 1, args.MAX_GRID)
    b = require_number(b, "b", positive=True)
    if heads is not None:
        heads = require_int(heads, "heads", 1, args.MAX_HEADS)
    if readout not in READOUTS:
        raise ExpressivityError(f"unknown readout {readout!r}; use one of {', '.join(READOUTS)}")
    if readout != "linear" and len(lags) != 2:
        raise ExpressivityError(f"readout {readout!r} takes two memories; give exactly two lags (e.g. --lags 1,3) "
                                "or use --readout linear")
    mh = memory_heads(rpe, lags, b, heads)
    l1 = max(mh.l1_errors)
    if mh.rounding > l1:
        raise ExpressivityError(
            f"float64 cannot carry these heads: coefficients up to {np.abs(mh.coefficients).max():.2g} round by about "
            f"{mh.rounding:.2g}, more than the kernel error {l1:.2g} they achieve; use a smaller b or smaller lags")
    scratch = grid_scratch_labels(grid) if readout in FUNCTIONS and readout != "product" else ()
    labels = ("x", *(f"m[{T}]" for T in lags), "y", *scratch)  # the grid readout's scratch dimensions come last
    memories = [labels.index(f"m[{T}]") for T in lags]
    radius = 1.0 + l1 + mh.rounding  # |x| <= 1, so every extracted memory lies within this
    ff_layers, ro = _readout(readout, labels, memories, labels.index("y"), radius, width, grid)
    embedding = np.zeros((1, len(labels)))
    embedding[0, 0] = 1.0
    readout_map = np.zeros((len(labels), 1))
    readout_map[labels.index("y"), 0] = 1.0
    net = Network((attention_layer(mh, labels), *ff_layers), labels, embedding=embedding, input_labels=("x",),
                  readout=readout_map, output_labels=("y",),
                  # causal heads over an infinite zero-padded past: position t's output is the same at every length
                  valid_lengths=ValidLengths.any(), input_domain=signal_domain("Theorem 1"),
                  name=f"Wang & E Theorem 1: {readout} of x[t-{', t-'.join(map(str, lags))}]")
    bound = ro.lipschitz * l1 + ro.ffn_error + ro.lipschitz * mh.rounding
    report = ConstructionReport(
        construction="wang-e fixed memories (Theorem 1)",
        claim=f"|TF_t(X) - f(x_(t-T))| <= L max_i l1_i sup|x| + FFN error for every sequence in [-1, 1]",
        size=Size.of(net, ffn_width=ro.width),
        errors=tuple(ErrorEstimate(f"kernel_l1[{T}]", f.l1_error, f.method + f" ({f.arithmetic})")
                     for T, f in zip(lags, mh.fits)),
        bounds={"sup_error": bound, "ffn_error": ro.ffn_error, "lipschitz": ro.lipschitz},
        margins={"float64_rounding_estimate": mh.rounding, "memory_radius": radius},
        constants={"lags": list(lags), "rpe": rpe, "b": b, "heads": len(mh.betas), "betas": list(mh.betas),
                   "readout": readout, "width": width, "grid": grid if scratch else None,
                   "max_abs_weight": float(np.abs(mh.coefficients).max()), "seconds": round(time.perf_counter() - t0, 3)},
        notes="heads by exact interpolation on lags 0..H-1 (mpmath); the readout's error bound is proven, "
              "the sup error is measured")
    return net, report


def target(readout: str, x: np.ndarray, lags: tuple[int, ...]) -> np.ndarray:
    """``y_t = f(x_{t-T_1}, ..)`` with a zero past; ``x`` ``(batch, n)`` -> ``(batch, n)``."""
    n = x.shape[1]
    padded = np.concatenate([np.zeros((x.shape[0], max(lags))), x], axis=1)
    mem = np.stack([padded[:, max(lags) - T: max(lags) - T + n] for T in lags], axis=-1)
    if readout == "linear":
        return mem.mean(-1)
    return FUNCTIONS[readout].fn(mem[..., 0], mem[..., 1])


def adversarial_sequences(net: Network, report: ConstructionReport, length: int) -> np.ndarray:
    """Per memory, the sign pattern of its kernel error read backwards from the last position: it
    makes that memory's error at the last position equal its l1 error (truncated at the sequence).
    Then the patterns of the memories' errors together: their sum (the linear readout's mean is the
    worst case for it exactly) and, with two memories, their difference (a readout that rises in one
    and falls in the other); one memory at a time missed a head moved by 0.0035, whose joint error
    0.00347 broke the bound 0.00344 (a fresh audit, 2026-11-28)."""
    lags = report.constants["lags"]
    layer = net.layers[0]
    s = np.arange(length)
    errors = []
    for T in lags:
        dim = net.labels.index(f"m[{T}]")
        rho = sum(h.W_O[0, dim] * _weights(h.position_bias, s) for h in layer.heads)
        errors.append(rho - (s == T))
    patterns = errors + [sum(errors)] + ([errors[0] - errors[1]] if len(errors) == 2 else [])
    rows = []
    for error in patterns:
        sign = np.sign(error)
        rows += [sign[::-1], -sign[::-1]]
    return np.array(rows)


def _weights(bias: SlopeBias, s: np.ndarray) -> np.ndarray:
    from expressivity.constructions.wang_e.kernels import head_weights

    return head_weights(bias.kind, float(bias.beta), s)


def check_fixed_memory(net: Network, report: ConstructionReport, length: int | None = None, samples: int = 256,
                       seed: int = 0, progress: bool = False) -> ConstructionReport:
    """Stage 4: the sup error over random (``U[-1, 1]``) and adversarial sequences, every position
    (``progress``: a bar on a terminal's stderr; at 4,096 tokens this takes minutes)."""
    from expressivity.progress import in_chunks

    t0 = time.perf_counter()
    c = args.construction(net, report, "wang-e fixed memories", "check_fixed_memory")
    lags, readout = tuple(c["lags"]), c["readout"]
    if length is not None and not isinstance(length, bool) and hasattr(length, "__index__") and \
            int(length) <= lags[-1]:   # a check shorter than the largest lag sees no memory at all
        raise ExpressivityError(f"the checked sequences must reach past the largest lag ({lags[-1]}): give a length "
                                f"of {lags[-1] + 1} to {args.MAX_CHECK_LENGTH}, got {length}")
    length = 4 * lags[-1] + 32 if length is None else require_int(length, "length", lags[-1] + 1, args.MAX_CHECK_LENGTH)
    samples, seed = require_int(samples, "samples", 1, args.MAX_SAMPLES), args.seed(seed)
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-1, 1, (samples, length)), adversarial_sequences(net, report, length)])
    # A few sequences at a time: every head holds (length x length) scores per sequence, and every feed-forward
    # layer (length x its width) hidden values: sized by the scores alone, the grid readouts' million units put
    # 261 sequences through at once and --grid 64 was killed out of memory with no message (an audit, 2026-11-29)
    heads = max(head_count(net.layers), 1)
    widest = max((np.shape(layer.W_1)[1] for layer in net.layers if isinstance(layer, FeedForwardLayer)), default=0)
    chunk = max(1, 2 ** 25 // (heads * length * length + 2 * length * widest))
    out = in_chunks(lambda rows: forward(net, rows[:, :, None])[..., 0], x, chunk,
                    f"checking {len(x)} sequences of {length} tokens", progress)
    errors = np.abs(out - target(readout, x, lags))
    bound = report.bounds["sup_error"]
    sup = float(errors.max())
    check = Check("sup error within L max l1 sup|x| + FFN error", points=int(errors.size),
                  failures=int(np.count_nonzero(errors > bound)), arithmetic="float64 (reference pass)",
                  seconds=time.perf_counter() - t0,
                  details={"sequences": len(x), "length": length, "adversarial": len(x) - samples, "bound": bound,
                           "seed": seed})
    sup_error = ErrorEstimate("sup_error", sup, f"max over {len(x)} sequences ({samples} U[-1, 1] from seed {seed}, "
                              f"{len(x) - samples} adversarial) x {length} positions, float64",
                              bound=bound)
    return report.with_results([check], [sup_error])
