"""Trainer: determinism, schedule, early stop, resume equivalence, NaN stop; ensembles."""

import json
import math

import pytest
import torch

from expressivity.tasks import make_task
from expressivity.training import TrainConfig, load_trained, model_config_for, train, train_ensemble
from expressivity.training.checkpoint import load_checkpoint

TASK = make_task("reverse", length=6, vocab=8)
SMALL = dict(layers=1, heads=2, d_model=16, ffn_width=16)


def cfg(**kw):
    base = dict(steps=30, batch_size=16, lr=3e-3, eval_every=10, eval_size=64, log_every=5, checkpoint_every=10)
    return TrainConfig(**{**base, **kw})


def params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_same_seed_same_result_different_seed_differs():
    mc = model_config_for(TASK, **SMALL, rpe="t5")
    a, b, c = train(TASK, mc, cfg(seed=1)), train(TASK, mc, cfg(seed=1)), train(TASK, mc, cfg(seed=2))
    assert a.final_loss == b.final_loss and a.final_metric == b.final_metric
    pa, pb = params(a.model), params(b.model)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert c.final_loss != a.final_loss


def test_schedule_warms_up_then_decays_by_cosine():
    c = TrainConfig(steps=1000, lr=1.0, warmup=100, min_lr_ratio=0.1)
    assert c.lr_at(0) == pytest.approx(0.01) and c.lr_at(99) == pytest.approx(1.0)
    assert c.lr_at(100) == pytest.approx(1.0)
    assert c.lr_at(550) == pytest.approx(0.1 + 0.9 * 0.5)
    assert c.lr_at(999) == pytest.approx(0.1, abs=1e-4)
    lrs = [c.lr_at(s) for s in range(100, 1000)]
    assert all(x >= y for x, y in zip(lrs, lrs[1:]))


def test_learns_reverse_and_stops_at_target(tmp_path):
    mc = model_config_for(TASK)
    r = train(TASK, mc, cfg(steps=1500, eval_every=50, target_metric=0.99), tmp_path)
    assert r.status == "target-reached" and r.final_metric >= 0.99 and r.steps < 1500
    lines = [json.loads(l) for l in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert any("eval_metric" in l for l in lines) and any("lr" in l for l in lines)
    config, state = load_checkpoint(tmp_path / "checkpoint")
    assert config["step"] == r.steps and config["status"] == "target-reached" and config["task"] == "reverse"
    model, task, _ = load_trained(tmp_path)
    batch = task.sample(64, torch.Generator().manual_seed(5))
    assert task.metric(model(batch.x), batch) >= 0.95


class Crash(RuntimeError):
    pass


def test_resume_after_interruption_reaches_the_same_final_state(tmp_path):
    mc = model_config_for(TASK, **SMALL)
    full = train(TASK, mc, cfg(steps=40), tmp_path / "full")

    def crash(step, model):
        if step == 27:
            raise Crash()

    with pytest.raises(Crash):
        train(TASK, mc, cfg(steps=40), tmp_path / "cut", on_step=crash)
    config, _ = load_checkpoint(tmp_path / "cut" / "checkpoint")
    assert config["step"] == 20
    resumed = train(TASK, mc, cfg(steps=40), tmp_path / "cut", resume=True)
    assert resumed.final_loss == full.final_loss and resumed.final_metric == full.final_metric
    pf, pr = params(full.model), params(resumed.model)
    assert all(torch.equal(pf[k], pr[k]) for k in pf)
    full_lines = (tmp_path / "full" / "metrics.jsonl").read_text()
    assert (tmp_path / "cut" / "metrics.jsonl").read_text() == full_lines


def test_nan_loss_stops_cleanly_and_keeps_the_last_good_checkpoint(tmp_path):
    mc = model_config_for(TASK, **SMALL)

    def poison(step, model):
        if step == 25:
            with torch.no_grad():
                model.readout.weight[0, 0] = float("nan")

    r = train(TASK, mc, cfg(steps=40), tmp_path, on_step=poison)
    assert r.status == "nan" and r.steps == 25 and math.isnan(r.final_loss)
    config, _ = load_checkpoint(tmp_path / "checkpoint")
    assert config["step"] == 20 and config["status"] == "done"
    model, _, _ = load_trained(tmp_path)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    last = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["event"] == "nan"


def test_huge_learning_rate_that_diverges_is_stopped():
    task = make_task("kernel-memory", length=16)
    mc = model_config_for(task, mixer="attention", d_model=8, heads=1, ffn_width=8)
    r = train(task, mc, TrainConfig(steps=200, lr=1e30, warmup=0, grad_clip=1e30, eval_every=50, eval_size=32, batch_size=8))
    assert r.status == "nan" and r.steps < 200


def test_resume_without_checkpoint_is_a_user_error(tmp_path):
    from expressivity.errors import ExpressivityError

    with pytest.raises(ExpressivityError, match="no checkpoint"):
        train(TASK, model_config_for(TASK, **SMALL), cfg(), tmp_path, resume=True)


@pytest.mark.parametrize("arch", [dict(rpe="t5", rotary=True, norm="pre"), dict(mixer=("sepconv", "dpfree"), layers=2, rpe="log", learnable_slopes=True)])
def test_ensemble_matches_separate_runs(arch):
    mc = model_config_for(TASK, **{**SMALL, **arch})
    cfgs = [cfg(steps=15, seed=0, lr=1e-3), cfg(steps=15, seed=1, lr=3e-3), cfg(steps=15, seed=2, lr=3e-3)]
    results, ens = train_ensemble(TASK, mc, cfgs)
    for k, c in enumerate(cfgs):
        single = train(TASK, mc, c)
        assert results[k].final_loss == pytest.approx(single.final_loss, rel=1e-4)
        member, ref = params(ens.member(k)), params(single.model)
        for name in ref:
            assert torch.allclose(member[name], ref[name], atol=2e-5, rtol=1e-4), name


def test_ensemble_members_must_share_all_but_seed_and_lr():
    from expressivity.errors import ExpressivityError

    with pytest.raises(ExpressivityError, match="seed and lr"):
        train_ensemble(TASK, model_config_for(TASK, **SMALL), [cfg(seed=0), cfg(seed=1, steps=99)])


def test_resuming_a_run_that_reached_its_target_does_not_train_further(tmp_path):
    mc = model_config_for(TASK)
    first = train(TASK, mc, cfg(steps=1500, eval_every=50, target_metric=0.99), tmp_path)
    again = train(TASK, mc, cfg(steps=1500, eval_every=50, target_metric=0.99), tmp_path, resume=True)
    assert again.status == "target-reached" and again.steps == first.steps and again.final_metric == first.final_metric
