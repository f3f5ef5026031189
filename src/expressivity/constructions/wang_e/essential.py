"""Task III (essentially sparse memories) as a network: one causal DP-free layer over an infinite
zero-padded past whose heads' kernel approximates the memory kernel ``rho`` of the
``kernel-memory`` task, ``y_t = sum_{s=0}^{t} rho(s) x_{t-s}`` (zero past).

With one head of the kernel's own family (log-type for ``rho ~ (1+s)^-(1+a)``, lin-type for
``rho ~ e^{-a s}``) the network is the target exactly; float64 evaluation is the only error
(checked to 1e-12). With ``H`` heads of the other family the coefficients come from
:func:`.kernels.kernel_fit`; the bound on the output error is ``l1 * sup|x|``, checked on random
and adversarial sequences (Gaussian inputs, as the task draws them, are unbounded: the check uses
``x`` in ``[-1, 1]`` so that the bound applies).
"""

from __future__ import annotations

import time

import numpy as np

from expressivity.constructions.wang_e import arguments as args
from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate, Size
from expressivity.constructions.wang_e.domains import signal_domain
from expressivity.constructions.wang_e.kernels import KernelFit, head_weights, kernel_fit, matched_head, target_kernel
from expressivity.errors import ExpressivityError, require_int, require_number
from expressivity.network import AttentionLayer, Head, Network, SlopeBias
from expressivity.network.layers import head_count
from expressivity.network.reference import forward
from expressivity.network.lengths import ValidLengths


def build_kernel_memory(kernel: str = "power", alpha: float = 0.5, rpe: str | None = None, heads: int = 1,
                        eps: float = 0.1) -> tuple[Network, ConstructionReport]:
    """The network for ``kernel`` with ``heads`` heads of type ``rpe`` (default: the matched one)."""
    t0 = time.perf_counter()
    heads, eps = require_int(heads, "heads", 1, args.MAX_HEADS), require_number(eps, "eps", positive=True)
    matched_rpe, _ = matched_head(kernel, alpha)
    rpe = matched_rpe if rpe is None else rpe
    fit = kernel_fit(rpe, kernel, alpha, heads, eps)
    if fit.coefficients is None:
        log10 = fit.extra.get("max_abs_coefficient_log10")
        size = f"about 10^{log10:.0f}" if isinstance(log10, (int, float)) else "too many digits to compute exactly"
        raise ExpressivityError(f"{heads} {rpe} heads need coefficients beyond float64 ({size}); "
                                "the fit is checked at kernel level only: use 'wang-e kernel' or fewer heads")
    rounding = heads * fit.max_abs_coefficient * 2.0 ** -51
    if rounding > max(fit.l1_error, 1e-12):
        raise ExpressivityError(f"float64 cannot carry {heads} {rpe} heads: coefficients up to "
                                f"{fit.max_abs_coefficient:.2g} round by about {rounding:.2g}, more than the kernel error "
                                f"{fit.l1_error:.2g}; use fewer heads or the kernel-level check ('wang-e kernel')")
    labels = ("x", "y")
    read_x, write_y = np.array([[1.0], [0.0]]), np.array([[0.0, 1.0]])
    layer = AttentionLayer(tuple(Head.dp_free(read_x, c * write_y, SlopeBias(rpe, beta), name=f"beta={beta:g}")
                                 for beta, c in zip(fit.betas, fit.coefficients)),
                           causal=True, normaliser="infinite", name=f"{rpe} heads for the {kernel} kernel")
    net = Network((layer,), labels, embedding=np.array([[1.0, 0.0]]), input_labels=("x",),
                  readout=np.array([[0.0], [1.0]]), output_labels=("y",),
                  # causal heads over an infinite zero-padded past: position t's output is the same at every length
                  valid_lengths=ValidLengths.any(), input_domain=signal_domain("Task III"),
                  name=f"Wang & E Task III: {kernel} kernel, alpha={alpha:g}, {heads} {rpe} head(s)")
    report = ConstructionReport(
        construction="wang-e essentially sparse memory (Task III)",
        claim="|TF_t(X) - sum_s rho(s) x_(t-s)| <= ||rho_hat - rho||_1 sup|x|",
        size=Size.of(net),
        errors=(ErrorEstimate("kernel_l1", fit.l1_error, f"{fit.method} ({fit.arithmetic})"),),
        bounds={"sup_error": fit.l1_bound() + rounding},
        margins={"float64_rounding_estimate": rounding},
        constants={"kernel": kernel, "alpha": alpha, "rpe": rpe, "heads": heads, "matched": fit.construction == "matched",
                   "betas": list(fit.betas), "max_abs_weight": fit.max_abs_coefficient, "eps": eps,
                   "seconds": round(time.perf_counter() - t0, 3)},
        notes="matched: one head of the kernel's family (exact); otherwise Chebyshev interpolation in u")
    return net, report


def kernel_target(kernel: str, alpha: float, x: np.ndarray) -> np.ndarray:
    """``y_t = sum_{s<=t} rho(s) x_{t-s}`` for ``x`` ``(batch, n)``, computed by a direct double loop in float64."""
    n = x.shape[1]
    rho = target_kernel(kernel, alpha, np.arange(n))
    return np.stack([x[:, : t + 1][:, ::-1] @ rho[: t + 1] for t in range(n)], axis=1)


def check_kernel_memory(net: Network, report: ConstructionReport, length: int = 256, samples: int = 64,
                        seed: int = 0, progress: bool = False) -> ConstructionReport:
    """The sup error on random (``U[-1, 1]``) and adversarial (sign of the kernel error) sequences (``progress``: a bar
    on a terminal's stderr; at 4,096 tokens with 8 heads this takes minutes, and said nothing: an audit, 2026-11-29)."""
    from expressivity.progress import in_chunks

    t0 = time.perf_counter()
    c = args.construction(net, report, "wang-e essentially sparse memory", "check_kernel_memory")
    length = require_int(length, "length", 1, args.MAX_CHECK_LENGTH)
    samples, seed = require_int(samples, "samples", 1, args.MAX_SAMPLES), args.seed(seed)
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (samples, length))
    s = np.arange(length)
    layer = net.layers[0]
    rho_hat = sum(h.W_O[0, 1] * head_weights(h.position_bias.kind, float(h.position_bias.beta), s) for h in layer.heads)
    sign = np.sign(rho_hat - target_kernel(c["kernel"], c["alpha"], s))
    x = np.concatenate([x, sign[None, ::-1], -sign[None, ::-1]])
    # a few sequences at a time: every head holds (length x length) scores per sequence (all 66 at once
    # took 24 GB at length 4096, a fresh fuzz, 2026-11-28)
    heads = max(head_count(net.layers), 1)
    chunk = max(1, 2 ** 25 // (heads * length * length))
    out = in_chunks(lambda rows: forward(net, rows[:, :, None])[..., 0], x, chunk,
                    f"checking {len(x)} sequences of {length} tokens", progress)
    errors = np.abs(out - kernel_target(c["kernel"], c["alpha"], x))
    bound = report.bounds["sup_error"] + 1e-12  # float64 evaluation of a convolution of length <= n
    check = Check("output = kernel memory within l1 sup|x|", int(errors.size), int(np.count_nonzero(errors > bound)),
                  "float64 (reference pass)", time.perf_counter() - t0, {"bound": bound, "length": length, "seed": seed})
    return report.with_results([check], [ErrorEstimate("sup_error", float(errors.max()),
                                                       f"max over {len(x)} sequences ({samples} U[-1, 1] from seed "
                                                       f"{seed}, 2 adversarial) x {length} positions, float64",
                                                       bound=bound)])


__all__ = ["KernelFit", "build_kernel_memory", "check_kernel_memory", "kernel_target"]
