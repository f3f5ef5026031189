"""The eight checkable claims of Wang & E (2024) (spec ``wang_e_2024.md`` §6), one command each:
``expressivity reproduce wang-e-N [--scale quick|medium|full]``.

Claims 1, 2 and 8 are numerics on the constructions (:mod:`expressivity.constructions.wang_e`);
claims 3-7 train small models on the experiment engine, with learning rates selected per
configuration and seed on **validation** data and test metrics reported per seed, compared with
paired per-seed differences where the arms share seeds (:mod:`expressivity.experiments.claims.kit`).
Claims 6 and 7 also build the DP-free network the comparison is about
(:mod:`expressivity.constructions.wang_e.dpfree`), so expressivity and trainability are told apart.

Every trained run evaluates validation loss ten times, so the regime check can tell whether it was
still falling over its last 20%; ``1 - R^2`` values that are exactly 0 (R^2 rounded to 1 in
float64) are floored at the resolution 2^-53, not dropped.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from expressivity.experiments.claims import Claim, ClaimContext, ClaimResult, Verdict, register
from expressivity.experiments.claims.kit import (combine, compare_paired, compare_rates, line_figure, numerics_regime,
                                                 seed_values, sweep_regime)
from expressivity.statistics import R2_RESOLUTION, Interval, floored_geometric_interval, interval, paired_difference

SEEDS = (0, 1, 2, 3, 4)

# ---- shared pieces ---------------------------------------------------------------------------------


def _sweep_configs(task: str, task_args: dict, cells: list[dict], steps: int, lrs, seeds, batch_size: int = 32):
    """One configuration per ``cells`` entry (model settings) x learning rate x seed; validation
    loss evaluated ten times per run (the regime check reads the last 20%)."""
    from expressivity.training import RunConfig

    out = []
    for model in cells:
        base = RunConfig.for_task(task, task_args, model=model, train={
            "steps": steps, "batch_size": batch_size, "eval_every": max(1, steps // 10), "eval_size": 256})
        out += [base.with_changes(seed=s, train={"lr": lr}) for lr in lrs for s in seeds]
    return out


def _r2(row: dict) -> float:
    return row["test_metric"]


def _error(row: dict) -> float:
    """``1 - R^2`` on the test split, at least 0 (an exact 1.0 gives 0, floored later)."""
    return max(0.0, 1.0 - row["test_metric"])


def error_cell(values: dict) -> Interval:
    """Geometric mean of ``1 - R^2`` over seeds with its 95% interval, exact zeros floored at 2^-53."""
    return floored_geometric_interval(values.values(), R2_RESOLUTION)[0]


def _log_errors(values: dict) -> dict:
    return {s: math.log10(max(v, R2_RESOLUTION)) for s, v in values.items()}


def _fmt(cell: Interval, digits: int = 3) -> str:
    return cell.fmt(digits)

# ---- claim 1: a delta from kernel sums, and the lin/log separation ------------------------------------

CLAIM1_LEVEL = 1e-2
CLAIM1_EPS = 0.2
CLAIM1_LAGS = (4, 8, 12, 16, 24, 32)
CLAIM1_BIC = 2.0  # |delta BIC| >= 2: positive evidence for one model (Kass & Raftery)


def _threshold(errors: list[float], grid: list[int], level: float) -> float | None:
    """First ``H`` where the l1 error falls below ``level``, interpolated log-log between grid points;
    ``None`` if it never does on the grid (censored: the threshold lies beyond the largest H)."""
    for (H1, e1), (H2, e2) in zip(zip(grid, errors), zip(grid[1:], errors[1:])):
        if e1 >= level > e2:
            return math.exp(math.log(H1) + (math.log(level) - math.log(e1)) * (math.log(H2) - math.log(H1))
                            / (math.log(e2) - math.log(e1)))
    return grid[0] if errors and errors[0] < level else None


def growth_bic(lags, thresholds) -> dict | None:
    """Fit ``ln H*`` by ``a + b T`` (exponential in T) and by ``a + b ln T`` (a power of T), least
    squares on the lags with a finite threshold; ``delta_bic = BIC(exponential) - BIC(power)`` (both
    have two parameters, so ``n ln(RSS_exp / RSS_pow)``): negative favours the exponential.
    ``None`` with fewer than three finite points."""
    pts = [(T, math.log(h)) for T, h in zip(lags, thresholds) if h is not None]
    if len(pts) < 3:
        return None
    T, y = np.array(pts, dtype=float).T

    def rss(x):
        coef = np.polyfit(x, y, 1)
        return float(np.sum((y - np.polyval(coef, x)) ** 2)), float(coef[0])

    rss_exp, slope_exp = rss(T)
    rss_pow, slope_pow = rss(np.log(T))
    tiny = 1e-300
    return {"delta_bic": len(pts) * math.log(max(rss_exp, tiny) / max(rss_pow, tiny)), "points": len(pts),
            "exp_rate_per_lag": slope_exp, "power_exponent": slope_pow, "rss_exp": rss_exp, "rss_pow": rss_pow}


def separation_verdict(lags, lin: list, log: list, h_max: int) -> Verdict:
    """Lin needs fewer heads than log at the smallest lag and more at the largest (``None`` = beyond
    ``h_max``). Reproduced if both; refuted if log needs fewer at the smallest lag and lin fewer at
    the largest (the crossing reversed); undecided if a needed threshold is censored on both sides."""
    def less(a, b):  # a < b, where None means "beyond h_max"; None if both are
        if a is None and b is None:
            return None
        if a is None or b is None:
            return b is None
        return a < b

    small = less(lin[0], log[0])
    large = less(log[-1], lin[-1])
    what = (f"H* at T = {lags[0]}: lin {_h(lin[0], h_max)}, log {_h(log[0], h_max)}; at T = {lags[-1]}: "
            f"lin {_h(lin[-1], h_max)}, log {_h(log[-1], h_max)}")
    if small is None or large is None:
        return Verdict("undecided", f"underpowered: {what}: both beyond H = {h_max}")
    if small and large:
        return Verdict("reproduced", f"the curves cross: {what}")
    if not small and not large:
        return Verdict("refuted", f"crossed the other way: {what}")
    return Verdict("not reproduced", f"no crossing in the scanned range: {what}")


def _h(v, h_max) -> str:
    return f"> {h_max}" if v is None else f"{v:.0f}"


def growth_verdict(rpe: str, fit: dict | None) -> Verdict:
    """Lin: the exponential must beat the power law by ``delta_bic <= -2``; log the reverse."""
    if fit is None:
        return Verdict("undecided", f"underpowered: {rpe}: fewer than three lags with a threshold on the grid")
    want_exp = rpe == "lin"
    d = fit["delta_bic"] if want_exp else -fit["delta_bic"]
    kind = "exponential in T" if want_exp else "a power of T"
    if d <= -CLAIM1_BIC:
        return Verdict("reproduced", f"{rpe}: ln H* fits {kind} better (delta BIC {fit['delta_bic']:+.1f})")
    if d >= CLAIM1_BIC:
        return Verdict("refuted", f"{rpe}: ln H* fits the other model better (delta BIC {fit['delta_bic']:+.1f})")
    return Verdict("undecided", f"underpowered: {rpe}: |delta BIC| {abs(fit['delta_bic']):.1f} < {CLAIM1_BIC:g}")


def claim1(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.kernels import chebyshev_kernel

    eps = CLAIM1_EPS
    lags = ctx.size("lags", CLAIM1_LAGS, CLAIM1_LAGS + (48,), CLAIM1_LAGS + (48,))
    top = ctx.size("max_heads", 8192, 16384, 16384)
    grid = [H for H in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384) if H <= top]
    rows, errors = [], {}
    for rpe in ("lin", "log"):
        for T in lags:
            errs = []
            for H in grid:
                fit = chebyshev_kernel(rpe, T, H, eps)
                errs.append(fit.l1_error)
                rows.append({"rpe": rpe, "lag": T, "heads": H, "eps": eps, "l1_error": fit.l1_error,
                             "max_abs_coefficient": fit.max_abs_coefficient})
            errors[rpe, T] = errs
    threshold = {key: _threshold(errs, grid, CLAIM1_LEVEL) for key, errs in errors.items()}
    lin = [threshold["lin", T] for T in lags]
    log = [threshold["log", T] for T in lags]
    fits = {rpe: growth_bic(lags, [threshold[rpe, T] for T in lags]) for rpe in ("lin", "log")}
    parts = {"separation": separation_verdict(lags, lin, log, grid[-1]),
             "lin exponential": growth_verdict("lin", fits["lin"]), "log power": growth_verdict("log", fits["log"])}
    verdict = combine(parts)
    crossover = next(T for T in range(1, 10_000) if eps * T > (1 + eps) * math.log(1 + T))
    fig = line_figure(ctx.out / "figure.png", {"lin-type": (list(lags), [v if v is not None else math.nan for v in lin]),
                                               "log-type": (list(lags), [v if v is not None else math.nan for v in log])},
                      "lag T", f"heads H* for l1 error < {CLAIM1_LEVEL:g}", f"Chebyshev construction, eps = {eps}: "
                      "lin-type needs heads exponential in T, log-type polynomial", logx=False,
                      vlines={f"A_lin = A_log at T = {crossover}": crossover})
    for row in rows:
        row["threshold_H"] = threshold[row["rpe"], row["lag"]]
    numbers = {"threshold_H": {f"{rpe},T={T}": threshold[rpe, T] for rpe in ("lin", "log") for T in lags},
               "growth_fits": fits, "predicted_crossover_T": crossover, "parts": {k: v.word for k, v in parts.items()},
               "grid": grid}
    reason = "; ".join(f"{k}: {v.reason}" for k, v in parts.items())
    return ClaimResult(verdict.word, verdict.reason if verdict.word == "undecided" else reason, rows, fig, numbers,
                       "kernel level (no network: the coefficients exceed float64 beyond H ~ 16); log-type heads weigh "
                       "(1+s)^-beta, one lag from the paper's s^-beta; the Chebyshev construction is the spec's "
                       "derivation [D] of the theorem's upper bound, so H* is an upper bound on the heads needed",
                       numerics_regime(ctx.scale, "kernel-level numerics in float64 (Chebyshev basis)"))


register(Claim(
    "wang-e-1", "Lin-type heads need exponentially many heads in the lag, log-type polynomially (Theorem 1)",
    "Wang & E 2024, Theorem 1; spec §6 claim 1",
    f"Heads beta_k = eps k (lin) or 1 + eps k (log), eps = {CLAIM1_EPS}, combined by the Chebyshev construction "
    f"into a delta at lag T in {{{', '.join(map(str, CLAIM1_LAGS))}}} (medium and full: also 48), H in powers of 2 "
    f"from 16 to 8192 (medium and full: 16384). H*(T) is the first H with l1 error < {CLAIM1_LEVEL:g} (interpolated log-log; beyond the "
    "grid if never). Reproduced if all three hold: (a) separation: lin needs fewer heads than log at the smallest T "
    "and more at the largest (the theorem's constants A_lin = e^{eps T}, A_log = T^{1+eps} cross at T = 18); (b) for "
    "lin, ln H* is fitted better by a + b T (exponential) than by a + b ln T (power law), delta BIC <= -2; (c) for "
    "log the reverse, delta BIC >= +2 in the power law's favour. Refuted if the crossing is reversed or a growth fit "
    "favours the other model by |delta BIC| >= 2; undecided (underpowered) when a threshold is censored on both "
    "sides or the BIC difference is under 2.",
    claim1, "about 6 CPU-minutes (log-type kernels dominate)", "as medium",
    trains=False, tag="[V]", medium="adds T = 48 and H = 16384 (the lin/log crossing extrapolated from quick lies "
                                    "near T = 40)",
    paper_claim="the number of DP-free heads needed to extract x_(t-T) to a given accuracy grows like e^{cT} for "
                "lin-type RPE and polynomially in T for log-type RPE (Theorem 1's constants A(T))"))


# ---- claim 2: matched kernels are exact, mismatched ones slow ----------------------------------------


def claim2(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.essential import build_kernel_memory, check_kernel_memory
    from expressivity.constructions.wang_e.kernels import kernel_fit

    cases = {"power": 0.5, "exp": 0.3}
    heads = [1, 2, 4, 8, 16, 32, 64] + ctx.size("more_heads", [], [128, 256], [128, 256])
    rows, curves = [], {}
    for kernel, alpha in cases.items():
        for rpe in ("log", "lin"):
            errs = []
            for H in heads:
                fit = kernel_fit(rpe, kernel, alpha, H)
                errs.append(fit.l1_error)
                rows.append({"kernel": kernel, "alpha": alpha, "rpe": rpe, "heads": H, "l1_error": fit.l1_error,
                             "construction": fit.construction})
            curves[kernel, rpe] = errs
    exact = {}
    for kernel, alpha in cases.items():
        net, rep = build_kernel_memory(kernel, alpha)
        rep = check_kernel_memory(net, rep, length=512)
        exact[kernel] = rep.error("sup_error").value
        rows.append({"kernel": kernel, "alpha": alpha, "rpe": rep.constants["rpe"], "heads": 1,
                     "network_sup_error_on_512_positions": exact[kernel], "construction": "matched network"})
    at16 = heads.index(16)
    matched_ok = exact["power"] < 1e-12 and exact["exp"] < 1e-12 and curves["power", "log"][0] < 1e-12 \
        and curves["exp", "lin"][0] < 1e-12
    heavy_slow = curves["power", "lin"][at16] > 1e-3
    light_slow = curves["exp", "log"][at16] > 1e-3
    verdict = "reproduced" if matched_ok and heavy_slow and light_slow else "not reproduced"
    last = len(heads) - 1
    reason = (f"matched heads: network sup error {exact['power']:.1e} (power, one log head) and {exact['exp']:.1e} "
              f"(exp, one lin head); mismatched at H=16: lin on the power tail {curves['power', 'lin'][at16]:.2g}, "
              f"log on the exp tail {curves['exp', 'log'][at16]:.2g}; at H={heads[last]}: "
              f"{curves['power', 'lin'][last]:.2g} and {curves['exp', 'log'][last]:.2g}")
    series = {f"{kernel} kernel, {rpe} heads": (heads, np.maximum(curves[kernel, rpe], 1e-17))
              for kernel in cases for rpe in ("log", "lin")}
    fig = line_figure(ctx.out / "figure.png", series, "heads H", "l1 error of the kernel fit",
                  "Task III: matched vs mismatched RPE families")
    return ClaimResult(verdict, reason, rows, fig,
                       {"matched_network_sup_error": exact, "mismatched_l1_at_16": {
                           "lin_on_power": curves["power", "lin"][at16], "log_on_exp": curves["exp", "log"][at16]},
                        "mismatched_l1_at_max_H": {"lin_on_power": curves["power", "lin"][last],
                                                   "log_on_exp": curves["exp", "log"][last]}},
                       "the two mismatches are not symmetric: log heads fit the light tail spectrally fast once "
                       "H passes ~16, lin heads fit the heavy tail only algebraically (the curse of memory)",
                       numerics_regime(ctx.scale, "exact kernels and float64 networks"))


register(Claim(
    "wang-e-2", "Matched RPE families realise Task III kernels exactly, mismatched ones slowly",
    "Wang & E 2024, Task III theorem; spec §6 claim 2",
    "One log head (beta = 1.5) realises rho(s) ~ (1+s)^-1.5 and one lin head (beta = 0.3) realises "
    "rho(s) ~ e^{-0.3 s} with output error below 1e-12 on 512 positions (zero past, |x| <= 1); the mismatched family "
    "needs many heads: its l1 error is still above 1e-3 with 16 heads, for both kernels. Reproduced if all hold.",
    claim2, "under a minute", "adds H = 128, 256", trains=False, tag="[V]", medium="adds H = 128, 256",
    paper_claim="a Task III memory with a power-law (exponential) kernel is realised by one log-type (lin-type) "
                "head; the mismatched RPE type needs many heads"))


# ---- claim 3: the learned kernel against the horizon (Table 8) -------------------------------------------

CLAIM3_LIN_HEADS = 4
CLAIM3_TOKENS_PER_STEP = 1024
CLAIM3_MIRROR_UP_TO = 256  # the [D] mirror cells are trained up to this horizon (cost)


def heavy_tail_configs(horizons, steps: int, lrs, seeds, eval_tokens: int = 16384):
    """1-layer, FFN-free, DP-free models with learnable slopes on ``kernel-memory`` (alpha = 0.5):
    on the power tail log-type with 1 head and lin-type with 1 and 4 heads; on the exponential tail
    (the spec's derived mirror, [D]) lin-type with 1 head and log-type with 4, up to N = 256.
    ``batch_size`` keeps 1,024 tokens a step (16 windows at N = 64, 4 at 256, 1 at 1024): the
    DP-free layer costs ``batch x heads x N^2``, which at N = 1024 with 8 heads and 8 windows took
    2 s a step on this CPU. Held-out sets have ``eval_tokens`` tokens (256 windows at N = 64, 16 at
    N = 1024: the trainer's activation budget refuses 256 windows of 1024)."""
    from expressivity.training import RunConfig

    cells = [("power", "log", 1), ("power", "lin", 1), ("power", "lin", CLAIM3_LIN_HEADS), ("exp", "lin", 1),
             ("exp", "log", CLAIM3_LIN_HEADS)]
    out = []
    for N in horizons:
        batch = max(1, CLAIM3_TOKENS_PER_STEP // N)
        for kernel, rpe, h in cells:
            if kernel == "exp" and N > CLAIM3_MIRROR_UP_TO:
                continue
            base = RunConfig.for_task(
                "kernel-memory", {"length": N, "kernel": kernel, "alpha": 0.5},
                model={"mixer": "dpfree", "rpe": rpe, "learnable_slopes": True, "heads": h, "d_model": 8,
                       "ffn_width": 0, "layers": 1},
                train={"steps": steps, "batch_size": batch, "eval_every": max(1, steps // 10),
                       "eval_size": max(16, eval_tokens // N)})
            out += [base.with_changes(seed=s, train={"lr": lr}) for lr in lrs for s in seeds]
    return out


def learned_kernel(run_dir) -> tuple[np.ndarray, np.ndarray]:
    """``(k_hat, rho)`` over lags ``0..N-1`` of a trained 1-layer kernel-memory model.

    The model is affine in its input (no norm, no FFN, DP-free mixing), so ``k_hat(s) = y_{N-1}(e_{N-1-s})
    - y_{N-1}(0)``: the response at the last position to a unit impulse ``s`` steps back, from one
    batch of ``N + 1`` inputs (float32 model, differences taken in float64)."""
    import torch

    from expressivity.training import load_trained

    model, task, config = load_trained(run_dir)
    n = task.length
    x = torch.zeros(n + 1, n, 1)
    x[torch.arange(n), n - 1 - torch.arange(n), 0] = 1.0
    model.eval()
    with torch.no_grad():
        y = model(x)[:, n - 1, 0].double()
    return (y[:n] - y[n]).numpy(), task.rho(torch.arange(n)).numpy()


def kernel_errors(folder, cell) -> dict:
    """``{cell label: {seed: l1 error of the learned kernel}}`` for the selected runs."""
    from expressivity.experiments.claims.kit import selected_records

    out: dict = {}
    for record, ok in selected_records(folder):
        if not ok:
            continue
        k_hat, rho = learned_kernel(folder / "runs" / record["id"])
        out.setdefault(cell(record["config"]), {})[record["config"]["seed"]] = float(np.abs(k_hat - rho).sum())
    return out


def _cell3(config: dict) -> tuple:
    return (config["task"]["args"]["length"], config["task"]["args"]["kernel"], config["model"]["rpe"],
            config["model"]["heads"])


def _decides3(config: dict) -> bool:
    """The arms claim 3's verdict compares: power tail, log-type 1 head and lin-type CLAIM3_LIN_HEADS heads."""
    _, kernel, rpe, heads = _cell3(config)
    return kernel == "power" and (rpe, heads) in (("log", 1), ("lin", CLAIM3_LIN_HEADS))


def claim3(ctx: ClaimContext) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    horizons = ctx.size("horizons", (64, 256), (64, 256, 1024), (64, 256, 1024))
    configs = heavy_tail_configs(horizons, ctx.size("steps", 1000, 1500, 20000),
                                 # 0.3 on top: the medium run of 2026-11-23 on {0.01, 0.03, 0.1} chose 0.1 for
                                 # every seed of both compared arms (an unbracketed selection)
                                 ctx.size("lrs", (1e-2, 3e-2, 1e-1, 3e-1), (1e-2, 3e-2, 1e-1, 3e-1),
                                          (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)),
                                 ctx.size("seeds", (0, 1, 2), SEEDS, SEEDS))
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-3"))
    l1 = kernel_errors(folder, _cell3)
    r2_err, failed = seed_values(folder, _cell3, _error)
    H = CLAIM3_LIN_HEADS
    rows = []
    for key in sorted(set(l1) | set(r2_err)):
        N, kernel, rpe, h = key
        k, e = l1.get(key, {}), r2_err.get(key, {})
        cell_l1, cell_r2 = error_cell(k) if k else interval([]), error_cell(e) if e else interval([])
        rows.append({"horizon_N": N, "kernel": kernel, "tag": "[V]" if kernel == "power" else "[D] mirror",
                     "rpe": rpe, "heads": h, "kernel_l1": cell_l1.value, "l1_ci_low": cell_l1.low,
                     "l1_ci_high": cell_l1.high, "one_minus_r2_test": cell_r2.value, "r2_ci_low": cell_r2.low,
                     "r2_ci_high": cell_r2.high, "seeds": cell_l1.n, "failed": failed.get(key, 0)})
    log_l1 = {key: _log_errors(v) for key, v in l1.items()}
    parts = {}
    for N in horizons:
        diff = paired_difference(log_l1.get((N, "power", "log", 1), {}), log_l1.get((N, "power", "lin", H), {}))
        parts[f"N={N}: log 1 head below lin {H} heads"] = compare_paired(diff, f"log10 l1, N = {N}")
    grow = paired_difference(log_l1.get((horizons[0], "power", "lin", H), {}),
                             log_l1.get((horizons[-1], "power", "lin", H), {}))
    parts[f"lin {H} heads worse at N={horizons[-1]} than at N={horizons[0]}"] = compare_paired(
        grow, f"log10 l1 of lin at N = {horizons[0]} minus N = {horizons[-1]}")
    verdict = combine(parts)
    mirror = {}
    for N in (N for N in horizons if N <= CLAIM3_MIRROR_UP_TO):
        diff = paired_difference(log_l1.get((N, "exp", "lin", 1), {}), log_l1.get((N, "exp", "log", H), {}))
        mirror[f"N={N}"] = compare_paired(diff, f"[D] light tail, lin 1 head vs log {H} heads, log10 l1, N = {N}").word
    series, bands = {}, {}
    for kernel, rpe, h in (("power", "log", 1), ("power", "lin", 1), ("power", "lin", H), ("exp", "lin", 1),
                           ("exp", "log", H)):
        cells = [error_cell(l1[N, kernel, rpe, h]) if l1.get((N, kernel, rpe, h)) else interval([]) for N in horizons]
        label = f"{kernel} tail{' [D]' if kernel == 'exp' else ''}, {rpe}, H={h}"
        series[label] = (list(horizons), [c.value for c in cells])
        bands[label] = ([c.low for c in cells], [c.high for c in cells])
    fig = line_figure(ctx.out / "figure.png", series, "horizon N (training length)",
                      "l1 error of the learned kernel (geometric mean, 95% CI)",
                      "kernel-memory: learned kernel vs rho over the horizon", bands=bands)
    regime = sweep_regime(folder, ctx.scale, cells=_decides3,
                          notes="fresh samples every step (no epochs); a fixed step budget with the plateau checked "
                                "afterwards (the trainer has no stop-on-plateau)")
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "light_tail_mirror_[D]": mirror,
               "paired_log10_l1": {k: v.reason for k, v in parts.items()}}
    return ClaimResult(verdict, "; ".join(v.reason for v in parts.values()), rows, fig, numbers,
                       "l1 over lags 0..N-1 of the learned kernel (impulse responses of the trained, affine model) "
                       "against rho; the R^2 columns are the squared-error view, which hides a heavy tail's "
                       "far lags. The light-tail rows are the spec's derived mirror [D], reported beside the verdict, "
                       "not in it.", regime, decides=_decides3)


register(Claim(
    "wang-e-3", "Log-type RPE learns a heavy-tailed memory kernel at every horizon; lin-type does not (Table 8)",
    "Wang & E 2024, Table 8; spec §6 claim 3",
    "1-layer, FFN-free, DP-free models with a learnable slope per head on y_t = sum_s rho(s) x_(t-s), "
    "rho ~ (1+s)^-1.5 (power tail), x ~ N(0,1), trained at horizon (length) N in {64, 256} (medium and full: also "
    "1024), 1,024 tokens a step; log-type with 1 head, lin-type with 1 and 4 heads; learning rate selected "
    "per configuration and seed on validation loss (quick: 1000 steps, 3 seeds, lr in {0.01, 0.03, 0.1, 0.3}; medium: "
    "1500 steps, 5 seeds, the same learning rates; full: 20000 steps, 6 learning rates). The measure is the l1 "
    "error of the learned kernel "
    "over lags 0..N-1 (impulse responses), compared by paired per-seed differences of log10 l1 (exact zeros "
    "floored). Reproduced if (a) at every N log-type with 1 head is below lin-type with 4 heads (paired 95% interval "
    "below 0) and (b) lin-type with 4 heads is worse at the largest N than at the smallest (paired). Refuted if "
    "either holds the other way round. The regime check (validation loss flat over the last 20% of training) and "
    "the rule that a learning rate on its grid's edge for most seeds leaves the verdict undecided apply to the two "
    "compared arms (power tail: log 1 head, lin 4 heads). The light-tail mirror (rho ~ e^{-0.5 s}: lin 1 head vs "
    "log 4 heads, N <= 256) is the spec's "
    "derivation [D] and is reported separately, outside the verdict.",
    claim3, "about 13 CPU-minutes (estimated, not measured)", "20000 steps, 6 learning rates: sized for a GPU",
    tag="[R]", medium="horizons 64, 256, 1024; 1500 steps; 5 seeds; 4 learning rates: about 2 CPU-hours",
    paper_claim="with log-type RPE a single head captures a heavy-tailed (power-law) memory, while lin-type RPE "
                "needs many heads and still misses the tail (Table 8)"))


# ---- claim 8: the explicit Theorem-1 network ---------------------------------------------------------


def claim8(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.fixed import build_fixed_memory, check_fixed_memory

    bs = (1.0, 1.5, 2.0, 2.5)
    widths = ctx.size("widths", (4, 8, 16, 32), (4, 8, 16, 32, 64, 128), (4, 8, 16, 32, 64, 128))
    rows, sup = [], {}
    within = True
    for b in bs:
        for m in widths:
            net, rep = build_fixed_memory((1, 3), readout="product", rpe="lin", b=b, width=m)
            rep = check_fixed_memory(net, rep, samples=ctx.size("samples", 64, 512, 512))
            e = rep.error("sup_error")
            sup[b, m] = e.value
            within &= rep.ok
            rows.append({"b": b, "intervals_per_square": m, "ffn_width": rep.size.extra["ffn_width"],
                         "heads": rep.size.heads, "sup_error": e.value, "bound": e.bound,
                         "kernel_l1": max(x.value for x in rep.errors if x.name.startswith("kernel_l1")),
                         "ffn_error_bound": rep.bounds["ffn_error"], "max_abs_weight": rep.constants["max_abs_weight"],
                         "within_bound": rep.ok})
    falls_b = all(sup[b2, widths[-1]] < sup[b1, widths[-1]] for b1, b2 in zip(bs, bs[1:]))
    falls_m = all(sup[bs[-1], m2] < sup[bs[-1], m1] for m1, m2 in zip(widths, widths[1:]))
    verdict = "reproduced" if within and falls_b and falls_m else "not reproduced"
    series = {f"m = {m}": (list(bs), [sup[b, m] for b in bs]) for m in widths}
    fig = line_figure(ctx.out / "figure.png", series, "b (head spacing beta_k = k b)", "measured sup error",
                  "Theorem-1 network, lags (1, 3), 5 lin heads, product readout", logx=False)
    reason = (f"every (b, m) within its bound: {within}; sup error falls with b at m={widths[-1]}: {falls_b} "
              f"({', '.join(f'{sup[b, widths[-1]]:.2g}' for b in bs)}); with m at b={bs[-1]}: {falls_m} "
              f"({', '.join(f'{sup[bs[-1], m]:.2g}' for m in widths)})")
    return ClaimResult(verdict, reason, rows, fig, {"within_bound": within, "falls_with_b": falls_b,
                                                     "falls_with_width": falls_m},
                       "b = 3 and above are refused in float64 (coefficients beyond 1e11 round by more than the kernel "
                       "error); the bound is ||f||_Lip max l1 sup|x| + FFN error + rounding",
                       numerics_regime(ctx.scale, "float64 networks, errors measured on random and adversarial inputs"))


register(Claim(
    "wang-e-8", "The explicit Theorem-1 construction, built literally",
    "Wang & E 2024, Theorem 1; spec §6 claim 8",
    "The network for M = 2, T = (1, 3): 5 lin heads beta_k = k b shared by both memories, float64, and a ReLU "
    "readout of f(a, b) = a b by polarisation with piecewise-linear squares of m intervals. Reproduced if for every "
    "b in {1, 1.5, 2, 2.5} and m the measured sup error over random and adversarial sequences is within "
    "||f||_Lip * l1 + FFN error, and it falls as b grows (largest m) and as m grows (largest b).",
    claim8, "under a minute", "more widths and 512 random sequences per point", trains=False, tag="[V]",
    medium="more widths and 512 random sequences per point",
    paper_claim="Theorem 1's construction: DP-free heads extract fixed memories and an FFN reads them out, with "
                "error bounded by the kernel error and the FFN's approximation error"))


# ---- claims 4 and 5: what FFN width and heads buy (Tables 4 and 5) ------------------------------------


def role_verdict(agg: dict, matters: list, flat: list, key) -> tuple[str, dict]:
    """Does the loss fall along the ``matters`` axis and stay flat along the ``flat`` axis?

    ``agg[key(a, b)]`` is an :class:`~expressivity.statistics.Interval` of a loss for ``a`` in
    ``matters`` and ``b`` in ``flat`` (both ascending). Falls: at every ``b``, the loss at the largest
    ``a`` is below the loss at the smallest with disjoint 95% intervals. Effect sizes in natural-log
    units: ``effect_matters`` is the smallest such drop over ``b``; ``change_flat`` the largest
    change, either sign, between the smallest and largest ``b`` at any ``a``. ``reproduced`` if it
    falls and ``change_flat <= effect_matters / 2``; ``refuted`` if the mirror image holds; ``not
    reproduced`` if it falls but the other axis matters as much (decided, not the claimed pattern);
    ``undecided`` (underpowered) if neither axis falls with disjoint intervals.
    """
    def drops(axis_lo, axis_hi, others, k):
        out = []
        for o in others:
            lo, hi = agg[k(axis_lo, o)], agg[k(axis_hi, o)]
            out.append((hi.below(lo), math.log(lo.value / hi.value)))
        return out

    a_lo, a_hi, b_lo, b_hi = matters[0], matters[-1], flat[0], flat[-1]
    along_a = drops(a_lo, a_hi, flat, key)                                  # per b
    along_b = drops(b_lo, b_hi, matters, lambda b, a: key(a, b))            # per a
    falls_a, falls_b = all(ok for ok, _ in along_a), all(ok for ok, _ in along_b)
    effect_a, effect_b = min(d for _, d in along_a), min(d for _, d in along_b)
    change_a, change_b = max(abs(d) for _, d in along_a), max(abs(d) for _, d in along_b)
    if falls_a and change_b <= effect_a / 2:
        verdict = "reproduced"
    elif falls_b and change_a <= effect_b / 2:
        verdict = "refuted"
    elif falls_a or falls_b:
        verdict = "not reproduced"
    else:
        verdict = "undecided"
    return verdict, {"falls_along_matters": falls_a, "effect_matters_ln": effect_a, "change_flat_ln": change_b,
                     "falls_along_flat": falls_b, "effect_flat_ln": effect_b, "change_matters_ln": change_a}


def _role_result(verdict: str, detail: str) -> Verdict:
    return Verdict(verdict, f"underpowered: {detail}" if verdict == "undecided" else detail)


def _error_table(folder, label) -> tuple[dict, dict]:
    """``({cell: Interval of 1 - R^2}, {cell: failed runs})`` after selection on validation."""
    values, failed = seed_values(folder, label, _error)
    return {k: error_cell(v) if v else interval([]) for k, v in values.items()}, failed


def _grid_figure(path, agg, outer, outer_label, inner, inner_label, key, title, ylabel="test 1 - R^2 (geometric mean, 95% CI)"):
    series, bands = {}, {}
    for o in outer:
        label = f"{outer_label} = {o}"
        vals = [agg[key(o, i)] for i in inner]
        series[label] = (list(inner), [v.value for v in vals])
        bands[label] = ([v.low for v in vals], [v.high for v in vals])
    return line_figure(path, series, inner_label, ylabel, title, logx=True, logy=True, bands=bands)


CLAIM4_TASK = {"length": 16, "lags": "2,5", "readout": "sin-product-diff"}


def claim4(ctx: ClaimContext) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    widths = ctx.size("widths", (4, 32, 128), (4, 16, 64, 256), (4, 16, 64, 256))
    heads = ctx.size("heads", (2, 8), (2, 4, 8, 16), (2, 4, 8, 16))
    cells = [{"mixer": "dpfree", "rpe": "free", "heads": h, "d_model": 16, "ffn_width": m, "layers": 1}
             for m in widths for h in heads]
    configs = _sweep_configs("fixed-memory", CLAIM4_TASK, cells, ctx.size("steps", 1500, 2000, 4000),
                             ctx.size("lrs", (1e-3, 3e-3, 1e-2, 3e-2, 1e-1), (1e-3, 3e-3, 1e-2, 3e-2),
                                      (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)), ctx.size("seeds", SEEDS, SEEDS, SEEDS))
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-4"))
    agg, failed = _error_table(folder, lambda c: (c["model"]["ffn_width"], c["model"]["heads"]))
    rows = [{"ffn_width": m, "heads": h, "one_minus_r2_test": v.value, "ci_low": v.low, "ci_high": v.high,
             "seeds": v.n, "failed": failed.get((m, h), 0)} for (m, h), v in sorted(agg.items())]
    word, numbers = role_verdict(agg, list(widths), list(heads), lambda m, h: (m, h))
    fig = _grid_figure(ctx.out / "figure.png", agg, heads, "H", widths, "FFN width m", lambda h, m: (m, h),
                       "fixed memory, lags (2, 5), sin(4 pi x1 x2) + (x1 - x2)/2: width vs heads")
    lo, hi = widths[0], widths[-1]
    reason = (f"1 - R^2 from m={lo} to m={hi}: " + ", ".join(f"H={h}: {agg[lo, h].value:.3g} -> {agg[hi, h].value:.3g}"
                                                             for h in heads)
              + f"; falls with m (disjoint CIs at every H): {numbers['falls_along_matters']}; smallest ln drop with m "
              f"{numbers['effect_matters_ln']:.2f}, largest ln change from H={heads[0]} to H={heads[-1]} "
              f"{numbers['change_flat_ln']:.2f}")
    return ClaimResult(_role_result(word, reason), reason, rows, fig, numbers,
                       "readout sin(4 pi x1 x2) + (x1 - x2)/2, not the spec's bare sin(4 pi x1 x2): with the bare "
                       "readout no low-degree part tells gradient descent where the two lags are, and every model "
                       "stays at R^2 ~ 0 (see tasks/memory.py)", sweep_regime(folder, ctx.scale))


register(Claim(
    "wang-e-4", "FFN width, not heads, buys a complex readout of simple memories (Table 4, insight 2a)",
    "Wang & E 2024, Table 4; spec §6 claim 4",
    "1-layer DP-free models with a learned per-offset (T5-style, 'free') position bias, d_model 16, on fixed memory "
    "y_t = sin(4 pi x_(t-2) x_(t-5)) + (x_(t-2) - x_(t-5))/2, x ~ U[-1,1], length 16; FFN width m in {4, 16, 64, 256} "
    "and heads H in {2, 4, 8, 16} (quick: m in {4, 32, 128}, H in {2, 8}, 1500 steps, 5 learning rates; medium: the "
    "full grid at 2000 steps and 4 learning rates; full: 4000 steps, 6 learning rates); learning rate selected per "
    "configuration and seed on validation; test 1 - R^2, geometric mean over 5 seeds with 95% CIs (exact zeros "
    "floored at 2^-53). Reproduced if (a) at every H the loss at the largest m is below the loss at the smallest m "
    "with disjoint intervals, and (b) it is flat in H: the largest |ln| change between the smallest and largest H "
    "(at any m) is at most half the smallest ln drop of (a). Refuted if the mirror image holds. Not reproduced if "
    "one axis falls but the pattern fails; undecided (underpowered) if neither falls decisively.",
    claim4, "2 minutes on 2 cores (1.8 CPU-minutes)", "4 x 4 grid, 4000 steps, 6 learning rates: estimated (not run) "
    "45 minutes on 2 CPU cores", tag="[R]", medium="4 x 4 grid, 2000 steps, 4 learning rates",
    paper_claim="a complex readout of a few memories needs FFN width, not more heads (Table 4, insight 2a)"))


CLAIM5_TASK = {"length": 32, "lags": "1,2,3,4,5,6,7,8", "readout": "linear"}


def claim5(ctx: ClaimContext) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    widths = ctx.size("widths", (8, 128), (8, 32, 128), (8, 32, 128))
    heads = ctx.size("heads", (1, 4, 16), (1, 2, 4, 8, 16), (1, 2, 4, 8, 16))
    rpes = ctx.size("rpes", ("lin", "log"), ("lin", "log"), ("lin", "log"))
    cells = [{"mixer": "dpfree", "rpe": r, "learnable_slopes": True, "dpfree_normaliser": "infinite", "heads": h,
              "d_model": 16, "d_head": 2, "ffn_width": m, "layers": 1} for r in rpes for m in widths for h in heads]
    configs = _sweep_configs("fixed-memory", CLAIM5_TASK, cells, ctx.size("steps", 1200, 2500, 4000),
                             # quick has medium's grid: with {0.01, ..., 0.3} every 1-head model chose
                             # 0.01, the grid's edge (an unbracketed selection, so an undecided verdict)
                             ctx.size("lrs", (3e-3, 1e-2, 3e-2, 1e-1, 3e-1), (3e-3, 1e-2, 3e-2, 1e-1, 3e-1),
                                      (1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)),
                             ctx.size("seeds", (0, 1, 2), SEEDS, SEEDS))
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-5"))
    agg, failed = _error_table(folder, lambda c: (c["model"]["rpe"], c["model"]["heads"], c["model"]["ffn_width"]))
    rows = [{"rpe": r, "heads": h, "ffn_width": m, "one_minus_r2_test": v.value, "ci_low": v.low, "ci_high": v.high,
             "seeds": v.n, "failed": failed.get((r, h, m), 0)} for (r, h, m), v in sorted(agg.items())]
    verdicts, numbers = {}, {}
    for r in rpes:
        word, numbers[r] = role_verdict(agg, list(heads), list(widths), lambda h, m, r=r: (r, h, m))
        verdicts[r] = _role_result(word, f"{r}: falls with H {numbers[r]['falls_along_matters']}, smallest ln drop "
                                         f"{numbers[r]['effect_matters_ln']:.2f}, largest ln change with m "
                                         f"{numbers[r]['change_flat_ln']:.2f}")
    verdict = combine(verdicts)
    series, bands = {}, {}
    for r in rpes:
        for m in widths:
            vals = [agg[r, h, m] for h in heads]
            series[f"{r}, m = {m}"] = (list(heads), [v.value for v in vals])
            bands[f"{r}, m = {m}"] = ([v.low for v in vals], [v.high for v in vals])
    fig = line_figure(ctx.out / "figure.png", series, "heads H", "test 1 - R^2 (geometric mean, 95% CI)",
                      "fixed memory, mean of x_(t-1..t-8): heads vs width, lin and log RPE", bands=bands)
    lo, hi = heads[0], heads[-1]
    reason = "; ".join(
        f"{r}: 1 - R^2 from H={lo} to H={hi}: " + ", ".join(f"m={m}: {agg[r, lo, m].value:.3g} -> {agg[r, hi, m].value:.3g}"
                                                          for m in widths) + f" ({verdicts[r].word})" for r in rpes)
    return ClaimResult(verdict, reason, rows, fig, {"by_rpe": numbers, "verdicts": {r: v.word for r, v in verdicts.items()}},
                       "a DP-free lin/log head's kernel is monotone in the distance, so a delta at lag T > 0 needs a "
                       "signed combination of heads (Theorem 1); the FFN has nothing to do for a linear readout",
                       sweep_regime(folder, ctx.scale))


register(Claim(
    "wang-e-5", "Heads, not FFN width, buy many memories under a simple readout (insight 2b)",
    "Wang & E 2024, insight 2b (the presumed mirror of Table 4); spec §6 claim 5",
    "1-layer DP-free models with lin-type and log-type position biases (learnable slopes, infinite-past "
    "normaliser), d_model 16, head width 2, on fixed memory y_t = mean(x_(t-1), ..., x_(t-8)) (M = 8 lags), "
    "x ~ U[-1,1], length 32; heads H in {1, 2, 4, 8, 16} and FFN width m in {8, 32, 128} (quick: H in {1, 4, 16}, "
    "m in {8, 128}, 1200 steps, 5 learning rates, 3 seeds; medium: 2500 steps, the same 5 learning rates, 5 seeds; full: "
    "4000 steps, 6); learning rate selected per configuration and seed on validation; test 1 - R^2, geometric mean "
    "over seeds with 95% CIs (exact zeros floored at 2^-53). For each RPE type: reproduced if (a) at every m the "
    "loss at the largest H is below the loss at the smallest H with disjoint intervals, and (b) it is flat in m: the "
    "largest |ln| change between the smallest and largest m (at any H) is at most half the smallest ln drop of (a); "
    "refuted if the mirror image holds. The claim is reproduced if it is for both RPE types, refuted if it is "
    "refuted for either.",
    claim5, "about 6 CPU-minutes (measured: 5.4 user + 0.6 system, on 2 busy cores)", "5 x 3 grid, 4000 steps, 6 learning rates: estimated (not run) 2-3 hours on 2 "
    "CPU cores", tag="[D]", medium="5 x 3 grid, 2500 steps, 5 learning rates",
    paper_claim="under a simple (linear) readout, more memories need more heads, not a wider FFN (insight 2b; the "
                "spec's presumed mirror of Table 4, so this verdict rests on a [D] part)"))


# ---- claim 6: dot products are not needed for fixed memories (Table 6) -----------------------------------

CLAIM6_LAGS = (2, 5, 9)
CLAIM6_TASK = {"length": 16, "lags": ",".join(map(str, CLAIM6_LAGS)), "readout": "boolean"}
CLAIM6_SOLVED = 0.9   # a seed succeeds when its test R^2 (at the lr selected on validation) reaches this
CLAIM6_ALPHA = 0.05


def trainability_verdict(dp: tuple[int, int], free: tuple[int, int]) -> tuple[Verdict, dict]:
    """``(successes, trials)`` per arm. Refuted if DP succeeds more often with Fisher's exact p < 0.05
    (gradient descent needs the dot product to find the lags); reproduced if DP-free's exact 95%
    interval lies above 1/2 and no significant gap (p >= 0.05) favours DP; else undecided."""
    stats = compare_rates(dp, free)
    rate_dp, rate_free, p = stats["rate_a"], stats["rate_b"], stats["fisher_p"]
    what = (f"success rate with DP {dp[0]}/{dp[1]} {rate_dp.fmt(2)}, DP-free {free[0]}/{free[1]} {rate_free.fmt(2)} "
            f"(exact 95% intervals), Fisher's exact p = {p:.3g}")
    if rate_dp.value > rate_free.value and p < CLAIM6_ALPHA:
        return Verdict("refuted", what), stats
    if rate_free.low > 0.5 and not (rate_dp.value > rate_free.value and p < CLAIM6_ALPHA):
        return Verdict("reproduced", what), stats
    return Verdict("undecided", f"underpowered: {what}"), stats


def claim6(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.dpfree import build_dpfree_boolean, check_dpfree_boolean
    from expressivity.experiments.sweep import Sweep

    net, rep = build_dpfree_boolean(CLAIM6_LAGS, CLAIM6_TASK["length"])
    rep = check_dpfree_boolean(net, rep)
    heads, width = ctx.size("heads", 4, 4, 8), ctx.size("widths", 64, 64, 256)
    seeds = ctx.size("seeds", tuple(range(24)), tuple(range(48)), tuple(range(64)))
    cells = [{"mixer": mixer, "rpe": "free", "heads": heads, "d_model": 16, "ffn_width": width, "layers": 1}
             for mixer in ("attention", "dpfree")]
    configs = _sweep_configs("fixed-memory", CLAIM6_TASK, cells, ctx.size("steps", 2000, 3000, 5000),
                             ctx.size("lrs", (1e-3, 3e-3, 1e-2), (1e-3, 3e-3, 1e-2), (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)), seeds)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-6"))
    values, failed = seed_values(folder, lambda c: c["model"]["mixer"], _r2)
    arms = {}
    for mixer in ("attention", "dpfree"):
        got = values.get(mixer, {})
        arms[mixer] = (sum(1 for v in got.values() if v >= CLAIM6_SOLVED), len(got) + failed.get(mixer, 0))
    trainable, stats = (trainability_verdict(arms["attention"], arms["dpfree"]) if min(n for _, n in arms.values()) > 0
                        else (Verdict("undecided", "underpowered: no runs"), {}))
    expressible = Verdict("reproduced" if rep.ok else "refuted",
                          f"explicit DP-free network ({rep.constants['heads']} heads, FFN {rep.constants['ffn_width']}): "
                          f"exact at every sign pattern and scored position: {rep.ok}")
    parts = {"expressivity (construction)": expressible, "trainability (success rates)": trainable}
    verdict = combine(parts)
    rows = [{"part": "expressivity", "model": "explicit DP-free network", "heads": rep.constants["heads"],
             "ffn_width": rep.constants["ffn_width"], "result": "exact" if rep.ok else "FAILED",
             "sup_error": rep.error("sup_error").value, "arithmetic": "exact rationals"}]
    for mixer, label in (("attention", "with DP"), ("dpfree", "DP-free")):
        k, n = arms[mixer]
        rate = stats.get("rate_a" if mixer == "attention" else "rate_b")
        r2 = interval(values.get(mixer, {}).values())
        rows.append({"part": "trainability", "model": label, "heads": heads, "ffn_width": width,
                     "result": f"{k}/{n} seeds reach R^2 >= {CLAIM6_SOLVED}", "success_rate": k / n if n else None,
                     "rate_ci_low": rate.low if rate else None, "rate_ci_high": rate.high if rate else None,
                     "mean_r2": r2.value, "failed_runs": failed.get(mixer, 0)})
    from expressivity.figures import finish, pyplot

    plt = pyplot()
    fig_, ax = plt.subplots(figsize=(6.4, 4.2))
    for x, mixer in enumerate(("attention", "dpfree")):
        got = sorted(values.get(mixer, {}).values())
        ax.scatter([x + 0.15 * ((i % 5) - 2) / 2 for i in range(len(got))], got, s=12, alpha=0.7)
    ax.axhline(CLAIM6_SOLVED, ls="--", color="k", lw=0.8, label=f"success: R^2 >= {CLAIM6_SOLVED}")
    ax.set_xticks([0, 1], [f"with DP ({arms['attention'][0]}/{arms['attention'][1]})",
                           f"DP-free ({arms['dpfree'][0]}/{arms['dpfree'][1]})"])
    ax.set_ylabel("test R^2 per seed (lr selected on validation)")
    fig = finish(fig_, ax, ctx.out / "figure.png", "sparse parity x_(t-2) x_(t-5) x_(t-9): trainability per seed")
    regime = sweep_regime(folder, ctx.scale, notes="fresh samples every step (no epochs)")
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "successes": {m: list(v) for m, v in arms.items()},
               "fisher_p": stats.get("fisher_p"), "construction_ok": rep.ok}
    return ClaimResult(verdict, "; ".join(f"{k}: {v.reason}" for k, v in parts.items()), rows, fig, numbers,
                       "a 3-sparse parity has no low-order correlation to follow, so a seed either finds the lags or "
                       "stays at R^2 ~ 0: expressivity (the explicit network) and trainability (how often gradient "
                       "descent finds it) are different questions, answered separately", regime)


register(Claim(
    "wang-e-6", "Dot-product attention is not needed for fixed memories (Table 6, insight 3a)",
    "Wang & E 2024, Table 6; spec §6 claim 6",
    "Target y_t = x_(t-2) x_(t-5) x_(t-9), x = +-1, length 16. (i) Expressivity: the explicit DP-free network (3 "
    "hardmax heads with one-hot relative biases, a ReLU layer of 3 units) is checked exactly at every sign pattern "
    "and scored position. (ii) Trainability: 1-layer models with a learned per-offset ('free') position bias, "
    "d_model 16, 4 heads, FFN 64 (full: 8 heads, FFN 256), with DP (softmax attention) and without (DP-free); "
    "learning rate selected per seed on validation (quick: 2000 steps, lr {0.001, 0.003, 0.01}, 24 seeds; medium: "
    "3000 steps, the same learning rates, 48 seeds); a seed succeeds if its test R^2 >= 0.9; success rates with exact "
    "(Clopper-Pearson) 95% intervals and Fisher's exact test between the arms. (ii) is reproduced if DP-free's "
    "interval lies above 1/2 and DP is not significantly more successful (p >= 0.05), refuted if DP is (p < 0.05), "
    "otherwise undecided. The claim is reproduced if (i) and (ii) are, refuted if either is.",
    claim6, "about 8 CPU-minutes (estimated, not measured)", "64 seeds, 8 heads, FFN 256, 5000 steps",
    tag="[V]", medium="48 seeds, 3000 steps, 3 learning rates",
    paper_claim="for fixed (content-independent) memories, attention without the dot product performs as well as "
                "with it (Table 6, insight 3a)"))


# ---- claim 7: DP for adaptive memories at a fixed width, and depth for nesting (insights 3b, 1a) -----

CLAIM7_SOLVED, CLAIM7_FAILED = 0.9, 0.7
SCAN_MODEL = {"rpe": "free", "ape": "none", "layers": 2, "heads": 2, "d_model": 16, "ffn_width": 32}


def _status(cell: Interval) -> str:
    """``solved`` (mean R^2 >= 0.9), ``failed`` (<= 0.7) or ``unclear``."""
    return "solved" if cell.value >= CLAIM7_SOLVED else "failed" if cell.value <= CLAIM7_FAILED else "unclear"


def capacity_bound(layers: int, heads: int, d_model: int, d_head: int) -> int:
    """The largest pointer range a DP-free stack can serve at fixed size (issue 15's estimate):
    content reaches position t only through content-independent mixing, so the summary at t must
    carry every candidate: ``H_1 + sum_{l >= 2} min(d_model, H d_head)``."""
    return heads + sum(min(d_model, heads * d_head) for _ in range(2, layers + 1))


def scan_verdict(table: dict, bound: int) -> Verdict:
    """``table[T] = (dp cell, dpfree cell, paired R^2 difference dp - dpfree)``. Reproduced if at every T
    above ``bound`` DP solves, DP-free fails and the paired difference is above 0; refuted if DP-free
    solves at some T above the bound; undecided if no T above the bound was scanned or DP itself did
    not solve there (the fixed-width DP model did not learn it: nothing to compare)."""
    above = {T: v for T, v in table.items() if T > bound}
    if not above:
        return Verdict("undecided", f"underpowered: no pointer range above the bound {bound} was scanned")
    if any(_status(free) == "solved" for _, free, _ in above.values()):
        return Verdict("refuted", "DP-free solves a pointer range above the capacity bound at fixed width: "
                       + ", ".join(f"T={T}" for T, (_, f, _) in above.items() if _status(f) == "solved"))
    parts = {}
    for T, (dp, free, diff) in above.items():
        if _status(dp) != "solved":
            parts[f"T={T}"] = Verdict("undecided", f"underpowered: T={T}: DP reaches only R^2 {dp.fmt(2)}")
        elif _status(free) != "failed":
            parts[f"T={T}"] = Verdict("not reproduced", f"T={T}: DP-free is not failing ({free.fmt(2)})")
        else:
            parts[f"T={T}"] = compare_paired(Interval(-diff.value, -diff.high, -diff.low, diff.n),
                                             f"T={T}: R^2 of DP-free minus DP")
    return combine(parts)


def depth_verdict(table: dict) -> Verdict:
    """``table[(nesting k, layers L)]`` of DP models: reproduced if every L >= k + 1 solves and every
    L <= k fails; refuted if some L <= k solves (less depth than claimed suffices); undecided when a
    cell is unclear or has no interval; else not reproduced."""
    if any(not v.decided for v in table.values()):
        return Verdict("undecided", "underpowered: a cell has fewer than 2 seeds")
    if any(L <= k and _status(v) == "solved" for (k, L), v in table.items()):
        return Verdict("refuted", "a model with depth <= nesting solves: "
                       + ", ".join(f"k={k} L={L}" for (k, L), v in table.items() if L <= k and _status(v) == "solved"))
    need = {(k, L): _status(v) == ("solved" if L >= k + 1 else "failed") for (k, L), v in table.items()}
    if all(need.values()):
        return Verdict("reproduced", "every L >= k + 1 solves and every L <= k fails")
    if any(_status(table[key]) == "unclear" for key, ok in need.items() if not ok):
        return Verdict("undecided", "underpowered: " + ", ".join(f"k={k} L={L} unclear" for (k, L), ok in need.items()
                                                                 if not ok and _status(table[k, L]) == "unclear"))
    return Verdict("not reproduced", "deep enough models fail: " + ", ".join(
        f"k={k} L={L}" for (k, L), ok in need.items() if not ok))


def claim7_decides(scan_model: dict, bound: int) -> Callable[[dict], bool]:
    """The configurations claim 7's verdict rests on: the scan's cells above the capacity ``bound``
    (the scan's model is ``scan_model``) and every depth-against-nesting cell."""
    def decides(config: dict) -> bool:
        model = config["model"]
        in_scan = model.get("d_model") == scan_model["d_model"] and model.get("layers") == scan_model["layers"]
        return not in_scan or config["task"]["args"]["max_lag"] > bound

    return decides


def _scan_label(config: dict) -> tuple:
    return ("scan", config["task"]["args"]["max_lag"], config["model"]["mixer"])


def _depth_label(config: dict) -> tuple:
    return ("depth", config["task"]["args"]["depth"], config["model"]["layers"])


def claim7(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.dpfree import build_dpfree_pointer, check_dpfree_pointer
    from expressivity.experiments.sweep import Sweep

    ranges = ctx.size("ranges", (4, 8, 16, 32), (4, 8, 16, 32, 64), (4, 8, 16, 32, 64))
    depths = ctx.size("layers", (1, 2, 3), (1, 2, 3), (1, 2, 3, 4))
    steps = ctx.size("steps", 1500, 3000, 10000)
    # quick {0.003, 0.01, 0.03}, medium and full {0.001, ..., 0.03}: the first medium run, on {0.001, 0.003,
    # 0.01}, chose 0.01 for nearly every configuration and seed (an unbracketed selection); with 0.03 added
    # the scan above the bound and the depth table are bracketed except DP-free at T = 64
    lrs = ctx.size("lrs", (3e-3, 1e-2, 3e-2), (1e-3, 3e-3, 1e-2, 3e-2), (1e-3, 3e-3, 1e-2, 3e-2))
    seeds = ctx.size("seeds", (0, 1, 2), SEEDS, SEEDS)
    model = {**SCAN_MODEL, **ctx.overrides.get("scan_model", {})}
    configs = []
    for T in ranges:  # the pointer-range scan at fixed width
        cells = [{**model, "mixer": mixer} for mixer in ("attention", "dpfree")]
        configs += _sweep_configs("nested-memory", {"length": max(16, 2 * T), "max_lag": T, "depth": 1}, cells, steps,
                                  lrs, seeds)
    depth_model = {"rpe": "free", "ape": "none", "heads": 2, "d_model": 32, "ffn_width": 64, "mixer": "attention"}
    for k in (1, 2):  # depth against nesting, DP models, pointer range 8
        configs += _sweep_configs("nested-memory", {"length": 16, "max_lag": 8, "depth": k},
                                  [{**depth_model, "layers": L} for L in depths], steps, lrs, seeds)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-7"))
    values, failed = seed_values(folder, lambda c: _scan_label(c) if c["model"].get("layers") == model["layers"]
                                 and c["model"].get("d_model") == model["d_model"] else _depth_label(c), _r2)
    d_head = model["d_model"] // model["heads"]
    bound = capacity_bound(model["layers"], model["heads"], model["d_model"], d_head)
    small = min(ranges)
    net, rep = build_dpfree_pointer(small, max(16, 2 * small))
    rep = check_dpfree_pointer(net, rep)
    rows, scan = [], {}
    for T in ranges:
        dp, free = values.get(("scan", T, "attention"), {}), values.get(("scan", T, "dpfree"), {})
        cdp, cfree, diff = interval(dp.values()), interval(free.values()), paired_difference(dp, free)
        scan[T] = (cdp, cfree, diff)
        rows.append({"part": "pointer-range scan", "T": T, "capacity_bound": bound, "above_bound": T > bound,
                     "dp_r2": cdp.value, "dp_ci": _ci(cdp), "dp_status": _status(cdp), "dpfree_r2": cfree.value,
                     "dpfree_ci": _ci(cfree), "dpfree_status": _status(cfree), "paired_dp_minus_dpfree": diff.value,
                     "paired_ci": _ci(diff), "seeds": min(cdp.n, cfree.n),
                     "failed": failed.get(("scan", T, "attention"), 0) + failed.get(("scan", T, "dpfree"), 0)})
    rows.append({"part": "explicit DP-free network (exact)", "T": small, "capacity_bound": bound,
                 "above_bound": small > bound, "dpfree_r2": 1.0 if rep.ok else None,
                 "dpfree_status": "exact" if rep.ok else "FAILED",
                 "notes": f"{rep.constants['heads']} heads, FFN {rep.constants['ffn_width']}, d {rep.constants['d_model']}: "
                          f"sup error {rep.error('sup_error').value} over every pointer at every position "
                          "(wang-e build --memory dpfree-pointer)"})
    table = {}
    for k in (1, 2):
        for L in depths:
            cell = interval(values.get(("depth", k, L), {}).values())
            table[k, L] = cell
            rows.append({"part": "depth vs nesting (DP, T = 8)", "nesting": k, "layers": L, "dp_r2": cell.value,
                         "dp_ci": _ci(cell), "dp_status": _status(cell), "seeds": cell.n,
                         "failed": failed.get(("depth", k, L), 0)})
    parts = {"construction: DP-free can at small T": Verdict("reproduced" if rep.ok else "refuted",
                                                             f"exact DP-free network at T = {small}: {rep.ok}"),
             "scan: DP-free falls past the bound at fixed width": scan_verdict(scan, bound),
             "depth for nesting": depth_verdict(table)}
    verdict = combine(parts)
    series = {"with DP": (list(ranges), [scan[T][0].value for T in ranges]),
              "DP-free": (list(ranges), [scan[T][1].value for T in ranges])}
    bands = {"with DP": ([scan[T][0].low for T in ranges], [scan[T][0].high for T in ranges]),
             "DP-free": ([scan[T][1].low for T in ranges], [scan[T][1].high for T in ranges])}
    fig = line_figure(ctx.out / "figure.png", series, "pointer range T", "test R^2 (mean, 95% CI)",
                      f"adaptive memory at fixed width (2 layers, 2 heads, d {model['d_model']}): DP vs DP-free",
                      logx=True, logy=False, bands=bands, hlines={f"solved (R^2 = {CLAIM7_SOLVED})": CLAIM7_SOLVED},
                      vlines={f"DP-free capacity bound T = {bound}": bound})
    decides = claim7_decides(model, bound)
    regime = sweep_regime(folder, ctx.scale, cells=decides, notes="fresh samples every step (no epochs)")
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "capacity_bound": bound,
               "construction": {"T": small, "ok": rep.ok, "heads": rep.constants["heads"],
                                "ffn_width": rep.constants["ffn_width"]},
               "smallest_solving_depth": {k: next((L for L in depths if _status(table[k, L]) == "solved"), None)
                                          for k in (1, 2)}}
    return ClaimResult(verdict, "; ".join(f"{k}: {v.reason}" for k, v in parts.items()), rows, fig, numbers,
                       "RPE only (no absolute positions), as in the paper's hypothesis class; position 0 is a start "
                       "token. The capacity bound is the issue's estimate for a DP-free stack, not a theorem of the "
                       "paper; the explicit DP-free network shows a DP-free model CAN retrieve a pointer when its "
                       "heads and width grow with T.", regime, decides=decides)


def _ci(cell: Interval) -> str:
    return f"[{cell.low:.3f}, {cell.high:.3f}]" if cell.decided else "-"


register(Claim(
    "wang-e-7", "DP retrieves adaptive memories at a width independent of the range; DP-free cannot (3b, 1a)",
    "Wang & E 2024, insights 3b and 1a; spec §6 claim 7 and §3.2",
    "Pointer retrieval on finite sequences with a start token (nested-memory, depth 1: y_t = v_(t - p_t), p in 1..T "
    "one-hot, length max(16, 2T)). (i) Construction: the explicit DP-free network (T heads, FFN 2T) for the smallest "
    "T is checked exactly. (ii) Pointer-range scan at fixed width: T in {4, 8, 16, 32} (medium, full: also 64), 2 "
    "layers, 2 heads, d_model 16 (d_head 8), FFN 32, learned per-offset bias, no absolute positions; DP (softmax "
    "attention) against DP-free (the same bias, no q.k). The DP-free capacity bound H_1 + sum_{l>=2} min(d, H "
    "d_head) is 18. Reproduced if at every scanned T above the bound DP solves (mean test R^2 >= 0.9), DP-free fails "
    "(<= 0.7) and the paired per-seed difference of R^2 is above 0 (95% interval); refuted if DP-free solves (>= 0.9) "
    "at some T above the bound; undecided where DP itself does not solve. (iii) Depth against nesting (DP, T = 8, "
    "length 16, 2 heads, d 32, FFN 64, L in {1, 2, 3}, nesting k in {1, 2}): reproduced if every L >= k + 1 solves "
    "and every L <= k fails, refuted if some L <= k solves. Learning rate selected per configuration and seed on "
    "validation; quick: 1500 steps, lr {0.003, 0.01, 0.03}, 3 seeds; medium: 3000 steps, lr {0.001, 0.003, 0.01, 0.03}, "
    "5 seeds. The "
    "regime check and the grid-edge rule (a learning rate on its grid's edge for most seeds leaves the verdict "
    "undecided) apply to the cells the verdict compares: the scan above the bound and the depth table. The "
    "claim is reproduced if (i)-(iii) are, refuted if any is refuted.",
    claim7, "about 12 CPU-minutes (estimated, not measured)", "10000 steps, 4 learning rates, 4 depths: sized for a GPU",
    tag="[R]", medium="ranges up to 64, 3000 steps, 4 learning rates, 5 seeds: about 2 CPU-hours (estimated)",
    paper_claim="the dot product is what lets attention retrieve an adaptive (input-dependent) memory, and nested "
                "memories need depth (insights 3b and 1a); DP-free models need resources growing with the range"))
