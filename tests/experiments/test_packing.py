"""Packing: runs differing only in seed or lr share an ensemble; near-equal packs; memory budget."""

import pytest

from expressivity.errors import BudgetError
from expressivity.experiments.packing import plan_packs
from expressivity.training.budget import Budget
from expressivity.experiments.sweep import sweep_from_spec

from tests.experiments.helpers import grid_spec


def configs(grid):
    return list(sweep_from_spec(grid_spec(grid)).configs)


def test_seed_and_lr_pack_together_other_settings_do_not():
    cfgs = configs({"model.heads": [1, 2], "train.lr": [1e-3, 1e-2], "seed": [0, 1, 2]})
    packs = plan_packs(cfgs, 16)
    assert [p.size for p in packs] == [6, 6]
    assert all(len({c.model.heads for c in p.configs}) == 1 for p in packs)
    assert sorted(c.id() for p in packs for c in p.configs) == sorted(c.id() for c in cfgs)


def test_large_groups_split_into_near_equal_packs():
    cfgs = configs({"train.lr": [1e-3, 1e-2], "seed": list(range(10))})
    assert [p.size for p in plan_packs(cfgs, 16)] == [10, 10]
    assert [p.size for p in plan_packs(cfgs, 1)] == [1] * 20
    assert plan_packs(cfgs, 16)[0].id == plan_packs(list(cfgs), 16)[0].id  # deterministic


def test_packs_respect_the_memory_budget():
    spec = grid_spec({"seed": list(range(8))})
    spec["base"] = {**spec["base"], "task": {"name": "reverse", "args": {"length": 64, "vocab": 6}},
                    "model": {"heads": 8, "d_model": 64, "ffn_width": 64},
                    "train": {**spec["base"]["train"], "batch_size": 64, "eval_size": 1024}}
    packs = plan_packs(list(sweep_from_spec(spec).configs), 16)
    assert len(packs) > 1 and sum(p.size for p in packs) == 8


def test_a_cpu_pack_above_a_budget_smaller_than_the_former_guard_is_split_to_fit():
    """An audit: CPU packs were sized by the former 4 GiB guard alone, so with --workers 8 (a 2.3 GiB share) a 3.1 GiB
    pack passed the plan and every run in it failed at start (BudgetError). Where the budget is the larger, the packs
    are the former guard's, unchanged."""
    from expressivity.training.budget import estimate_run

    cfgs = configs({"train.lr": [1e-3, 1e-2], "seed": list(range(8))})
    task = cfgs[0].build_task()
    whole = plan_packs(cfgs, 16, budget=Budget(2**40, "a large budget"))
    assert [p.size for p in whole] == [16] == [p.size for p in plan_packs(cfgs, 16)]
    budget = Budget(estimate_run(cfgs[0], task, 5, "cpu").peak, "a test")   # five models fit, six do not
    packs = plan_packs(cfgs, 16, budget=budget)
    assert [p.size for p in packs] == [4, 4, 4, 4] and sum(p.size for p in packs) == 16
    assert all(estimate_run(p.configs[0], task, p.size, "cpu").peak <= budget.bytes for p in packs)


def test_one_model_over_budget_refuses_the_sweep_up_front():
    spec = grid_spec({"seed": [0]})
    spec["base"] = {**spec["base"], "model": {"d_model": 4096, "ffn_width": 4096, "heads": 1},
                    "task": {"name": "reverse", "args": {"length": 512, "vocab": 6}},
                    "train": {**spec["base"]["train"], "eval_size": 4096}}
    with pytest.raises(BudgetError, match="run .* GiB.* above the budget of 2 GiB"):
        plan_packs(list(sweep_from_spec(spec).configs), budget=Budget(2 * 2**30, "a test"))


def test_bad_pack_size():
    with pytest.raises(ValueError):
        plan_packs(configs({"seed": [0]}), 0)
