"""Figures over stored results: means (or geometric means) with 95% interval bands."""

from __future__ import annotations

from pathlib import Path

from expressivity.figures import interval_band, pyplot, save


def plot_bands(series: dict, path: Path, xlabel: str, ylabel: str, title: str = "", logx: bool = False,
               logy: bool = False, software: str | None = None, description: str | None = None) -> Path:
    """One line per series with its interval band; PNG (``software``: its ``Software`` text chunk,
    ``description`` its ``Description``: how it was made).

    ``series`` maps a label to rows ``(x, centre, ci_low, ci_high)`` (``None`` bounds: no interval
    at that x, and the band breaks there: :func:`~expressivity.figures.interval_band`).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for label, rows in series.items():
        rows = sorted((r for r in rows if r[1] is not None), key=lambda r: r[0])
        if not rows:
            continue
        xs, ys = [r[0] for r in rows], [r[1] for r in rows]
        (line,) = ax.plot(xs, ys, marker="o", ms=3, label=str(label))
        # (a t interval on a linear scale can dip below zero; a log axis cannot show it)
        interval_band(ax, xs, [r[2] for r in rows], [r[3] for r in rows], line.get_color(), 1e-300 if logy else None)
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
    return save(fig, path, dpi=110, software=software, description=description)
