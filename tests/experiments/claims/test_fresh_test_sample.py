"""Deciding runs (medium, full) score on a test sample no development run has seen; quick keeps
the development sample; the verdict says which."""

import json

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.experiments.claims import CLAIMS, FRESH_TEST_SEED, Claim, ClaimContext, ClaimResult, Regime, reproduce
from expressivity.training import RunConfig, TrainConfig
from expressivity.training.schedule import EVAL_SEED, TEST_SEED
from expressivity.training.trainer import eval_batch


def test_the_test_seed_is_fresh_at_the_deciding_scales(tmp_path):
    assert ClaimContext(tmp_path, "quick").test_seed is None
    assert ClaimContext(tmp_path, "medium").test_seed == ClaimContext(tmp_path, "full").test_seed == FRESH_TEST_SEED
    assert FRESH_TEST_SEED not in (TEST_SEED, EVAL_SEED)
    from expressivity.experiments.claims.wang_e_trained import _sweep_configs

    configs = _sweep_configs("copy", {"length": 8}, [{"d_model": 8}], 10, (0.01,), (0, 1), test_seed=FRESH_TEST_SEED)
    assert {c.train.test_seed for c in configs} == {FRESH_TEST_SEED}


def test_a_test_seed_changes_the_test_sample_only_and_an_unset_one_keeps_ids():
    config = RunConfig.for_task("copy", {"length": 8}, steps=5)
    assert "test_seed" not in config.to_dict()["train"]           # configurations written before keep their ids
    fresh = config.with_changes(train={"test_seed": FRESH_TEST_SEED})
    assert fresh.id() != config.id() and fresh.train.split_seed("val") == config.train.split_seed("val") == EVAL_SEED
    task = config.build_task()
    default, other = eval_batch(task, 16, None, "test"), eval_batch(task, 16, None, "test", seed=FRESH_TEST_SEED)
    assert not torch.equal(default.x, other.x)
    assert torch.equal(eval_batch(task, 16, None, "val").x, eval_batch(task, 16, None, "val", seed=EVAL_SEED).x)
    for bad in (EVAL_SEED, -1, 1.5, True):
        with pytest.raises(ExpressivityError, match="test-seed"):
            TrainConfig(test_seed=bad)


@pytest.mark.parametrize("scale,kind", [("quick", "development"), ("medium", "fresh")])
def test_the_verdict_records_its_test_sample(tmp_path, scale, kind):
    CLAIMS["test-sample-claim"] = Claim("test-sample-claim", "t", "s", "c", lambda ctx: ClaimResult(
        "reproduced", "x", [], None, regime=Regime(ctx.scale, {"ok": True})), tag="[D]")
    try:
        reproduce("test-sample-claim", tmp_path / "out", scale)
    finally:
        del CLAIMS["test-sample-claim"]
    sample = json.loads((tmp_path / "out" / "verdict.json").read_text())["test_sample"]
    assert sample["kind"].startswith(kind) and sample["seed"] == (TEST_SEED if scale == "quick" else FRESH_TEST_SEED)
