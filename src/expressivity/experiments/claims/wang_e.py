"""The numerical claims of Wang & E (2024) (spec ``wang_e_2024.md`` §6, claims 1, 2 and 8), one
command each: ``expressivity reproduce wang-e-N``. They check the constructions
(:mod:`expressivity.constructions.wang_e`) at kernel and network level: deterministic numerics,
no seeds and no training. Claims 3-7 train models: :mod:`.wang_e_trained`.
"""

from __future__ import annotations

import math

import numpy as np

from expressivity.experiments.claims import Claim, ClaimContext, ClaimResult, Verdict, register
from expressivity.experiments.claims.kit import line_figure
from expressivity.experiments.claims.regime import numerics_regime
from expressivity.experiments.claims.rules import combine

# ---- claim 1: a delta from kernel sums, and the lin/log separation ------------------------------------

# The random input sequences the numerics checks draw (claims 2 and 8), recorded in the verdict's numbers.
CHECK_SEED = 0
CLAIM1_LEVEL = 1e-2
CLAIM1_EPS = 0.2
CLAIM1_LAGS = (4, 8, 12, 16, 24, 32)
CLAIM1_BIC = 2.0  # |delta BIC| >= 2: positive evidence for one model (Kass & Raftery)


# A threshold below the grid's smallest H (the error is under the level there already): censored below, never
# reported as that smallest H, which would read as found and bend the growth fits (an audit, 2026-11-29).
BELOW_GRID = 0.0


def _threshold(errors: list[float], grid: list[int], level: float) -> float | None:
    """First ``H`` where the l1 error falls below ``level``, interpolated log-log between grid points;
    ``None`` if it never does on the grid (censored: the threshold lies beyond the largest H);
    :data:`BELOW_GRID` if the error is below ``level`` at the smallest H already (censored below)."""
    if errors and errors[0] < level:
        return BELOW_GRID
    for (H1, e1), (H2, e2) in zip(zip(grid, errors), zip(grid[1:], errors[1:])):
        if e1 >= level > e2:
            return math.exp(math.log(H1) + (math.log(level) - math.log(e1)) * (math.log(H2) - math.log(H1))
                            / (math.log(e2) - math.log(e1)))
    return None


def _shown(threshold: float | None, grid: list[int]):
    """A threshold as the table and ``verdict.json`` give it: a number, ``None`` beyond the grid, or ``"< H_min"``."""
    return f"< {grid[0]}" if threshold == BELOW_GRID else threshold


def growth_bic(lags, thresholds) -> dict | None:
    """Fit ``ln H*`` by ``a + b T`` (exponential in T) and by ``a + b ln T`` (a power of T), least
    squares on the lags with a finite threshold; ``delta_bic = BIC(exponential) - BIC(power)`` (both
    have two parameters, so ``n ln(RSS_exp / RSS_pow)``): negative favours the exponential.
    ``None`` with fewer than three finite points."""
    pts = [(T, math.log(h)) for T, h in zip(lags, thresholds) if h is not None and h != BELOW_GRID]
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


def separation_verdict(lags, lin: list, log: list, h_max: int, h_min: int = 16) -> Verdict:
    """Lin needs fewer heads than log at the smallest lag and more at the largest (``None`` = beyond
    ``h_max``, :data:`BELOW_GRID` = below ``h_min``). Reproduced if both; refuted if log needs fewer at the
    smallest lag and lin fewer at the largest (the crossing reversed); undecided if a needed comparison has
    both thresholds censored on the same side."""
    def less(a, b):  # a < b, where None means "beyond h_max" and BELOW_GRID "below h_min"; None if both are
        if (a is None and b is None) or (a == BELOW_GRID and b == BELOW_GRID):
            return None
        if a is None or b is None:
            return b is None
        return a < b   # BELOW_GRID (0) is below every threshold found on the grid

    small = less(lin[0], log[0])
    large = less(log[-1], lin[-1])
    what = (f"H* at T = {lags[0]}: lin {_h(lin[0], h_max, h_min)}, log {_h(log[0], h_max, h_min)}; at T = "
            f"{lags[-1]}: lin {_h(lin[-1], h_max, h_min)}, log {_h(log[-1], h_max, h_min)}")
    if small is None or large is None:
        return Verdict("undecided", f"underpowered: {what}: both censored on the same side of the grid "
                                    f"[{h_min}, {h_max}]")
    if small and large:
        return Verdict("reproduced", f"the curves cross: {what}")
    if not small and not large:
        return Verdict("refuted", f"crossed the other way: {what}")
    # One type needs fewer heads at both ends: the curves may cross outside the scanned lags (H* comes from a
    # construction, an upper bound on the heads needed), so this is no evidence against the claim, and the criterion
    # never made it a word; it was "not reproduced" (an audit, 2026-11-29: quick stops at T = 32, medium crosses
    # between 32 and 48)
    return Verdict("undecided", f"underpowered: no crossing in the scanned lags ({what}); it may lie beyond them")


def _h(v, h_max, h_min=16) -> str:
    return f"> {h_max}" if v is None else f"< {h_min}" if v == BELOW_GRID else f"{v:.0f}"


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
                fit = chebyshev_kernel(rpe, T, H, eps, allow_zero_fit=True)   # too few heads: l1 error 1, a search point
                errs.append(fit.l1_error)
                # the bound on the float64 rounding of l1's terms: an l1 below it is below what float64 resolves
                rows.append({"rpe": rpe, "lag": T, "heads": H, "eps": eps, "l1_error": fit.l1_error,
                             "l1_rounding_bound": fit.extra.get("rounding"), "max_abs_coefficient": fit.max_abs_coefficient})
            errors[rpe, T] = errs
    threshold = {key: _threshold(errs, grid, CLAIM1_LEVEL) for key, errs in errors.items()}
    lin = [threshold["lin", T] for T in lags]
    log = [threshold["log", T] for T in lags]
    fits = {rpe: growth_bic(lags, [threshold[rpe, T] for T in lags]) for rpe in ("lin", "log")}
    parts = {"separation": separation_verdict(lags, lin, log, grid[-1], grid[0]),
             "lin exponential": growth_verdict("lin", fits["lin"]), "log power": growth_verdict("log", fits["log"])}
    verdict = combine(parts)
    crossover = next(T for T in range(1, 10_000) if eps * T > (1 + eps) * math.log(1 + T))
    def drawn(values):   # censored thresholds are not points (beyond the grid: marked at its top)
        return [v if v is not None and v != BELOW_GRID else math.nan for v in values]

    fig = line_figure(ctx.out / "figure.png", {"lin-type": (list(lags), drawn(lin)), "log-type": (list(lags), drawn(log))},
                      "lag T", f"heads H* for l1 error < {CLAIM1_LEVEL:g}",
                      f"heads for a delta at lag T (Chebyshev construction, eps = {eps})", logx=False,
                      vlines={f"A_lin = A_log at T = {crossover}": crossover},
                      censored={name: [(T, grid[-1]) for T, v in zip(lags, values) if v is None]
                                for name, values in (("lin-type", lin), ("log-type", log))})
    for row in rows:
        row["threshold_H"] = _shown(threshold[row["rpe"], row["lag"]], grid)
    numbers = {"threshold_H": {f"{rpe},T={T}": _shown(threshold[rpe, T], grid) for rpe in ("lin", "log") for T in lags},
               "growth_fits": fits, "predicted_crossover_T": crossover, "parts": {k: v.word for k, v in parts.items()},
               "grid": grid}
    reason = "; ".join(f"{k}: {v.reason}" for k, v in parts.items())
    return ClaimResult(verdict, reason, rows, fig, numbers,
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
    "grid if never, below it if already at its smallest H). Reproduced if all three hold: (a) separation: lin needs fewer heads than log at the smallest T "
    "and more at the largest (the theorem's constants A_lin = e^{eps T}, A_log = T^{1+eps} cross at T = 18); (b) for "
    "lin, ln H* is fitted better by a + b T (exponential) than by a + b ln T (power law), delta BIC <= -2; (c) for "
    "log the reverse, delta BIC >= +2 in the power law's favour. Refuted if the crossing is reversed or a growth fit "
    "favours the other model by |delta BIC| >= 2; undecided (underpowered) when one type needs fewer heads at both "
    "ends of the scanned lags (the crossing may lie beyond them), when a compared threshold is censored on the same "
    "side for both types, or when the BIC difference is under 2. H* counts the Chebyshev construction's heads, the "
    "theorem's upper bound: the verdict is about that construction's rate, not a lower bound on the heads any network "
    "needs (with unbounded weights about T + 2 lin heads interpolate the delta exactly at the nodes, their "
    "coefficients growing like e^{b(T+1)^2/2}: spec §3.1; 61 lin heads with coefficients near 1e159 reach l1 < 0.01 at "
    "T = 48).",
    claim1, "about 6 CPU-minutes (log-type kernels dominate)", "as medium",
    # [R]: Theorem 1 and its constants A(T) are the spec's recollection (§3.1), not checked against the paper's
    # text; the Chebyshev construction the criterion uses is its derivation [D], said in the notes
    trains=False, tag="[R]", medium="adds T = 48 and H = 16384 (the lin/log crossing extrapolated from quick lies "
                                    "near T = 40)",
    paper_claim="the number of DP-free heads needed to extract x_(t-T) to a given accuracy grows like e^{cT} for "
                "lin-type RPE and polynomially in T for log-type RPE (Theorem 1's constants A(T))"))


# ---- claim 2: matched kernels are exact; how fast mismatched heads converge ------------------------------

CLAIM2_CASES = {"power": 0.5, "exp": 0.3}   # the kernel-memory task's alpha: rho = (1+s)^-1.5 and e^{-0.3 s}
CLAIM2_RHO = {"power": "(1+s)^-1.5 / zeta(1.5)", "exp": "(1 - e^-0.3) e^{-0.3 s}"}
CLAIM2_MATCHED = {"power": "log", "exp": "lin"}   # the family whose one head is exact for each kernel
CLAIM2_FIT_FROM = 8          # the rate is fitted on H >= 8 (below that the fit has not entered its asymptotics)
CLAIM2_ROUNDING = 1e-13      # l1 errors below this are float64 rounding, not the fit: left out of the rate fit
CLAIM2_STILL_ABOVE = 1e-3    # "slow": the heavy-tail mismatch is still above this at the largest H


def convergence_fit(heads, errors) -> dict | None:
    """How the l1 error falls with the head count: :func:`growth_bic` of ``l1`` against ``H`` on
    ``H >= CLAIM2_FIT_FROM`` and errors above rounding. ``delta_bic`` = BIC(exponential in H) -
    BIC(power of H): positive favours the power law (slower than any exponential), negative the
    exponential (faster than any power). Two models compared: a positive value says the decay is not
    exponential, not that it is one power law (lin heads on the power tail drift from H^-0.33 to H^-0.06
    per doubling between H = 8 and 4,096: an audit, 2026-11-29); :func:`local_exponents` says how it bends."""
    pts = [(H, e) for H, e in zip(heads, errors) if H >= CLAIM2_FIT_FROM and e > CLAIM2_ROUNDING]
    return growth_bic([H for H, _ in pts], [e for _, e in pts]) if pts else None


def local_exponents(heads, errors) -> list[float]:
    """``d ln l1 / d ln H`` between consecutive head counts of the fit (:func:`convergence_fit`'s points)."""
    pts = [(H, e) for H, e in zip(heads, errors) if H >= CLAIM2_FIT_FROM and e > CLAIM2_ROUNDING]
    return [math.log(e2 / e1) / math.log(H2 / H1) for (H1, e1), (H2, e2) in zip(pts, pts[1:])]


def convergence_verdict(fit: dict | None, last_error: float, what: str, local: list[float] = ()) -> Verdict:
    """Slow convergence (slower than any exponential): the power law fits better by ``delta BIC >= 2`` and the
    error at the largest H is still above :data:`CLAIM2_STILL_ABOVE`; refuted if the exponential fits better
    by 2 or more; else undecided. ``local``: the local exponents, said beside the fitted one (no single power law
    is claimed)."""
    if fit is None:
        return Verdict("undecided", f"underpowered: {what}: fewer than three head counts to fit")
    rate = (f"{what}: l1 ~ H^{fit['power_exponent']:.2f} (power) vs e^{{{fit['exp_rate_per_lag']:.3g} H}} "
            f"(exponential), delta BIC {fit['delta_bic']:+.1f}")
    if fit["delta_bic"] >= CLAIM1_BIC and last_error > CLAIM2_STILL_ABOVE:
        bends = (f" (local exponent {local[0]:.2f} to {local[-1]:.2f} along H: slower than any exponential, no single "
                 "power law)") if len(local) >= 2 else " (slower than any exponential)"
        return Verdict("reproduced", f"{rate}{bends}: still {last_error:.2g} at the largest H")
    if fit["delta_bic"] <= -CLAIM1_BIC:
        return Verdict("refuted", f"{rate}: faster than any power")
    return Verdict("undecided", f"underpowered: {rate}")


def claim2(ctx: ClaimContext) -> ClaimResult:
    from expressivity.constructions.wang_e.essential import build_kernel_memory, check_kernel_memory
    from expressivity.constructions.wang_e.kernels import kernel_fit, matched_head

    heads = [1, 2, 4, 8, 16, 32, 64] + ctx.size("more_heads", [], [128, 256], [128, 256])
    rows, curves = [], {}
    for kernel, alpha in CLAIM2_CASES.items():
        for rpe in ("log", "lin"):
            errs = []
            for H in heads:
                fit = kernel_fit(rpe, kernel, alpha, H)
                errs.append(fit.l1_error)
                rows.append({"rho": CLAIM2_RHO[kernel], "rpe": rpe, "heads": H, "l1_error": fit.l1_error,
                             "l1_rounding_bound": fit.extra.get("rounding"), "construction": fit.construction})
            curves[kernel, rpe] = errs
    exact = {}
    for kernel, alpha in CLAIM2_CASES.items():
        net, rep = build_kernel_memory(kernel, alpha)
        rep = check_kernel_memory(net, rep, length=512, seed=CHECK_SEED)
        exact[kernel] = rep.error("sup_error").value
        rows.append({"rho": CLAIM2_RHO[kernel], "rpe": rep.constants["rpe"], "heads": 1,
                     "beta": matched_head(kernel, alpha)[1], "network_sup_error_on_512_positions": exact[kernel],
                     "construction": "matched network"})
    fits = {"lin_on_power": convergence_fit(heads, curves["power", "lin"]),
            "log_on_exp_[D]": convergence_fit(heads, curves["exp", "log"])}
    matched_ok = exact["power"] < 1e-12 and exact["exp"] < 1e-12 and curves["power", "log"][0] < 1e-12 \
        and curves["exp", "lin"][0] < 1e-12
    parts = {"matched heads exact": Verdict("reproduced" if matched_ok else "not reproduced",
                                            f"network sup error {exact['power']:.1e} (power tail, one log head) and "
                                            f"{exact['exp']:.1e} (exponential tail, one lin head)"),
             "lin heads on the power tail converge slower than exponentially": convergence_verdict(
                 fits["lin_on_power"], curves["power", "lin"][-1], "lin heads on (1+s)^-1.5",
                 local_exponents(heads, curves["power", "lin"]))}
    mirror = convergence_verdict(fits["log_on_exp_[D]"], curves["exp", "log"][-1], "[D] log heads on e^{-0.3 s}")
    verdict = combine(parts)
    # one head of the kernel's own family is a construction of its own (exact); more heads are the Chebyshev
    # construction, which does not contain it: drawn as a point apart, not joined to H = 2 (joined, the figure
    # read as "two matched heads are worse than one", a fresh audit, 2026-11-28)
    matched = {(k, r) for k in CLAIM2_CASES for r in ("log", "lin") if r == CLAIM2_MATCHED[k]}
    series = {}
    # a log axis has no 0: exact zeros are drawn at FLOOR, and said so in the labels and by a line; the two matched
    # single heads, both exactly 0, were one point under two labels, one series hidden (an audit, 2026-11-29)
    floor = 1e-17
    zeros = [f"{CLAIM2_RHO[k]}, one {r} head" for k, r in sorted(matched) if curves[k, r][0] == 0]
    for kernel in CLAIM2_CASES:
        for rpe in ("log", "lin"):
            errors = np.maximum(curves[kernel, rpe], floor)
            if (kernel, rpe) in matched:
                if f"{CLAIM2_RHO[kernel]}, one {rpe} head" not in zeros:
                    series[f"{CLAIM2_RHO[kernel]}, one {rpe} head (matched, exact)"] = ([heads[0]], [errors[0]])
                series[f"{CLAIM2_RHO[kernel]}, {rpe} heads (Chebyshev)"] = (heads[1:], errors[1:])
            else:
                series[f"{CLAIM2_RHO[kernel]}, {rpe} heads"] = (heads, errors)
    if zeros:
        which = "both tails" if len(zeros) == 2 else zeros[0].split(",")[0]
        series[f"one matched head, {which}: l1 = 0 (drawn at {floor:g})"] = ([heads[0]], [floor])
    rounding = max((r["l1_rounding_bound"] or 0.0) for r in rows if "l1_error" in r)
    fig = line_figure(ctx.out / "figure.png", series, "heads H", "l1 error of the kernel fit",
                      "Task III: matched vs mismatched RPE families",
                      hlines={f"float64 rounding of l1 (<= {rounding:.1g})": rounding}
                      if rounding > 0 else None)
    reason = "; ".join(f"{k}: {v.reason}" for k, v in parts.items()) + f"; outside the verdict: {mirror.reason}"
    numbers = {"parts": {k: v.word for k, v in parts.items()}, "matched_network_sup_error": exact,
               "random_inputs_seed": CHECK_SEED,
               "convergence_fits": fits, "light_tail_mirror_[D]": mirror.word,
               "local_exponents_lin_on_power": local_exponents(heads, curves["power", "lin"]),
               "mismatched_l1_at_max_H": {"lin_on_power": curves["power", "lin"][-1],
                                          "log_on_exp": curves["exp", "log"][-1]}}
    return ClaimResult(verdict, reason, rows, fig, numbers,
                       "the two mismatches are not symmetric: lin heads fit the heavy tail only slowly (the "
                       "curse of memory), while log heads fit the light tail faster than any power once H passes "
                       "~16; that mirror is the spec's derivation [D] and is reported outside the verdict",
                       numerics_regime(ctx.scale, "exact kernels and float64 networks"))


register(Claim(
    "wang-e-2", "Matched RPE families realise Task III kernels exactly; lin heads fit a heavy tail only slowly",
    "Wang & E 2024, Task III theorem; spec §6 claim 2",
    "One log head (beta = 1.5) realises rho(s) ~ (1+s)^-1.5 and one lin head (beta = 0.3) realises "
    "rho(s) ~ e^{-0.3 s} with output error below 1e-12 on 512 positions (zero past, |x| <= 1). The mismatched "
    "family's convergence is measured by the l1 error of H heads (Chebyshev construction, H = 1, 2, 4, ..., 64; "
    f"medium and full: to 256) and fitted on H >= {CLAIM2_FIT_FROM} (errors above {CLAIM2_ROUNDING:g}, below which "
    "float64 rounds): ln l1 against ln H (a power of H) and against H (exponential), compared by BIC. Reproduced "
    "if the matched heads are exact and lin heads on the power tail converge slower than exponentially: the power "
    f"law fits better by delta BIC >= {CLAIM1_BIC:g} (two models compared: this says the decay is not exponential, "
    "not that it is one power law; the local exponents d ln l1 / d ln H are reported) and l1 at the largest H is "
    f"still above {CLAIM2_STILL_ABOVE:g}; refuted if "
    f"the exponential fits better by delta BIC >= {CLAIM1_BIC:g}; undecided otherwise. The mirror (log heads on the "
    "exponential tail) is the spec's derivation [D]: fitted and reported the same way, outside the verdict. "
    "Numerics: deterministic, no seeds, so no power line.",
    # [R]: the Task III theorem is the spec's recollection (§3.3, medium-low confidence); only Table 8's caption
    # (trained heads, claim wang-e-3) was read in a public source
    claim2, "under a minute", "adds H = 128, 256", trains=False, tag="[R]", medium="adds H = 128, 256",
    paper_claim="a Task III memory with a power-law kernel is realised exactly by one log-type head and only "
                "slowly by lin-type heads (the curse of memory); with an exponential kernel one lin-type head is "
                "exact"))


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
            rep = check_fixed_memory(net, rep, samples=ctx.size("samples", 64, 512, 512), seed=CHECK_SEED)
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
                                                     "falls_with_width": falls_m, "random_inputs_seed": CHECK_SEED},
                       "b of about 2.81 and above is refused in float64 for these lags (coefficients of 1.2e11 and more "
                       "round by more than the kernel error); the bound is ||f||_Lip max l1 sup|x| + FFN error + "
                       "rounding",
                       numerics_regime(ctx.scale, "float64 networks, errors measured on random and adversarial inputs"))


register(Claim(
    "wang-e-8", "The explicit Theorem-1 construction, built literally",
    "Wang & E 2024, Theorem 1; spec §6 claim 8",
    "The network for M = 2, T = (1, 3): 5 lin heads beta_k = k b shared by both memories, float64, and a ReLU "
    "readout of f(a, b) = a b by polarisation with piecewise-linear squares of m intervals. Reproduced if for every "
    "b in {1, 1.5, 2, 2.5} and m the measured sup error over random and adversarial sequences is within "
    "||f||_Lip * l1 + FFN error, and it falls as b grows (largest m) and as m grows (largest b).",
    # [D]: the paper's own construction was not recovered; this is the spec's explicit one (§3.1, few heads and
    # large beta), built to reproduce Theorem 1's form, which is itself recollected [R]
    claim8, "under a minute", "more widths and 512 random sequences per point", trains=False, tag="[D]",
    medium="more widths and 512 random sequences per point",
    paper_claim="Theorem 1's construction (the spec's derivation of it; the paper's own was not recovered): DP-free "
                "heads extract fixed memories and an FFN reads them out, with error bounded by the kernel error and "
                "the FFN's approximation error"))
