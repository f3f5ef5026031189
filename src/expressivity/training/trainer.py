"""The single-model trainer: :func:`run` executes one :class:`RunConfig`.

AdamW with warm-up + cosine decay, gradient clipping, held-out evaluation, early stopping at a
metric threshold, JSONL metrics, checkpoints and resume. Determinism: the model is initialised
from ``torch.manual_seed(seed)`` and batches come from a dedicated ``torch.Generator`` seeded
with ``seed``; both states are checkpointed, so a resumed run replays exactly the batches an
uninterrupted run would have seen, and ends bit-identical on the CPU.

Status: checkpoints written during training say ``"running"`` (an interrupted or killed run
resumes from the last one); the final checkpoint says ``"done"``, ``"target-reached"`` or
``"nan"``. A non-finite loss stops the run cleanly: the step is not taken and the last
checkpoint, written while everything was finite, is kept and marked ``"nan"``.

Ctrl-C finishes the step in progress, writes a ``"running"`` checkpoint and raises
:class:`~expressivity.training.interrupt.TrainingInterrupted`, so the run can be resumed.

Run folder: ``metrics.jsonl`` (one line per log or evaluation) and ``checkpoint/``.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from expressivity.errors import ExpressivityError, require_path
from expressivity.nn.model import Model
from expressivity.progress import progress_bar
from expressivity.tasks import Batch, Task
from expressivity.training.budget import check_run_budget
from expressivity.training.checkpoint import FINISHED, RUNNING, checkpoint_exists, load_checkpoint, save_checkpoint
from expressivity.training.config import RunConfig, check_run_arguments
from expressivity.training.interrupt import TrainingInterrupted, deferred_interrupt
from expressivity.training.schedule import SPLIT_SEEDS


@dataclass
class RunResult:
    """What a run ended with.

    ``lengths`` maps each evaluated task length (the training length first) to the held-out
    ``{"val_loss", "val_metric", "test_loss", "test_metric"}`` at the end; ``final_metric`` and
    ``best_metric`` are validation metrics at the training length (the last and the best of the
    periodic evaluations). ``device`` is where it ran.
    """

    id: str
    config: RunConfig
    status: str  # "done", "target-reached" or "nan"
    steps: int
    seconds: float
    params: int
    final_loss: float
    final_metric: float | None
    best_metric: float | None = None
    best_step: int | None = None
    lengths: dict = field(default_factory=dict)
    device: str = "cpu"
    history: list[dict] = field(default_factory=list, repr=False)
    model: Model | None = field(default=None, repr=False)

    @property
    def seed(self) -> int:
        return self.config.seed

    def summary(self) -> dict:
        """The JSON-ready facts of the run (no model, no history)."""
        return {"id": self.id, "seed": self.seed, "status": self.status, "steps": self.steps,
                "seconds": self.seconds, "params": self.params, "final_loss": self.final_loss,
                "final_metric": self.final_metric, "best_metric": self.best_metric, "best_step": self.best_step,
                "lengths": {str(k): v for k, v in self.lengths.items()}, "device": self.device}


def eval_batch(task: Task, size: int, length: int | None = None, split: str = "val", device="cpu") -> Batch:
    """The held-out ``split`` (``"val"`` or ``"test"``) at ``length``: the same for every run and seed."""
    batch = task.sample(size, length, torch.Generator().manual_seed(SPLIT_SEEDS[split]), split)
    return to_device(batch, device)


def to_device(batch: Batch, device) -> Batch:
    return batch if str(device) == "cpu" else Batch(*(t.to(device) for t in batch))


def resolve_device(device: str = "cpu") -> str:
    """``"auto"`` (CUDA when available, else CPU), ``"cpu"`` or ``"cuda"``; refuses CUDA without a GPU."""
    if device not in ("auto", "cpu", "cuda"):
        raise ExpressivityError(f"unknown device {device!r}; use auto, cpu or cuda")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ExpressivityError("--device cuda was asked for, but PyTorch sees no CUDA GPU here; use --device cpu or auto")
    return device


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: Task, batch: Batch) -> tuple[float, float]:
    """``(loss, metric)`` of ``model`` on ``batch``, in evaluation mode."""
    model.eval()
    out = model(batch.x)
    model.train()
    return task.loss(out, batch).item(), task.metric(out, batch)


def evaluate_lengths(model: torch.nn.Module, config: RunConfig, task: Task, device="cpu") -> dict[int, dict]:
    """Validation and test loss and metric at the training length and at every ``config.eval_lengths``."""
    out = {}
    for length in dict.fromkeys((task.length, *config.eval_lengths)):
        row = {}
        for split in ("val", "test"):
            loss, metric = evaluate(model, task, eval_batch(task, config.train.eval_size, length, split, device))
            row[f"{split}_loss"], row[f"{split}_metric"] = loss, metric
        out[length] = row
    return out


def _finite_params(model) -> bool:
    return all(torch.isfinite(p).all() for p in model.parameters())


def run(config: RunConfig, out_dir: Path | None = None, *, resume: bool = False, progress: bool = False,
        on_step: Callable[[int, Model], None] | None = None, device: str = "cpu") -> RunResult:
    """Train one model as ``config`` says; with ``out_dir`` write ``metrics.jsonl`` and ``checkpoint/``.

    ``resume=True`` continues from ``out_dir/checkpoint`` (which must hold the same
    configuration); a finished run is returned as it ended, without training further.
    ``on_step(step, model)`` is called before every step (tests use it to simulate crashes).
    ``device``: ``"cpu"``, ``"cuda"`` or ``"auto"``; data is drawn on the CPU (same batches
    everywhere) and moved there. Bit-exact resume is promised on the CPU.
    """
    check_run_arguments(config, out_dir)
    device = resolve_device(device)
    task, cfg = config.build_task(), config.train
    check_run_budget(config, task)
    torch.manual_seed(config.seed)
    model = Model(config.model).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps,
                            weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(config.seed)
    held_out = eval_batch(task, cfg.eval_size, device=device)
    start, history = 0, []
    last_metric, last_loss, best = None, float("nan"), (None, None)
    status, finished = "done", False  # "done" while training; finished: resumed a run that had ended
    ckpt = Path(out_dir) / "checkpoint" if out_dir is not None else None
    metrics_path = Path(out_dir) / "metrics.jsonl" if out_dir is not None else None
    record_config = {"run": config.to_dict(), "id": config.id()}
    if resume:
        if ckpt is None or not checkpoint_exists(ckpt):
            raise ExpressivityError(f"no checkpoint to resume in {out_dir}; start a fresh run instead")
        saved, tensors, state = load_checkpoint(ckpt)
        if saved.get("id") != config.id():
            raise ExpressivityError(f"the checkpoint in {out_dir} belongs to another configuration "
                                    f"(id {saved.get('id')}, this run {config.id()}); use a new folder")
        if saved["step"] > cfg.steps or (saved["status"] == "done" and saved["step"] != cfg.steps) \
                or saved.get("run") != config.to_dict():
            raise ExpressivityError(f"the checkpoint in {out_dir} does not match its run (step {saved['step']} of "
                                    f"{cfg.steps}, status {saved['status']}); delete the folder to start over")
        _load_weights(model, {k: v.to(device) for k, v in tensors.items()}, ckpt)
        try:
            if state["step"] != saved["step"]:
                raise ValueError(f"state at step {state['step']}, config at step {saved['step']}")
            start, history = state["step"], state["history"]
            last_metric, last_loss, best = state["last_metric"], state["last_loss"], tuple(state["best"])
            if saved["status"] in FINISHED:
                status, finished = saved["status"], True
            else:
                opt.load_state_dict(state["optimizer"])
                gen.set_state(state["generator"])
                torch.set_rng_state(state["torch_rng"])
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            raise ExpressivityError(f"checkpoint {ckpt} has an incomplete training state ({type(exc).__name__}: "
                                    f"{exc}); delete the folder to start over") from None
    log = None
    if metrics_path is not None:
        metrics_path.parent.mkdir(parents=True, exist_ok=True)
        # Drop lines written after the checkpoint we resume from: they will be recomputed.
        metrics_path.write_text("".join(json.dumps(h) + "\n" for h in history))
        log = metrics_path.open("a")
    params = sum(p.numel() for p in model.parameters())

    def record(entry: dict) -> None:
        history.append(entry)
        if log is not None:
            log.write(json.dumps(entry) + "\n")
            log.flush()

    def checkpoint(step: int, status: str) -> None:
        if ckpt is None:
            return
        state = {"optimizer": opt.state_dict(), "generator": gen.get_state(), "torch_rng": torch.get_rng_state(),
                 "step": step, "history": list(history), "last_metric": last_metric, "last_loss": last_loss,
                 "best": list(best)}
        save_checkpoint(ckpt, model.state_dict(), {**record_config, "step": step, "status": status}, state)

    step = start
    end = start if finished else cfg.steps  # finished runs stay finished
    t0 = time.perf_counter()
    with ExitStack() as stack:
        if log is not None:
            stack.callback(log.close)
        bar = stack.enter_context(progress_bar(f"{task.name} seed {config.seed}", cfg.steps, start, enabled=progress))
        interrupt = stack.enter_context(deferred_interrupt())
        for step in range(start, end):
            if on_step is not None:
                on_step(step, model)
            lr = cfg.lr_at(step)
            for group in opt.param_groups:
                group["lr"] = lr
            batch = to_device(task.sample(cfg.batch_size, None, gen), device)
            loss = task.loss(model(batch.x), batch)
            if not torch.isfinite(loss):
                status = "nan"
                record({"step": step, "event": "nan", "loss": "nan"})
                _mark_nan(ckpt, step)
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            last_loss = loss.item()
            done = step + 1
            if done % cfg.log_every == 0 or done == cfg.steps:
                record({"step": done, "loss": last_loss, "lr": lr})
            if done % cfg.eval_every == 0 or done == cfg.steps:
                eval_loss, last_metric = evaluate(model, task, held_out)
                if best[0] is None or last_metric > best[0]:
                    best = (last_metric, done)
                record({"step": done, "eval_loss": eval_loss, "eval_metric": last_metric})
                if bar is not None:
                    bar(description=f"{task.name} seed {config.seed} loss {last_loss:.4f} "
                                    f"{task.metric_name} {last_metric:.4f}")
                if cfg.target_metric is not None and last_metric >= cfg.target_metric:
                    status = "target-reached"
            if bar is not None:
                bar(advance=1)
            step = done
            final = status != "done" or done == cfg.steps
            if math.isfinite(last_loss) and _finite_params(model) and (final or done % cfg.checkpoint_every == 0):
                checkpoint(done, status if final else RUNNING)
            if status != "done":
                break
            if interrupt.requested():
                saved = ckpt is not None and math.isfinite(last_loss) and _finite_params(model)
                if saved and done % cfg.checkpoint_every != 0:
                    checkpoint(done, RUNNING)
                raise TrainingInterrupted(done, saved)
    seconds = time.perf_counter() - t0
    if status == "nan":
        last_loss = float("nan")
    lengths = {} if status == "nan" else evaluate_lengths(model, config, task, device)
    return RunResult(config.id(), config, status, step, seconds, params, last_loss, last_metric, best[0], best[1],
                     lengths, device, history, model.cpu())


def _load_weights(model: torch.nn.Module, tensors: dict, where) -> None:
    try:
        model.load_state_dict(tensors)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise ExpressivityError(f"checkpoint {where} does not fit this model ({first}); delete it to start over") from None


def _mark_nan(ckpt: Path | None, step: int) -> None:
    """Keep the last good checkpoint's weights, but record that the run ended in NaN."""
    if ckpt is None or not checkpoint_exists(ckpt):
        return
    config, tensors, state = load_checkpoint(ckpt)
    save_checkpoint(ckpt, tensors, {**config, "status": "nan", "nan_at_step": step}, state)


def load_trained(run_dir: Path) -> tuple[Model, Task, RunConfig]:
    """The model (weights of the last checkpoint), task and configuration of a run folder."""
    run_dir = require_path(run_dir, "load_trained's run folder")
    saved, tensors, _ = load_checkpoint(run_dir / "checkpoint", with_state=False)
    if "run" not in saved:
        raise ExpressivityError(f"{run_dir}/checkpoint was not written by this version's trainer; retrain it")
    config = RunConfig.from_dict(saved["run"])
    model = Model(config.model)
    _load_weights(model, tensors, Path(run_dir) / "checkpoint")
    return model, config.build_task(), config
