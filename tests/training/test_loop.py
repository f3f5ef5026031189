"""The one training loop (training/loop.py) and what both steppers share: weight decay on weight
matrices only, and checkpoints written by the code before the loop was shared (commit 014e179)
still load and resume."""

import shutil
from pathlib import Path

import pytest
import torch

from expressivity.nn import Model
from expressivity.training import RunConfig, load_trained, run, run_ensemble
from expressivity.training.checkpoint import read_checkpoint_config
from expressivity.training.ensemble import EnsembleStepper
from expressivity.training.trainer import SingleStepper

OLD = Path(__file__).parent / "data" / "checkpoints_014e179"


def old_config(seed=0):
    """The configuration data/make_checkpoints_014e179.py trained."""
    model = dict(layers=1, heads=2, d_model=8, ffn_width=8, rpe="log", learnable_slopes=True, norm="pre")
    train = dict(steps=12, batch_size=4, eval_every=4, eval_size=8, log_every=2, checkpoint_every=4)
    return RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, model, train, seed)


def _decayed(opt, cols: slice) -> bool:
    """Whether the optimizer's weight decay multiplies these columns (they lie in one of its runs)."""
    return any(run.start <= cols.start and cols.stop <= run.stop for run in opt.decayed_runs)


def test_weight_decay_applies_to_weight_matrices_only():
    cfg = RunConfig.for_task("reverse", {"length": 6, "vocab": 8},
                             dict(mixer=("attention", "sepconv", "bilinear"), layers=3, heads=2, d_model=8, ffn_width=8,
                                  rpe="log", learnable_slopes=True, norm="pre", ape="learned", q_bias=True))
    opt = SingleStepper(cfg.with_changes(train={"weight_decay": 0.1}), cfg.build_task(), None, "cpu").optimizer
    decayed_names = {n for n, cols in zip(opt.names, opt.columns) if _decayed(opt, cols)}
    plain_names = {n for n, cols in zip(opt.names, opt.columns) if not _decayed(opt, cols)}
    # checkpoints keep torch.optim.AdamW's two groups: the weight matrices (decayed) first
    groups = opt.torch_state(1, 0.1)["param_groups"]
    assert groups[0]["weight_decay"] == 0.1 and groups[1]["weight_decay"] == 0.0
    assert (len(groups[0]["params"]), len(groups[1]["params"])) == (len(decayed_names), len(plain_names))
    assert decayed_names == {"embed.weight", "ape.table", "blocks.0.mixer.q.weight", "blocks.0.mixer.k.weight",
                             "blocks.0.mixer.v.weight", "blocks.0.mixer.o.weight", "blocks.1.mixer.filters",
                             "blocks.1.mixer.o.weight", "blocks.2.mixer.P", "blocks.2.mixer.o.weight",
                             "readout.weight", *(f"blocks.{k}.ffn.w{i}.weight" for k in range(3) for i in (1, 2))}
    assert all(n.endswith(("bias", "log_beta")) or ".norm" in n or n.startswith("norm.") for n in plain_names)
    assert decayed_names | plain_names == set(opt.names)
    # the ensemble decays the same columns
    stepper = EnsembleStepper([cfg, cfg.with_changes(seed=1)], cfg.build_task(), None, "cpu")
    mask = [_decayed(stepper.optimizer, cols) for cols in stepper.optimizer.columns]
    expected = [n in decayed_names for n, _ in stepper.model.named_parameters()]
    assert mask == expected


def test_a_checkpoint_written_before_the_shared_loop_still_loads(tmp_path):
    model, task, config = load_trained(OLD / "single_done")
    assert config == old_config()
    x = task.sample(3, None, torch.Generator().manual_seed(0)).x
    assert torch.isfinite(model(x)).all()
    # the finished run is returned as it ended
    again = run(config, shutil.copytree(OLD / "single_done", tmp_path / "done"), resume=True)
    assert again.steps == 12 and again.status == "done"
    assert all(torch.equal(a, b) for a, b in zip(again.model.state_dict().values(), model.state_dict().values()))


def test_a_running_single_checkpoint_from_before_resumes(tmp_path):
    folder = shutil.copytree(OLD / "single_running", tmp_path / "run")
    assert read_checkpoint_config(folder / "checkpoint")["step"] == 8
    result = run(old_config(), folder, resume=True)
    assert result.steps == 12 and result.status == "done"
    assert [h["step"] for h in result.history if "loss" in h and "eval_loss" not in h] == [2, 4, 6, 8, 10, 12]
    assert read_checkpoint_config(folder / "checkpoint")["status"] == "done"


def test_a_running_ensemble_checkpoint_from_before_resumes(tmp_path):
    folder = shutil.copytree(OLD / "ensemble_running", tmp_path / "ens")
    results, _ = run_ensemble([old_config(0), old_config(1)], folder, resume=True)
    assert [r.steps for r in results] == [12, 12] and {r.status for r in results} == {"done"}
    for r in results:
        model, _, _ = load_trained(folder / f"seed_{r.config.seed}")
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), r.model.state_dict().values()))


def test_a_member_that_reaches_its_target_stops_while_the_others_train():
    base = RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=2, d_model=16, ffn_width=16),
                              dict(steps=40, batch_size=16, eval_every=5, eval_size=32, lr=1e-2, target_metric=0.5))
    single = [run(base.with_changes(seed=s)) for s in (0, 1)]
    members, _ = run_ensemble([base.with_changes(seed=s) for s in (0, 1)])
    for m, s in zip(members, single):
        assert (m.status, m.steps) == (s.status, s.steps)
    assert any(m.status == "target-reached" for m in members)


@pytest.mark.parametrize("members", [1, 3])
def test_a_non_finite_loss_stops_only_that_member(members, poison_first_member):
    cfgs = [RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=1, d_model=4, ffn_width=4),
                               dict(steps=6, batch_size=2, eval_every=3, eval_size=4), seed=s) for s in range(members)]
    poison_first_member(EnsembleStepper, 4)
    results, _ = run_ensemble(cfgs)
    assert (results[0].status, results[0].steps) == ("nan", 4)
    assert results[0].history[-1] == {"step": 4, "event": "nan", "loss": "nan"}
    assert all((r.status, r.steps) == ("done", 6) for r in results[1:])
