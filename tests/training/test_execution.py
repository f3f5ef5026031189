"""How steps run (training/execution.py): per-device defaults and refusals, and every choice that
is not the CPU reference tested against it on the CPU where PyTorch runs it there: bf16 autocast,
the device sampler, host reads at the log cadence (non-finite members found on the device), and
torch.compile (slow). The attention kernels are tested in tests/nn/test_attention_kernels.py; the
CPU reference's own numbers in test_cpu_unchanged.py."""

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.training import RunConfig, run, run_ensemble
from expressivity.training import execution as execution_module
from expressivity.training.checkpoint import read_checkpoint_config
from expressivity.training.ensemble import EnsembleStepper
from expressivity.training.execution import Execution
from expressivity.training.trainer import SingleStepper


def small(seed=0, **train):
    settings = dict(steps=12, batch_size=8, eval_every=4, eval_size=16, log_every=2) | train
    return RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=2, d_model=16, ffn_width=16),
                              settings, seed)


def test_each_device_has_its_defaults_and_the_cpu_ones_are_the_reference(monkeypatch):
    cpu = Execution.choose("cpu")
    assert cpu.is_reference and cpu.record() == {"device": "cpu", "precision": "fp32", "attention": "explicit",
                                                 "capture": "eager", "sampler": "host", "host_sync": "step",
                                                 "stream": 1}
    monkeypatch.setattr(execution_module, "_has_triton", lambda: True)
    cuda = Execution.choose("cuda")
    assert (cuda.precision, cuda.attention, cuda.capture, cuda.sampler, cuda.host_sync) == \
        ("tf32", "sdpa", "compiled", "device", "log")
    assert Execution.choose("cuda", precision="bf16", capture="auto").precision == "bf16"
    monkeypatch.setattr(execution_module, "_has_triton", lambda: False)
    assert Execution.choose("cuda").capture == "eager"   # no Triton: compilation does not apply
    assert Execution.choose("cuda", capture="compiled").capture == "compiled"   # asked for: kept (and it fails loudly)


@pytest.mark.parametrize("given, needle", [({"precision": "tf32"}, "CUDA matrix-unit mode"),
                                           ({"precision": "fp16"}, "unknown precision 'fp16'"),
                                           ({"capture": "graphs"}, "unknown capture"),
                                           ({"turbo": True}, "unknown execution settings turbo")])
def test_bad_choices_are_refused_in_one_line(given, needle):
    with pytest.raises(ExpressivityError, match=needle):
        Execution.choose("cpu", **given)


def test_an_execution_for_another_device_is_refused():
    with pytest.raises(ExpressivityError, match="execution is for cuda but the run is on cpu"):
        run(small(), execution=Execution("cuda"))


def test_a_task_that_cannot_sample_on_the_device_runs_on_the_host_and_says_so():
    config = RunConfig.for_task("associative-recall", {"length": 4, "queries": 2, "keys": 8, "values": 8},
                                dict(layers=1, heads=1, d_model=8, ffn_width=8), dict(steps=2, eval_every=2, eval_size=8))
    assert run(config, execution={"sampler": "device"}).execution["sampler"] == "host"


def test_bf16_autocast_trains_close_to_fp32_and_is_recorded(tmp_path):
    fp32 = run(small())
    bf16 = run(small(), tmp_path / "bf16", execution={"precision": "bf16"})
    assert bf16.execution["precision"] == "bf16" and fp32.execution["precision"] == "fp32"
    assert read_checkpoint_config(tmp_path / "bf16" / "checkpoint")["execution"]["precision"] == "bf16"
    losses = [(a["loss"], b["loss"]) for a, b in zip(fp32.history, bf16.history) if "loss" in a]
    assert losses and all(abs(a - b) < 0.05 * abs(a) for a, b in losses)   # bf16 keeps ~3 significant digits
    assert any(a != b for a, b in losses)   # and it did run in bf16


def test_a_resumed_run_keeps_the_precision_and_sampler_it_started_with(tmp_path):
    config = small(steps=12, checkpoint_every=4)
    whole = run(config, execution={"precision": "bf16", "sampler": "device"})

    def stop(step, model):
        if step == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(config, tmp_path / "r", execution={"precision": "bf16", "sampler": "device"}, on_step=stop)
    resumed = run(config, tmp_path / "r", resume=True)   # no choices given: the checkpoint's
    assert (resumed.execution["precision"], resumed.execution["sampler"]) == ("bf16", "device")
    assert resumed.final_loss == whole.final_loss and resumed.lengths == whole.lengths


def test_the_device_sampler_trains_and_members_see_their_single_runs_batches():
    configs = [small(seed=s) for s in (0, 1)]
    members, _ = run_ensemble(configs, execution={"sampler": "device"})
    alone = run(configs[1], execution={"sampler": "device"})
    host = run(configs[1])
    assert members[1].execution["stream"] == 2 and host.execution["stream"] == 1
    first = [h["loss"] for h in members[1].history if "loss" in h][0]
    assert first == pytest.approx([h["loss"] for h in alone.history if "loss" in h][0], rel=1e-5)
    assert first != [h["loss"] for h in host.history if "loss" in h][0]   # another stream of batches


@pytest.mark.parametrize("members", [1, 3])
def test_reading_the_device_only_when_logging_gives_the_same_run(members):
    configs = [small(seed=s) for s in range(members)]
    every = run_ensemble(configs)[0] if members > 1 else [run(configs[0])]
    logged = (run_ensemble(configs, execution={"host_sync": "log"})[0] if members > 1
              else [run(configs[0], execution={"host_sync": "log"})])
    for a, b in zip(every, logged):
        assert [set(h) for h in a.history] == [set(h) for h in b.history] and a.steps == b.steps
        for ha, hb in zip(a.history, b.history):
            for key in ha:
                assert hb[key] == pytest.approx(ha[key], rel=1e-5, abs=1e-7), key


@pytest.mark.parametrize("members", [1, 3])
def test_a_member_found_non_finite_on_the_device_stops_at_its_step(members, poison_first_member):
    poison_first_member(EnsembleStepper if members > 1 else SingleStepper, 5)
    configs = [small(seed=s) for s in range(members)]
    how = {"host_sync": "log"}
    results = run_ensemble(configs, execution=how)[0] if members > 1 else [run(configs[0], execution=how)]
    assert (results[0].status, results[0].steps) == ("nan", 5)
    assert results[0].history[-1] == {"step": 5, "event": "nan", "loss": "nan"}
    assert all(h["step"] <= 5 for h in results[0].history)
    assert all((r.status, r.steps) == ("done", 12) for r in results[1:])


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["host", "device"])
def test_a_compiled_step_gives_the_eager_losses(sampler):
    """Compiled, with the device sampler the batch is drawn inside the compiled step (the step a
    tensor input): the same losses as the eager step on the same stream."""
    eager = run(small(steps=8), execution={"sampler": sampler})
    compiled = run(small(steps=8), execution={"capture": "compiled", "sampler": sampler})
    assert compiled.execution["capture"] == "compiled" and compiled.execution["sampler"] == sampler
    for a, b in zip(eager.history, compiled.history):
        for key in a:
            assert b[key] == pytest.approx(a[key], rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize("task, args, model", [
    ("nested-memory", {"length": 16, "max_lag": 8, "depth": 1}, {"mixer": "attention", "layers": 2, "rpe": "free"}),
    ("nested-memory", {"length": 16, "max_lag": 8, "depth": 1}, {"mixer": "dpfree", "layers": 2, "rpe": "free"}),
    ("fixed-memory", {"length": 16, "lags": "2,5,9", "readout": "boolean"}, {"mixer": "attention", "rpe": "free"}),
    ("kernel-memory", {"length": 32}, {}),
    ("lm-causal", {"length": 32, "include": "wsgiref/*"}, {"mixer": "attention", "layers": 2}),
])
def test_a_captured_step_draws_its_batch_in_one_graph(task, args, model, monkeypatch):
    """With the device sampler a captured step is one graph: sampling, forward and loss (each a
    few hundred small kernels launched one by one otherwise). Every trained claim's task kind;
    Dynamo's ``eager`` backend stands in for inductor (the graph breaks are Dynamo's)."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from expressivity.training import step as step_module

    real = torch.compile
    monkeypatch.setattr(step_module.torch, "compile", lambda fn, mode=None, dynamic=None: real(fn, backend="eager",
                                                                                                 dynamic=dynamic))
    torch._dynamo.reset()
    counters.clear()
    configs = [RunConfig.for_task(task, args, model=dict(heads=2, d_model=8, ffn_width=8) | model,
                                  train=dict(steps=4, batch_size=4, eval_every=2, eval_size=8, log_every=1), seed=s)
               for s in (0, 1)]
    task = configs[0].build_task()
    eager = [0]   # calls of task.sample outside a compiled graph (counted only there: nothing traced reads it)
    sample = type(task).sample

    def watched(self, *a, **k):
        if not torch.compiler.is_compiling():
            eager[0] += 1
        return sample(self, *a, **k)

    monkeypatch.setattr(type(task), "sample", watched)
    stepper = EnsembleStepper(configs, task, None, Execution("cpu", capture="compiled", sampler="device"))
    for k in range(3):
        stepper.update(k, stepper.losses(k), [True, True])
    assert counters["stats"]["unique_graphs"] == 1 and not counters["graph_break"]
    assert eager == [1]   # one eager draw fills the task's caches; every step's is drawn in the graph
    torch._dynamo.reset()


def test_a_process_compiles_every_shape_of_a_claim_not_only_the_first_eight(monkeypatch, request):
    """One worker compiles every pack of a claim through one function, each pack its own static
    shape; Dynamo's default cap (8) would run the ninth eagerly while the record says compiled.
    (Dynamo's own ``eager`` backend stands in for inductor: the cap is Dynamo's, and it is fast.)"""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from expressivity.training import step as step_module

    real = torch.compile
    monkeypatch.setattr(step_module.torch, "compile", lambda fn, mode=None, dynamic=None: real(fn, backend="eager",
                                                                                                 dynamic=dynamic))
    limit = torch._dynamo.config.patch(recompile_limit=8)   # the default, whatever a test before set
    limit.__enter__()
    request.addfinalizer(lambda: limit.__exit__(None, None, None))
    torch._dynamo.reset()
    counters.clear()
    execution = Execution("cpu", capture="compiled")
    widths = (8, 12, 16, 20, 24, 28, 32, 36, 40, 44)
    for d in widths:
        config = RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=2, d_model=d, ffn_width=16),
                                    dict(steps=2, batch_size=4, eval_every=2, eval_size=8, log_every=1))
        stepper = SingleStepper(config, config.build_task(), None, execution)
        stepper.update(0, stepper.losses(0), [True])
    assert counters["stats"]["unique_graphs"] == len(widths)
    from expressivity.training.step import forget_compiled

    def first_width_compiles() -> int:
        counters.clear()
        config = RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=2, d_model=8, ffn_width=16),
                                    dict(steps=2, batch_size=4, eval_every=2, eval_size=8, log_every=1))
        stepper = SingleStepper(config, config.build_task(), None, execution)
        stepper.update(0, stepper.losses(0), [True])
        return counters["stats"]["unique_graphs"]

    assert first_width_compiles() == 0   # kept: the same shape replays what was compiled
    forget_compiled()                    # between packs the compiled functions (and CUDA graphs) are dropped
    assert first_width_compiles() == 1
    torch._dynamo.reset()


class _FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("backward compile failed: triton error")


@pytest.mark.parametrize("where", ["forward", "backward"])
def test_a_compile_that_fails_at_the_first_step_falls_back_to_eager_and_says_so(where, monkeypatch):
    """On a GPU never tried, an inductor or Triton error (the forward's, or the backward's, which
    compiles lazily at the first backward) must not fail every run of a claim: the steps run
    eagerly, with a warning, and the record says capture eager. The losses are the eager run's."""
    from expressivity.training import step as step_module

    def broken_compile(fn, mode=None, dynamic=None):
        def compiled(*args):
            if where == "forward":
                raise RuntimeError("BackendCompilerFailed: inductor error")
            return _FailingBackward.apply(fn(*args))
        return compiled

    monkeypatch.setattr(step_module.torch, "compile", broken_compile)
    eager = run(small(steps=6))
    with pytest.warns(RuntimeWarning, match="torch.compile failed at the first step"):
        fallen = run(small(steps=6), execution={"capture": "compiled"})
    assert fallen.execution["capture"] == "eager"
    assert fallen.execution["fallbacks"] == ["the compiled step failed (RuntimeError); the steps ran eagerly"]
    assert "fallbacks" not in eager.execution   # a record where everything ran as chosen is as it was
    assert [h["loss"] for h in fallen.history if "loss" in h] == [h["loss"] for h in eager.history if "loss" in h]
    with pytest.warns(RuntimeWarning, match="these steps run eagerly"):
        results, _ = run_ensemble([small(seed=s, steps=6) for s in (0, 1)], execution={"capture": "compiled"})
    assert {r.execution["capture"] for r in results} == {"eager"}
    assert all(r.execution["fallbacks"] for r in results)


def test_a_failed_optimizer_compile_is_in_the_record(monkeypatch):
    """A fresh audit (2026-11-28): the captured optimizer step fell back to eager with a warning while the
    run's record said capture compiled, nothing more. (CUDA's path, forced onto the CPU here.)"""
    from expressivity.training import step as step_module

    configs = [small(seed=s, steps=3) for s in (0, 1)]
    stepper = EnsembleStepper(configs, configs[0].build_task(), None, Execution("cpu", capture="compiled"))
    monkeypatch.setattr(stepper, "device", "cuda")
    monkeypatch.setattr(type(stepper), "defers_sync", property(lambda self: True), raising=False)
    monkeypatch.setattr(step_module.torch, "compile", lambda fn, **kw: (lambda *a: (_ for _ in ()).throw(
        RuntimeError("inductor error"))) if getattr(fn, "__name__", "") == "_step_functional" else fn)
    losses = step_module.stepper_losses(stepper, 0, True)   # captures the optimizer's step (compiled at its first)
    assert "fallbacks" not in stepper.execution.record()
    optimizer = stepper.optimizer   # the captured call as CUDA's stepper makes it (alive and rates on the device)
    monkeypatch.setattr(optimizer, "step", lambda t, lrs, alive: optimizer._captured_step(
        t, torch.tensor([[1e-3], [1e-3]], dtype=torch.float64), torch.ones(2, dtype=torch.bool)))
    with pytest.warns(RuntimeWarning, match="optimizer step failed"):
        stepper.update(0, losses, [True, True])
    # recorded by the step at which it failed, before any checkpoint of that step
    assert stepper.execution.record()["fallbacks"] == ["the compiled optimizer step failed; it ran eagerly"]


def test_the_attention_kernel_is_set_when_the_stepper_is_built_not_at_its_first_step():
    """A run resumed finished takes no step but scores its held-out lengths: with the kernel it trained with."""
    from expressivity.nn.mixers import Attention

    sdpa = Execution("cpu", attention="sdpa")
    single = SingleStepper(small(), small().build_task(), None, sdpa)
    members = EnsembleStepper([small(seed=s) for s in (0, 1)], small().build_task(), None, sdpa)
    for stepper in (single, members):
        kernels = {m.kernel for m in stepper.model.modules() if isinstance(m, Attention)}
        assert kernels == {"sdpa"}


def test_fp32_on_cuda_turns_tf32_off_for_convolutions_too():
    """A fresh audit (2026-11-28): PyTorch lets cuDNN's convolutions use TF32 by default, so a depth-wise
    convolution of a run recorded as fp32 on a GPU could run in TF32. (The flags are plain settings: checked
    without a GPU.)"""
    flags = torch.backends.cudnn, torch.backends.cuda.matmul
    before = [f.allow_tf32 for f in flags]
    try:
        for f in flags:
            f.allow_tf32 = True
        with Execution("cuda", precision="fp32", capture="eager", attention="explicit").matmul_mode():
            assert [f.allow_tf32 for f in flags] == [False, False]
        with Execution("cuda", precision="tf32", capture="eager", attention="explicit").matmul_mode():
            assert [f.allow_tf32 for f in flags] == [True, True]
        assert [f.allow_tf32 for f in flags] == [True, True]   # restored
        with Execution("cpu").matmul_mode():   # the CPU's arithmetic does not read them: left as they are
            assert [f.allow_tf32 for f in flags] == [True, True]
    finally:
        for f, b in zip(flags, before):
            f.allow_tf32 = b
