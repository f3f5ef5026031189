"""Figures of a Yun build (matplotlib, Agg backend): d_p vs delta, contextual values by class."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def dp_vs_delta(reports: list[dict], path: Path) -> Path:
    """Log-log d_p error (with 95% CI) against delta, plus the delta^{d/p} reference slope."""
    plt = _plt()
    deltas = np.array([float(r["delta"]) for r in reports])
    err = np.array([r["dp_error"] for r in reports])
    lo = np.array([r["dp_ci"][0] for r in reports])
    hi = np.array([r["dp_ci"][1] for r in reports])
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.errorbar(deltas, err, yerr=[np.maximum(err - lo, 0), np.maximum(hi - err, 0)], marker="o", label="d_p(f, g) (MC, 95% CI)")
    for key, lab in (("f_fbar", "d_p(f, f_bar)"), ("fbar_gbar", "d_p(f_bar, g_bar)")):
        ax.plot(deltas, [r["dp_decomposition"][key]["value"] for r in reports], ls=":", marker=".", label=lab)
    d, p = reports[0]["d"], reports[0]["p"]
    ref = err[0] * (deltas / deltas[0]) ** (d / p)
    ax.plot(deltas, ref, "k--", label=f"slope delta^(d/p) = delta^{d / p:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("delta")
    ax.set_ylabel("d_p error")
    ax.set_title(f"{reports[0]['target']}: n={reports[0]['n']}, d={d}, Theorem {reports[0]['theorem']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def contextual_values(build, path: Path) -> Path:
    """Each permutation class's contextual values (one point per token), with t_l and t_r."""
    plt = _plt()
    N = 2 * build.params.N
    fig, ax = plt.subplots(figsize=(5, 4))
    keys = sorted(build.rep_values)
    for idx, k in enumerate(keys):
        vals = np.array([v / N for v in build.rep_values[k][1]], dtype=float)
        ax.scatter(np.full(vals.size, idx), vals, s=6, c=np.arange(vals.size), cmap="viridis", vmin=0, vmax=build.params.n - 1)
    ax.axhline(float(build.params.t_l), color="r", lw=0.8, label="t_l")
    ax.axhline(float(build.params.t_r), color="r", lw=0.8, ls="--", label="t_r")
    ax.set_yscale("log")
    ax.set_xlabel("permutation class (sorted by representative)")
    ax.set_ylabel("contextual value u.g_c(L) (colour: rank of token id)")
    ax.set_title(build.params.describe(), fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
