"""Planning a claim before it trains (experiments/plan.py) and the packs it plans: every full
profile fits one 80 GB GPU and a 24 GB CPU, planned without allocating anything; CPU packs are
the ones the fixed guard made (so CPU sweeps keep their records); quick and medium held-out
passes are never chunked; a plan times a few steps and prices every pack."""

import math
from pathlib import Path

import pytest
import torch

from expressivity.errors import BudgetError
from expressivity.experiments.claims import all_claims
from expressivity.experiments.packing import plan_packs
from expressivity.experiments.plan import Plan, check_affordable, claim_sweep, plan_claim
from expressivity.training.budget import Budget, check_run_budget, estimate_run

TRAINING_CLAIMS = [name for name, claim in all_claims().items() if claim.trains]
GPU_80GB = Budget(int(80e9 * 0.9), "90% of an 80 GB GPU")
CPU_24GB = Budget(int(24 * 2**30 * 0.8) // 2, "80% of a 24 GiB CPU, shared by 2 workers")


@pytest.fixture
def nothing_allocated(monkeypatch):
    """Planning builds no model and asks no GPU."""
    from expressivity.nn import model

    def refuse(*args, **kwargs):
        raise AssertionError("planning built a model or asked the GPU")

    monkeypatch.setattr(model.Model, "__init__", refuse)
    monkeypatch.setattr(torch.cuda, "mem_get_info", refuse)


@pytest.mark.parametrize("name", TRAINING_CLAIMS)
def test_every_full_profile_fits_one_80gb_gpu_and_a_24gb_cpu(name, tmp_path, nothing_allocated):
    sweep, _ = claim_sweep(name, "full", tmp_path)
    for device, budget, max_pack in (("cuda", GPU_80GB, None), ("cpu", CPU_24GB, 16)):
        packs = plan_packs(sweep.configs, max_pack, device=device, budget=budget)
        assert sum(p.size for p in packs) == len(sweep.configs)
        for pack in packs:
            config = pack.configs[0]
            check_run_budget(config, config.build_task(), pack.size, budget, device)   # what run_ensemble checks
    assert not (tmp_path / "sweep").exists()


def former_plan(configs, max_pack=16):
    """plan_packs and the 4 GiB guard as they were at commit 1e9eded (copied), or None where they refused."""
    from expressivity.experiments.packing import Pack
    from expressivity.nn.model import parameter_count
    from expressivity.training.ensemble import pack_key

    def fits(config, models):
        task, tc, cfg = config.build_task(), config.train, config.model
        n, batch = task.seq_len, max(tc.batch_size, tc.eval_size)
        activations = 4 * models * cfg.layers * batch * (n * (8 * cfg.d_model + 3 * cfg.ffn_width)
                                                         + 4 * cfg.heads * n * n)
        return activations <= 4 * 2**30 and activations + 16 * models * parameter_count(cfg) <= 4 * 2**30

    groups = {}
    for c in configs:
        groups.setdefault(pack_key(c), []).append(c)
    packs = []
    for members in groups.values():
        if not fits(members[0], 1):
            return None
        parts = math.ceil(len(members) / max_pack)
        while parts < len(members) and not fits(members[0], math.ceil(len(members) / parts)):
            parts += 1
        packs += [Pack(tuple(members[k * len(members) // parts:(k + 1) * len(members) // parts])) for k in range(parts)]
    return packs


@pytest.mark.parametrize("scale", ["quick", "medium", "full"])
@pytest.mark.parametrize("name", TRAINING_CLAIMS)
def test_cpu_packs_are_the_ones_the_fixed_guard_made(name, scale, tmp_path):
    sweep, _ = claim_sweep(name, scale, tmp_path)
    now = plan_packs(sweep.configs)
    before = former_plan(sweep.configs)
    if before is None:   # refused then (the LM claims' full scale): now planned, one run a pack
        assert all(p.size == 1 for p in now)
    else:
        assert [p.id for p in now] == [p.id for p in before]


@pytest.mark.parametrize("scale", ["quick", "medium"])
@pytest.mark.parametrize("name", TRAINING_CLAIMS)
def test_no_quick_or_medium_held_out_pass_is_chunked(name, scale, tmp_path):
    sweep, _ = claim_sweep(name, scale, tmp_path)
    for config in {c.model.to_dict().__repr__() + repr(c.eval_lengths): c for c in sweep.configs}.values():
        estimate = estimate_run(config, config.build_task())
        assert all(chunk == config.train.eval_size for chunk in estimate.chunks.values())


def test_gpu_packs_hold_a_whole_configuration_and_split_only_to_fit(tmp_path):
    sweep, _ = claim_sweep("wang-e-dp", "full", tmp_path)
    roomy = plan_packs(sweep.configs, None, device="cuda", budget=GPU_80GB)
    whole = len({c.train.lr for c in sweep.configs}) * len({c.seed for c in sweep.configs})   # the lr grid x seeds
    assert whole >= 15 and sum(p.size for p in roomy) == len(sweep.configs)
    for p in roomy:   # whole where the whole configuration fits (on CUDA a held-out pass adds to the step)
        c = p.configs[0]
        assert (p.size == whole) == (estimate_run(c, c.build_task(), whole, "cuda").peak <= GPU_80GB.bytes)
    assert {p.size for p in roomy if p.configs[0].model.layers < 8} == {whole}
    assert all(len({repr((c.model, c.task)) for c in p.configs}) == 1 for p in roomy)
    tight = plan_packs(sweep.configs, None, device="cuda", budget=Budget(12 * 2**30, "a 12 GiB GPU"))
    assert min(p.size for p in tight) < whole and sum(p.size for p in tight) == len(sweep.configs)   # L = 8 split
    assert all(estimate_run(p.configs[0], p.configs[0].build_task(), p.size, "cuda").peak <= 12 * 2**30 for p in tight)
    with pytest.raises(BudgetError, match="above the budget of 0.5 GiB"):
        plan_packs(sweep.configs, None, device="cuda", budget=Budget(2**29, "half a GiB"))


def test_a_plan_times_a_few_steps_and_prices_every_pack(tmp_path):
    sizes = {"steps": 40, "seeds": (0, 1), "lrs": (1e-2, 3e-2), "widths": (4, 8), "heads": (2,)}
    plan = plan_claim("wang-e-4", "quick", tmp_path / "out", workers=1, threads=1, overrides=sizes)
    assert plan.runs == 8 and plan.recorded == 0 and plan.pack_sizes() == {4: 2}
    assert [c["size"] for c in plan.calibration] in ([4, 4], [4])
    assert all(p.seconds > 0 for p in plan.packs) and plan.seconds == pytest.approx(sum(p.seconds for p in plan.packs))
    text = "\n".join(plan.lines())
    assert "8 runs (0 recorded before), 2 packs to train (2 of 4)" in text and "estimated time" in text
    assert not (tmp_path / "out").exists()   # nothing written


def test_every_shape_is_timed_so_a_slow_shape_with_few_flops_is_priced_by_its_own_steps(tmp_path, monkeypatch):
    """Claim 7's T = 64 packs cost 515 ms a step at 2.0e9 counted FLOPs where another shape's
    9.2e9-FLOP pack cost 169 ms: a line through the FLOPs extremes priced them ten times too low."""
    from expressivity.experiments import plan as plan_module

    def fake_time(pack, execution, threads):   # the middle width is slow, the extremes fast
        return 0.0, (1.0 if pack.configs[0].model.ffn_width == 8 else 0.01), 3

    monkeypatch.setattr(plan_module, "time_pack", fake_time)
    sizes = {"steps": 40, "seeds": (0, 1), "lrs": (1e-2,), "widths": (4, 8, 16), "heads": (2,)}
    plan = plan_claim("wang-e-4", "quick", tmp_path / "out", workers=1, threads=1, overrides=sizes)
    assert len(plan.packs) == 3 and len(plan.calibration) == 3
    slow = sorted(plan.packs, key=lambda p: p.flops_per_step)[1]    # width 8: neither FLOPs extreme
    assert slow.seconds == pytest.approx(1.0 * slow.flops / slow.flops_per_step)
    # with no time left after the extremes, the middle shape is priced on their line, far lower
    monkeypatch.setattr(plan_module, "CALIBRATION_TOTAL_SECONDS", -1.0)
    lined = plan_claim("wang-e-4", "quick", tmp_path / "out", workers=1, threads=1, overrides=sizes)
    assert len(lined.calibration) == 2 and lined.seconds < plan.seconds / 10


def test_a_pack_is_timed_in_the_arithmetic_its_runs_will_use(monkeypatch):
    """TF32 is switched on only inside ``Execution.matmul_mode``; a plan that timed a TF32 pack
    outside it priced fp32 steps (and the GPU check's tf32 rows were fp32 ones)."""
    from contextlib import contextmanager

    from expressivity.experiments.packing import Pack
    from expressivity.experiments.plan import time_pack
    from expressivity.training.execution import Execution

    entered = []

    @contextmanager
    def watched(self):
        entered.append(self.precision)
        yield

    monkeypatch.setattr(Execution, "matmul_mode", watched)
    sweep, _ = claim_sweep("wang-e-4", "quick", Path("/nonexistent-plan-test"), overrides={"steps": 10, "seeds": (0,), "lrs": (1e-2,),
                                                                 "widths": (4,), "heads": (2,)})
    first, per_step, timed = time_pack(Pack(tuple(sweep.configs[:1])), Execution("cpu", precision="bf16"), 1, steps=2)
    assert entered == ["bf16"] and timed == 2 and per_step > 0


def test_a_numerics_claim_plans_nothing(tmp_path):
    plan = plan_claim("wang-e-2", "quick", tmp_path)
    assert not plan.packs and "nothing trains" in plan.lines()[0]


def test_a_plan_above_an_hour_needs_yes():
    plan = Plan("wang-e-7", "full", "cpu", {}, 2, 1, "x", seconds=3 * 3600)
    with pytest.raises(Exception, match="estimated at 3.0 hours on this machine; pass --yes"):
        check_affordable(plan, yes=False)
    check_affordable(plan, yes=True)
    check_affordable(Plan("wang-e-7", "quick", "cpu", {}, 2, 1, "x", seconds=600), yes=False)


def test_workers_beyond_the_cores_do_not_shorten_the_plan(monkeypatch):
    """8 workers on 2 cores planned 38 s for a claim whose packs needed 100 s of the two cores."""
    from expressivity.experiments import plan as planning

    monkeypatch.setattr("expressivity.experiments.local.cpu_count", lambda: 2)
    for workers, threads, lanes in ((8, 1, 2), (2, 1, 2), (1, 2, 1), (4, 2, 1)):
        assert planning._lanes(Plan("x", "quick", "cpu", {}, workers, threads, "")) == lanes
    assert planning._lanes(Plan("x", "quick", "cuda", {}, 3, 1, "")) == 3
    assert planning._wall([10.0] * 8, 2) == 40.0


def test_durations_read_as_words_not_exponents():
    """An audit: a full profile's plan said "8.8e+02 hours"."""
    from expressivity.experiments.plan import format_seconds

    assert [format_seconds(s) for s in (5, 90, 3700, 42 * 3600, 880 * 3600)] == [
        "5 s", "1.5 minutes", "1.0 hours", "42 hours", "880 hours (37 days)"]
