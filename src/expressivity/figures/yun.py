"""Figures of a Yun build (matplotlib, Agg backend): d_p vs delta, contextual values by class."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from expressivity.figures import pyplot


def dp_vs_delta(reports: list, path: Path) -> Path:
    """Log-log d_p error (with 95% CI) against delta, plus the delta^{d/p} reference slope.

    ``reports``: :class:`~expressivity.constructions.report.ConstructionReport` of Yun builds of
    one target at several deltas."""
    plt = pyplot()
    deltas = np.array([float(r.constants["delta"]) for r in reports])
    err = np.array([r.error("d_p(f, g)").value for r in reports])
    # no interval (too few samples carry the mean): no bar
    lo = np.array([(r.error("d_p(f, g)").ci95 or (r.error("d_p(f, g)").value,) * 2)[0] for r in reports])
    hi = np.array([(r.error("d_p(f, g)").ci95 or (r.error("d_p(f, g)").value,) * 2)[1] for r in reports])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.errorbar(deltas, err, yerr=[np.maximum(err - lo, 0), np.maximum(hi - err, 0)], marker="o", label="d_p(f, g) over the cube (stratified MC, 95% CI)")
    # restricted to inputs off the quantizer ramps, where g is the verified network: the approximation itself; over the
    # whole cube the ramps (measure ~1e-6, g up to the contextual values there) dominate from delta 1/8 in the paper's
    # network (--no-clamp, 2026-11-29); with the output clamp the two curves meet
    from expressivity.constructions.yun.checks.dp import OFF_RAMPS, stratum

    off = [(stratum(r.error("d_p(f, g)"), OFF_RAMPS) or {}).get("dp") for r in reports]
    if all(v is not None for v in off):
        ax.plot(deltas, off, marker="s", ls="-", label="d_p(f, g) off the quantizer ramps")
    for lab in ("d_p(f, f_bar)", "d_p(f_bar, g_bar)"):
        ax.plot(deltas, [r.error(lab).value for r in reports], ls=":", marker=".", label=lab)
    first = reports[0].constants
    d, p = first["d"], first["p"]
    anchor = off[0] if off and off[0] is not None else err[0]
    ref = anchor * (deltas / deltas[0]) ** (d / p)
    ax.plot(deltas, ref, "k--", label=f"slope delta^(d/p) = delta^{d / p:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("d_p error")
    ax.set_title(f"{first['target']}: n={first['n']}, d={d}, {reports[0].construction}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def contextual_values(build, path: Path) -> Path:
    """Contextual values by permutation class, in two panels.

    Left: each class's values (log scale) against ``[t_l, t_r]`` (P2/P3: classes occupy disjoint
    stretches inside the interval). Right: within-class gaps ``q_(j) - q_(1)`` of the sorted
    values (P1: every token of a class gets its own value, so the gaps are positive).
    """
    plt = pyplot()
    N = 2 * build.params.N  # verifier values are in units of delta/2
    keys = sorted(build.rep_values)
    values = [np.sort(np.array([v / N for v in build.rep_values[k][1]], dtype=float)) for k in keys]
    fig, (ax, gap_ax) = plt.subplots(1, 2, figsize=(9, 4))
    n = build.params.n
    for idx, vals in enumerate(values):
        ax.scatter(np.full(vals.size, idx), vals, s=6, c=np.arange(vals.size), cmap="viridis", vmin=0, vmax=max(n - 1, 1))
        if vals.size > 1:
            gap_ax.scatter(np.full(vals.size - 1, idx), vals[1:] - vals[0], s=6, c=np.arange(1, vals.size),
                           cmap="viridis", vmin=0, vmax=max(n - 1, 1))
    ax.axhline(float(build.params.t_l), color="r", lw=0.8, label="t_l")
    ax.axhline(float(build.params.t_r), color="r", lw=0.8, ls="--", label="t_r")
    ax.set_yscale("log")
    ax.set_xlabel("permutation class (sorted by representative)")
    ax.set_ylabel("contextual value u.g_c(L)")
    ax.set_title(build.params.describe(), fontsize=8)
    ax.legend(fontsize=7)
    gap_ax.set_yscale("log")
    gap_ax.set_xlabel("permutation class")
    gap_ax.set_ylabel("q_(j) - q_(1) within the class (colour: rank j)")
    gap_ax.set_title("P1: distinct values inside every class", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
