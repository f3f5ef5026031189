"""Figures (matplotlib, the ``[plots]`` extra, Agg backend): functions over results, never code
inside a construction or training loop."""


def pyplot():
    """``matplotlib.pyplot`` with the non-interactive Agg backend, or a one-line install hint."""
    try:
        import matplotlib
    except ModuleNotFoundError:  # pragma: no cover - the [plots] extra is installed by make
        raise ModuleNotFoundError("figures need matplotlib: pip install 'expressivity[plots]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path, dpi: int = 120):
    """Tight layout, write ``path`` as PNG (creating its folder) and close the figure; returns ``path``."""
    from pathlib import Path

    path = Path(path)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def finish(fig, ax, path, title: str, dpi: int = 120):
    """Small title, a legend when there is something to label, then :func:`save`."""
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return save(fig, path, dpi)
