"""The single-model trainer.

``train(task, model_cfg, train_cfg, out_dir)`` runs AdamW with warm-up + cosine decay, gradient
clipping, held-out evaluation, early stopping at a metric threshold, JSONL metrics, checkpoints
and resume. Determinism: the model is initialised from ``torch.manual_seed(seed)`` and batches
come from a dedicated ``torch.Generator`` seeded with ``seed``; both states are checkpointed, so
a resumed run replays exactly the batches an uninterrupted run would have seen.

A non-finite loss stops the run cleanly (status ``"nan"``): the step is not taken and the last
checkpoint, written while everything was finite, is kept.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from expressivity.errors import ExpressivityError
from expressivity.nn.model import Model, ModelConfig
from expressivity.tasks import Task, make_task
from expressivity.training.checkpoint import load_checkpoint, save_checkpoint
from expressivity.training.schedule import EVAL_SEED, TrainConfig


@dataclass
class TrainResult:
    seed: int
    final_loss: float
    final_metric: float | None
    steps: int
    seconds: float
    params: int
    status: str  # "done", "target-reached" or "nan"
    history: list[dict] = field(default_factory=list, repr=False)
    model: object = field(default=None, repr=False)

    def summary(self) -> dict:
        return {"seed": self.seed, "final_loss": self.final_loss, "final_metric": self.final_metric,
                "steps": self.steps, "seconds": self.seconds, "params": self.params, "status": self.status}


def model_config_for(task: Task, **overrides) -> ModelConfig:
    """The task's default architecture, sized to its inputs/outputs, with ``overrides`` applied."""
    cfg = {"vocab_size": task.vocab_size, "d_in": task.d_in, "d_out": task.d_out, "max_len": task.seq_len}
    cfg.update(task.model_defaults())
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    return ModelConfig(**cfg)


def eval_batch(task: Task, size: int):
    return task.sample(size, torch.Generator().manual_seed(EVAL_SEED))


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: Task, batch) -> tuple[float, float]:
    model.eval()
    out = model(batch.x)
    model.train()
    return task.loss(out, batch).item(), task.metric(out, batch)


def _finite_params(model) -> bool:
    return all(torch.isfinite(p).all() for p in model.parameters())


def train(task: Task, model_cfg: ModelConfig, cfg: TrainConfig, out_dir: Path | None = None, *,
          resume: bool = False, progress: bool = False, on_step: Callable[[int, Model], None] | None = None) -> TrainResult:
    """Train one model; with ``out_dir`` write ``metrics.jsonl`` and ``checkpoint/`` there.

    ``resume=True`` continues from ``out_dir/checkpoint`` (same configuration). ``on_step(step,
    model)`` is called before every step (tests use it to simulate crashes and faults).
    """
    torch.manual_seed(cfg.seed)
    model = Model(model_cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps,
                            weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed)
    held_out = eval_batch(task, cfg.eval_size)
    start, history = 0, []
    last_metric, last_loss = None, float("nan")
    ckpt = Path(out_dir) / "checkpoint" if out_dir is not None else None
    metrics_path = Path(out_dir) / "metrics.jsonl" if out_dir is not None else None
    if resume:
        if ckpt is None or not (ckpt.exists() or ckpt.with_name("checkpoint.old").exists()):
            raise ExpressivityError(f"no checkpoint to resume in {out_dir}; start a fresh run with --out instead")
        saved, state = load_checkpoint(ckpt, model)
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        start, history = state["step"], state["history"]
        last_metric, last_loss = state["last_metric"], state["last_loss"]
    if metrics_path is not None:
        metrics_path.parent.mkdir(parents=True, exist_ok=True)
        # Drop lines written after the checkpoint we resume from: they will be recomputed.
        metrics_path.write_text("".join(json.dumps(h) + "\n" for h in history))
        log = metrics_path.open("a")
    params = sum(p.numel() for p in model.parameters())
    config_record = {"task": task.name, "task_args": task.kwargs(), "model": model_cfg.to_dict(), "train": cfg.to_dict()}

    def record(entry: dict) -> None:
        history.append(entry)
        if metrics_path is not None:
            log.write(json.dumps(entry) + "\n")
            log.flush()

    def checkpoint(step: int, status: str) -> None:
        if ckpt is None:
            return
        state = {"optimizer": opt.state_dict(), "generator": gen.get_state(), "torch_rng": torch.get_rng_state(),
                 "step": step, "history": list(history), "last_metric": last_metric, "last_loss": last_loss}
        save_checkpoint(ckpt, model, {**config_record, "step": step, "status": status}, state)

    status, step = "done", start
    end = cfg.steps
    if resume and saved.get("status") == "target-reached":
        status, end = "target-reached", start  # finished runs stay finished
    t0 = time.perf_counter()
    bar = _progress(progress, cfg.steps, start, task.name, cfg.seed)
    try:
        for step in range(start, end):
            if on_step is not None:
                on_step(step, model)
            lr = cfg.lr_at(step)
            for group in opt.param_groups:
                group["lr"] = lr
            batch = task.sample(cfg.batch_size, gen)
            loss = task.loss(model(batch.x), batch)
            if not torch.isfinite(loss):
                status = "nan"
                record({"step": step, "event": "nan", "loss": "nan"})
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
                record({"step": done, "eval_loss": eval_loss, "eval_metric": last_metric})
                if bar is not None:
                    bar[0].update(bar[1], description=f"{task.name} seed {cfg.seed} loss {last_loss:.4f} {task.metric_name} {last_metric:.4f}")
                if cfg.target_metric is not None and last_metric >= cfg.target_metric:
                    status = "target-reached"
            if bar is not None:
                bar[0].advance(bar[1])
            finite = math.isfinite(last_loss) and _finite_params(model)
            if finite and (done % cfg.checkpoint_every == 0 or done == cfg.steps or status != "done"):
                checkpoint(done, status)
            step = done
            if status != "done":
                break
    finally:
        if bar is not None:
            bar[0].stop()
        if metrics_path is not None:
            log.close()
    seconds = time.perf_counter() - t0
    if status == "nan":
        last_loss = float("nan")
    return TrainResult(cfg.seed, last_loss, last_metric, step, seconds, params, status, history, model)


def _progress(enabled: bool, total: int, start: int, name: str, seed: int):
    if not enabled:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from expressivity.progress import stderr_console

    p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                 console=stderr_console, transient=True)
    p.start()
    return p, p.add_task(f"{name} seed {seed}", total=total, completed=start)


def load_trained(run_dir: Path) -> tuple[Model, Task, dict]:
    """Rebuild the model and task of a run directory's checkpoint."""
    config, _ = load_checkpoint(Path(run_dir) / "checkpoint")
    model = Model(ModelConfig.from_dict(config["model"]))
    load_checkpoint(Path(run_dir) / "checkpoint", model)
    return model, make_task(config["task"], **config["task_args"]), config
