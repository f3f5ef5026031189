"""The run contract: one typed configuration, validated, serialisable, with a stable content hash."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.training import RunConfig, TaskSpec


def base(**kw):
    return RunConfig.for_task("reverse", {"length": 6}, {"layers": 1, "d_model": 16, "heads": 2}, {"steps": 10}, **kw)


def test_defaults_come_from_the_task_and_overrides_apply():
    c = base()
    assert c.task == TaskSpec("reverse", {"length": 6, "vocab": 16})
    assert c.model.vocab_size == 16 and c.model.d_out == 16 and c.model.max_len == 6 and c.model.ape == "learned"
    assert c.train.steps == 10 and c.train.target_metric == 0.999  # reverse's train defaults fill the rest


def test_round_trip_through_json_keeps_the_id():
    c = base(seed=7, eval_lengths=(3, 9))
    d = json.loads(json.dumps(c.to_dict()))
    again = RunConfig.from_dict(d)
    assert again == c and again.id() == c.id() and len(c.id()) == 16
    assert c.model.max_len == 9  # sized for the longest evaluation length


def test_id_is_a_content_hash_that_changes_with_any_field():
    c = base()
    others = [c.with_changes(seed=1), c.with_changes(train={"lr": 1e-2}), c.with_changes(model={"heads": 4}),
              c.with_changes(eval_lengths=(4,)), c.with_changes(task=TaskSpec.of("sort", length=6))]
    ids = {c.id()} | {o.id() for o in others}
    assert len(ids) == 1 + len(others)
    assert base().id() == c.id()  # and equal configurations share it


def test_hash_is_stable_across_processes():
    import subprocess
    import sys

    code = ("from expressivity.training import RunConfig; print(RunConfig.for_task('reverse', {'length': 6}, "
            "{'layers': 1, 'd_model': 16, 'heads': 2}, {'steps': 10}).id())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == base().id()


@pytest.mark.parametrize("change, needle", [
    (lambda d: d | {"extra": 1}, "unknown keys extra"),
    (lambda d: {k: v for k, v in d.items() if k != "model"}, "missing keys model"),
    (lambda d: d | {"task": "reverse"}, '"task" must be'),
    (lambda d: d | {"train": {**d["train"], "lr": "fast"}}, "not a number"),
    (lambda d: d | {"train": {**d["train"], "lr": "inf"}}, "lr must be a finite number"),
    (lambda d: d | {"train": {**d["train"], "speed": 2}}, "unknown training settings speed"),
    (lambda d: d | {"seed": -1}, "seed must be"),
    (lambda d: d | {"seed": 2**64}, "seed must be"),
    (lambda d: d | {"eval_lengths": ["x"]}, "eval_lengths"),
    (lambda d: d | {"model": {**d["model"], "d_out": 3}}, "model d_out is 3"),
    (lambda d: d | {"model": {**d["model"], "max_len": 4}}, "raise the model's max_len"),
    (lambda d: d | {"task": {"name": "reverse", "args": {"vocab": 1}}}, "vocab must be >= 2"),
    (lambda d: d | {"eval_lengths": [0]}, "length must be an integer >= 1"),
    ([], "must be a JSON object"),
])
def test_malformed_configurations_are_refused_by_name(change, needle):
    d = base().to_dict()
    with pytest.raises(ExpressivityError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        RunConfig.from_dict(change(d) if callable(change) else change)


def test_an_absurd_model_is_refused_from_its_estimate_before_any_model_is_built(monkeypatch):
    from expressivity.errors import BudgetError
    from expressivity.training import run, trainer

    def no_model(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(trainer, "Model", no_model)
    config = RunConfig.for_task("reverse", {"length": 8}, layers=4000, steps=2)
    with pytest.raises(BudgetError, match=r"needs about .* GiB: parameters and optimizer .* above the budget of 2 GiB"):
        run(config, memory_budget="2GiB")

def test_a_run_cannot_train_on_its_own_held_out_examples():
    """A fresh audit (2026-11-28): seed 123456789 drew exactly the test set's batches (512 of 512 test
    examples seen in 8 steps of sort), 987654321 the validation set's; and lm-causal trained a bidirectional
    model that read its own target (0.15 bits/byte)."""
    import torch

    from expressivity.tasks import make_task
    from expressivity.training.schedule import EVAL_SEED, TEST_SEED
    from expressivity.training.trainer import eval_batch

    task = make_task("sort")
    seen = set()
    generator = torch.Generator().manual_seed(TEST_SEED)
    for _ in range(8):
        seen |= {tuple(r.tolist()) for r in task.sample(64, None, generator).x}
    assert len({tuple(r.tolist()) for r in eval_batch(task, 512, None, "test").x} & seen) == 512   # why it matters
    from expressivity.experiments.sweep import Sweep
    from expressivity.training import run, run_ensemble

    for seed, split in ((TEST_SEED, "test"), (EVAL_SEED, "validation")):
        config = RunConfig.for_task("sort", seed=seed, train={"steps": 1})   # a folder of such a run still reads
        assert RunConfig.from_dict(config.to_dict()) == config
        for train in (lambda: run(config), lambda: run_ensemble([config, config.with_changes(seed=1)]),
                      lambda: Sweep((config,))):
            with pytest.raises(ExpressivityError, match=f"seed {seed} is the seed of the {split} split's generator"):
                train()
    with pytest.raises(ExpressivityError, match="seed 5 is the seed of the test split"):
        RunConfig.for_task("sort", seed=5, train={"test_seed": 5}).check_trainable()
    RunConfig.for_task("sort", seed=5, train={"test_seed": 6}).check_trainable()
    RunConfig.for_task("lm-causal", seed=TEST_SEED).check_trainable()   # a corpus's splits are disjoint files
    with pytest.raises(ExpressivityError, match="predicts the next input: a bidirectional model reads its own target"):
        RunConfig.for_task("lm-causal", model={"causal": False}).check_trainable()


def test_hardmax_attention_is_refused_for_training():
    """An audit: hardmax trained "normally", but its arg-max passes no gradient to the query, key and position-bias
    weights (all-zero gradients measured), so they never moved; the optimizer's docstring says every parameter is
    reached. Refused where a run is about to train; a hardmax ModelConfig itself stays valid (converted networks)."""
    from expressivity.training import run

    config = RunConfig.for_task("reverse", {"length": 6}, {"normalization": "hardmax", "rpe": "t5"})
    with pytest.raises(ExpressivityError, match="hardmax attention passes no gradient"):
        config.check_trainable()
    with pytest.raises(ExpressivityError, match="hardmax attention passes no gradient"):
        run(config.with_changes(train={"steps": 2}))


def test_a_regression_target_constant_at_a_scored_length_is_refused():
    """An audit (2026-11-29): pairwise distances at length 1 are all 0 and smooth-rank's are all 1/2, so R^2 =
    1 - SSE/SST divided by a clamped SST of 1e-300 and read -3e299 with exit 0."""
    with pytest.raises(ExpressivityError, match=r"the same target 0 at every scored position of its validation "
                                                r"batch \(\d+ sequences\) at length 1"):
        c = RunConfig.for_task("yun-target", {"target": "pairwise-distance", "length": 1})
        c.check_scorable(c.build_task())
    with pytest.raises(ExpressivityError, match=r"target 0.5 .* length 1, .*drop it from the evaluation lengths"):
        c = RunConfig.for_task("yun-target", {"target": "smooth-rank", "length": 4}, eval_lengths=(1,))
        c.check_scorable(c.build_task())
    c = RunConfig.for_task("yun-target", {"target": "smooth-rank", "length": 4}, eval_lengths=(2,))
    c.check_scorable(c.build_task())
    from expressivity.training import run

    with pytest.raises(ExpressivityError, match=r"R\^2 \(1 - SSE/SST\) is undefined"):   # as a run refuses it
        run(RunConfig.for_task("yun-target", {"target": "pairwise-distance", "length": 1}, train={"steps": 2}))


def test_a_test_split_constant_where_validation_varies_is_refused_and_the_ensemble_checks_too():
    """A review (2026-11-29): the check drew the validation split only, so a test split of [1, 1] (eval_size 2) ran
    to R^2 -4.5e300; and removing the ensemble's call left every test passing (its R^2 read -1.6e196)."""
    from expressivity.training import run
    from expressivity.training.ensemble import run_ensemble

    cfg = RunConfig.for_task("fixed-memory", {"length": 2, "lags": "1", "readout": "boolean"}, steps=2, eval_size=2,
                             layers=1, heads=1, d_model=4, ffn_width=4, test_seed=2)
    with pytest.raises(ExpressivityError, match=r"of its test batch \(2 sequences\) at length 2"):
        run(cfg)
    members = [RunConfig.for_task("yun-target", {"target": "smooth-rank", "length": 1}, steps=2, seed=s)
               for s in (1, 2)]
    with pytest.raises(ExpressivityError, match=r"R\^2 \(1 - SSE/SST\) is undefined"):
        run_ensemble(members)


def test_a_bidirectional_model_drops_the_suggested_infinite_past_normaliser():
    # kernel-memory suggests the infinite-past normaliser, which a bidirectional model cannot have: `train --task
    # kernel-memory --bidirectional` was refused with "set causal or use visible", which train has no option for (a
    # fresh audit, 2026-11-29). A suggested default the other options make inapplicable is dropped.
    from expressivity.tasks import make_task
    from expressivity.training.config import model_config_for

    task = make_task("kernel-memory", length=16)
    assert task.model_defaults().get("dpfree_normaliser") == "infinite"
    assert model_config_for(task).dpfree_normaliser == "infinite"
    assert model_config_for(task, causal=False).dpfree_normaliser == "visible"
    with pytest.raises(ExpressivityError, match="causal"):   # given, not suggested: still refused, naming it
        model_config_for(task, causal=False, dpfree_normaliser="infinite")
