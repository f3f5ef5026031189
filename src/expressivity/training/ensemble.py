"""Train K runs of one architecture at once with a model-batched forward.

Parameters of the K models are stacked along a leading axis
(:func:`torch.func.stack_module_state`) and the forward pass and loss are ``vmap``-ed over it;
each member draws its own batches from its own generator. AdamW is applied to the stacked
tensors with a per-member learning rate (the formula of ``torch.optim.AdamW``) and gradient
clipping uses each member's own norm. A member whose loss turns non-finite, or that reaches its
target metric, is frozen while the others continue.

How close a member stays to its single run: the arithmetic is the same, but the batched
kernels sum in another order, so members agree with :func:`~expressivity.training.run` to
float32 round-off at first and drift apart slowly as training amplifies it (measured in
``tests/training/test_ensemble.py`` on ``reverse``: parameters within 2e-5 after 15 steps; after
300 steps parameters within 1e-2, held-out metrics within 0.01 and losses within 0.1%).
Ensembles are exact replicas of themselves: the same configs give bit-identical results, and
resuming is bit-exact.

Checkpoints: the whole ensemble's state (stacked parameters, both Adam moments, every member's
generator, status and history) is one atomic checkpoint in ``group_dir/ensemble`` (written every
``checkpoint_every`` steps, status ``"running"``), so members always resume from the same step.
At the end every member's folder ``group_dir/<member>`` gets ``metrics.jsonl`` and a normal
final checkpoint, so each member is an ordinary finished run.
"""

from __future__ import annotations

import copy
import json
import math
import time
from pathlib import Path

import torch
from torch.func import functional_call, stack_module_state, vmap

from expressivity.errors import ExpressivityError
from expressivity.nn.model import Model
from expressivity.progress import progress_bar
from expressivity.tasks import Batch
from expressivity.training.budget import check_run_budget
from expressivity.training.checkpoint import FINISHED, RUNNING, checkpoint_exists, load_checkpoint, save_checkpoint
from expressivity.training.config import RunConfig
from expressivity.training.interrupt import TrainingInterrupted, deferred_interrupt
from expressivity.training.trainer import RunResult, eval_batch, evaluate_lengths, resolve_device


class Ensemble:
    """K models of one configuration; member ``k`` initialised from ``torch.manual_seed(seeds[k])``."""

    def __init__(self, model_cfg, seeds: list[int], device: str = "cpu"):
        models = []
        for s in seeds:
            torch.manual_seed(s)
            models.append(Model(model_cfg).to(device))
        self.params, self.buffers = stack_module_state(models)
        self.base = copy.deepcopy(models[0]).to("meta")
        self.K = len(seeds)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(K, batch, ...)`` -> ``(K, batch, n, d_out)``; use ``x.expand`` to share inputs."""
        def f(p, b, xk):
            return functional_call(self.base, (p, b), (xk,))
        return vmap(f)(self.params, self.buffers, x)

    def member(self, k: int) -> Model:
        m = Model(self.base.cfg)
        m.load_state_dict({**{n: p[k].detach() for n, p in self.params.items()},
                           **{n: b[k] for n, b in self.buffers.items()}}, strict=False)
        return m


def check_packable(configs: list[RunConfig]) -> None:
    """Refuse configurations that differ in anything but ``seed`` and ``train.lr``."""
    if not configs:
        raise ExpressivityError("an ensemble needs at least one run")

    def shape(c: RunConfig) -> dict:
        d = c.to_dict()
        return {**d, "seed": 0, "train": {**d["train"], "lr": 0}}

    first = shape(configs[0])
    if any(shape(c) != first for c in configs[1:]):
        raise ExpressivityError("ensemble members may differ only in seed and lr; run the others separately")
    ids = [c.id() for c in configs]
    if len(set(ids)) != len(ids):
        raise ExpressivityError("an ensemble got the same run twice; give distinct seeds or learning rates")


def run_ensemble(configs: list[RunConfig], group_dir: Path | None = None, member_dirs: list[Path] | None = None, *,
                 resume: bool = False, progress: bool = False, on_step=None,
                 device: str = "cpu") -> tuple[list[RunResult], Ensemble]:
    """Train every config as one ensemble; returns one :class:`RunResult` per member (``seconds``
    is the wall time of the whole ensemble) and the :class:`Ensemble`.

    ``group_dir`` holds the ensemble checkpoint; ``member_dirs`` (default ``group_dir/seed_<s>``)
    get each member's metrics and final checkpoint. ``on_step(step)`` is called before every
    step (tests use it to simulate a crash). ``device`` as in :func:`~expressivity.training.run`.
    """
    device = resolve_device(device)
    check_packable(configs)
    base_cfg, task = configs[0], configs[0].build_task()
    tc = base_cfg.train
    check_run_budget(base_cfg, task, models=len(configs))
    if group_dir is not None and member_dirs is None:
        member_dirs = [Path(group_dir) / f"seed_{c.seed}" for c in configs]
    ens = Ensemble(base_cfg.model, [c.seed for c in configs], device)
    K, names = ens.K, list(ens.params)
    # All parameters live in one (K, P) tensor; the model sees views of it. AdamW and clipping
    # are then a handful of whole-tensor ops per step instead of a few per parameter.
    shapes = [ens.params[n].shape[1:] for n in names]
    sizes = [math.prod(sh) for sh in shapes]
    flat = torch.cat([ens.params[n].detach().reshape(K, -1) for n in names], 1)
    m1, m2 = torch.zeros_like(flat), torch.zeros_like(flat)
    gens = [torch.Generator().manual_seed(c.seed) for c in configs]
    alive = torch.ones(K, dtype=torch.bool, device=device)
    status, stop_step = ["done"] * K, [tc.steps] * K
    last_loss, last_metric = [float("nan")] * K, [None] * K
    best: list[tuple] = [(None, None)] * K
    histories: list[list[dict]] = [[] for _ in range(K)]
    start = 0
    ckpt = Path(group_dir) / "ensemble" if group_dir is not None else None
    group_id = _group_id(configs)
    if resume:
        if ckpt is None or not checkpoint_exists(ckpt):
            raise ExpressivityError(f"no ensemble checkpoint to resume in {group_dir}; start a fresh run instead")
        saved, tensors, st = load_checkpoint(ckpt)
        if saved.get("id") != group_id:
            raise ExpressivityError(f"the ensemble checkpoint in {group_dir} belongs to other runs; use a new folder")
        flat, m1, m2 = (tensors[k].to(device).clone() for k in ("flat", "m1", "m2"))
        for g, s in zip(gens, st["generators"]):
            g.set_state(s)
        alive = st["alive"].to(device).clone()
        status, stop_step, last_loss = st["status"], st["stop_step"], st["last_loss"]
        last_metric, best, histories, start = st["last_metric"], [tuple(b) for b in st["best"]], st["histories"], st["step"]
        if saved["status"] in FINISHED:
            start = tc.steps
    flat.requires_grad_(True)

    def views(f):
        return {n: c.view(K, *sh) for n, c, sh in zip(names, f.split(sizes, 1), shapes)}

    held_out = eval_batch(task, tc.eval_size, device=device)

    def per_model_loss(p, b, x, y, mask):
        out = functional_call(ens.base, (p, b), (x,))
        return task.loss(out, Batch(x, y, mask))

    def save(step: int, state_name: str) -> None:
        if ckpt is None:
            return
        st = {"generators": [g.get_state() for g in gens], "alive": alive.clone(), "status": list(status),
              "stop_step": list(stop_step), "last_loss": list(last_loss), "last_metric": list(last_metric),
              "best": [list(b) for b in best], "histories": [list(h) for h in histories], "step": step}
        save_checkpoint(ckpt, {"flat": flat.detach(), "m1": m1, "m2": m2},
                        {"id": group_id, "members": [c.id() for c in configs], "step": step, "status": state_name}, st)

    loss_fn = vmap(per_model_loss)
    t0 = time.perf_counter()
    b1, b2, eps, wd = tc.beta1, tc.beta2, tc.eps, tc.weight_decay
    with progress_bar(f"{task.name} ensemble of {K}", tc.steps, start, enabled=progress) as bar, \
            deferred_interrupt() as interrupt:
        step = start
        for step in range(start, tc.steps):
            if not alive.any():
                break
            if on_step is not None:
                on_step(step)
            batches = [task.sample(tc.batch_size, None, g) for g in gens]
            x, y, mask = (torch.stack(t).to(device) for t in zip(*batches))
            losses = loss_fn(views(flat), ens.buffers, x, y, mask)
            bad = ~torch.isfinite(losses.detach()) & alive
            for k in torch.nonzero(bad).flatten().tolist():
                status[k], stop_step[k], last_loss[k] = "nan", step, float("nan")
                histories[k].append({"step": step, "event": "nan", "loss": "nan"})
            alive &= ~bad
            if not alive.any():
                break
            (g,) = torch.autograd.grad(torch.where(alive, losses, torch.zeros_like(losses)).sum(), [flat])
            g = torch.where(alive[:, None], g, torch.zeros_like(g))
            clip = torch.clamp(tc.grad_clip / (g.norm(dim=1, keepdim=True) + 1e-6), max=1.0)
            lr = (torch.tensor([c.train.lr_at(step) for c in configs], device=device) * alive)[:, None]
            t = step + 1
            with torch.no_grad():
                g = g * clip
                flat.mul_(1 - lr * wd)
                m1.lerp_(g, 1 - b1)
                m2.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (m2.sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
                flat.sub_((lr / (1 - b1 ** t)) * m1 / denom)
            done = step + 1
            is_log = done % tc.log_every == 0 or done == tc.steps
            if is_log or done % tc.eval_every == 0:  # .tolist() only when a value is needed
                values, lrs = losses.detach().tolist(), lr[:, 0].tolist()
                for k in torch.nonzero(alive).flatten().tolist():
                    last_loss[k] = values[k]
                    if is_log:
                        histories[k].append({"step": done, "loss": values[k], "lr": lrs[k]})
            if done % tc.eval_every == 0 or done == tc.steps:
                with torch.no_grad():
                    out = vmap(lambda p, b, xk: functional_call(ens.base, (p, b), (xk,)), in_dims=(0, 0, None))(
                        views(flat), ens.buffers, held_out.x)
                for k in torch.nonzero(alive).flatten().tolist():
                    last_metric[k] = task.metric(out[k], held_out)
                    if best[k][0] is None or last_metric[k] > best[k][0]:
                        best[k] = (last_metric[k], done)
                    histories[k].append({"step": done, "eval_loss": task.loss(out[k], held_out).item(),
                                         "eval_metric": last_metric[k]})
                    target = configs[k].train.target_metric
                    if target is not None and last_metric[k] >= target:
                        status[k], stop_step[k] = "target-reached", done
                        alive[k] = False
            if bar is not None:
                bar(advance=1)
            step = done
            if done % tc.checkpoint_every == 0 and done < tc.steps and alive.any():
                save(done, RUNNING)
            if interrupt.requested() and done < tc.steps:
                if ckpt is not None and done % tc.checkpoint_every != 0:
                    save(done, RUNNING)
                raise TrainingInterrupted(done, ckpt is not None)
    seconds = time.perf_counter() - t0
    save(step, "done")
    for n, v in views(flat.detach()).items():
        ens.params[n] = v
    results = []
    for k, c in enumerate(configs):
        member = ens.member(k)
        lengths = {} if status[k] == "nan" else evaluate_lengths(member.to(device), c, task, device)
        results.append(RunResult(c.id(), c, status[k], min(stop_step[k], step), seconds, flat.shape[1], last_loss[k],
                                 last_metric[k], best[k][0], best[k][1], lengths, device, histories[k], member.cpu()))
    if member_dirs is not None:
        _write_members(results, member_dirs)
    return results, ens


def _group_id(configs: list[RunConfig]) -> str:
    from expressivity.records import content_hash

    return content_hash([c.id() for c in configs])


def _write_members(results: list[RunResult], member_dirs: list[Path]) -> None:
    """Each member's folder: its metrics and a final checkpoint, as a single run would leave them."""
    for r, d in zip(results, member_dirs):
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        (d / "metrics.jsonl").write_text("".join(json.dumps(h) + "\n" for h in r.history))
        save_checkpoint(d / "checkpoint", r.model.state_dict(),
                        {"run": r.config.to_dict(), "id": r.id, "step": r.steps, "status": r.status,
                         "trained_in": "ensemble"},
                        {"step": r.steps, "history": r.history, "last_metric": r.final_metric,
                         "last_loss": r.final_loss, "best": [r.best_metric, r.best_step]})
