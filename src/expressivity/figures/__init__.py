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
