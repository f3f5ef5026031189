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


def finish(fig, ax, path, title: str, dpi: int = 120):
    """Title (small), legend, tight layout, save as PNG and close: the common end of every figure here.
    Returns ``path``."""
    ax.set_title(title, fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    fig.clf()
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
