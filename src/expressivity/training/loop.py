"""The one training loop: steps, evaluation, target reached, non-finite losses, checkpoints,
Ctrl-C and resume, for K >= 1 members at once. How the members are stored and updated is a
:class:`Stepper`'s business: :class:`~expressivity.training.trainer.SingleStepper` (one model,
checkpoints and metrics in a run folder) or :class:`~expressivity.training.ensemble.EnsembleStepper`
(K models on native ensemble layers, one group checkpoint); both update through the one AdamW on
a ``(K, P)`` tensor, :class:`~expressivity.training.optimizer.FlatAdamW`.

Per step: the stepper computes every member's loss on its own batch; a member whose loss is not
finite stops with status ``"nan"`` (the step is not taken for it); the others are updated. Every
``log_every`` steps each running member's loss is recorded, every ``eval_every`` steps its
held-out loss and metric; a member whose metric reaches ``target_metric`` stops with status
``"target-reached"``. Every ``checkpoint_every`` steps the stepper writes a ``"running"``
checkpoint; when every member has stopped or the last step is done it writes the final one.
Ctrl-C finishes the step in progress, checkpoints it and raises
:class:`~expressivity.training.interrupt.TrainingInterrupted`. The process keeps the memory its
steps free for the next step (:mod:`expressivity.training.memory`).

A stepper with ``defers_sync`` (``host_sync="log"``, the CUDA default) is not read every step:
it freezes non-finite members on the device itself (``update(step, losses, None)``) and the loop
asks :meth:`Stepper.nan_steps` only when it logs, evaluates, checkpoints, ends or is interrupted;
the members found are stopped at the steps they failed, so the records are those of a stepper
read every step (tested in ``tests/training/test_execution.py``).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Callable, Protocol

import torch

from expressivity.progress import progress_bar
from expressivity.tasks import Batch, Task
from expressivity.training.interrupt import TrainingInterrupted, deferred_interrupt
from expressivity.training.memory import keep_freed_memory
from expressivity.training.schedule import TrainConfig


@dataclass
class Members:
    """Where each of K members stands: the part of a checkpoint the loop owns.

    ``status[k]`` is ``"done"`` while member ``k`` trains or after its last step,
    ``"target-reached"`` or ``"nan"`` once it stopped early at ``stop_step[k]``; ``best[k]`` is
    ``(metric, step)`` of its best evaluation. ``seconds``: the wall time the loop has trained these
    members so far, over every session (a resumed run's starts at its checkpoint's).
    """

    size: int
    steps: int
    status: list[str] = field(default_factory=list)
    stop_step: list[int] = field(default_factory=list)
    last_loss: list[float] = field(default_factory=list)
    last_metric: list = field(default_factory=list)
    best: list[tuple] = field(default_factory=list)
    histories: list[list[dict]] = field(default_factory=list)
    alive: list[bool] = field(default_factory=list)
    seconds: float = 0.0

    def __post_init__(self) -> None:
        K = self.size
        self.status = self.status or ["done"] * K
        self.stop_step = self.stop_step or [self.steps] * K
        self.last_loss = self.last_loss or [float("nan")] * K
        self.last_metric = self.last_metric or [None] * K
        self.best = self.best or [(None, None)] * K
        self.histories = self.histories or [[] for _ in range(K)]
        self.alive = self.alive or [True] * K

    def running(self) -> list[int]:
        return [k for k in range(self.size) if self.alive[k]]

    def stop(self, k: int, status: str, step: int) -> None:
        self.status[k], self.stop_step[k], self.alive[k] = status, step, False


class Stepper(Protocol):
    """What the loop needs of the members' storage and update rule."""

    size: int

    def losses(self, step: int) -> torch.Tensor:
        """Each member's loss ``(K,)`` on its next training batch (drawn from its own generator)."""

    def lr(self, k: int, step: int) -> float:
        """Member ``k``'s learning rate at ``step``."""

    def update(self, step: int, losses: torch.Tensor, alive: list[bool] | None) -> None:
        """Back-propagate ``losses`` and take one AdamW step for the running members (``alive=None``:
        the stepper's own device-side record of them, for a stepper with ``defers_sync``)."""

    def nan_steps(self) -> list[int]:
        """Per member, the step its loss turned non-finite (-1: never); only with ``defers_sync``."""

    def evaluate(self, batch: Batch) -> list[tuple[float, float]]:
        """Each member's ``(loss, metric)`` on the held-out ``batch``, in evaluation mode."""

    def record(self, k: int, entry: dict) -> None:
        """Member ``k``'s history grew by ``entry`` (a stepper may write it out at once)."""

    def stopped(self, k: int, members: Members, step: int) -> None:
        """Member ``k`` just stopped (status in ``members``)."""

    def checkpoint(self, step: int, members: Members) -> bool:
        """Write a ``"running"`` checkpoint at ``step``; whether one now holds the run."""

    def finish(self, step: int, members: Members) -> None:
        """Write the final checkpoint(s) once the loop has ended at ``step``."""


def train_members(stepper: Stepper, task: Task, cfg: TrainConfig, held_out: Batch, members: Members, start: int, *,
                  label: str, progress: bool = False, on_step: Callable[[int], None] | None = None,
                  describe: Callable[[Members], str] | None = None) -> tuple[int, float]:
    """Run the loop from step ``start`` until every member has stopped or ``cfg.steps`` are done.

    Returns ``(step, seconds)``: the step the loop ended at (the step that turned the last
    member's loss non-finite, if that ended it) and the wall time the members have trained, this
    loop's added to ``members.seconds`` (the earlier sessions' of a resumed run, from its
    checkpoint); checkpoints record it as it stands when written.
    """
    keep_freed_memory()
    step = start
    t0, before, stepped = time.perf_counter(), members.seconds, False

    def clock() -> None:   # before every checkpoint: the time trained so far goes into it
        if stepped:   # a finished run resumed trains nothing: its time stays the checkpoint's, exactly
            members.seconds = before + time.perf_counter() - t0
    with ExitStack() as stack:
        bar = stack.enter_context(progress_bar(label, cfg.steps, start, enabled=progress))
        interrupt = stack.enter_context(deferred_interrupt())
        for step in range(start, cfg.steps):
            if not any(members.alive):
                break
            if on_step is not None:
                on_step(step)
            stepped = True
            losses = stepper.losses(step)
            if getattr(stepper, "defers_sync", False):
                stepper.update(step, losses, None)   # non-finite members are frozen on the device
                done = step + 1
                if _reads_device(cfg, done, interrupt.requested()):
                    last = _read_stopped(stepper, members)
                    if not any(members.alive):
                        step = last
                        break
            else:
                finite = torch.isfinite(losses.detach()).tolist()
                for k in members.running():
                    if not finite[k]:
                        _stop_nan(stepper, members, k, step)
                if not any(members.alive):
                    break
                stepper.update(step, losses, members.alive)
                done = step + 1
            _log_and_evaluate(stepper, task, cfg, held_out, members, losses, done)
            if bar is not None:
                if describe is not None and done % cfg.eval_every == 0:
                    bar(description=describe(members))
                bar(advance=1)
            step = done
            if done == cfg.steps or not any(members.alive):
                break
            if done % cfg.checkpoint_every == 0 or interrupt.requested():
                clock()
            saved = done % cfg.checkpoint_every == 0 and stepper.checkpoint(done, members)
            if interrupt.requested():
                raise TrainingInterrupted(done, saved or stepper.checkpoint(done, members), interrupt.signum)
    clock()
    stepper.finish(step, members)
    return step, members.seconds


def _stop_nan(stepper: Stepper, members: Members, k: int, step: int) -> None:
    members.last_loss[k] = float("nan")
    _record(stepper, members, k, {"step": step, "event": "nan", "loss": "nan"})
    members.stop(k, "nan", step)
    stepper.stopped(k, members, step)


def _reads_device(cfg: TrainConfig, done: int, interrupted: bool) -> bool:
    """Whether a stepper that keeps non-finite losses on the device is read after step ``done``:
    whenever the loop logs, evaluates or checkpoints, at the last step and on Ctrl-C."""
    return (interrupted or done == cfg.steps or done % cfg.log_every == 0 or done % cfg.eval_every == 0
            or done % cfg.checkpoint_every == 0)


def _read_stopped(stepper, members: Members) -> int:
    """Stop the members the device found non-finite (at the steps it found them, in step order);
    returns the last such step (-1 when none)."""
    nan_steps = stepper.nan_steps()
    found = sorted((s, k) for k, s in enumerate(nan_steps) if s >= 0 and members.alive[k])
    for s, k in found:
        _stop_nan(stepper, members, k, s)
    return max((s for s in nan_steps if s >= 0), default=-1)


def _record(stepper: Stepper, members: Members, k: int, entry: dict) -> None:
    members.histories[k].append(entry)
    stepper.record(k, entry)


def _log_and_evaluate(stepper: Stepper, task: Task, cfg: TrainConfig, held_out: Batch, members: Members,
                      losses: torch.Tensor, done: int) -> None:
    """The records after step ``done``: losses every ``log_every`` steps, the held-out evaluation
    every ``eval_every`` steps (and both after the last step), and targets reached."""
    is_log = done % cfg.log_every == 0 or done == cfg.steps
    is_eval = done % cfg.eval_every == 0 or done == cfg.steps
    if not (is_log or is_eval):   # .tolist() only when a value is needed
        return
    values = losses.detach().tolist()
    for k in members.running():
        members.last_loss[k] = values[k]
        if is_log:
            _record(stepper, members, k, {"step": done, "loss": values[k], "lr": stepper.lr(k, done - 1)})
    if not is_eval:
        return
    scores = stepper.evaluate(held_out)
    for k in members.running():
        loss, metric = scores[k]
        members.last_metric[k] = metric
        if members.best[k][0] is None or metric > members.best[k][0]:
            members.best[k] = (metric, done)
        _record(stepper, members, k, {"step": done, "eval_loss": loss, "eval_metric": metric})
        if cfg.target_metric is not None and metric >= cfg.target_metric:
            members.stop(k, "target-reached", done)
            stepper.stopped(k, members, done)
