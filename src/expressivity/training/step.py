"""The parts of a training step that an :class:`~expressivity.training.execution.Execution`
changes, shared by both steppers (:class:`~expressivity.training.trainer.SingleStepper`,
:class:`~expressivity.training.ensemble.EnsembleStepper`): where the batch is sampled, how the
forward pass and loss run (eager or captured, fp32 or autocast, which attention kernel), and, for
steppers that do not read the device every step, which members are still alive.
"""

from __future__ import annotations

from typing import Callable

import torch

from expressivity.tasks import Batch, Task
from expressivity.tasks.streams import CounterStream
from expressivity.training.execution import Execution


def set_attention_kernel(model: torch.nn.Module, kernel: str) -> None:
    """Every dot-product attention layer of ``model`` computes with ``kernel`` (``"explicit"`` or ``"sdpa"``)."""
    from expressivity.nn.mixers import Attention

    for module in model.modules():
        if isinstance(module, Attention):
            module.kernel = kernel


def batch_source(task: Task, execution: Execution, batch_size: int, seeds: list[int],
                 generators: list[torch.Generator], members: bool) -> Callable[[int], Batch]:
    """``source(step)``: the training batch of ``step`` on ``execution.device``, for one run
    (``members=False``) or K members (a leading ``K`` axis). The host sampler draws from
    ``generators`` (stream 1, one ``torch.Generator`` per member, advanced as before); the device
    sampler draws stream 2 from the seeds alone."""
    device = execution.device
    if execution.sampler == "device":
        return DeviceBatches(task, batch_size, CounterStream(seeds, device, members=members))
    if members:
        return lambda step: to_device(task.sample_members(batch_size, None, generators), device)
    return lambda step: to_device(task.sample(batch_size, None, generators[0]), device)


class DeviceBatches:
    """``batches(step)``: the device sampler's training batch of ``step`` (stream 2), a pure function
    of the seeds and the step, so a captured step can draw it too (:func:`loss_function`)."""

    def __init__(self, task: Task, batch_size: int, stream: CounterStream):
        self.task, self.batch_size, self.stream = task, batch_size, stream

    def __call__(self, step) -> Batch:
        return self.task.sample(self.batch_size, None, self.stream.at(step))


def to_device(batch: Batch, device) -> Batch:
    """``batch`` on ``device`` (the same object on the CPU: no copy)."""
    return batch if str(device) == "cpu" else Batch(*(t.to(device) for t in batch))


def loss_function(model: torch.nn.Module, task: Task, execution: Execution, members: bool,
                  source: Callable[[int], Batch]) -> Callable[[int], torch.Tensor]:
    """``losses(step)``: each member's training loss ``(K,)`` (``(1,)`` for one run) on ``step``'s
    batch from ``source`` (:func:`batch_source`), forward pass and loss under the execution's
    autocast. With ``capture="compiled"`` the function is compiled once (CUDA: ``mode=
    "reduce-overhead"``, CUDA graphs) and replayed every step; with the device sampler the batch is
    drawn inside it too (the step a 0-d tensor input), so a tiny model's step is not hundreds of
    sampling kernels launched one by one (claim 7's task: about 260) before the captured part."""
    set_attention_kernel(model, execution.attention)

    def losses(x, y, mask):
        with execution.autocast():
            out = model(x)
            if members:
                return task.member_losses(out, Batch(x, y, mask)).float()
            return task.loss(out, Batch(x, y, mask)).float().reshape(1)

    eager = lambda step: losses(*source(step))  # noqa: E731
    eager.execution = execution
    if execution.capture != "compiled":
        return eager
    allow_recompiles()
    cuda = execution.device == "cuda"
    mode = "reduce-overhead" if cuda else None
    if isinstance(source, DeviceBatches):
        device = torch.device(execution.device)
        source(0)   # the task's caches filled eagerly (a kernel matrix, the corpus on the device), not traced
        compiled = torch.compile(lambda step: losses(*source(step)), mode=mode, dynamic=False)

        def inputs(step):   # the step alone: the batch is drawn inside (a pure function of it)
            return (torch.tensor(step, dtype=torch.int64, device=device),)

        def fallback(step_tensor):
            return losses(*source(int(step_tensor)))
    else:
        compiled = torch.compile(losses, mode=mode, dynamic=False)
        inputs, fallback = source, losses   # the batch drawn once (the host stream advances with each draw)

    def run(*args):
        if cuda:
            # a new generation of CUDA graphs every step: a step whose forward had no backward (a
            # loop stopped between them, an error) leaves the next one on the graphs' fast path
            torch.compiler.cudagraph_mark_step_begin()
        if isinstance(source, DeviceBatches):
            # traced and run with the stream's device as the default, which Task.sample enters
            # itself when not traced (Dynamo cannot enter that context, but traces inside it)
            with torch.device(source.stream.device):
                return compiled(*args)
        return compiled(*args)

    return first_compile_or_eager(run, fallback, inputs, model, execution)


def stepper_losses(stepper, step: int, members: bool) -> torch.Tensor:
    """Both steppers' ``losses(step)``: the loss function built at the first step (on the model the
    stepper then has); where its compile failed, the stepper's execution becomes the eager one it
    records; where it compiled on CUDA with the state on the device, the optimizer's step is
    captured too (once)."""
    if stepper._loss is None:
        stepper._loss = loss_function(stepper.model, stepper.task, stepper.execution, members=members,
                                      source=stepper.sample)
    losses = stepper._loss(step)
    if stepper.execution.capture != stepper._loss.execution.capture:   # the compile failed: eager, recorded
        stepper.execution = stepper._loss.execution
    elif stepper.execution.capture == "compiled" and stepper.defers_sync and stepper.device == "cuda":
        stepper.optimizer.capture()
    return losses


def note_optimizer_fallback(stepper) -> None:
    """After a step: where the optimizer's compile failed (at that step, its first captured one),
    the stepper's execution records that it ran eagerly, before any checkpoint of that step."""
    if stepper.optimizer.capture_failed:
        stepper.execution = stepper.execution.fell_back("the compiled optimizer step failed; it ran eagerly")


def first_compile_or_eager(compiled, eager, inputs, model: torch.nn.Module, execution: Execution):
    """``losses(step)``: ``compiled(*inputs(step))``, checked at the first step: the forward and, by
    one gradient taken aside (the backward compiles lazily), the backward compile there; where either
    raises (an inductor or Triton error on a machine never tried, a CUDA graph that does not fit)
    the steps run ``eager(*inputs(step))`` from then on, with a warning, and the function's
    ``execution`` says ``capture="eager"`` (what the run records). An error the eager step raises
    too is raised."""
    import warnings
    from dataclasses import replace

    def losses(step):
        args = inputs(step)   # drawn once: the probe and the step see the same batch
        if losses.checked:
            return losses.run(*args)
        losses.checked = True
        try:
            probe = compiled(*args)
            params = [p for p in model.parameters() if p.requires_grad]
            torch.autograd.grad(probe.sum(), params, allow_unused=True)   # compiles the backward, touches no .grad
            del probe
            return compiled(*args)   # the same batch and weights: the step's own losses
        except Exception as exc:   # noqa: BLE001 - whatever the compile raised, eager decides
            text = str(exc).strip().splitlines()
            warnings.warn(f"torch.compile failed at the first step ({type(exc).__name__}: "
                          f"{text[0] if text else ''}); these steps run eagerly (recorded as capture='eager')",
                          RuntimeWarning, stacklevel=2)
            losses.run = eager
            losses.execution = replace(execution, capture="eager").fell_back(
                f"the compiled step failed ({type(exc).__name__}); the steps ran eagerly")
            return eager(*args)

    losses.checked, losses.run, losses.execution = False, compiled, execution
    return losses


# One worker process compiles every pack of a claim, each its own static shape (claim 7's full
# profile has 21), through the one function above; at Dynamo's default cap (8 compiles of a
# function) the packs after the eighth would run eagerly while their records say "compiled".
RECOMPILE_LIMIT = 256


def allow_recompiles(limit: int = RECOMPILE_LIMIT) -> None:
    """Let Dynamo compile one function for at least ``limit`` shapes (never lowers a larger setting)."""
    import torch._dynamo

    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit"):
        if hasattr(config, name) and isinstance(getattr(config, name), int):
            setattr(config, name, max(getattr(config, name), limit))


def forget_compiled() -> None:
    """Drop every compiled function and its CUDA graphs (their private memory pool): between packs
    of one process, so a finished pack's graphs neither hold memory the next one needs nor count
    towards Dynamo's limit (only where something was compiled: the call costs nothing then)."""
    import sys

    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        dynamo.reset()


class DeviceAlive:
    """Which of K members are alive, the step each turned non-finite (-1: never) and their peak
    learning rates, kept on the device so a step needs no host read or copy (``host_sync="log"``);
    the loop reads :meth:`nan_steps` when it logs."""

    def __init__(self, size: int, device, rates: list[float], alive: list[bool] | None = None):
        self.alive = torch.tensor(alive if alive is not None else [True] * size, device=device)
        self.nan_step = torch.full((size,), -1, dtype=torch.int64, device=device)
        self.peak = torch.tensor([[r] for r in rates], dtype=torch.float64, device=device)

    def rates(self, train, step: int) -> torch.Tensor:
        """``(K, 1)`` learning rates at ``step``: each member's peak times the schedule's factor (the
        members of a pack share the schedule; only the peak differs), a product on the device."""
        return self.peak * train.lr_at(step, 1.0)

    def screen(self, step: int, losses: torch.Tensor) -> torch.Tensor:
        """Freeze the members whose loss at ``step`` is not finite; the losses to back-propagate
        (0 for every member not alive, so its gradient is 0)."""
        finite = torch.isfinite(losses.detach())
        self.nan_step = torch.where(self.alive & ~finite, step, self.nan_step)
        self.alive = self.alive & finite
        return torch.where(self.alive, losses, torch.zeros_like(losses))

    def stop(self, k: int) -> None:
        self.alive[k] = False

    def nan_steps(self) -> list[int]:
        return self.nan_step.tolist()
