"""The trained claims of Wang & E (2024) (spec ``wang_e_2024.md`` §6, claims 3-7), one command
each: ``expressivity reproduce wang-e-N [--scale quick|medium|full]``.

Each trains small models on the experiment engine, with the learning rate selected per
configuration and seed on **validation** data and test numbers reported per seed, and decides by
the rules of :mod:`.rules`: paired per-seed differences where the arms share seeds, equivalence
within a stated margin for "X is not needed / flat", per-seed pass/fail outcomes with exact
intervals for "solves / fails", and a minimum of valid seeds everywhere. The regime check
(:mod:`.regime`) looks at every cell the verdict rests on, with a tolerance tied to the
comparison. Claims 6 and 7 also build the DP-free network the comparison is about
(:mod:`expressivity.constructions.wang_e.dpfree`), so expressivity and trainability are told apart.

Every run evaluates validation loss ten times; ``1 - R^2`` values that are exactly 0 (R^2 rounded
to 1 in float64) are floored at the resolution 2^-53, not dropped. Medium and full runs score on
a fresh test sample (:data:`~expressivity.experiments.claims.FRESH_TEST_SEED`).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from expressivity.experiments.claims import Claim, ClaimContext, ClaimResult, Verdict, register
from expressivity.experiments.claims.kit import distinct, line_figure, seed_outcomes, seed_values, selected_records
from expressivity.experiments.claims.regime import cell_regime, tolerances
from expressivity.experiments.claims.rules import (ALPHA, Outcomes, combine, compare_paired, equivalent, explained,
                                                  part_reason, rate_margin_verdict)
from expressivity.statistics import (R2_RESOLUTION, Interval, binomial_tail, clopper_pearson, fisher_exact,
                                     floored_geometric_interval, interval, paired_difference)

# ---- shared pieces ---------------------------------------------------------------------------------


def _sweep_configs(task: str, task_args: dict, cells: list[dict], steps: int, lrs, seeds, batch_size: int = 32,
                   test_seed: int | None = None):
    """One configuration per ``cells`` entry (model settings) x learning rate x seed; validation
    loss evaluated ten times per run (the regime check reads the last 20%); the test sample drawn
    with ``test_seed`` (``None``: the development sample)."""
    from expressivity.training import RunConfig

    out = []
    for model in cells:
        base = RunConfig.for_task(task, task_args, model=model, train={
            "steps": steps, "batch_size": batch_size, "eval_every": max(1, steps // 10), "eval_size": 256,
            "test_seed": test_seed})
        out += [base.with_changes(seed=s, train={"lr": lr}) for lr in lrs for s in seeds]
    return out


def _seeds(n: int) -> tuple:
    return tuple(range(n))


def _r2(row: dict) -> float:
    return row["test_metric"]


def _error(row: dict) -> float:
    """``1 - R^2`` on the test split, at least 0 (an exact 1.0 gives 0, floored later); NaN stays NaN
    (``max(0.0, nan)`` would read it as a perfect fit)."""
    metric = float(row["test_metric"])
    return max(0.0, 1.0 - metric) if math.isfinite(metric) else math.nan


def error_cell(values: dict) -> Interval:
    """Geometric mean of ``1 - R^2`` over seeds with its 95% interval, exact zeros floored at 2^-53."""
    return floored_geometric_interval(values.values(), R2_RESOLUTION)[0]


def _log_errors(values: dict) -> dict:
    return {s: math.log10(max(v, R2_RESOLUTION)) for s, v in values.items()}


def _ln_errors(values: dict) -> dict:
    return {s: math.log(max(v, R2_RESOLUTION)) for s, v in values.items()}


def _ln_error_measure(loss: float, metric: float | None) -> float:
    """The regime check's view of a validation evaluation for claims compared on ``ln(1 - R^2)``."""
    return math.log(max(1.0 - metric, R2_RESOLUTION)) if metric is not None else math.nan


def _passes(threshold: float):
    """The regime check's view for pass/fail claims: 1 when the validation R^2 reaches ``threshold``."""
    return lambda loss, metric: math.nan if metric is None else float(metric >= threshold)


def _ci(cell: Interval, top: float = math.inf) -> str:
    """``[low, high]`` for a table, clipped at ``top`` (R^2 <= 1: a t interval can reach past it)."""
    if not cell.decided:
        return "-"
    shown = cell.clipped(high=top)
    return f"[{shown.low:.3f}, {shown.high:.3f}]" + (" (clipped at 1)" if cell.high > top else "")


# ---- claim 3: the learned kernel against the horizon (Table 8) -------------------------------------------

CLAIM3_LIN_HEADS = 8          # the compared lin arm: the spec sweeps H in {1, 2, 4, 8}; the claim is "even with many"
CLAIM3_TOKENS_PER_STEP = 1024
CLAIM3_MIRROR_UP_TO = 256     # the [D] mirror cells are trained up to this horizon (cost)
CLAIM3_FIT = 1e-3             # a seed fits the kernel (the log head escaped its plateau) when its l1 is below this
CLAIM3_FLOOR = 1e-4           # the regime check reads validation 1 - R^2 floored here (4e-7 -> 4e-9 is no movement)
CLAIM3_MIN_SEEDS = 6          # the exact interval of a share can exclude 1/2 only from 6 seeds on
CLAIM3_SEEDS = {"quick": 3, "medium": 10, "full": 12}


def heavy_tail_configs(horizons, steps: int, lrs, seeds, lin_heads=(1, 4, CLAIM3_LIN_HEADS), eval_tokens: int = 16384,
                       test_seed: int | None = None):
    """1-layer, FFN-free, DP-free models with learnable slopes on ``kernel-memory`` (alpha = 0.5,
    rho ~ (1+s)^-1.5): on the power tail log-type with 1 head and lin-type with each of
    ``lin_heads``; on the exponential tail (the spec's derived mirror, [D]) lin-type with 1 head and
    log-type with 4, up to N = 256. ``batch_size`` keeps 1,024 tokens a step (16 windows at N = 64,
    4 at 256, 1 at 1024): the DP-free layer costs ``batch x heads x N^2``. Held-out sets have
    ``eval_tokens`` tokens (256 windows at N = 64, 16 at N = 1024)."""
    from expressivity.training import RunConfig

    cells = [("power", "log", 1)] + [("power", "lin", h) for h in lin_heads] + [("exp", "lin", 1), ("exp", "log", 4)]
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
                       "eval_size": max(16, eval_tokens // N), "test_seed": test_seed})
            out += [base.with_changes(seed=s, train={"lr": lr}) for lr in lrs for s in seeds]
    return distinct(out)


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
    out: dict = {}
    for record, ok in selected_records(folder):
        if not ok:
            continue
        k_hat, rho = learned_kernel(folder / "runs" / record["id"])
        out.setdefault(cell(record["config"]), {})[record["config"]["seed"]] = float(np.abs(k_hat - rho).sum())
    return out


def diverged_seeds(folder, cell) -> dict:
    """``{cell label: {seeds whose selected run diverged}}``: they trained and learned no kernel (not crashed runs,
    whose outcome is unknown)."""
    from expressivity.experiments.claims.kit import DIVERGED, selected_runs

    out: dict = {}
    for record, state in selected_runs(folder):
        if state == DIVERGED:
            out.setdefault(cell(record["config"]), set()).add(record["config"]["seed"])
    return out


def _cell3(config: dict) -> tuple:
    return (config["task"]["args"]["length"], config["task"]["args"]["kernel"], config["model"]["rpe"],
            config["model"]["heads"])


def _decides3(config: dict) -> bool:
    """The arms claim 3's verdict compares: power tail, log-type 1 head and lin-type CLAIM3_LIN_HEADS heads."""
    _, kernel, rpe, heads = _cell3(config)
    return kernel == "power" and (rpe, heads) in (("log", 1), ("lin", CLAIM3_LIN_HEADS))


def win_verdict(better: dict, worse: dict, what: str, min_seeds: int = CLAIM3_MIN_SEEDS,
                diverged: tuple = ((), ())) -> tuple[Verdict, Interval]:
    """``better`` claimed lower than ``worse`` (``{seed: value}``) seed by seed: the share of paired
    seeds where it is, with its exact interval (a sign test: a tie is evidence for neither and is left
    out, and said). Reproduced if the interval lies above 1/2, refuted if below; undecided otherwise or
    with fewer than ``min_seeds`` untied pairs. Robust to a bimodal arm, which a t interval on the mean
    hides. ``diverged``: the seeds of each arm whose run diverged (not in the dicts): a loss against a finite
    value of the other arm, a tie against a diverged one."""
    b_div, w_div = (set(d) for d in diverged)
    # a diverged seed learned nothing: left out as a failed run, 4 diverged log-head seeds of 10 made 6 of 6 paired
    # seeds "reproduced" where 6 of 10 is undecided (a fresh audit, 2026-11-29, as for claim 6 before)
    b = {**better, **{s: math.inf for s in b_div}}
    w = {**worse, **{s: math.inf for s in w_div}}
    paired = sorted(set(b) & set(w), key=str)
    # a non-finite value in the dicts is a failed run, no evidence either way: NaN != x made it an untied pair and
    # NaN < x a loss, so 8 NaN pairs read "refuted, p = 0.0039" (an audit, 2026-11-29)
    common = [s for s in paired if (s in b_div or math.isfinite(b[s])) and (s in w_div or math.isfinite(w[s]))]
    untied = [s for s in common if b[s] != w[s]]
    ties = f" ({len(common) - len(untied)} tied, left out)" if len(untied) < len(common) else ""
    if len(common) < len(paired):
        ties += f" ({len(paired) - len(common)} with a failed run, left out)"
    lost = [s for s in untied if s in b_div or s in w_div]
    if lost:
        ties += (f" ({sum(s in b_div for s in lost)} diverged in the first arm, {sum(s in w_div for s in lost)} in "
                 "the second, each a loss for its arm)")
    wins = sum(b[s] < w[s] for s in untied)
    if len(untied) < min_seeds:
        return Verdict("undecided", f"underpowered: {what}: {len(untied)} paired seeds{ties}, at least {min_seeds} "
                                    "needed"), Interval(math.nan, 0.0, 1.0, len(untied))
    share = clopper_pearson(wins, len(untied))
    text = f"{what}: lower in {wins} of {len(untied)} paired seeds{ties}, share {share.fmt(2, against=(0.5,))}"
    if share.low > 0.5:
        return Verdict("reproduced", text, binomial_tail(wins, len(untied), 0.5, True)), share
    if share.high < 0.5:
        return Verdict("refuted", f"{text} (the reverse)", binomial_tail(wins, len(untied), 0.5, False)), share
    return Verdict("undecided", f"underpowered: {text}: the interval contains 1/2"), share


def escape_summary(l1: dict) -> dict:
    """How often a cell's seeds fit the kernel almost exactly (learned kernel's ``l1 < CLAIM3_FIT``:
    for the log head, it escaped its plateau), with the exact interval, and the l1 error's
    geometric mean over those seeds and over the rest. (Test 1 - R^2 cannot tell: lin heads with
    l1 0.01-0.02 reach 1 - R^2 below 1e-4, the squared error hiding the far lags.)"""
    escaped = {s for s, e in l1.items() if e < CLAIM3_FIT}
    rate = clopper_pearson(len(escaped), len(l1)) if l1 else None
    on = {s: v for s, v in l1.items() if s in escaped}
    off = {s: v for s, v in l1.items() if s not in escaped}
    return {"escaped": len(escaped), "seeds": len(l1), "rate": None if rate is None else list(rate[:3]),
            "l1_if_escaped": error_cell(on).value if on else None, "l1_otherwise": error_cell(off).value if off else None}


def claim3(ctx: ClaimContext) -> ClaimResult:
    from expressivity.experiments.sweep import Sweep

    horizons = ctx.size("horizons", (64, 256), (64, 256, 1024), (64, 256, 1024))
    H = CLAIM3_LIN_HEADS
    configs = heavy_tail_configs(horizons, ctx.size("steps", 1000, 1500, 20000),
                                 # 0.3 on top: the medium run of 2026-11-23 on {0.01, 0.03, 0.1} chose 0.1 for every
                                 # seed of both compared arms; full adds 1.0, the step the log head's choice of the
                                 # top (0.3, 4-5 of 5 seeds at medium) calls for under the bracketing rule
                                 ctx.size("lrs", (1e-2, 3e-2, 1e-1, 3e-1), (1e-2, 3e-2, 1e-1, 3e-1),
                                          (1e-2, 3e-2, 1e-1, 3e-1, 1.0)),
                                 ctx.size("seeds", _seeds(CLAIM3_SEEDS["quick"]), _seeds(CLAIM3_SEEDS["medium"]),
                                          _seeds(CLAIM3_SEEDS["full"])),
                                 ctx.size("lin_heads", (1, 4, H), (1, 2, 4, H), (1, 2, 4, H)), test_seed=ctx.test_seed)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-3"))
    l1 = kernel_errors(folder, _cell3)
    gone = diverged_seeds(folder, _cell3)
    r2_err, failed = seed_values(folder, _cell3, _error)
    rows = _claim3_rows(l1, r2_err, failed)
    log_l1 = {key: _log_errors(v) for key, v in l1.items()}
    parts, halves = {}, []
    for N in horizons:
        log1, linH = (N, "power", "log", 1), (N, "power", "lin", H)
        parts[f"N={N}: log 1 head below lin {H} heads"], _ = win_verdict(
            l1.get(log1, {}), l1.get(linH, {}), f"l1 of log 1 head vs lin {H} heads, N = {N}",
            diverged=(gone.get(log1, ()), gone.get(linH, ())))
        diff = paired_difference(log_l1.get(log1, {}), log_l1.get(linH, {}))
        halves += [(log1, diff.half_width), (linH, diff.half_width)]
    lo, hi = (horizons[0], "power", "lin", H), (horizons[-1], "power", "lin", H)
    grow = paired_difference(log_l1.get(lo, {}), log_l1.get(hi, {}))
    parts[f"lin {H} heads worse at N={horizons[-1]} than at N={horizons[0]}"] = compare_paired(
        grow, f"log10 l1 of lin {H} heads at N = {horizons[0]} minus N = {horizons[-1]}", CLAIM3_MIN_SEEDS)
    halves += [(lo, grow.half_width), (hi, grow.half_width)]
    verdict = combine(parts)
    mirror = {f"N={N}": compare_paired(paired_difference(log_l1.get((N, "exp", "lin", 1), {}),
                                                         log_l1.get((N, "exp", "log", 4), {})),
                                       f"[D] light tail, lin 1 head vs log 4 heads, log10 l1, N = {N}").word
              for N in horizons if N <= CLAIM3_MIRROR_UP_TO}
    fig = _claim3_figure(ctx, l1, horizons, H)
    regime = cell_regime(folder, ctx.scale, lambda c: _cell3(c) if _decides3(c) else None, tolerances(halves),
                         lambda loss, metric: math.log10(max(1.0 - metric, CLAIM3_FLOOR)) if metric is not None
                         else math.nan, f"log10(1 - R^2), floored at {CLAIM3_FLOOR:g}", min_seeds=CLAIM3_MIN_SEEDS,
                         name=lambda c: f"N={c[0]} {c[2]} H={c[3]}",
                         notes="fresh samples every step (no epochs); a fixed step budget with the plateau checked "
                               "afterwards (the trainer has no stop-on-plateau)",
                         diverged_counts=True)   # part (a) counts a diverged seed, as a loss for its arm
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "light_tail_mirror_[D]": mirror,
               "fit_below_1e-3": {f"N={r['horizon_N']} {r['rpe']} H={r['heads']} {r['rho']}": r["fit_below_1e-3"]
                                  for r in rows},
               "test_seed": ctx.test_seed}
    return ClaimResult(verdict, "; ".join(part_reason(v, verdict) for v in parts.values()), rows, fig, numbers,
                       "l1 over lags 0..N-1 of the learned kernel (impulse responses of the trained, affine model) "
                       f"against rho; 'fit_below_1e-3': seeds whose l1 is below {CLAIM3_FIT:g} (the log head's single "
                       "slope either leaves a plateau near R^2 0.99 and fits the kernel almost exactly, or stays). The "
                       "light-tail "
                       "rows are the spec's derived mirror [D], reported beside the verdict, not in it. The l1 "
                       "intervals in the table are t intervals of the mean and assume roughly normal per-seed values; "
                       "the log head's l1 is bimodal (escapes or stays), where such an interval covers well under 95%: "
                       "the verdict uses the seed-by-seed sign test instead.", regime,
                       decides=_decides3)


def _claim3_rows(l1: dict, r2_err: dict, failed: dict) -> list[dict]:
    """One row per cell: the learned kernel's l1, the escape rate, 1 - R^2, seeds and failed runs."""
    rows = []
    for key in sorted(set(l1) | set(r2_err)):
        N, kernel, rpe, h = key
        k, e = l1.get(key, {}), r2_err.get(key, {})
        cell_l1, cell_r2 = error_cell(k) if k else interval([]), error_cell(e) if e else interval([])
        escape = escape_summary(k)
        rows.append({"horizon_N": N, "kernel": f"{kernel} tail", "rho": "(1+s)^-1.5" if kernel == "power" else "e^{-0.5 s}",
                     "tag": "[V]" if kernel == "power" else "[D] mirror", "rpe": rpe, "heads": h,
                     "kernel_l1": cell_l1.value, "l1_ci_low": cell_l1.low, "l1_ci_high": cell_l1.high,
                     "fit_below_1e-3": f"{escape['escaped']}/{escape['seeds']}",
                     "fit_ci": "-" if escape["rate"] is None else f"[{escape['rate'][1]:.2f}, {escape['rate'][2]:.2f}]",
                     "l1_if_fit": escape["l1_if_escaped"], "l1_otherwise": escape["l1_otherwise"],
                     "one_minus_r2_test": cell_r2.value, "r2_ci_low": cell_r2.low, "r2_ci_high": cell_r2.high,
                     "seeds": cell_l1.n, "failed": failed.get(key, 0)})
    return rows


def _claim3_figure(ctx, l1: dict, horizons, H: int):
    series, bands = {}, {}
    for kernel, rpe, h in (("power", "log", 1), ("power", "lin", 1), ("power", "lin", H), ("exp", "lin", 1),
                           ("exp", "log", 4)):
        cells = [error_cell(l1[N, kernel, rpe, h]) if l1.get((N, kernel, rpe, h)) else interval([]) for N in horizons]
        label = f"{'(1+s)^-1.5' if kernel == 'power' else '[D] e^-0.5s'}, {rpe}, H={h}"
        series[label] = (list(horizons), [c.value for c in cells])
        bands[label] = ([c.low for c in cells], [c.high for c in cells])
    return line_figure(ctx.out / "figure.png", series, "horizon N (training length)",
                       "l1 error of the learned kernel (geometric mean, 95% CI)",
                       "kernel-memory: learned kernel vs rho over the horizon", bands=bands)


register(Claim(
    "wang-e-3", "Log-type RPE learns a heavy-tailed memory kernel with one head; lin-type does not with many (Table 8)",
    "Wang & E 2024, Table 8; spec §6 claim 3",
    "1-layer, FFN-free, DP-free models with a learnable slope per head on y_t = sum_s rho(s) x_(t-s), "
    "rho ~ (1+s)^-1.5 (power tail), x ~ N(0,1), trained at horizon (length) N in {64, 256} (medium and full: also "
    f"1024), 1,024 tokens a step; log-type with 1 head, lin-type with 1, 4 and {CLAIM3_LIN_HEADS} heads (medium and "
    "full: 1, 2, 4, 8); learning rate selected per configuration and seed on validation loss (quick: 1000 steps, "
    f"{CLAIM3_SEEDS['quick']} seeds, lr in {{0.01, 0.03, 0.1, 0.3}}; medium: 1500 steps, {CLAIM3_SEEDS['medium']} "
    f"seeds, the same learning rates; full: 20000 steps, {CLAIM3_SEEDS['full']} seeds, lr in {{0.01, ..., 0.3, 1}}). "
    "The measure is the l1 error of the learned kernel over lags 0..N-1 (impulse responses). Reproduced if (a) at "
    f"every N log-type with 1 head has the lower l1 than lin-type with {CLAIM3_LIN_HEADS} heads in most paired "
    "seeds: the exact (Clopper-Pearson) 95% interval of that share lies above 1/2 (a per-seed rule, because the "
    "log head's outcome is bimodal: it escapes its plateau or not), and (b) lin-type with "
    f"{CLAIM3_LIN_HEADS} heads is worse at the largest N than at the smallest (paired per-seed difference of "
    "log10 l1, 95% t interval, exact zeros floored). Refuted if either holds the other way round; undecided "
    f"otherwise and with fewer than {CLAIM3_MIN_SEEDS} valid paired seeds. Power: with n seeds (a) is decided only "
    "when at least k win, n = 10: k = 9, n = 12: k = 10 (3 seeds can never decide it); if each seed wins with "
    "probability 0.9 that happens with probability 0.74 (10 seeds) and 0.89 (12); (b) detects (80% power) a "
    "mean paired difference of 3.10, 0.99 and 0.89 standard deviations of the per-seed difference at 3, 10 and "
    f"12 seeds. Reported beside it: per cell the share of seeds that fit the kernel almost exactly (l1 < "
    f"{CLAIM3_FIT:g}: the log head escaped its plateau) with its exact interval, and l1 over those seeds and over "
    "the rest. The regime check (each compared cell's "
    f"validation log10(1 - R^2), floored at {CLAIM3_FLOOR:g}, moves over the last 20% of training by less than "
    "the half-width of its comparison) and the grid-edge rule apply to the compared arms (power tail: log 1 head, "
    f"lin {CLAIM3_LIN_HEADS} heads). The light-tail mirror (rho ~ e^{{-0.5 s}}: lin 1 head vs log 4 heads, N <= 256) "
    "is the spec's derivation [D] and is reported separately, outside the verdict. Medium and full score on a "
    "fresh test sample.",
    claim3, "6 minutes (3.2 CPU-minutes; measured 2026-11-27, 2 cores shared with other work)", "20000 steps, 5 learning rates, 12 seeds: sized for a GPU",
    tag="[R]", medium="horizons 64, 256, 1024; lin 1, 2, 4, 8 heads; 1500 steps; 10 seeds; 4 learning rates: about "
                      "1.6 hours on 2 cores (reproduce --plan timing every shape, 2026-11-27)",
    needs_weights=lambda record: True,   # the learned kernels are the trained models' impulse responses
    paper_claim="with log-type RPE a single head captures a heavy-tailed (power-law) memory, while lin-type RPE "
                "shows limited improvement even with many heads (Table 8)"))


# ---- claims 4 and 5: what FFN width and heads buy (Tables 4 and 5) ------------------------------------

ROLE_MARGIN = 0.2   # "flat": the paired change of ln(1 - R^2) lies within +-0.2 (a factor 1.22)
ROLE_SEEDS = {"quick": 5, "medium": 5, "full": 10}
ROLE_MIN_SEEDS = 3  # valid seeds per cell below which no word is given
ROLE_POWER = ("Power: the paired t interval over 5 (10) seeds detects a fall of 1.66 (0.99) standard deviations "
              "of the per-seed ln difference with 80% power; flatness within +-0.2 is shown with 80% power "
              "when the true change is 0 and the per-seed ln differences' standard deviation is below 0.10 (0.17)")


def role_verdict(values: dict, matters: list, flat: list, key, names: tuple[str, str] = ("a", "b")
                 ) -> tuple[Verdict, dict]:
    """Does the loss fall along the ``matters`` axis and stay flat along the ``flat`` axis?

    ``values[key(a, b)]`` is ``{seed: ln(1 - R^2)}`` for ``a`` in ``matters`` and ``b`` in ``flat``
    (both ascending); the seeds are shared, so every comparison is a paired per-seed difference.
    Parts: at every ``b``, the largest ``a`` minus the smallest is below 0 (falls); at every ``a``,
    the largest ``b`` minus the smallest lies within ``(-ROLE_MARGIN, ROLE_MARGIN)`` (flat: an
    equivalence, not a non-significant difference). Reproduced if every part is; refuted if the
    mirror image holds (falls along ``flat``, flat along ``matters``), undecided where both do (a small
    fall along both axes); otherwise the parts decide
    (:func:`combine`: a decided change beyond the margin along the flat axis is *not reproduced*).
    ``names`` names the two axes in the parts' labels. Returns the verdict and ``{"parts",
    "reasons", "diffs"}`` (the paired intervals by the cells they compare)."""
    def diff(cell_hi, cell_lo):
        return paired_difference(values.get(cell_hi, {}), values.get(cell_lo, {}))

    a_lo, a_hi, b_lo, b_hi = matters[0], matters[-1], flat[0], flat[-1]
    falls = {b: diff(key(a_hi, b), key(a_lo, b)) for b in flat}
    changes = {a: diff(key(a, b_hi), key(a, b_lo)) for a in matters}
    na, nb = names
    parts = {f"falls from {na}={a_lo} to {na}={a_hi} at {nb}={b}": compare_paired(
        d, f"ln(1 - R^2) at {nb}={b}: {na}={a_hi} minus {na}={a_lo}", ROLE_MIN_SEEDS) for b, d in falls.items()}
    parts.update({f"flat from {nb}={b_lo} to {nb}={b_hi} at {na}={a}": equivalent(
        d, ROLE_MARGIN, f"ln(1 - R^2) at {na}={a}: {nb}={b_hi} minus {nb}={b_lo}", min_pairs=ROLE_MIN_SEEDS)
        for a, d in changes.items()})
    mirror_falls = {a: diff(key(a, b_hi), key(a, b_lo)) for a in matters}
    mirror_flat = {b: diff(key(a_hi, b), key(a_lo, b)) for b in flat}
    mirror = [compare_paired(d, "", ROLE_MIN_SEEDS) for d in mirror_falls.values()] + \
        [equivalent(d, ROLE_MARGIN, "", min_pairs=ROLE_MIN_SEEDS) for d in mirror_flat.values()]
    # the mirror image is every one of its parts at once (an intersection: its p is the largest)
    holds = Verdict("refuted", "holds", max(v.p for v in mirror)) if all(v.word == "reproduced" for v in mirror) \
        else Verdict("undecided", "underpowered: does not hold")
    verdict = combine(parts, {"the mirror image (the loss falls along the other axis and is flat along the claimed "
                              "one)": holds})
    if holds.word == "refuted" and all(v.word == "reproduced" for v in parts.values()):
        # a small decided fall along both axes, within the margin along each, is the claim and its mirror at once:
        # the criterion then says both words, and "refuted" was printed beside four reproduced parts (an audit,
        # 2026-11-29); the data cannot tell which axis limits the loss
        verdict = Verdict("undecided", "underpowered: the claim and its mirror image both hold (the loss falls by less "
                                       "than the margin along both axes): the seeds cannot tell which axis limits it")
    diffs = {(key(a_hi, b), key(a_lo, b)): d for b, d in falls.items()}
    diffs.update({(key(a, b_hi), key(a, b_lo)): d for a, d in changes.items()})
    return verdict, {"parts": {k: v.word for k, v in parts.items()}, "reasons": {k: v.reason for k, v in parts.items()},
                     "diffs": diffs}


def _role_tolerances(diffs: dict) -> dict:
    """Each compared cell's tolerance: the tightest half-width of the paired intervals it enters."""
    return tolerances((cell, d.half_width) for pair, d in diffs.items() for cell in pair)


def _error_values(folder, label) -> tuple[dict, dict, dict]:
    """``({cell: Interval of 1 - R^2}, {cell: {seed: ln(1 - R^2)}}, {cell: failed runs})`` after selection on validation."""
    values, failed = seed_values(folder, label, _error)
    agg = {k: error_cell(v) if v else interval([]) for k, v in values.items()}
    return agg, {k: _ln_errors(v) for k, v in values.items()}, failed


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
                                      (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)),
                             ctx.size("seeds", *(_seeds(ROLE_SEEDS[s]) for s in ("quick", "medium", "full"))),
                             test_seed=ctx.test_seed)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-4"))
    label = lambda c: (c["model"]["ffn_width"], c["model"]["heads"])  # noqa: E731
    agg, logs, failed = _error_values(folder, label)
    rows = [{"ffn_width": m, "heads": h, "one_minus_r2_test": v.value, "ci_low": v.low, "ci_high": v.high,
             "seeds": v.n, "failed": failed.get((m, h), 0)} for (m, h), v in sorted(agg.items())]
    verdict, numbers = role_verdict(logs, list(widths), list(heads), lambda m, h: (m, h), ("m", "H"))
    fig = _grid_figure(ctx.out / "figure.png", agg, heads, "H", widths, "FFN width m", lambda h, m: (m, h),
                       "fixed memory, lags (2, 5), sin(4 pi x1 x2) + (x1 - x2)/2: width vs heads")
    reason = "; ".join(numbers["reasons"].values())
    regime = cell_regime(folder, ctx.scale, label, _role_tolerances(numbers.pop("diffs")), _ln_error_measure,
                         "ln(1 - R^2)", min_seeds=ROLE_MIN_SEEDS, name=lambda c: f"m={c[0]} H={c[1]}")
    return ClaimResult(verdict, reason, rows, fig,
                       {**numbers, "test_seed": ctx.test_seed},
                       "readout sin(4 pi x1 x2) + (x1 - x2)/2, not the spec's bare sin(4 pi x1 x2): with the bare "
                       "readout no low-degree part tells gradient descent where the two lags are, and every model "
                       "stays at R^2 ~ 0 (see tasks/memory.py)", regime)


register(Claim(
    "wang-e-4", "FFN width, not heads, buys a complex readout of simple memories (Table 4, insight 2a)",
    "Wang & E 2024, Table 4; spec §6 claim 4",
    "1-layer DP-free models with a learned per-offset (T5-style, 'free') position bias, d_model 16, on fixed memory "
    "y_t = sin(4 pi x_(t-2) x_(t-5)) + (x_(t-2) - x_(t-5))/2, x ~ U[-1,1], length 16; FFN width m in {4, 16, 64, 256} "
    "and heads H in {2, 4, 8, 16} (quick: m in {4, 32, 128}, H in {2, 8}, 1500 steps, 5 learning rates; medium: the "
    "full grid at 2000 steps and 4 learning rates; full: 4000 steps, 6 learning rates); learning rate selected per "
    "configuration and seed on validation; test 1 - R^2 per seed (exact zeros floored at 2^-53), 5 seeds (full: 10). "
    "Compared by paired per-seed differences of ln(1 - R^2) with 95% t intervals. Reproduced if (a) at every H the "
    "loss at the largest m is below the loss at the smallest m (interval below 0), and (b) it is flat in H: at every "
    f"m the change from the smallest to the largest H lies within the margin +-{ROLE_MARGIN:g} (a factor "
    f"{math.exp(ROLE_MARGIN):.2f}), the whole interval inside. Refuted if the mirror image holds or the loss rises "
    "with m; not reproduced if a change in H lies wholly beyond the margin; undecided otherwise, and with fewer "
    f"than {ROLE_MIN_SEEDS} valid seeds in a cell. " + ROLE_POWER + ". Medium and full score on a fresh test sample.",
    claim4, "2.4 CPU-minutes (5.6 min on 2 cores shared with other jobs)", "4 x 4 grid, 4000 steps, 6 learning rates, 10 seeds: estimated "
    "(not run) 90 minutes on 2 CPU cores", tag="[R]", medium="4 x 4 grid, 2000 steps, 4 learning rates",
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
                             ctx.size("seeds", (0, 1, 2), _seeds(ROLE_SEEDS["medium"]), _seeds(ROLE_SEEDS["full"])),
                             test_seed=ctx.test_seed)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-5"))
    label = lambda c: (c["model"]["rpe"], c["model"]["heads"], c["model"]["ffn_width"])  # noqa: E731
    agg, logs, failed = _error_values(folder, label)
    rows = [{"rpe": r, "heads": h, "ffn_width": m, "one_minus_r2_test": v.value, "ci_low": v.low, "ci_high": v.high,
             "seeds": v.n, "failed": failed.get((r, h, m), 0)} for (r, h, m), v in sorted(agg.items())]
    verdicts, numbers, diffs = {}, {}, {}
    for r in rpes:
        verdicts[r], numbers[r] = role_verdict(logs, list(heads), list(widths), lambda h, m, r=r: (r, h, m), ("H", "m"))
        diffs.update(numbers[r].pop("diffs"))
    verdict = combine(verdicts)
    series, bands = {}, {}
    for r in rpes:
        for m in widths:
            vals = [agg[r, h, m] for h in heads]
            series[f"{r}, m = {m}"] = (list(heads), [v.value for v in vals])
            bands[f"{r}, m = {m}"] = ([v.low for v in vals], [v.high for v in vals])
    fig = line_figure(ctx.out / "figure.png", series, "heads H", "test 1 - R^2 (geometric mean, 95% CI)",
                      "fixed memory, mean of x_(t-1..t-8): heads vs width, lin and log RPE", bands=bands)
    reason = "; ".join(f"{r} ({verdicts[r].word}): " + "; ".join(numbers[r]["reasons"].values()) for r in rpes)
    regime = cell_regime(folder, ctx.scale, label, _role_tolerances(diffs), _ln_error_measure, "ln(1 - R^2)",
                         min_seeds=ROLE_MIN_SEEDS, name=lambda c: f"{c[0]} H={c[1]} m={c[2]}")
    return ClaimResult(verdict, reason, rows, fig,
                       {"by_rpe": numbers, "verdicts": {r: v.word for r, v in verdicts.items()}, "test_seed": ctx.test_seed},
                       "a DP-free lin/log head's kernel is monotone in the distance, so a delta at lag T > 0 needs a "
                       "signed combination of heads (Theorem 1); the FFN has nothing to do for a linear readout", regime)


register(Claim(
    "wang-e-5", "Heads, not FFN width, buy many memories under a simple readout (insight 2b)",
    "Wang & E 2024, insight 2b (the presumed mirror of Table 4); spec §6 claim 5",
    "1-layer DP-free models with lin-type and log-type position biases (learnable slopes, infinite-past "
    "normaliser), d_model 16, head width 2, on fixed memory y_t = mean(x_(t-1), ..., x_(t-8)) (M = 8 lags), "
    "x ~ U[-1,1], length 32; heads H in {1, 2, 4, 8, 16} and FFN width m in {8, 32, 128} (quick: H in {1, 4, 16}, "
    "m in {8, 128}, 1200 steps, 5 learning rates, 3 seeds; medium: 2500 steps, the same 5 learning rates, 5 seeds; "
    "full: 4000 steps, 6, 10 seeds); learning rate selected per configuration and seed on validation; test 1 - R^2 "
    "per seed (exact zeros floored at 2^-53), compared by paired per-seed differences of ln(1 - R^2) with 95% t "
    "intervals. For each RPE type: reproduced if (a) at every m the loss at the largest H is below the loss at the "
    f"smallest H (interval below 0), and (b) it is flat in m: at every H the change from the smallest to the largest "
    f"m lies within +-{ROLE_MARGIN:g} (the whole interval inside); refuted if the mirror image holds or the loss "
    "rises with H; not reproduced if a change in m lies wholly beyond the margin; undecided otherwise, and with "
    f"fewer than {ROLE_MIN_SEEDS} valid seeds in a cell. The claim is reproduced if it is for both RPE types, "
    "refuted if it is refuted for either. " + ROLE_POWER + " (3 seeds at quick: 3.10 standard deviations, and "
    "flatness only below 0.06). Medium and full score on a fresh test sample.",
    claim5, "about 6 CPU-minutes (measured: 5.4 user + 0.6 system, on 2 busy cores)", "5 x 3 grid, 4000 steps, 6 "
    "learning rates, 10 seeds: estimated (not run) 4-6 hours on 2 CPU cores", tag="[D]",
    medium="5 x 3 grid, 2500 steps, 5 learning rates",
    paper_claim="under a simple (linear) readout, more memories need more heads, not a wider FFN (insight 2b; the "
                "spec's presumed mirror of Table 4, so this verdict rests on a [D] part)"))


# ---- claim 6: dot products are not needed for fixed memories (Table 6) -----------------------------------

CLAIM6_LAGS = (2, 5, 9)
CLAIM6_TASK = {"length": 16, "lags": ",".join(map(str, CLAIM6_LAGS)), "readout": "boolean"}
CLAIM6_SOLVED = 0.9    # a seed succeeds when its test R^2 (at the lr selected on validation) reaches this
CLAIM6_MARGIN = 0.15   # "DP adds at most a small gain": p_DP - p_DP-free below 15 points of success rate
CLAIM6_SEEDS = {"quick": 24, "medium": 64, "full": 96}
CLAIM6_MIN_SEEDS = 20  # valid seeds per arm below which no word is given


def trainability_verdict(dp: tuple[int, int], free: tuple[int, int], min_seeds: int = CLAIM6_MIN_SEEDS
                         ) -> tuple[Verdict, dict]:
    """``(successes, valid seeds)`` per arm. Two parts: DP-free learns it (the exact interval of its
    success rate lies above 1/2; not reproduced if it lies below while DP's lies above, since the
    claim is comparative: where neither arm learns the task the budget, not the dot product, is what
    failed, and the part is *undecided: out of regime*) and the dot product adds less than
    :data:`CLAIM6_MARGIN` (Newcombe's interval of ``p_DP - p_DP-free`` below the margin; refuted if
    it lies above it). Fisher's exact p is reported, not used: a non-significant gap is not
    equivalence. Undecided with fewer than ``min_seeds`` valid seeds in an arm."""
    rate_dp, rate_free = clopper_pearson(*dp), clopper_pearson(*free)
    stats = {"rate_dp": rate_dp, "rate_dpfree": rate_free, "fisher_p": fisher_exact(*dp, *free)}
    if min(dp[1], free[1]) < min_seeds:
        return Verdict("undecided", f"underpowered: {dp[1]} and {free[1]} valid seeds, at least {min_seeds} per arm "
                                    "needed"), stats
    said_free, said_dp = f"DP-free succeeds in {free[0]}/{free[1]} {rate_free.fmt(2, against=(0.5,))}", \
        f"DP in {dp[0]}/{dp[1]} {rate_dp.fmt(2, against=(0.5,))}"
    if rate_free.low > 0.5:
        learns = Verdict("reproduced", f"{said_free}: above 1/2", binomial_tail(*free, 0.5, True))
    elif rate_free.high < 0.5 and rate_dp.low > 0.5:
        # two one-sided tests that must both hold (an intersection): the larger p stands for both
        learns = Verdict("not reproduced", f"{said_free}: below 1/2, {said_dp}: above it",
                         max(binomial_tail(*free, 0.5, False), binomial_tail(*dp, 0.5, True)))
    elif rate_free.high < 0.5 and rate_dp.high < 0.5:
        learns = Verdict("undecided", f"out of regime: neither arm learns it ({said_free}, {said_dp}: both below "
                                      "1/2), so this budget cannot tell whether the dot product is needed")
    elif rate_free.high < 0.5:
        learns = Verdict("undecided", f"underpowered: {said_free}: below 1/2, but {said_dp}: the interval "
                                      "contains 1/2")
    else:
        learns = Verdict("undecided", f"underpowered: {said_free}: the interval contains 1/2")
    gain, diff = rate_margin_verdict(dp, free, CLAIM6_MARGIN, "success rate with DP minus DP-free")
    stats["difference"] = diff
    parts = {"DP-free learns it": learns, "DP adds less than the margin": gain}
    return explained(parts, f"Fisher's exact p = {stats['fisher_p']:.3g} (reported)"), stats


def trainability_despite_crashes(dp: Outcomes, free: Outcomes, min_seeds: int = CLAIM6_MIN_SEEDS
                                 ) -> tuple[Verdict, dict]:
    """:func:`trainability_verdict` on the arms' counted seeds (a diverged seed counts as one that failed), and
    the same word whatever the crashed runs (no result) would have been: each counted as a success and as a
    failure, in both arms; where the words differ, undecided (train them again with ``--retry-failed``)."""
    verdict, stats = trainability_verdict((dp.passed, dp.valid), (free.passed, free.valid), min_seeds)
    if not dp.broken and not free.broken:
        return verdict, stats
    words = {}
    for dp_won in (0, dp.broken):
        for free_won in (0, free.broken):
            other, _ = trainability_verdict((dp.passed + dp_won, dp.valid + dp.broken),
                                            (free.passed + free_won, free.valid + free.broken), min_seeds)
            words[(dp_won, free_won)] = other.word
    if set(words.values()) == {verdict.word}:
        return verdict, stats
    return Verdict("undecided", f"underpowered: {verdict.reason}; but {dp.broken} and {free.broken} crashed run(s) "
                                "(no result) could change the word: counted as successes or failures it is "
                                + ", ".join(sorted(set(words.values()))) + " (train them again: --retry-failed)"), stats


def claim6(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.dpfree import build_dpfree_boolean, check_dpfree_boolean
    from expressivity.experiments.sweep import Sweep

    net, rep = build_dpfree_boolean(CLAIM6_LAGS, CLAIM6_TASK["length"])
    rep = check_dpfree_boolean(net, rep)
    heads, width = ctx.size("heads", 4, 4, 8), ctx.size("widths", 64, 64, 256)
    seeds = ctx.size("seeds", *(_seeds(CLAIM6_SEEDS[s]) for s in ("quick", "medium", "full")))
    cells = [{"mixer": mixer, "rpe": "free", "heads": heads, "d_model": 16, "ffn_width": width, "layers": 1}
             for mixer in ("attention", "dpfree")]
    configs = _sweep_configs("fixed-memory", CLAIM6_TASK, cells, ctx.size("steps", 2000, 3000, 5000),
                             ctx.size("lrs", (1e-3, 3e-3, 1e-2), (1e-3, 3e-3, 1e-2), (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)),
                             seeds, test_seed=ctx.test_seed)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-6"))
    values, outcomes = seed_outcomes(folder, lambda c: c["model"]["mixer"], _r2, CLAIM6_SOLVED, CLAIM6_SOLVED)
    arms = {m: outcomes.get(m, Outcomes(0, 0, 0)) for m in ("attention", "dpfree")}
    min_seeds = ctx.size("min_seeds", CLAIM6_MIN_SEEDS, CLAIM6_MIN_SEEDS, CLAIM6_MIN_SEEDS)
    counts = {m: (o.passed, o.valid) for m, o in arms.items()}
    if min(o.valid for o in arms.values()) > 0:
        trainable, stats = trainability_despite_crashes(arms["attention"], arms["dpfree"], min_seeds)
    else:
        trainable, stats = Verdict("undecided", "underpowered: no valid runs"), {}
    expressible = Verdict("reproduced" if rep.ok else "refuted",
                          f"explicit DP-free network ({rep.constants['heads']} heads, FFN {rep.constants['ffn_width']}): "
                          f"exact at every sign pattern and scored position: {rep.ok}")
    parts = {"expressivity (construction)": expressible, "trainability (success rates)": trainable}
    verdict = combine(parts)
    rows = [{"part": "expressivity", "model": "explicit DP-free network", "heads": rep.constants["heads"],
             "ffn_width": rep.constants["ffn_width"], "result": "exact" if rep.ok else "FAILED",
             "sup_error": rep.error("sup_error").value, "arithmetic": "exact rationals"}]
    for mixer, label in (("attention", "with DP"), ("dpfree", "DP-free")):
        o = arms[mixer]
        rate = o.pass_rate()
        r2 = interval(v for v in values.get(mixer, {}).values() if math.isfinite(v))
        rows.append({"part": "trainability", "model": label, "heads": heads, "ffn_width": width,
                     "result": f"{o.passed}/{o.valid} valid seeds reach R^2 >= {CLAIM6_SOLVED}",
                     "success_rate": rate.value if o.valid else None, "rate_ci_low": rate.low if o.valid else None,
                     "rate_ci_high": rate.high if o.valid else None, "mean_r2": r2.value, "failed_runs": o.broken,
                     "diverged_seeds": o.diverged})
    if "difference" in stats:
        d = stats["difference"]
        rows.append({"part": "trainability", "model": "DP minus DP-free", "result": f"margin {CLAIM6_MARGIN:g}",
                     "success_rate": d.value, "rate_ci_low": d.low, "rate_ci_high": d.high})
    fig = _claim6_figure(ctx, values, arms)
    tol = stats["difference"].half_width if "difference" in stats else math.inf
    regime = cell_regime(folder, ctx.scale, lambda c: c["model"]["mixer"], {"attention": tol, "dpfree": tol},
                         _passes(CLAIM6_SOLVED), "share of seeds with validation R^2 >= 0.9", min_seeds=min_seeds,
                         notes="fresh samples every step (no epochs)", diverged_counts=True)
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "successes": {m: list(v) for m, v in counts.items()},
               "failed_runs": {m: o.broken for m, o in arms.items()},
               "diverged_seeds": {m: o.diverged for m, o in arms.items()}, "fisher_p": stats.get("fisher_p"),
               "difference_dp_minus_dpfree": list(stats["difference"][:3]) if "difference" in stats else None,
               "margin": CLAIM6_MARGIN, "construction_ok": rep.ok, "test_seed": ctx.test_seed}
    return ClaimResult(verdict, "; ".join(f"{k}: {part_reason(v, verdict)}" for k, v in parts.items()), rows, fig, numbers,
                       "a 3-sparse parity has no low-order correlation to follow, so a seed either finds the lags or "
                       "stays at R^2 ~ 0: expressivity (the explicit network) and trainability (how often gradient "
                       "descent finds it) are different questions, answered separately", regime)


def _claim6_figure(ctx, values: dict, arms: dict):
    from expressivity.figures import finish, pyplot

    plt = pyplot()
    fig_, ax = plt.subplots(figsize=(6.4, 4.2))
    for x, mixer in enumerate(("attention", "dpfree")):
        got = sorted(v for v in values.get(mixer, {}).values() if math.isfinite(v))
        ax.scatter([x + 0.15 * ((i % 5) - 2) / 2 for i in range(len(got))], got, s=12, alpha=0.7)
    ax.axhline(CLAIM6_SOLVED, ls="--", color="k", lw=0.8, label=f"success: R^2 >= {CLAIM6_SOLVED}")
    ax.set_xticks([0, 1], [f"with DP ({arms['attention'].passed}/{arms['attention'].valid})",
                           f"DP-free ({arms['dpfree'].passed}/{arms['dpfree'].valid})"])
    ax.set_ylabel("test R^2 per seed (lr selected on validation)")
    return finish(fig_, ax, ctx.out / "figure.png", "sparse parity x_(t-2) x_(t-5) x_(t-9): trainability per seed")


register(Claim(
    "wang-e-6", "Dot-product attention is not needed for fixed memories (Table 6, insight 3a)",
    "Wang & E 2024, Table 6; spec §6 claim 6",
    "Target y_t = x_(t-2) x_(t-5) x_(t-9), x = +-1, length 16. (i) Expressivity: the explicit DP-free network (3 "
    "hardmax heads with one-hot relative biases, a ReLU layer of 3 units) is checked exactly at every sign pattern "
    "and scored position. (ii) Trainability: 1-layer models with a learned per-offset ('free') position bias, "
    "d_model 16, 4 heads, FFN 64 (full: 8 heads, FFN 256), with DP (softmax attention) and without (DP-free); "
    f"learning rate selected per seed on validation (quick: 2000 steps, lr {{0.001, 0.003, 0.01}}, "
    f"{CLAIM6_SEEDS['quick']} seeds; medium: 3000 steps, the same learning rates, {CLAIM6_SEEDS['medium']} seeds; "
    f"full: 5000 steps, 5 learning rates, {CLAIM6_SEEDS['full']} seeds); a seed succeeds if its test R^2 >= 0.9; "
    "a seed that diverged (every learning rate, or its test pass) counts as one that did not succeed; runs that "
    "crashed (no result) are reported per arm and not counted, and a word stands only if it is the same with them "
    "counted as successes or as failures. (ii) is reproduced if "
    "DP-free's success rate has its exact (Clopper-Pearson) 95% interval above 1/2 and the gain of the dot "
    f"product is below the margin {CLAIM6_MARGIN:g}: the upper end of Newcombe's 95% interval of p_DP - p_DP-free "
    "(the hybrid interval with each arm's exact Clopper-Pearson interval, which keeps a decision at the margin "
    "under 2.5%: Wilson's arms did not) "
    f"is below {CLAIM6_MARGIN:g}; refuted if its lower end is above {CLAIM6_MARGIN:g} (a gain of at least the "
    "margin); not reproduced if DP-free's interval lies below 1/2 while DP's lies above it (where both lie "
    "below, neither arm learns the task at this budget: undecided, out of regime); otherwise undecided (a gap "
    f"that is merely not significant is not equivalence), and with fewer than {CLAIM6_MIN_SEEDS} valid seeds in an "
    "arm. Fisher's exact p is reported beside it. Power: if both arms succeed with probability 0.9, the margin is met with "
    "probability 0.30 at 24 seeds, 0.73 at 64 and 0.90 at 96 (0.42, 0.90, 0.99 at 0.95; 0.19, 0.52, 0.71 at "
    "0.8). The claim is reproduced if (i) and (ii) are, refuted if either is. Medium and full score on a fresh "
    "test sample.",
    claim6, "5 minutes (3.9 CPU-minutes; measured 2026-11-28, AMD EPYC, 2 cores shared with other work)",
    f"{CLAIM6_SEEDS['full']} seeds, 8 heads, FFN 256, 5000 steps",
    tag="[V]", medium=f"{CLAIM6_SEEDS['medium']} seeds, 3000 steps, 3 learning rates",
    paper_claim="for fixed (content-independent) memories, attention without the dot product performs as well as "
                "with it (Table 6, insight 3a)"))


# ---- claim 7: DP for adaptive memories at a fixed width, and depth for nesting (insights 3b, 1a) -----

CLAIM7_SOLVED, CLAIM7_FAILED = 0.9, 0.7   # a seed passes at R^2 >= 0.9 and fails at R^2 <= 0.7
CLAIM7_MIN_SEEDS = 6
CLAIM7_SEEDS = {"quick": 3, "medium": 10, "full": 12}
SCAN_MODEL = {"rpe": "free", "ape": "none", "layers": 2, "heads": 2, "d_model": 16, "ffn_width": 32}
DEPTH_MODEL = {"rpe": "free", "ape": "none", "heads": 2, "d_model": 32, "ffn_width": 64, "mixer": "attention"}
WIDTH_RANGE = 32   # the pointer range of the DP-free width scan (above the d = 16 bound, 18)


def capacity_bound(layers: int, heads: int, d_model: int, d_head: int) -> int:
    """The largest pointer range a DP-free stack can serve at fixed size (the project's derivation
    [D], spec §9): content reaches position t only through content-independent mixing, so the
    summary at t must carry every candidate: ``H_1 + sum_{l >= 2} min(d_model, H d_head)``."""
    return heads + sum(min(d_model, heads * d_head) for _ in range(2, layers + 1))


def scan_verdict(table: dict, bound: int, min_seeds: int = CLAIM7_MIN_SEEDS) -> Verdict:
    """``table[T] = (DP Outcomes, DP-free Outcomes)``. Reproduced if at every T above ``bound`` DP
    solves and DP-free fails (per-seed outcomes: the exact interval of the share of passing, or
    failing, seeds above 1/2); refuted if DP-free solves at some T above the bound; undecided if no
    T above the bound was scanned, a cell has too few valid seeds, or DP itself does not solve (out of regime
    where DP decidedly fails: more seeds would not decide it)."""
    above = {T: v for T, v in table.items() if T > bound}
    if not above:
        return Verdict("undecided", f"underpowered: no pointer range above the bound {bound} was scanned")
    status = {T: (dp.status(min_seeds), free.status(min_seeds)) for T, (dp, free) in above.items()}
    # "solves at some T" is one of len(above) tests: Bonferroni (each cell's exact p times their number)
    solved = [T for T, (_, s) in status.items() if s == "solved" and above[T][1].p("solved") * len(above) <= ALPHA]
    if solved:
        return Verdict("refuted", "DP-free solves a pointer range above the capacity bound at fixed width: "
                       + ", ".join(f"T={T} ({above[T][1].fmt()})" for T in solved),
                       min(1.0, min(above[T][1].p("solved") for T in solved) * len(above)), len(above))
    parts = {}
    for T, (dp, free) in above.items():
        s_dp, s_free = status[T]
        if "too few seeds" in (s_dp, s_free):
            parts[f"T={T}"] = Verdict("undecided", f"underpowered: T={T}: DP {dp.fmt()}, DP-free {free.fmt()}: fewer "
                                                   f"than {min_seeds} valid seeds")
        elif s_dp == "failed":
            # the claim's premise (DP models succeed) decidedly does not hold: more seeds cannot decide this range, so
            # it is out of the claim's regime, as claim 6 files an arm that does not learn (it was "underpowered": an
            # audit, 2026-11-29)
            parts[f"T={T}"] = Verdict("undecided", f"out of regime: T={T}: DP itself fails ({dp.fmt()}), so the "
                                                   "comparison is not the one the claim is about")
        elif s_dp != "solved":
            parts[f"T={T}"] = Verdict("undecided", f"underpowered: T={T}: DP does not solve it ({dp.fmt()})")
        elif s_free == "failed":
            parts[f"T={T}"] = Verdict("reproduced", f"T={T}: DP solves ({dp.fmt()}), DP-free fails ({free.fmt()})")
        elif s_free == "solved":
            parts[f"T={T}"] = Verdict("undecided", f"underpowered: T={T}: DP-free solves ({free.fmt()}) on its own "
                                                   f"interval, not across the {len(above)} ranges scanned")
        else:
            parts[f"T={T}"] = Verdict("undecided", f"underpowered: T={T}: DP-free neither solves nor fails ({free.fmt()})")
    return explained(parts)


def depth_verdict(table: dict, min_seeds: int = CLAIM7_MIN_SEEDS) -> Verdict:
    """``table[(nesting k, layers L)]`` of DP models' Outcomes: reproduced if every L >= k + 1 solves
    and every L <= k fails; refuted if some L <= k solves (less depth than claimed suffices); not
    reproduced if a deep enough model fails; undecided where a needed cell is unclear or has too
    few valid seeds."""
    status = {key: o.status(min_seeds) for key, o in table.items()}
    need = {(k, L): "solved" if L >= k + 1 else "failed" for (k, L) in table}
    # "some cell does the opposite" is a union of len(table) tests: a cell's word counts against the claim
    # only when its exact p times their number is at most 0.025 (Bonferroni); "every cell as claimed" is an
    # intersection and needs no correction. A cell opposite on its own interval only is left open.
    opposite = {key for key, s in status.items() if s in ("solved", "failed") and s != need[key]
                and table[key].p(s) * len(table) <= ALPHA}
    early = [f"k={k} L={L} ({table[k, L].fmt()})" for (k, L) in sorted(opposite) if L <= k]
    def family(cells) -> float:   # the Bonferroni p of "one of these cells is opposite"
        return min(1.0, min(table[key].p(status[key]) for key in cells) * len(table))

    if early:
        return Verdict("refuted", "a model with depth <= nesting solves: " + ", ".join(early),
                       family([key for key in opposite if key[1] <= key[0]]), len(table))
    wrong = sorted(opposite)
    if wrong:
        return Verdict("not reproduced", "deep enough models fail: " + ", ".join(
            f"k={k} L={L} ({table[k, L].fmt()})" for k, L in wrong), family(wrong), len(table))
    open_ = [key for key, want in need.items() if status[key] != want]
    if open_:
        return Verdict("undecided", "underpowered: " + ", ".join(
            f"k={k} L={L} {status[k, L]} ({table[k, L].fmt()})" for k, L in open_), None, len(table))
    return Verdict("reproduced", "every L >= k + 1 solves and every L <= k fails (per-seed outcomes)", None,
                   len(table))


def width_reading(table: dict, T: int, min_seeds: int = CLAIM7_MIN_SEEDS) -> str:
    """What DP-free's outcome across widths at range ``T`` says (outside the verdict):
    ``table[d] = (bound, Outcomes)``. Capacity if it fails below its bound and solves above it;
    trainability if it fails even where the bound allows T; else unclear."""
    below = [o.status(min_seeds) for b, o in table.values() if b < T]
    above = [o.status(min_seeds) for b, o in table.values() if b >= T]
    if above and all(s == "failed" for s in above):
        return "trainability: DP-free fails even at widths whose capacity bound allows the range"
    if above and below and all(s == "solved" for s in above) and all(s == "failed" for s in below):
        return "capacity: DP-free fails below its capacity bound and solves above it"
    return "unclear: " + ", ".join(f"d={d} (bound {b}): {o.status(min_seeds)}" for d, (b, o) in sorted(table.items()))


def _label7(config: dict, scan_model: dict) -> tuple:
    """A claim-7 configuration's cell: ``("depth", k, L)`` (the DP models of the depth table),
    ``("scan", T, mixer)`` (the scan's width) or ``("width", d)`` (DP-free at another width)."""
    model, args = config["model"], config["task"]["args"]
    if model["mixer"] == "attention" and model["d_model"] == DEPTH_MODEL["d_model"] != scan_model["d_model"]:
        return ("depth", args["depth"], model["layers"])
    if model["d_model"] == scan_model["d_model"]:
        return ("scan", args["max_lag"], model["mixer"])
    return ("width", model["d_model"])


def claim7_decides(scan_model: dict, bound: int) -> Callable[[dict], bool]:
    """The configurations claim 7's verdict rests on: the scan's cells above the capacity ``bound``
    (the scan's model is ``scan_model``) and every depth-against-nesting cell; not the width scan
    (a diagnostic, outside the verdict)."""
    def decides(config: dict) -> bool:
        label = _label7(config, scan_model)
        return label[0] == "depth" or (label[0] == "scan" and label[1] > bound)

    return decides


def _scan_label(config: dict) -> tuple:
    return ("scan", config["task"]["args"]["max_lag"], config["model"]["mixer"])


def _depth_label(config: dict) -> tuple:
    return ("depth", config["task"]["args"]["depth"], config["model"]["layers"])


def claim7_configs(ctx: ClaimContext, model: dict, ranges, depths, widths, steps, lrs, seeds) -> list:
    """The pointer-range scan (DP and DP-free at ``model``'s width), the DP-free width scan at
    :data:`WIDTH_RANGE` and the depth-against-nesting table."""
    configs = []
    for T in ranges:
        cells = [{**model, "mixer": mixer} for mixer in ("attention", "dpfree")]
        configs += _sweep_configs("nested-memory", {"length": max(16, 2 * T), "max_lag": T, "depth": 1}, cells, steps,
                                  lrs, seeds, test_seed=ctx.test_seed)
    width_cells = [{**model, "mixer": "dpfree", "d_model": d, "ffn_width": 2 * d} for d in widths]
    configs += _sweep_configs("nested-memory", {"length": 2 * WIDTH_RANGE, "max_lag": WIDTH_RANGE, "depth": 1},
                              width_cells, steps, lrs, seeds, test_seed=ctx.test_seed)
    for k in (1, 2):
        configs += _sweep_configs("nested-memory", {"length": 16, "max_lag": 8, "depth": k},
                                  [{**DEPTH_MODEL, "layers": L} for L in depths], steps, lrs, seeds,
                                  test_seed=ctx.test_seed)
    return distinct(configs)


def claim7(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.dpfree import build_dpfree_pointer, check_dpfree_pointer
    from expressivity.experiments.sweep import Sweep

    ranges = ctx.size("ranges", (4, 8, 16, 32), (4, 8, 16, 32, 64), (4, 8, 16, 32, 64))
    depths = ctx.size("layers", (1, 2, 3), (1, 2, 3), (1, 2, 3, 4))
    widths = ctx.size("widths", (16, 32), (8, 16, 32, 64), (8, 16, 32, 64))
    # quick {0.003, 0.01, 0.03}, medium {0.001, ..., 0.03}: the first medium run, on {0.001, 0.003, 0.01}, chose
    # 0.01 for nearly every configuration and seed; with 0.03 added DP-free at T = 64 still chose the top for 5 of 5
    # seeds, so full adds 0.1 (the bracketing rule's next step)
    lrs = ctx.size("lrs", (3e-3, 1e-2, 3e-2), (1e-3, 3e-3, 1e-2, 3e-2), (1e-3, 3e-3, 1e-2, 3e-2, 1e-1))
    seeds = ctx.size("seeds", *(_seeds(CLAIM7_SEEDS[s]) for s in ("quick", "medium", "full")))
    min_seeds = ctx.size("min_seeds", CLAIM7_MIN_SEEDS, CLAIM7_MIN_SEEDS, CLAIM7_MIN_SEEDS)
    model = {**SCAN_MODEL, **ctx.overrides.get("scan_model", {})}
    configs = claim7_configs(ctx, model, ranges, depths, widths, ctx.size("steps", 1500, 3000, 10000), lrs, seeds)
    folder, _ = ctx.run_sweep(Sweep(tuple(configs), {"train.lr": "min val_loss"}, "wang-e-7"))
    label = lambda c: _label7(c, model)  # noqa: E731
    values, failed = seed_values(folder, label, _r2)

    def outcomes(key) -> Outcomes:
        # claim 7 keeps the rule its folders state (a run that failed, crashed or diverged, is left out and not
        # counted against a status) until it is run again: a diverged seed should count as failing, as claim 6's now
        # does (an audit, 2026-11-29), but a changed criterion needs every claim-7 folder judged again, and the
        # medium folder's 2.8-hour sweep is not kept
        return Outcomes.of(values.get(key, {}), CLAIM7_SOLVED, CLAIM7_FAILED, failed.get(key, 0), against=False)

    bound = capacity_bound(model["layers"], model["heads"], model["d_model"], model["d_model"] // model["heads"])
    small = min(ranges)
    net, rep = build_dpfree_pointer(small, max(16, 2 * small))
    rep = check_dpfree_pointer(net, rep)
    scan = {T: (outcomes(("scan", T, "attention")), outcomes(("scan", T, "dpfree"))) for T in ranges}
    depth = {(k, L): outcomes(("depth", k, L)) for k in (1, 2) for L in depths}
    width = {d: (capacity_bound(model["layers"], model["heads"], d, d // model["heads"]),
                 outcomes(("scan", WIDTH_RANGE, "dpfree") if d == model["d_model"] else ("width", d))) for d in widths}
    rows = _claim7_rows(values, scan, depth, width, bound, rep, small, min_seeds)
    parts = {"construction: DP-free can at small T": Verdict("reproduced" if rep.ok else "refuted",
                                                             f"exact DP-free network at T = {small}: {rep.ok}"),
             "scan: DP-free falls past the bound at fixed width": scan_verdict(scan, bound, min_seeds),
             "depth for nesting": depth_verdict(depth, min_seeds)}
    verdict = combine(parts)
    reading = width_reading(width, WIDTH_RANGE, min_seeds) if widths else "no width scan"
    fig = _claim7_figure(ctx, values, ranges, bound, model)
    decides = claim7_decides(model, bound)
    tol = {key: o.pass_rate().half_width for key, o in
           [*((("scan", T, m), o) for T, pair in scan.items() for m, o in zip(("attention", "dpfree"), pair)),
            *((("depth", k, L), o) for (k, L), o in depth.items())]}
    regime = cell_regime(folder, ctx.scale, lambda c: label(c) if decides(c) else None, tol, _passes(CLAIM7_SOLVED),
                         "share of seeds with validation R^2 >= 0.9", min_seeds=min_seeds,
                         notes="fresh samples every step (no epochs)",
                         name=lambda c: f"T={c[1]} {c[2]}" if c[0] == "scan" else f"nesting {c[1]} L={c[2]}")
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "capacity_bound_[D]": bound,
               "construction": {"T": small, "ok": rep.ok, "heads": rep.constants["heads"],
                                "ffn_width": rep.constants["ffn_width"]},
               "width_scan": {"T": WIDTH_RANGE, "reading": reading,
                              "cells": {str(d): {"bound": b, "status": o.status(min_seeds), "outcomes": o.fmt()}
                                        for d, (b, o) in width.items()}},
               "smallest_solving_depth": {k: next((L for L in depths if depth[k, L].status(min_seeds) == "solved"), None)
                                          for k in (1, 2)}, "test_seed": ctx.test_seed}
    return ClaimResult(verdict, "; ".join(f"{k}: {part_reason(v, verdict)}" for k, v in parts.items())
                       + f"; outside the verdict, DP-free across widths at T = {WIDTH_RANGE}: {reading}", rows, fig,
                       numbers, "RPE only (no absolute positions), as in the paper's hypothesis class; position 0 is a "
                       "start token. The capacity bound is the project's derivation [D] for a DP-free stack, not a "
                       "theorem of the paper; the explicit DP-free network shows a DP-free model CAN retrieve a pointer "
                       "when its heads and width grow with T; the width scan asks whether DP-free's failure follows the "
                       "bound (capacity) or not (trainability). The R^2 intervals in the table (dp_ci, dpfree_ci) are "
                       "t intervals of the mean and assume roughly normal per-seed values; per-seed R^2 here is "
                       "pass-or-fail (bimodal), where such an interval covers well under 95% (64% at 10 seeds with 9 in "
                       "10 passing, simulated): read the outcome counts, which the verdict uses.", regime, decides=decides)


def _claim7_rows(values, scan, depth, width, bound, rep, small, min_seeds) -> list[dict]:
    def mean(key):
        cell = interval(v for v in values.get(key, {}).values() if math.isfinite(v))
        return cell.value, _ci(cell, top=1.0)

    rows = []
    for T, (dp, free) in scan.items():
        (r_dp, ci_dp), (r_free, ci_free) = mean(("scan", T, "attention")), mean(("scan", T, "dpfree"))
        rows.append({"part": "pointer-range scan", "T": T, "capacity_bound_[D]": bound, "above_bound": T > bound,
                     "dp_r2": r_dp, "dp_ci": ci_dp, "dp_outcomes": dp.fmt(), "dp_status": dp.status(min_seeds),
                     "dpfree_r2": r_free, "dpfree_ci": ci_free, "dpfree_outcomes": free.fmt(),
                     "dpfree_status": free.status(min_seeds), "seeds": min(dp.valid, free.valid),
                     "failed": dp.broken + free.broken})
    rows.append({"part": "explicit DP-free network (exact)", "T": small, "capacity_bound_[D]": bound,
                 "above_bound": small > bound, "dpfree_r2": 1.0 if rep.ok else None,
                 "dpfree_status": "exact" if rep.ok else "FAILED",
                 "notes": f"{rep.constants['heads']} heads, FFN {rep.constants['ffn_width']}, d {rep.constants['d_model']}: "
                          f"sup error {rep.error('sup_error').value} over every pointer at every position "
                          "(wang-e build --memory dpfree-pointer)"})
    for d, (b, o) in sorted(width.items()):
        rows.append({"part": f"DP-free width scan (T = {WIDTH_RANGE}, outside the verdict)", "T": WIDTH_RANGE,
                     "d_model": d, "capacity_bound_[D]": b, "above_bound": WIDTH_RANGE > b,
                     "dpfree_r2": mean(("scan", WIDTH_RANGE, "dpfree") if d == SCAN_MODEL["d_model"] else ("width", d))[0],
                     "dpfree_outcomes": o.fmt(), "dpfree_status": o.status(min_seeds), "seeds": o.valid,
                     "failed": o.broken})
    for (k, L), o in depth.items():
        r, ci = mean(("depth", k, L))
        rows.append({"part": "depth vs nesting (DP, T = 8)", "nesting": k, "layers": L, "dp_r2": r, "dp_ci": ci,
                     "dp_outcomes": o.fmt(), "dp_status": o.status(min_seeds), "seeds": o.valid, "failed": o.broken})
    return rows


def _claim7_figure(ctx, values, ranges, bound, model):
    cells = {m: [interval(v for v in values.get(("scan", T, m), {}).values() if math.isfinite(v)) for T in ranges]
             for m in ("attention", "dpfree")}
    series = {name: (list(ranges), [c.value for c in cells[m]]) for name, m in (("with DP", "attention"),
                                                                                ("DP-free", "dpfree"))}
    bands = {name: ([c.clipped(high=1.0).low for c in cells[m]], [c.clipped(high=1.0).high for c in cells[m]])
             for name, m in (("with DP", "attention"), ("DP-free", "dpfree"))}
    return line_figure(ctx.out / "figure.png", series, "pointer range T", "test R^2 (mean, 95% CI, clipped at 1)",
                       f"adaptive memory at fixed width (2 layers, 2 heads, d {model['d_model']}): DP vs DP-free",
                       logx=True, logy=False, bands=bands, hlines={f"pass (R^2 = {CLAIM7_SOLVED})": CLAIM7_SOLVED},
                       vlines={f"DP-free capacity bound [D] T = {bound}": bound})


register(Claim(
    "wang-e-7", "DP retrieves adaptive memories at a width independent of the range; DP-free cannot (3b, 1a)",
    "Wang & E 2024, insights 3b and 1a; spec §6 claim 7 and §3.2",
    "Pointer retrieval on finite sequences with a start token (nested-memory, depth 1: y_t = v_(t - p_t), p in 1..T "
    "one-hot, length max(16, 2T)). (i) Construction: the explicit DP-free network (T heads, FFN 2T) for the smallest "
    "T is checked exactly. (ii) Pointer-range scan at fixed width: T in {4, 8, 16, 32} (medium, full: also 64), 2 "
    "layers, 2 heads, d_model 16 (d_head 8), FFN 32, learned per-offset bias, no absolute positions; DP (softmax "
    "attention) against DP-free (the same bias, no q.k). The DP-free capacity bound H_1 + sum_{l>=2} min(d, H "
    "d_head) is the project's derivation [D] (spec §9), 18 here. Per-seed outcomes: a seed passes at test R^2 >= "
    f"0.9 and fails at <= 0.7; a cell solves when the exact (Clopper-Pearson) 95% interval of its share of passing "
    "seeds lies above 1/2, and fails when that of failing seeds does; runs that failed (crashed or diverged) are "
    f"reported per cell and not counted; a cell with fewer than {CLAIM7_MIN_SEEDS} valid seeds decides nothing. "
    "Reproduced if at every scanned T above the bound DP solves and DP-free fails; refuted if DP-free solves at "
    "some T above the bound; undecided where DP itself does not solve. (iii) Depth against nesting (DP, T = 8, "
    "length 16, 2 heads, d 32, FFN 64, L in {1, 2, 3} (full: also 4), nesting k in {1, 2}): reproduced if every "
    "L >= k + 1 solves and every L <= k fails, refuted if some L <= k solves, not reproduced if a deep enough model "
    f"fails. Outside the verdict: DP-free at T = {WIDTH_RANGE} across widths d in {{16, 32}} (medium, full: 8, 16, 32, "
    "64; FFN 2d, bounds 2 + d), which tells capacity (fails below the bound, solves above) from trainability (fails "
    "even above). Learning rate selected per configuration and seed on validation; quick: 1500 steps, lr {0.003, "
    f"0.01, 0.03}}, {CLAIM7_SEEDS['quick']} seeds; medium: 3000 steps, lr {{0.001, 0.003, 0.01, 0.03}}, "
    f"{CLAIM7_SEEDS['medium']} seeds; full: 10000 steps, lr {{0.001, ..., 0.1}}, {CLAIM7_SEEDS['full']} seeds. Power: "
    "a cell solves only when at least 9 of 10 (10 of 12) seeds pass; if each seed passes with probability 0.9 that "
    "happens with probability 0.74 (0.89), at 0.95 with 0.91 (0.98); 3 seeds (quick) can never decide a cell. The "
    "regime check (each compared cell's share of seeds passing on validation moves over the last 20% of training by "
    "less than the half-width of its exact interval) and the grid-edge rule apply to the cells the verdict "
    "compares: the scan above the bound and the depth table. The claim is reproduced if (i)-(iii) are, refuted if "
    "any is refuted. Medium and full score on a fresh test sample.",
    claim7, "19 minutes (11.5 CPU-minutes; measured 2026-11-27, 2 cores shared with other work)",
    "10000 steps, 5 learning rates, 4 depths, 12 seeds: sized for a GPU", tag="[R]",
    medium="ranges up to 64, widths 8-64, 3000 steps, 4 learning rates, 10 seeds: about 2.8 hours on 2 cores "
           "(measured 2026-11-27, cores shared with other work; the T = 64 runs are the slowest)",
    paper_claim="the dot product is what lets attention retrieve an adaptive (input-dependent) memory, and nested "
                "memories need depth (insights 3b and 1a); DP-free models need resources growing with the range"))
