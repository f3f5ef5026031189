"""Figures (matplotlib, the ``[plots]`` extra, Agg backend): functions over results, never code
inside a construction or training loop."""

import os
import sys

from expressivity.errors import ExpressivityError


MISSING = "figures need matplotlib: pip install 'expressivity[plots]'"


def require_plots() -> None:
    """Refuse, in one line, where matplotlib cannot be imported: called before work whose end is a
    figure (a claim's training), so a bare machine learns it before the work, not after."""
    import importlib.util

    if "matplotlib" not in sys.modules and importlib.util.find_spec("matplotlib") is None:
        raise ExpressivityError(MISSING + " (needed for the figure this command ends with; nothing was run)")


def pyplot():
    """``matplotlib.pyplot`` with the non-interactive Agg backend, or a one-line install hint.

    Every figure here is written to a PNG file, so the user's ``MPLBACKEND`` (meant for
    interactive windows) does not apply: it is hidden while matplotlib is first imported, because
    matplotlib validates it at import and an unknown name would raise there; it is restored
    afterwards for any child process.
    """
    if "matplotlib" not in sys.modules:
        chosen = os.environ.pop("MPLBACKEND", None)
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError:   # the [plots] extra is installed by make; a bare machine may lack it
            raise ExpressivityError(MISSING) from None
        finally:
            if chosen is not None:
                os.environ["MPLBACKEND"] = chosen
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path, dpi: int = 120, software: str | None = None, description: str | None = None):
    """Tight layout, write ``path`` in the format its suffix names (PNG: every caller's; creating its
    folder) and close the figure; returns ``path``.

    ``software`` goes into the PNG's ``Software`` text chunk (default: matplotlib's own), so a
    command can later recognise a figure it wrote (:meth:`expressivity.records.OutputFile.png`);
    ``description`` into its ``Description`` chunk (how the figure was made: the command's run record).
    """
    from pathlib import Path

    path = Path(path)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # written beside it under this writer's own name and renamed into place: a write cut short (a full disk)
    # leaves the old figure, not half of a new one, and two writers of one figure never swap each other's halves
    from expressivity.records import private_sibling

    partial = private_sibling(path, ".partial")
    try:
        fig.savefig(partial, dpi=dpi, format=(path.suffix[1:] or "png").lower(),
                    metadata={**({"Software": software} if software else {}),
                              **({"Description": description} if description else {})} or None)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
        pyplot().close(fig)
    return path


def interval_band(ax, xs, lows, highs, color, floor: float | None = None) -> None:
    """Shade each point's interval ``[low, high]`` around a line: a band over every run of
    consecutive points that have one, a bar with caps where a point's neighbours have none, and
    nothing at a point without one (``None`` or non-finite bounds). One band over every point with
    an interval joined them across the points without one, drawing an interval where none exists
    (a fresh audit, 2026-11-28). ``floor``: the least value a low end is drawn at (a log axis)."""
    import math

    def has(k):
        return all(v is not None and math.isfinite(v) for v in (lows[k], highs[k]))

    k, n = 0, len(xs)
    while k < n:
        if not has(k):
            k += 1
            continue
        end = k
        while end + 1 < n and has(end + 1):
            end += 1
        lo = [lows[j] if floor is None else max(lows[j], floor) for j in range(k, end + 1)]
        hi = [highs[j] for j in range(k, end + 1)]
        if end > k:
            ax.fill_between(xs[k:end + 1], lo, hi, alpha=0.2, color=color, linewidth=0)
        else:
            ax.plot([xs[k]] * 2, [lo[0], hi[0]], color=color, alpha=0.5, lw=1.5, marker="_", ms=8)
        k = end + 1


def finish(fig, ax, path, title: str, dpi: int = 120):
    """Small title, a legend when there is something to label, then :func:`save`."""
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return save(fig, path, dpi)
