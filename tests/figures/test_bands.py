"""An interval band is drawn only where intervals exist (a fresh audit, 2026-11-28: one band over the
points with an interval ran across points with one seed, drawing a 95% CI where none exists)."""

import math

from expressivity.experiments import plots
from expressivity.figures import interval_band, pyplot


def _drawn(ax):
    """The x-extent of every shaded band and every interval bar on ``ax``."""
    bands = [tuple(sorted({round(float(v), 9) for v in c.get_paths()[0].vertices[:, 0]}))
             for c in ax.collections]
    bars = [tuple(line.get_xdata()) for line in ax.lines if len(set(line.get_xdata())) == 1]
    return [(b[0], b[-1]) for b in bands], sorted(b[0] for b in bars)


def test_a_band_breaks_at_points_without_an_interval():
    plt = pyplot()
    fig, ax = plt.subplots()
    xs = [1, 2, 4, 8, 16, 32]
    lows = [0.9, None, 0.2, float("nan"), 0.04, 0.01]
    highs = [1.1, None, 0.3, float("nan"), 0.1, 0.03]
    interval_band(ax, xs, lows, highs, "C0")
    bands, bars = _drawn(ax)
    plt.close(fig)
    assert bands == [(16.0, 32.0)]      # the only run of neighbours that both have an interval
    assert bars == [1, 4]               # alone between points without one: a bar, not a band to its neighbours


def test_plot_bands_draws_no_interval_across_single_seed_points(tmp_path, monkeypatch):
    seen = []
    real = plots.interval_band
    monkeypatch.setattr(plots, "interval_band", lambda ax, *a, **k: (real(ax, *a, **k), seen.append(_drawn(ax))))
    rows = [(1, 1.1, 1.0, 1.2), (2, 0.9, None, None), (4, 0.3, 0.25, 0.35), (8, 0.05, None, None),
            (16, 0.08, 0.06, 0.1)]
    plots.plot_bands({"a": rows}, tmp_path / "p.png", "x", "y", logx=True, logy=True)
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert seen == [([], [1, 4, 16])] and not math.isnan(rows[0][2])
