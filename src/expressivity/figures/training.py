"""Training figures: loss and held-out metric against step (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

from expressivity.figures import pyplot, save


def plot_loss_curves(histories: dict, path: Path, title: str) -> Path:
    """Training loss (log scale) and held-out metric against step, one line per run; PNG.

    ``histories`` maps a run label (e.g. its seed) to its metrics history (dicts with ``step`` and
    ``loss``/``lr`` or ``eval_metric``), as :class:`~expressivity.training.RunResult` holds it.
    """
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for label, hist in histories.items():
        tr = [(h["step"], h["loss"]) for h in hist if "lr" in h]
        ev = [(h["step"], h["eval_metric"]) for h in hist if "eval_metric" in h]
        if tr:
            ax1.plot(*zip(*tr), label=f"seed {label}")
        if ev:
            ax2.plot(*zip(*ev), marker=".", label=f"seed {label}")
    ax1.set_yscale("log")
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss")
    ax2.set_xlabel("step")
    ax2.set_ylabel("held-out metric")
    if ax1.get_legend_handles_labels()[0]:  # a run that stopped at its first step has no curve
        ax1.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return save(fig, path, dpi=110)
