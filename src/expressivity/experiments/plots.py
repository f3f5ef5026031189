"""Figures over stored results: means (or geometric means) with 95% interval bands."""

from __future__ import annotations

from pathlib import Path

from expressivity.figures import pyplot, save


def plot_bands(series: dict, path: Path, xlabel: str, ylabel: str, title: str = "", logx: bool = False,
               logy: bool = False, software: str | None = None) -> Path:
    """One line per series with its interval band; PNG (``software``: its ``Software`` text chunk).

    ``series`` maps a label to rows ``(x, centre, ci_low, ci_high)`` (``None`` bounds: no band at that x).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, rows in series.items():
        rows = sorted((r for r in rows if r[1] is not None), key=lambda r: r[0])
        if not rows:
            continue
        xs, ys = [r[0] for r in rows], [r[1] for r in rows]
        (line,) = ax.plot(xs, ys, marker="o", ms=3, label=str(label))
        band = [(r[0], r[2], r[3]) for r in rows if r[2] is not None and r[3] is not None]
        if band:
            bx, lo, hi = zip(*band)
            if logy:  # a t interval on a linear scale can dip below zero; a log axis cannot show it
                lo = [max(v, 1e-300) for v in lo]
            ax.fill_between(bx, lo, hi, alpha=0.2, color=line.get_color(), linewidth=0)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    if len(series) > 1 or any(str(k) for k in series):
        ax.legend(fontsize=7)
    return save(fig, path, dpi=110, software=software)
