"""One AdamW for one model and for K models at once: the parameters are the rows of one ``(K, P)``
tensor (K = 1 for a single run).

Member by member the arithmetic is ``torch.nn.utils.clip_grad_norm_`` followed by
``torch.optim.AdamW``'s single-tensor step (the CPU default), bit for bit: the per-parameter
gradient norms and then the norm of those, the clipping factor ``min(1, max_norm / (norm +
1e-6))``, decoupled weight decay ``p *= 1 - lr wd`` on the weight matrices only, ``m1.lerp_``,
``m2 * beta2 + (1 - beta2) g^2``, and ``p.addcdiv_(m1, sqrt(m2) / sqrt(1 - beta2^t) + eps,
value=-lr / (1 - beta1^t))`` (``tests/training/test_optimizer.py`` trains both side by side).
Every step is a few operations over the whole ``(K, P)`` tensor, plus one norm per parameter
(the order torch sums in). Members differ only in their learning rate, a ``(K, 1)`` column.

Why not ``torch.optim.AdamW`` itself: its first use imports ``torch._dynamo`` (1.4 s of every
single run's start-up on the 2-core CI machine) and it steps parameter by parameter (tens of
small operations a step, which small models feel). Checkpoints of a single run keep
``torch.optim.AdamW``'s ``state_dict`` layout (:meth:`FlatAdamW.torch_state` /
:meth:`FlatAdamW.load_torch_state`), so run folders written before and after this module are
interchangeable.

Semantics a caller relies on: every parameter gets a gradient each step (a parameter the loss does
not reach has gradient 0 here, where ``torch.optim`` would skip it; every model of the family
reaches all its parameters, which the tests check); a member that is not ``alive`` is not moved
and its gradient is zeroed before the norms (it may hold ``0 * inf = nan``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from expressivity.training.schedule import TrainConfig


class FlatAdamW:
    """AdamW with gradient clipping over the rows of one ``(K, P)`` tensor.

    ``named`` are ``(name, parameter)`` pairs in the model's order: plain shapes when ``members``
    is ``None`` (one model), shapes with a leading ``K = members`` otherwise. After construction
    every parameter is a view of its columns of :attr:`flat` and its gradient a view of
    :attr:`grad`, so backward accumulates straight into :attr:`grad` and :meth:`step` updates the
    parameters in place. ``decayed`` names the parameters weight decay applies to.
    """

    def __init__(self, named: Sequence[tuple[str, torch.Tensor]], members: int | None, decayed: set[str],
                 train: TrainConfig):
        self.members, self.train = members, train
        self.size = K = 1 if members is None else members
        self.names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._shapes = [tuple(p.shape) if members is None else tuple(p.shape[1:]) for p in self._params]
        self.flat = torch.cat([p.detach().reshape(K, -1) for p in self._params], 1)
        self.grad = torch.zeros_like(self.flat)
        self.m1, self.m2 = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.columns, start = [], 0
        for shape in self._shapes:
            size = math.prod(shape)
            self.columns.append(slice(start, start + size))
            start += size
        self.decayed_names = set(decayed)
        # the decayed columns as runs of neighbouring parameters (one multiply each)
        self.decayed_runs: list[slice] = []
        for n, c in zip(self.names, self.columns):
            if n not in decayed:
                continue
            if self.decayed_runs and self.decayed_runs[-1].stop == c.start:
                self.decayed_runs[-1] = slice(self.decayed_runs[-1].start, c.stop)
            else:
                self.decayed_runs.append(c)
        self._denom, self._update = torch.empty_like(self.flat), torch.empty_like(self.flat)   # scratch
        self._captured, self._capture_tried = None, False   # the masked step through torch.compile (:meth:`capture`)
        self._decayed_columns = torch.zeros(1, self.flat.shape[1], dtype=torch.bool, device=self.flat.device)
        for cols in self.decayed_runs:
            self._decayed_columns[:, cols] = True
        self.bind()

    def capture(self, backend: str = "inductor") -> None:
        """Run the masked step (``alive`` and ``lrs`` on the device) through ``torch.compile``
        (:meth:`_step_functional`), the step ``t`` a 0-d float64 tensor input (a Python int would be
        a constant compiled into the graph, one compile a step): its fifty-odd small operations,
        one norm per parameter among them, become a few fused kernels. The steppers capture it on
        CUDA only: inductor's CPU code generator fails on it (``KeyError: 'buf25'`` in its outer-loop
        fusion, torch 2.13), and a failed compile falls back to the eager step with a warning. The
        arithmetic is tested against the eager step on the CPU (uncompiled, and traced by Dynamo
        and AOTAutograd with ``backend="aot_eager"``); inductor's CUDA kernels are checked by
        ``benchmarks/gpu_check.py``'s agreement part."""
        from expressivity.training.step import allow_recompiles

        if self._capture_tried:   # once: a compile that failed is not tried again every step
            return
        self._capture_tried = True
        allow_recompiles()
        self._captured = torch.compile(self._step_functional, dynamic=False, backend=backend)
        self._captured_checked = False

    def bind(self) -> None:
        """Make every parameter a view of its columns of :attr:`flat`, its gradient one of :attr:`grad`."""
        for p, cols, shape in zip(self._params, self.columns, self._shapes):
            if self.members is None:
                p.data, p.grad = self.flat[0, cols].view(shape), self.grad[0, cols].view(shape)
            else:
                K = self.size
                p.data, p.grad = self.flat[:, cols].view(K, *shape), self.grad[:, cols].view(K, *shape)

    def zero_grad(self) -> None:
        self.grad.zero_()

    @torch.no_grad()
    def step(self, t: int, lrs: Sequence[float], alive: Sequence[bool] | torch.Tensor) -> None:
        """Step ``t`` (1 for the first) with member ``k``'s learning rate ``lrs[k]``; members not
        ``alive`` keep their parameters. ``alive`` may be a ``(K,)`` bool tensor on the device and
        ``lrs`` then a ``(K, 1)`` float64 tensor there too (a stepper that does not read the device
        every step): the same arithmetic, with no host read or copy."""
        if isinstance(alive, torch.Tensor):
            if self._captured is not None and isinstance(lrs, torch.Tensor):
                return self._captured_step(t, lrs, alive)
            return self._step_masked(t, lrs, alive)
        tc = self.train
        g = self.grad
        if not all(alive):
            g[~torch.tensor(list(alive), device=g.device)] = 0.0
        self._clip(g)
        if tc.weight_decay:
            # 1 - lr wd in double, rounded once to float32 (as torch rounds a Python scalar)
            self._decay(torch.tensor([[1 - (lr if a else 0.0) * tc.weight_decay] for lr, a in zip(lrs, alive)],
                                     dtype=torch.float64).to(self.flat))
        denom = self._moments(g, t)
        # torch: p.addcdiv_(m1, denom, value=-lr / (1 - b1^t)), which computes p + (value * m1) / denom
        # in float32; value * m1 is formed first here because each member has its own value
        # (0 for a member that stopped: its parameters stay as they are)
        bias_correction1 = 1 - tc.beta1 ** t
        if all(alive) and len(set(lrs)) == 1:   # one run, or members that share their learning rate
            self.flat.addcdiv_(self.m1, denom, value=-(lrs[0] / bias_correction1))   # torch's own call
            return
        value = torch.tensor([[-(lr / bias_correction1) if a else 0.0] for lr, a in zip(lrs, alive)],
                             dtype=torch.float64).to(self.flat)
        self.flat.addcdiv_(torch.mul(self.m1, value, out=self._update), denom)

    @property
    def capture_failed(self) -> bool:
        """Whether :meth:`capture` was tried and its compile failed (the step runs eagerly)."""
        return self._capture_tried and self._captured is None

    def _captured_step(self, t: int, lrs: torch.Tensor, alive: torch.Tensor) -> None:
        """The compiled masked step; where its compile fails (the first call), the eager one from then on."""
        step = torch.tensor(float(t), dtype=torch.float64, device=self.flat.device)
        if self._captured_checked:
            return self._captured(step, lrs, alive)
        self._captured_checked = True
        try:
            return self._captured(step, lrs, alive)
        except Exception as exc:   # noqa: BLE001 - the compile's error; the eager step is the reference
            import warnings

            text = str(exc).strip().splitlines()
            warnings.warn(f"torch.compile of the optimizer step failed ({type(exc).__name__}: "
                          f"{text[0] if text else ''}); it runs eagerly", RuntimeWarning, stacklevel=2)
            self._captured = None
            return self._step_masked(t, lrs, alive)

    def _step_masked(self, t: int, lrs: Sequence[float] | torch.Tensor, alive: torch.Tensor) -> None:
        """:meth:`step` with ``alive`` a ``(K,)`` bool tensor: its operations, members masked on the device."""
        tc, g = self.train, self.grad
        keep = alive.view(-1, 1)
        g.masked_fill_(~keep, 0.0)
        self._clip(g)
        if not isinstance(lrs, torch.Tensor):
            lrs = torch.tensor([[lr] for lr in lrs], dtype=torch.float64).to(self.flat.device)
        rates = lrs * keep
        if tc.weight_decay:
            self._decay((1 - rates * tc.weight_decay).to(self.flat))
        denom = self._moments(g, t)
        value = (-rates / (1 - tc.beta1 ** t)).to(self.flat)
        self.flat.addcdiv_(torch.mul(self.m1, value, out=self._update), denom)

    def _step_functional(self, t: torch.Tensor, lrs: torch.Tensor, alive: torch.Tensor) -> None:
        """:meth:`_step_masked`'s arithmetic written for the compiler: new tensors, copied into the
        state at the end (inductor failed on the in-place form with views and ``out=``), ``t`` a
        tensor. The same operations in the same order; rounding may differ where inductor fuses."""
        tc = self.train
        keep = alive.view(-1, 1)
        g = self.grad.masked_fill(~keep, 0.0)
        norms = torch.stack([torch.linalg.vector_norm(g[:, cols], dim=1) for cols in self.columns], 1)
        g = g * torch.clamp(tc.grad_clip / (torch.linalg.vector_norm(norms, dim=1, keepdim=True) + 1e-6), max=1.0)
        rates = lrs * keep
        flat = self.flat
        if tc.weight_decay:
            flat = torch.where(self._decayed_columns, flat * (1 - rates * tc.weight_decay).to(flat), flat)
        m1 = torch.lerp(self.m1, g, 1 - tc.beta1)
        m2 = torch.addcmul(self.m2 * tc.beta2, g, g, value=1 - tc.beta2)
        denom = (torch.sqrt(m2) / torch.sqrt(1 - tc.beta2 ** t).to(m2)) + tc.eps
        value = (-rates / (1 - tc.beta1 ** t)).to(flat)
        self.flat.copy_(torch.addcdiv(flat, m1 * value, denom))
        self.m1.copy_(m1)
        self.m2.copy_(m2)
        self.grad.copy_(g)

    def _clip(self, g: torch.Tensor) -> None:
        """clip_grad_norm_: each parameter's norm, then the norm of those, per member."""
        norms = torch.stack([torch.linalg.vector_norm(g[:, cols], dim=1) for cols in self.columns], 1)
        total = torch.linalg.vector_norm(norms, dim=1, keepdim=True)
        g.mul_(torch.clamp(self.train.grad_clip / (total + 1e-6), max=1.0))

    def _decay(self, shrink: torch.Tensor) -> None:
        """Decoupled weight decay: the weight matrices' columns times ``shrink`` ``(K, 1)``."""
        for cols in self.decayed_runs:
            self.flat[:, cols].mul_(shrink)

    def _moments(self, g: torch.Tensor, t: int) -> torch.Tensor:
        """Update both moments with ``g``; returns the step's denominator ``sqrt(m2 / (1 - b2^t)) + eps``."""
        b1, b2 = self.train.beta1, self.train.beta2
        self.m1.lerp_(g, 1 - b1)
        self.m2.mul_(b2).addcmul_(g, g, value=1 - b2)
        return torch.sqrt(self.m2, out=self._denom).div_((1 - b2 ** t) ** 0.5).add_(self.train.eps)

    # ---- torch.optim.AdamW's state_dict layout (single-run checkpoints) ------------------------
    def _group_order(self) -> list[int]:
        """Parameter indices in the order of the two ``torch.optim.AdamW`` groups single-run
        checkpoints hold (nanoGPT's ``configure_optimizers`` groups): the decayed weight matrices
        first, then the rest, each in the model's order."""
        indices = range(len(self.columns))
        return [i for i in indices if self._decayed(i)] + [i for i in indices if not self._decayed(i)]

    def _decayed(self, i: int) -> bool:
        return self.names[i] in self.decayed_names

    def torch_state(self, t: int, lr: float) -> dict:
        """Member 0's state as ``torch.optim.AdamW``'s ``state_dict()`` holds it after ``t`` steps at
        learning rate ``lr``, in the groups of :meth:`_group_order`."""
        if self.members is not None:
            raise ValueError("torch_state is the state of one model; an ensemble checkpoints its (K, P) tensors")
        tc, order = self.train, self._group_order()

        def moment(m: torch.Tensor, i: int) -> torch.Tensor:
            return m[0, self.columns[i]].view(self._shapes[i]).clone()

        state = {} if t == 0 else {
            index: {"step": torch.tensor(float(t)), "exp_avg": moment(self.m1, i), "exp_avg_sq": moment(self.m2, i)}
            for index, i in enumerate(order)}
        n_decayed = sum(self._decayed(i) for i in order)
        groups = [{"weight_decay": wd, "lr": lr, "betas": (tc.beta1, tc.beta2), "eps": tc.eps, "amsgrad": False,
                   "maximize": False, "foreach": None, "capturable": False, "differentiable": False, "fused": None,
                   "decoupled_weight_decay": True, "params": ids}
                  for wd, ids in ((tc.weight_decay, list(range(n_decayed))),
                                  (0.0, list(range(n_decayed, len(order)))))]
        return {"state": state, "param_groups": groups}

    def load_torch_state(self, saved: dict, t: int) -> None:
        """Load member 0's moments from a ``torch.optim.AdamW`` ``state_dict`` written after ``t``
        steps: two groups (weight matrices first, :meth:`torch_state`) or, from checkpoints written
        before weight decay was limited to weight matrices, one group in the model's order.
        Raises ``ValueError`` when it does not fit this model."""
        groups = saved["param_groups"]
        if len(groups) == 1:
            order = list(range(len(self.columns)))
        elif len(groups) == 2:
            order = self._group_order()
        else:
            raise ValueError(f"{len(groups)} parameter groups (1 or 2 expected)")
        ids = [i for g in groups for i in g["params"]]
        if ids != list(range(len(order))):
            raise ValueError(f"the optimizer holds {len(ids)} parameters, this model {len(order)}")
        states = saved["state"]
        if t == 0 and not states:
            return
        for index, i in enumerate(order):
            entry, shape = states[index], self._shapes[i]
            if float(entry["step"]) != t:
                raise ValueError(f"optimizer at step {float(entry['step']):g}, checkpoint at step {t}")
            for name, target in (("exp_avg", self.m1), ("exp_avg_sq", self.m2)):
                value = entry[name]
                if tuple(value.shape) != shape:
                    raise ValueError(f"{name} of {self.names[i]} has shape {tuple(value.shape)}, the model {shape}")
                target[0, self.columns[i]] = value.reshape(-1).to(target)
