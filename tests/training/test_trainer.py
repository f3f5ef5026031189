"""Trainer: determinism, schedule, early stop, resume equivalence, NaN stop, evaluation at other lengths."""

import json
import math

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.training import RunConfig, TrainConfig, load_trained, run
from expressivity.training.checkpoint import load_checkpoint, read_checkpoint_config

SMALL = dict(layers=1, heads=2, d_model=16, ffn_width=16)
TRAIN = dict(steps=30, batch_size=16, lr=3e-3, eval_every=10, eval_size=64, log_every=5, checkpoint_every=10)


def config(seed=0, model=None, eval_lengths=(), **train):
    return RunConfig.for_task("reverse", {"length": 6, "vocab": 8}, {**SMALL, **(model or {})}, {**TRAIN, **train},
                              seed=seed, eval_lengths=eval_lengths)


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_same_seed_same_result_different_seed_differs():
    a, b, c = run(config(1, {"rpe": "t5"})), run(config(1, {"rpe": "t5"})), run(config(2, {"rpe": "t5"}))
    assert a.final_loss == b.final_loss and a.final_metric == b.final_metric and a.id == b.id
    pa, pb = params(a.model), params(b.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert c.final_loss != a.final_loss and c.id != a.id


def test_schedule_warms_up_then_decays_by_cosine():
    c = TrainConfig(steps=1000, lr=1.0, warmup=100, min_lr_ratio=0.1)
    assert c.lr_at(0) == pytest.approx(0.01) and c.lr_at(99) == pytest.approx(1.0)
    assert c.lr_at(100) == pytest.approx(1.0)
    assert c.lr_at(550) == pytest.approx(0.1 + 0.9 * 0.5)
    assert c.lr_at(999) == pytest.approx(0.1, abs=1e-4)
    lrs = [c.lr_at(s) for s in range(100, 1000)]
    assert all(x >= y for x, y in zip(lrs, lrs[1:]))


@pytest.mark.parametrize("bad", [dict(lr=math.inf), dict(lr=math.nan), dict(lr=0.0), dict(target_metric=math.nan),
                                 dict(target_metric=-math.inf), dict(steps=0), dict(grad_clip=math.inf),
                                 dict(beta2=1.0), dict(warmup=-1)])
def test_train_config_refuses_nonsense(bad):
    with pytest.raises(ExpressivityError):
        TrainConfig(**bad)


def test_learns_reverse_stops_at_target_and_evaluates_other_lengths(tmp_path):
    c = config(model={"layers": 1, "heads": 4, "d_model": 64, "ffn_width": 128}, eval_lengths=(3, 5),
               steps=1500, eval_every=50, target_metric=0.99)
    r = run(c, tmp_path)
    assert r.status == "target-reached" and r.final_metric >= 0.99 and r.steps < 1500
    assert r.best_metric == r.final_metric and r.best_step == r.steps
    assert list(r.lengths) == [6, 3, 5] and all(0 <= v[k] <= 1 for v in r.lengths.values()
                                                for k in ("val_metric", "test_metric"))
    assert r.lengths[6]["val_metric"] == r.final_metric  # validation = the split training watched
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert any("eval_metric" in line for line in lines) and any("lr" in line for line in lines)
    saved = read_checkpoint_config(tmp_path / "checkpoint")
    assert saved["step"] == r.steps and saved["status"] == "target-reached" and saved["id"] == c.id()
    model, task, loaded = load_trained(tmp_path)
    assert loaded == c
    batch = task.sample(64, None, torch.Generator().manual_seed(5))
    assert task.metric(model(batch.x), batch) >= 0.95


class Crash(RuntimeError):
    pass


def test_resume_after_interruption_reaches_the_same_final_state(tmp_path):
    c = config(steps=40)
    full = run(c, tmp_path / "full")

    def crash(step, model):
        if step == 25:
            raise Crash

    with pytest.raises(Crash):
        run(c, tmp_path / "cut", on_step=crash)
    # The checkpoint left behind says the run is unfinished (not "done").
    assert read_checkpoint_config(tmp_path / "cut" / "checkpoint")["status"] == "running"
    trained_before = load_checkpoint(tmp_path / "cut" / "checkpoint")[2]["seconds"]
    resumed = run(c, tmp_path / "cut", resume=True)
    assert resumed.final_loss == full.final_loss and resumed.steps == 40
    assert 0 < trained_before < resumed.seconds   # the time of both sessions, not only the last
    pa, pb = params(full.model), params(resumed.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert (tmp_path / "full" / "metrics.jsonl").read_text() == (tmp_path / "cut" / "metrics.jsonl").read_text()


def test_keyboard_interrupt_leaves_a_resumable_checkpoint(tmp_path):
    c = config(steps=40)

    def interrupt(step, model):
        if step == 33:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(c, tmp_path, on_step=interrupt)
    saved = read_checkpoint_config(tmp_path / "checkpoint")
    assert saved["status"] == "running" and saved["step"] == 30
    assert run(c, tmp_path, resume=True).steps == 40


def test_nan_loss_stops_cleanly_and_keeps_the_last_good_checkpoint(tmp_path):
    c = config(steps=40)

    def poison(step, model):
        if step == 25:
            with torch.no_grad():
                next(model.parameters()).fill_(float("nan"))

    r = run(c, tmp_path, on_step=poison)
    assert r.status == "nan" and r.steps == 25 and math.isnan(r.final_loss)
    saved, tensors, _ = load_checkpoint(tmp_path / "checkpoint")
    assert saved["step"] == 20 and saved["status"] == "nan" and saved["nan_at_step"] == 25
    assert all(torch.isfinite(t).all() for t in tensors.values())
    model, _, _ = load_trained(tmp_path)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    # an audit: resuming the finished run returned it at step 20 with its history cut there, and rewrote
    # metrics.jsonl without the NaN event; now it is returned as it ended and the file is left as it is
    metrics = (tmp_path / "metrics.jsonl").read_text()
    again = run(c, tmp_path, resume=True)
    assert (again.status, again.steps, again.history) == ("nan", 25, r.history)
    assert again.history[-1]["event"] == "nan" and (tmp_path / "metrics.jsonl").read_text() == metrics


def test_huge_learning_rate_that_diverges_is_stopped():
    c = RunConfig.for_task("sum", {"length": 8}, {"layers": 1}, dict(steps=200, lr=1e30, warmup=0, grad_clip=1e30,
                                                                      eval_every=50, eval_size=32, batch_size=8))
    r = run(c)
    assert r.status == "nan" and r.steps < 200


def test_resume_without_checkpoint_or_with_another_config_is_a_user_error(tmp_path):
    with pytest.raises(ExpressivityError, match="no checkpoint"):
        run(config(), tmp_path, resume=True)
    run(config(steps=10), tmp_path)
    with pytest.raises(ExpressivityError, match="another configuration"):
        run(config(steps=20), tmp_path, resume=True)


def test_resuming_a_run_that_reached_its_target_does_not_train_further(tmp_path):
    c = config(model={"layers": 1, "heads": 4, "d_model": 64, "ffn_width": 128}, steps=1500, eval_every=50,
               target_metric=0.99)
    first = run(c, tmp_path)
    again = run(c, tmp_path, resume=True)
    assert again.status == "target-reached" and again.steps == first.steps and again.final_metric == first.final_metric


@pytest.mark.parametrize("damage", ["config", "weights", "state", "missing"])
def test_corrupt_or_truncated_checkpoints_are_one_line_errors(tmp_path, damage):
    run(config(steps=10), tmp_path)
    ckpt = tmp_path / "checkpoint"
    if damage == "config":
        (ckpt / "config.json").write_text('{"run": ')
    elif damage == "weights":
        data = (ckpt / "model.safetensors").read_bytes()
        (ckpt / "model.safetensors").write_bytes(data[: len(data) // 2])
    elif damage == "state":
        (ckpt / "state.pt").write_bytes(b"not a pickle")
    else:
        (ckpt / "model.safetensors").unlink()
    with pytest.raises(ExpressivityError) as err:
        run(config(steps=10), tmp_path, resume=True)
    assert "\n" not in str(err.value) and "checkpoint" in str(err.value)


def test_device_cuda_without_a_gpu_is_refused_and_auto_falls_back():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ExpressivityError, match="no CUDA GPU"):
        run(config(steps=2), device="cuda")
    assert run(config(steps=2), device="auto").device == "cpu"


def test_an_evaluation_length_beyond_the_memory_budget_is_refused_before_training():
    from expressivity.errors import BudgetError

    c = RunConfig.for_task("kernel-memory", {"length": 16}, train={"steps": 2}, eval_lengths=(200_000,))
    with pytest.raises(BudgetError, match="GiB"):
        run(c)


def test_regression_metric_resolves_errors_below_float32():
    from expressivity.tasks import Batch, make_task

    task = make_task("kernel-memory", length=8)
    y = torch.randn(4, 8, 1)
    out = y + 1e-6 * torch.randn(4, 8, 1)
    r2 = task.metric(out, Batch(torch.zeros(4, 8, 1), y, torch.ones(4, 8, dtype=torch.bool)))
    assert 0 < 1 - r2 < 1e-9   # float32 arithmetic would give exactly 0 or a rounding artefact


def test_tasks_with_finite_data_get_the_split_of_every_batch(monkeypatch):
    from dataclasses import dataclass

    from expressivity.tasks import TASKS
    from expressivity.tasks.algorithmic import Reverse

    seen = []

    @dataclass
    class SplitReverse(Reverse):
        name = "split-reverse"
        has_splits = True

        def generate(self, batch_size, length, generator, split):
            seen.append(split)
            return super().generate(batch_size, length, generator)

    monkeypatch.setitem(TASKS, "split-reverse", SplitReverse)
    c = RunConfig.for_task("split-reverse", {"length": 4, "vocab": 4}, SMALL, {**TRAIN, "steps": 3, "eval_every": 3})
    run(c)
    assert set(seen) == {"train", "val", "test"} and seen.count("train") == 3
    with pytest.raises(ExpressivityError, match="unknown split"):
        SplitReverse().sample(2, 4, torch.Generator(), "dev")


def test_ctrl_c_finishes_the_step_checkpoints_it_and_resumes_bit_exactly(tmp_path, terminal_sigint):
    import os
    import signal

    from expressivity.training.interrupt import TrainingInterrupted

    c = config(steps=40)  # checkpoints every 10 steps; Ctrl-C during step 3 saves step 4
    full = run(c, tmp_path / "full")

    def ctrl_c(step, model):
        if step == 3:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(TrainingInterrupted) as caught:
        run(c, tmp_path / "cut", on_step=ctrl_c)
    assert caught.value.step == 4 and caught.value.saved
    saved = read_checkpoint_config(tmp_path / "cut" / "checkpoint")
    assert saved["status"] == "running" and saved["step"] == 4
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    resumed = run(c, tmp_path / "cut", resume=True)
    pa, pb = params(full.model), params(resumed.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


@pytest.mark.parametrize("change", [{"step": "7"}, {"step": -1}, {"status": "fine"}, {"status": "done", "step": 10},
                                    {"step": 10_000}])
def test_a_tampered_checkpoint_is_refused_on_resume(tmp_path, change):
    c = config(steps=20)
    with pytest.raises(Crash):
        run(c, tmp_path / "r", on_step=lambda step, model: _raise(Crash) if step == 15 else None)
    path = tmp_path / "r" / "checkpoint" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(ExpressivityError, match="delete the folder"):
        run(c, tmp_path / "r", resume=True)


def _raise(exc):
    raise exc


def test_a_process_that_ignores_sigint_keeps_ignoring_it_while_training(tmp_path):
    """A sweep's worker process ignores SIGINT (its driver decides when it stops), and so does a
    job started with ``nohup ... &``: training must not install its Ctrl-C handler over that, or a
    stray SIGINT kills the worker and its pack's runs are recorded as failed."""
    import os
    import signal

    c = config(steps=12)
    full = run(c, tmp_path / "full")

    def stray_sigint(step, model):
        if step == 3:
            os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ignored = run(c, tmp_path / "ignored", on_step=stray_sigint)   # no TrainingInterrupted: it runs to the end
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    pa, pb = params(full.model), params(ignored.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


def test_a_run_folder_that_is_a_file_is_a_one_line_error(tmp_path):
    """``run(config, "/tmp/f")`` over a file raised FileExistsError from deep in the trainer (a fresh
    audit, 2026-11-28); so did run_ensemble."""
    from expressivity.training import RunConfig, run, run_ensemble

    afile = tmp_path / "f"
    afile.write_text("mine")
    config = RunConfig.for_task("reverse", steps=2)
    for call, what in ((lambda: run(config, afile), "out_dir"), (lambda: run_ensemble([config], afile), "group_dir"),
                       (lambda: run_ensemble([config], None, [afile]), "a member's folder")):
        with pytest.raises(ExpressivityError, match=f"{what} '.*f' is a file, not a folder"):
            call()
    assert afile.read_text() == "mine"


def test_sigterm_where_the_process_turns_it_into_an_interrupt_checkpoints_at_the_step_boundary(tmp_path,
                                                                                              terminal_sigint):
    """The CLI turns SIGTERM (`timeout`, a scheduler's preemption) into an interrupt; training then finishes the
    step, checkpoints and stops as after Ctrl-C (before: the process died and lost every step since the last
    checkpoint), says which signal, and resumes bit-exactly. Where SIGTERM has its default action (a library
    user's process, a sweep's worker) training leaves it so: the handler in place is the one put back."""
    import os
    import signal

    from expressivity.training.interrupt import TrainingInterrupted

    from expressivity.cli.main import _CtrlC

    as_interrupt = _CtrlC()   # the CLI's handler

    c = config(steps=40)
    full = run(c, tmp_path / "full")
    previous = signal.signal(signal.SIGTERM, as_interrupt)
    try:
        with pytest.raises(TrainingInterrupted) as caught:
            run(c, tmp_path / "cut", on_step=lambda step, model: os.kill(os.getpid(), signal.SIGTERM) if step == 3
                else None)
        assert signal.getsignal(signal.SIGTERM) is as_interrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (caught.value.step, caught.value.saved, caught.value.signum) == (4, True, signal.SIGTERM)
    resumed = run(c, tmp_path / "cut", resume=True)
    pa, pb = params(full.model), params(resumed.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)



def test_a_sigterm_handler_a_host_installed_is_left_to_act_while_training(tmp_path):
    """A review (2026-11-28): training deferred SIGTERM under any non-default handler, so a Ray worker (whose
    handler exits) got a KeyboardInterrupt at the next step boundary and lived on. Only the CLI's handler is
    deferred; a host's own acts at once."""
    import os
    import signal

    class Exited(Exception):
        pass

    def host_handler(signum, frame):
        raise Exited

    previous = signal.signal(signal.SIGTERM, host_handler)
    try:
        with pytest.raises(Exited):
            run(config(steps=40), tmp_path / "r", on_step=lambda step, model: os.kill(os.getpid(), signal.SIGTERM)
                if step == 3 else None)
        assert signal.getsignal(signal.SIGTERM) is host_handler
    finally:
        signal.signal(signal.SIGTERM, previous)
