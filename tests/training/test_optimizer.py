"""The shared AdamW (training/optimizer.py) against torch.optim.AdamW + clip_grad_norm_, bit for bit:
a whole single run, each member of a K-row optimizer on the same gradients, and the checkpoint
layout both ways."""

import subprocess
import sys

import pytest
import torch

from expressivity.nn import Model
from expressivity.training import RunConfig
from expressivity.training.optimizer import FlatAdamW
from expressivity.training.trainer import SingleStepper

ARCHS = [dict(rpe="t5", rotary=True, norm="pre", q_bias=True),
         dict(mixer=("sepconv", "dpfree"), layers=2, rpe="log", learnable_slopes=True),
         dict(mixer=("bilinear", "attention"), layers=2, ape="learned", rpe="free")]
# clipping active on most steps, weight decay on: every branch of the update is exercised
TRAIN = dict(steps=60, batch_size=8, lr=0.02, weight_decay=0.1, grad_clip=0.05, eval_every=60)


def config(arch, **train):
    model = {"layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16, **arch}
    return RunConfig.for_task("reverse", {"length": 6, "vocab": 8}, model, {**TRAIN, **train})


def torch_groups(model, weight_decay):
    """nanoGPT's groups, as the single-run trainer gave them to torch.optim.AdamW."""
    decayed = model.weight_matrix_names()
    named = list(model.named_parameters())
    return [{"params": [p for n, p in named if n in decayed], "weight_decay": weight_decay},
            {"params": [p for n, p in named if n not in decayed], "weight_decay": 0.0}]


class TorchStepper(SingleStepper):
    """The single-run update as it was written before the shared optimizer: torch.optim.AdamW."""

    def __init__(self, cfg, task):
        super().__init__(cfg, task, None, "cpu")
        torch.manual_seed(cfg.seed)
        self.model = Model(cfg.model)
        tc = cfg.train
        self.opt = torch.optim.AdamW(torch_groups(self.model, tc.weight_decay), lr=tc.lr, betas=(tc.beta1, tc.beta2),
                                     eps=tc.eps)

    def update(self, step, losses, alive):
        for group in self.opt.param_groups:
            group["lr"] = self.lr(0, step)
        self.opt.zero_grad(set_to_none=True)
        losses.sum().backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.train.grad_clip)
        self.opt.step()


@pytest.mark.parametrize("arch", ARCHS)
def test_a_single_run_is_bit_identical_to_torch_adamw(arch):
    cfg = config(arch)
    task = cfg.build_task()
    ours, ref = SingleStepper(cfg, task, None, "cpu"), TorchStepper(cfg, task)
    assert all(torch.equal(a, b) for a, b in zip(ours.model.parameters(), ref.model.parameters()))
    clipped = 0
    for step in range(cfg.train.steps):
        for stepper in (ours, ref):
            stepper.update(step, stepper.losses(step), [True])
        # after clipping the gradient norm is grad_clip * norm / (norm + 1e-6)
        clipped += torch.linalg.vector_norm(ours.optimizer.grad).item() >= cfg.train.grad_clip * (1 - 1e-3)
        for (name, a), b in zip(ours.model.named_parameters(), ref.model.parameters()):
            assert torch.equal(a, b), f"{name} differs after step {step + 1}"
    assert clipped > cfg.train.steps // 2   # the clipping branch was taken
    # the checkpoint layout is torch.optim.AdamW's own
    ours_state = ours.optimizer.torch_state(cfg.train.steps, ours.lr(0, cfg.train.steps - 1))
    ref_state = ref.opt.state_dict()
    assert ours_state["param_groups"] == ref_state["param_groups"]
    assert ours_state["state"].keys() == ref_state["state"].keys()
    for i, entry in ref_state["state"].items():
        assert all(torch.equal(ours_state["state"][i][key], value) for key, value in entry.items()), i


def test_every_parameter_of_the_family_gets_a_gradient():
    # FlatAdamW steps a parameter with gradient 0 where torch.optim would skip one without a
    # gradient; the two agree because the loss reaches every parameter of every architecture
    for arch in [*ARCHS, dict(mixer="dpfree", rpe="lin", learnable_slopes=True, ffn_width=0),
                 dict(mixer="attention", rpe="matrix", ape="sinusoidal", norm="pre")]:
        cfg = config(arch)
        stepper = TorchStepper(cfg, cfg.build_task())
        stepper.losses(0).sum().backward()
        missing = [n for n, p in stepper.model.named_parameters() if p.grad is None]
        assert not missing, (arch, missing)


@pytest.mark.parametrize("lrs", [[0.01, 0.003, 0.03], [0.01] * 3])   # a shared rate takes torch's scalar call
def test_each_member_of_a_k_row_optimizer_steps_as_torch_adamw_would(lrs):
    torch.manual_seed(0)
    cfg = config({}).train
    K, shapes = 3, [(4, 5), (5,), (2, 3, 2)]
    params = [torch.nn.Parameter(torch.randn(K, *s)) for s in shapes]
    copies = [[torch.nn.Parameter(p[k].detach().clone()) for p in params] for k in range(K)]
    names = ["w", "b", "t"]
    opt = FlatAdamW(list(zip(names, params)), K, {"w", "t"}, cfg)
    refs = [torch.optim.AdamW([{"params": [c[0], c[2]], "weight_decay": cfg.weight_decay},
                               {"params": [c[1]], "weight_decay": 0.0}],
                              lr=1.0, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
            for c in copies]
    for t in range(1, 21):
        alive = [True, t <= 10, True]   # member 1 stops after step 10
        grads = [torch.randn(K, *s) * (3 if t % 2 else 0.001) for s in shapes]   # clipped on odd steps only
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad += g
        opt.step(t, lrs, alive)
        for k in range(K):
            if not alive[k]:
                continue
            for c, g in zip(copies[k], grads):
                c.grad = g[k].clone()
            for group in refs[k].param_groups:
                group["lr"] = lrs[k]
            torch.nn.utils.clip_grad_norm_(copies[k], cfg.grad_clip)
            refs[k].step()
        for k in range(K):
            for p, c in zip(params, copies[k]):
                assert torch.equal(p[k], c), (t, k)
    assert not torch.equal(params[0][1], params[0][0])


def test_old_torch_checkpoints_load_into_the_flat_optimizer_and_torch_loads_ours():
    cfg = config(ARCHS[0])
    task = cfg.build_task()
    ref = TorchStepper(cfg, task)
    for step in range(5):
        ref.update(step, ref.losses(step), [True])
    ours = SingleStepper(cfg, task, None, "cpu")
    ours.model.load_state_dict(ref.model.state_dict())
    ours.optimizer.load_torch_state(ref.opt.state_dict(), 5)
    back = torch.optim.AdamW(torch_groups(ref.model, cfg.train.weight_decay), lr=cfg.train.lr)
    back.load_state_dict(ours.optimizer.torch_state(5, ref.opt.param_groups[0]["lr"]))
    assert back.state_dict()["param_groups"] == ref.opt.state_dict()["param_groups"]
    gen = ref.gen.get_state()
    ours.gen.set_state(gen)
    for step in range(5, 15):
        for stepper in (ours, ref):
            stepper.update(step, stepper.losses(step), [True])
    assert all(torch.equal(a, b) for a, b in zip(ours.model.parameters(), ref.model.parameters()))
    with pytest.raises(ValueError, match="step"):
        ours.optimizer.load_torch_state(ref.opt.state_dict(), 7)
    bad = ref.opt.state_dict()
    bad["state"][0]["exp_avg"] = torch.zeros(3)
    with pytest.raises(ValueError, match="shape"):
        ours.optimizer.load_torch_state(bad, 15)


def test_a_single_run_does_not_import_torch_dynamo():
    # torch.optim's first use imports torch._dynamo: 1.4 s of every run's start-up on the CI machine
    code = ("import sys; from expressivity.training import RunConfig, run; "
            "run(RunConfig.for_task('reverse', {'length': 4, 'vocab': 4}, dict(d_model=8, heads=2, ffn_width=8), "
            "dict(steps=3, batch_size=4, eval_every=3, eval_size=8))); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False"], "a single run imported torch._dynamo"


@pytest.mark.parametrize("backend", [None, "aot_eager"])
def test_the_compiled_optimizer_step_is_the_masked_step(backend):
    """The form of the masked step written for the compiler (new tensors copied into the state, the
    step a tensor) against the masked step, 20 steps of three members, clipping on odd steps, weight
    decay, a member stopped at step 10: uncompiled, and traced by Dynamo and AOTAutograd (the
    graph machinery of the CUDA capture; inductor's CPU code generator fails on it, see capture)."""
    torch.manual_seed(0)
    cfg = config({}).train
    K, shapes = 3, [(4, 5), (5,), (2, 3, 2)]
    start = [torch.randn(K, *s) for s in shapes]
    sides = []
    for _ in range(2):
        params = [torch.nn.Parameter(p.clone()) for p in start]
        sides.append((params, FlatAdamW(list(zip(["w", "b", "t"], params)), K, {"w", "t"}, cfg)))
    reference, functional = sides[0][1], sides[1][1]
    if backend is not None:
        functional.capture(backend=backend)
    lrs = torch.tensor([[0.01], [0.02], [0.03]], dtype=torch.float64)
    for t in range(1, 21):
        alive = torch.tensor([True, t <= 10, True])
        grads = [torch.randn(K, *s) * (3 if t % 2 else 0.001) for s in shapes]
        for params, opt in sides:
            opt.zero_grad()
            for p, g in zip(params, grads):
                p.grad += g
        reference.step(t, lrs, alive)
        if backend is None:
            functional._step_functional(torch.tensor(float(t), dtype=torch.float64), lrs, alive)
        else:
            functional.step(t, lrs, alive)
        for name in ("flat", "m1", "m2"):
            assert torch.allclose(getattr(functional, name), getattr(reference, name), rtol=1e-5, atol=1e-7), (t, name)
        if t == 10:
            stopped = functional.flat[1].clone()
    assert torch.equal(functional.flat[1], stopped)   # the member stopped at step 10 was not moved after it
    if backend is not None:
        assert functional._captured is not None   # it compiled: no fallback to the eager step
