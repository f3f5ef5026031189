"""Train K models of one architecture at once with a model-batched forward.

Parameters of the K models are stacked along a leading axis
(:func:`torch.func.stack_module_state`) and the forward pass and loss are ``vmap``-ed over it;
each model draws its own batches from its own generator. AdamW is applied to the stacked
tensors with a per-model learning rate (same formula as ``torch.optim.AdamW``), and gradient
clipping uses each model's own norm, so member ``k`` follows the same trajectory as a
single-model :func:`~expressivity.training.trainer.train` run with its seed and learning rate
(up to float round-off). A member whose loss turns non-finite, or that reaches the target
metric, is frozen while the others continue.
"""

from __future__ import annotations

import copy
import math
import time

import torch
from torch.func import functional_call, stack_module_state, vmap

from expressivity.errors import ExpressivityError
from expressivity.nn.model import Model, ModelConfig
from expressivity.tasks import Batch, Task
from expressivity.training.schedule import TrainConfig
from expressivity.training.trainer import TrainResult, eval_batch


class Ensemble:
    """K models of ``model_cfg``; member ``k`` initialised from ``torch.manual_seed(seeds[k])``."""

    def __init__(self, model_cfg: ModelConfig, seeds: list[int]):
        models = []
        for s in seeds:
            torch.manual_seed(s)
            models.append(Model(model_cfg))
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


def train_ensemble(task: Task, model_cfg: ModelConfig, cfgs: list[TrainConfig]) -> tuple[list[TrainResult], Ensemble]:
    """Train one member per config; configs may differ only in ``seed`` and ``lr``.

    Returns one result per member (``seconds`` is the wall time of the whole ensemble) and the
    trained :class:`Ensemble` (``ens.member(k)`` gives member ``k`` as a plain :class:`Model`)."""
    base = cfgs[0]
    for c in cfgs:
        d = {**c.to_dict(), "seed": 0, "lr": 0}
        if d != {**base.to_dict(), "seed": 0, "lr": 0}:
            raise ExpressivityError("ensemble members may differ only in seed and lr; run the others separately")
    ens = Ensemble(model_cfg, [c.seed for c in cfgs])
    K, names = ens.K, list(ens.params)
    # All parameters live in one (K, P) tensor; the model sees views of it. AdamW and clipping
    # are then a handful of whole-tensor ops per step instead of a few per parameter.
    shapes = [ens.params[n].shape[1:] for n in names]
    sizes = [math.prod(sh) for sh in shapes]
    flat = torch.cat([ens.params[n].detach().reshape(K, -1) for n in names], 1).requires_grad_(True)
    m1, m2 = torch.zeros_like(flat), torch.zeros_like(flat)

    def views(f):
        return {n: c.view(K, *sh) for n, c, sh in zip(names, f.split(sizes, 1), shapes)}

    gens = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    held_out = eval_batch(task, base.eval_size)
    alive = torch.ones(K, dtype=torch.bool)
    status = ["done"] * K
    stop_step = [base.steps] * K
    last_loss = [float("nan")] * K
    last_metric: list[float | None] = [None] * K
    histories: list[list[dict]] = [[] for _ in range(K)]

    def per_model_loss(p, b, x, y, mask):
        out = functional_call(ens.base, (p, b), (x,))
        return task.loss(out, Batch(x, y, mask))

    loss_fn = vmap(per_model_loss)
    t0 = time.perf_counter()
    b1, b2, eps, wd = base.beta1, base.beta2, base.eps, base.weight_decay
    for step in range(base.steps):
        batches = [task.sample(base.batch_size, g) for g in gens]
        x, y, mask = (torch.stack(t) for t in zip(*batches))
        losses = loss_fn(views(flat), ens.buffers, x, y, mask)
        bad = ~torch.isfinite(losses.detach())
        if bad.any():
            for k in torch.nonzero(bad & alive).flatten().tolist():
                status[k], stop_step[k] = "nan", step
                last_loss[k] = float("nan")
                histories[k].append({"step": step, "event": "nan", "loss": "nan"})
            alive &= ~bad
            if not alive.any():
                break
        (g,) = torch.autograd.grad(torch.where(alive, losses, torch.zeros_like(losses)).sum(), [flat])
        g = torch.where(alive[:, None], g, torch.zeros_like(g))
        clip = torch.clamp(base.grad_clip / (g.norm(dim=1, keepdim=True) + 1e-6), max=1.0)
        lr = (torch.tensor([c.lr_at(step) for c in cfgs]) * alive)[:, None]
        t = step + 1
        with torch.no_grad():
            g = g * clip
            flat.mul_(1 - lr * wd)
            m1.lerp_(g, 1 - b1)
            m2.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (m2.sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
            flat.sub_((lr / (1 - b1 ** t)) * m1 / denom)
        done = step + 1
        is_log = done % base.log_every == 0 or done == base.steps
        if is_log or done % base.eval_every == 0:  # .tolist() only when a value is needed
            values, lrs = losses.detach().tolist(), lr[:, 0].tolist()
            for k in torch.nonzero(alive).flatten().tolist():
                last_loss[k] = values[k]
                if is_log:
                    histories[k].append({"step": done, "loss": values[k], "lr": lrs[k]})
        if done % base.eval_every == 0 or done == base.steps:
            with torch.no_grad():
                out = vmap(lambda p, b, xk: functional_call(ens.base, (p, b), (xk,)), in_dims=(0, 0, None))(
                    views(flat), ens.buffers, held_out.x)
            for k in torch.nonzero(alive).flatten().tolist():
                last_metric[k] = task.metric(out[k], held_out)
                histories[k].append({"step": done, "eval_loss": task.loss(out[k], held_out).item(), "eval_metric": last_metric[k]})
                target = cfgs[k].target_metric
                if target is not None and last_metric[k] >= target:
                    status[k], stop_step[k] = "target-reached", done
                    alive[k] = False
            if not alive.any():
                break
    seconds = time.perf_counter() - t0
    n_params = flat.shape[1]
    for n, v in views(flat.detach()).items():
        ens.params[n] = v
    return [TrainResult(c.seed, last_loss[k], last_metric[k], stop_step[k], seconds, n_params, status[k], histories[k])
            for k, c in enumerate(cfgs)], ens
