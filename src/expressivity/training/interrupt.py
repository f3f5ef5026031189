"""Ctrl-C during training: finish the step in progress, checkpoint, then stop.

A ``KeyboardInterrupt`` raised in the middle of an optimiser step would leave weights and
optimiser state inconsistent, and one raised before the first checkpoint would lose the run.
:class:`deferred_interrupt` catches SIGINT while training, and the trainer checks
:meth:`~deferred_interrupt.requested` at every step boundary, writes a ``running`` checkpoint and
raises :class:`TrainingInterrupted` (a ``KeyboardInterrupt``). A second Ctrl-C interrupts at once. A SIGTERM is
deferred the same way where the CLI's handler holds it (one marked ``turns_sigterm_into_an_interrupt``).
"""

from __future__ import annotations

import signal
import threading


class TrainingInterrupted(KeyboardInterrupt):
    """Raised at a step boundary after Ctrl-C; ``step`` is the number of completed steps, and
    ``saved`` says whether a checkpoint at that step was written."""

    def __init__(self, step: int, saved: bool, signum: int | None = None):
        super().__init__(f"interrupted after step {step}")
        self.step, self.saved, self.signum = step, saved, signum


class deferred_interrupt:
    """Context manager deferring the first SIGINT to the next step boundary (main thread only;
    elsewhere, for example in Ray workers or threads, it does nothing, and where SIGINT is ignored it
    stays ignored)."""

    def __init__(self):
        self.count = 0
        self.signum = None   # the first deferred signal's number
        self._previous = {}

    def requested(self) -> bool:
        return self.count > 0

    def _handler(self, signum, frame):
        self.count += 1
        self.signum = self.signum or signum
        if self.count > 1:
            raise KeyboardInterrupt

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        # A process that ignores SIGINT keeps ignoring it: a sweep's worker process (its driver decides
        # when it stops) or a job started in the background with ``nohup ... &``.
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._handler)
        # SIGTERM is deferred only where the CLI's handler turns it into an interrupt (`timeout` and a scheduler's
        # preemption then checkpoint and stop); any other (the default action of a library user's process or a
        # sweep's worker, which its driver terminates; a handler a host installed, a Ray worker's exit) is kept:
        # deferring any non-default one kept a Ray worker alive past its SIGTERM (a review, 2026-11-28)
        term = signal.getsignal(signal.SIGTERM)
        if getattr(term, "turns_sigterm_into_an_interrupt", False):
            self._previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._handler)
        return self

    def __exit__(self, *exc):
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}
        return False
