"""Ctrl-C during training: finish the step in progress, checkpoint, then stop.

A ``KeyboardInterrupt`` raised in the middle of an optimiser step would leave weights and
optimiser state inconsistent, and one raised before the first checkpoint would lose the run.
:class:`deferred_interrupt` catches SIGINT while training, and the trainer checks
:meth:`~deferred_interrupt.requested` at every step boundary, writes a ``running`` checkpoint and
raises :class:`TrainingInterrupted` (a ``KeyboardInterrupt``). A second Ctrl-C interrupts at once.
"""

from __future__ import annotations

import signal
import threading


class TrainingInterrupted(KeyboardInterrupt):
    """Raised at a step boundary after Ctrl-C; ``step`` is the number of completed steps, and
    ``saved`` says whether a checkpoint at that step was written."""

    def __init__(self, step: int, saved: bool):
        super().__init__(f"interrupted after step {step}")
        self.step, self.saved = step, saved


class deferred_interrupt:
    """Context manager deferring the first SIGINT to the next step boundary (main thread only;
    elsewhere, for example in Ray workers or threads, it does nothing, and where SIGINT is ignored it
    stays ignored)."""

    def __init__(self):
        self.count = 0
        self._previous = None

    def requested(self) -> bool:
        return self.count > 0

    def _handler(self, signum, frame):
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt

    def __enter__(self):
        # A process that ignores SIGINT keeps ignoring it: a sweep's worker process (its driver decides
        # when it stops) or a job started in the background with ``nohup ... &``.
        ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        if threading.current_thread() is threading.main_thread() and not ignored:
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        return False
