"""Progress display for long library calls: a rich bar on stderr, only when stderr is a terminal.

Library functions take ``progress=True`` (or a callback) and get their bar from here, so they
never import the command-line layer.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console

stderr_console = Console(stderr=True, highlight=False)


@contextmanager
def progress_bar(label: str, total: int | None = None, completed: int = 0,
                 enabled: bool = True) -> Iterator[Callable[..., None] | None]:
    """Yield ``update(completed=None, total=None, description=None, advance=0)``, or ``None``
    when disabled or when stderr is not a terminal (pipes and CI logs stay clean)."""
    if not enabled or not stderr_console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr_console, transient=True) as bar:
        task = bar.add_task(label, total=total, completed=completed)

        def update(completed: int | None = None, total: int | None = None, description: str | None = None,
                   advance: int = 0) -> None:
            kwargs = {k: v for k, v in (("completed", completed), ("total", total), ("description", description))
                      if v is not None}
            if advance:
                kwargs["advance"] = advance
            bar.update(task, **kwargs)

        yield update


def in_chunks(fn: Callable, items, chunk: int, label: str, enabled: bool = True):
    """``fn`` over ``items`` (an array, rows first) ``chunk`` rows at a time, the results concatenated
    along rows, with a bar of rows done (:func:`progress_bar`): a long check that says how far it is."""
    import numpy as np

    outs = []
    with progress_bar(label, total=len(items), enabled=enabled) as update:
        for i in range(0, len(items), chunk):
            outs.append(fn(items[i:i + chunk]))
            if update:
                update(advance=len(outs[-1]))
    return np.concatenate(outs)
