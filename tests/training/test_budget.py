"""The memory guard (training/budget.py): what the estimate counts, held-out chunks, the device's
budget, refusals before anything is built, and chunked held-out passes equal to whole ones."""

import re

import pytest
import torch

from expressivity.errors import BudgetError, ExpressivityError
from expressivity.nn import ModelConfig
from expressivity.training import RunConfig, budget, run, run_ensemble
from expressivity.training.budget import (EVAL_FLOOR, Budget, eval_chunk, estimate_run, evaluation_bytes,
                                          memory_budget, parse_memory_size, training_bytes)

LM_FULL = ModelConfig(vocab_size=256, d_out=256, max_len=256, mixer="attention", layers=8, heads=4, d_model=128,
                      ffn_width=512, rpe="t5", norm="pre", activation="gelu")


def test_held_out_passes_are_counted_without_backward_and_in_chunks():
    # the fixed guard counted 1,024 held-out windows as if they kept a backward pass: 39 GiB for
    # "activations alone" of one L = 8 model; a training step of 64 windows is what it keeps
    step = training_bytes(LM_FULL, 256, 64)
    assert 1.0 * 2**30 < step < 2.5 * 2**30   # measured 2.18 GiB for the whole process (bench_memory.py)
    whole = evaluation_bytes(LM_FULL, 256, 1024)
    assert whole > step   # one pass over all 1,024 windows would be the peak...
    chunk = eval_chunk(LM_FULL, 256, 1024, 256, 64)
    assert chunk < 1024 and evaluation_bytes(LM_FULL, 256, chunk) <= max(step, EVAL_FLOOR)   # ...so it is split
    assert 1024 % chunk == 0 or -(-1024 // chunk) * chunk - 1024 < -(-1024 // chunk)   # near-equal parts


def test_an_ensemble_costs_its_members_and_the_chunk_does_not_depend_on_them():
    config = RunConfig.for_task("kernel-memory", {"length": 64})
    task = config.build_task()
    one, eight = estimate_run(config, task, 1), estimate_run(config, task, 8)
    assert eight.training == 8 * one.training and eight.evaluation == 8 * one.evaluation
    assert eight.chunks == one.chunks   # a function of the configuration alone


def test_on_cuda_a_held_out_pass_is_counted_beside_the_captured_step_not_instead_of_it():
    """CUDA graphs keep a training step's memory in their own pool, which the eager held-out pass
    cannot reuse: on CUDA the two add; on the CPU the larger counts (as before). The chunks, and so
    the held-out numbers, are the same on both devices."""
    config = RunConfig.for_task("kernel-memory", {"length": 64})
    task = config.build_task()
    cpu, cuda = estimate_run(config, task, 4), estimate_run(config, task, 4, "cuda")
    assert cpu.peak == cpu.parameters + cpu.data + max(cpu.training, cpu.evaluation)
    assert cuda.peak == cpu.parameters + cpu.data + cpu.training + cpu.evaluation
    assert cpu.peak < cuda.peak <= 2 * cpu.peak and cuda.chunks == cpu.chunks


def test_small_runs_are_never_chunked():
    assert eval_chunk(ModelConfig(vocab_size=16, d_out=16, max_len=8), 8, 512, 8, 64) == 512


def test_the_budget_comes_from_the_device_and_is_shared(monkeypatch):
    monkeypatch.setattr(budget, "available_ram", lambda: (20 * 2**30, True))
    b = budget.device_budget("cpu")
    assert b.bytes == int(20 * 2**30 * 0.8) and "80% of the 20 GiB of RAM available now" in b.source
    assert budget.device_budget("cpu", share=4).bytes == int(20 * 2**30 * 0.8) // 4
    assert memory_budget("3GiB", "cpu") == Budget(3 * 2**30, "--memory-budget")
    assert memory_budget(None, "cpu", share=2).bytes == int(20 * 2**30 * 0.8) // 2


def test_available_ram_is_read_from_the_kernel():
    ram, known = budget.available_ram()
    assert known and 2**28 < ram < 2**50


@pytest.mark.parametrize("text, size", [("24GiB", 24 * 2**30), ("512MB", 512 * 10**6), ("80G", 80 * 2**30),
                                        ("1e9", 10**9), (" 2 gib ", 2 * 2**30), ("1.5TiB", int(1.5 * 2**40))])
def test_memory_sizes(text, size):
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "abc", "12 parsecs", "-1GiB", "nan", "inf", "1e400", "10", "0GiB", "2EiB"])
def test_bad_memory_sizes_are_refused_in_one_line(text):
    with pytest.raises(ExpressivityError, match="--memory-budget") as exc:
        parse_memory_size(text)
    assert "\n" not in str(exc.value)


def test_a_run_over_its_budget_is_refused_before_anything_is_built(monkeypatch):
    from expressivity.training import ensemble, trainer

    def built(*args, **kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(trainer, "Model", built)
    monkeypatch.setattr(ensemble, "Model", built)
    config = RunConfig.for_task("reverse", {"length": 8}, steps=2)
    with pytest.raises(BudgetError, match=r"above the budget of .* GiB \(--memory-budget\); use a shorter length"):
        run(config, memory_budget="1MiB")
    with pytest.raises(BudgetError, match="2 members"):
        run_ensemble([config, config.with_changes(seed=1)], memory_budget=2**20)
    long = RunConfig.for_task("reverse", {"length": 4}, steps=2, eval_lengths=(100_000,))
    with pytest.raises(BudgetError, match=r"use shorter evaluation lengths \(--eval-lengths: the longest, 100,000, .*--eval-lengths [0-9,]+ fits"):
        run(long, memory_budget="4GiB")   # the training length (4) was named as the thing to shorten


@pytest.mark.parametrize("task, args", [("reverse", {"length": 6, "vocab": 8}), ("kernel-memory", {"length": 16}),
                                        ("parity", {"length": 8})])
def test_a_chunked_held_out_pass_equals_the_whole_one(task, args):
    from expressivity.training.trainer import SingleStepper, eval_batch

    config = RunConfig.for_task(task, args, steps=3, eval_size=48)
    t = config.build_task()
    whole = SingleStepper(config, t, None, "cpu")
    chunked = SingleStepper(config, t, None, "cpu", chunks={t.seq_len: 10})   # 5 chunks, the last of 8
    batch = eval_batch(t, 48)
    (lw, mw), = whole.evaluate(batch)
    (lc, mc), = chunked.evaluate(batch)
    assert lc == pytest.approx(lw, rel=1e-6) and mc == pytest.approx(mw, rel=1e-6, abs=1e-9)


def test_a_chunked_ensemble_pass_equals_the_whole_one():
    from expressivity.training.ensemble import EnsembleStepper
    from expressivity.training.trainer import eval_batch

    base = RunConfig.for_task("fixed-memory", {"length": 16, "lags": "2,5"}, steps=3, eval_size=40)
    configs = [base.with_changes(seed=s) for s in range(3)]
    t = base.build_task()
    batch = eval_batch(t, 40)
    whole = EnsembleStepper(configs, t, None, "cpu").evaluate(batch)
    chunked = EnsembleStepper(configs, t, None, "cpu", chunks={t.seq_len: 16}).evaluate(batch)
    for (lw, mw), (lc, mc) in zip(whole, chunked):
        assert lc == pytest.approx(lw, rel=1e-6) and mc == pytest.approx(mw, rel=1e-6)


def test_a_run_whose_held_out_pass_is_chunked_trains_and_records_it(monkeypatch):
    monkeypatch.setattr(budget, "EVAL_FLOOR", 1)   # every held-out pass above one training step: chunked
    config = RunConfig.for_task("reverse", {"length": 8}, steps=4, eval_every=2, eval_size=512, batch_size=4)
    task = config.build_task()
    assert estimate_run(config, task).chunks[8] < 512
    result = run(config)
    assert result.status == "done" and 0 <= result.lengths[8]["val_metric"] <= 1
    assert torch.isfinite(torch.tensor(result.lengths[8]["test_loss"]))


def test_a_control_groups_memory_limit_caps_the_cpu_budget(tmp_path, monkeypatch):
    """An audit: the CPU budget read only the host's MemAvailable, so in a memory-limited container it admitted runs
    the kernel then kills. The group's limit less its use caps it; "max" (v2) or a huge v1 limit is no limit."""
    from expressivity.training import budget

    limit, used, stat = tmp_path / "memory.max", tmp_path / "memory.current", tmp_path / "memory.stat"
    files = ((str(limit), str(used), str(stat), "inactive_file"),)
    limit.write_text("1073741824\n")
    used.write_text("536870912\n")
    stat.write_text("anon 200000000\nfile 300000000\ninactive_file 268435456\nactive_file 1\n")
    assert budget.cgroup_memory_left(files) == 768 * 2**20   # the inactive page cache is not counted as used
    stat.write_text("anon 1\n")
    assert budget.cgroup_memory_left(files) == 512 * 2**20
    stat.write_text("inactive_file 268435456\n")
    monkeypatch.setattr(budget, "_CGROUP_FILES", files)
    ram, known = budget.available_ram()
    assert known and ram == 768 * 2**20   # far below this machine's MemAvailable
    assert budget.memory_budget(None, "cpu").bytes == int(768 * 2**20 * budget.CPU_SHARE)
    limit.write_text("max\n")
    assert budget.cgroup_memory_left(files) is None and budget.available_ram()[0] > 768 * 2**20
    limit.write_text(f"{2**63 - 4096}\n")
    assert budget.cgroup_memory_left(files) is None
    assert budget.cgroup_memory_left(((str(tmp_path / "none"), str(used), str(stat), "inactive_file"),)) is None


def test_a_refusal_never_shows_the_estimate_equal_to_the_budget_it_is_above():
    """A fuzz pass (2026-11-28) read "needs about 0.00283 GiB ... above the budget of 0.00283 GiB"."""
    from expressivity.errors import BudgetError
    from expressivity.training import RunConfig
    from expressivity.training.budget import Budget, check_run_budget, estimate_run

    config = RunConfig.for_task("reverse", steps=2)
    task = config.build_task()
    peak = estimate_run(config, task, 1).peak
    with pytest.raises(BudgetError) as info:
        check_run_budget(config, task, 1, Budget(peak - 1, "a test"))
    text = str(info.value)
    shown = [float(t) for t in re.findall(r"about ([0-9.e-]+) GiB|budget of ([0-9.e-]+) GiB", text) for t in t if t]
    assert len(shown) == 2 and shown[0] > shown[1], text


def test_reading_the_control_groups_memory_leaves_no_file_open(tmp_path):
    """Every `sweep run` printed two "unclosed file .../memory.limit_in_bytes" warnings (an audit, 2026-11-28)."""
    import gc
    import warnings

    from expressivity.training import budget

    limit, used, stat = tmp_path / "memory.limit_in_bytes", tmp_path / "memory.usage_in_bytes", tmp_path / "memory.stat"
    limit.write_text("1073741824\n")
    used.write_text("536870912\n")
    stat.write_text("total_inactive_file 0\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert budget.cgroup_memory_left(((str(limit), str(used), str(stat), "total_inactive_file"),)) == 512 * 2**20
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


def test_what_a_task_allocates_while_drawing_is_in_the_estimate():
    # A fresh audit (2026-11-29): associative-recall sorts one float32 row of all its keys per sequence to draw
    # distinct keys (keys=300,000: a 2.9 GiB peak, 0.46 GiB estimated, and a 600 MiB budget let it through), and
    # kernel-memory builds its (n, n) float64 kernel through temporaries of that size (4.4 GiB at 12,000 tokens,
    # 2.1 GiB estimated).
    from expressivity.cli.train import build_configs
    from expressivity.training.budget import Budget, BudgetError, check_run_budget, data_bytes, estimate_run

    config = build_configs("associative-recall", {"keys": 300_000}, {}, {"steps": 1}, [0])[0]
    task = config.task.build()
    eval_size, batch = config.train.eval_size, config.train.batch_size
    drawing = eval_size * 300_000 * 16   # the held-out draw, the larger: float32 values, sorted, int64 indices
    assert task.drawing_bytes(task.seq_len, eval_size) == drawing
    plain = data_bytes(task, task.seq_len, eval_size) + data_bytes(task, task.seq_len, batch)
    assert estimate_run(config, task).data == plain + drawing
    with pytest.raises(BudgetError, match="batches 2.29"):
        check_run_budget(config, task, 1, Budget(600 * 2**20, "--memory-budget"))
    config = build_configs("kernel-memory", {"length": 6000}, {}, {"steps": 1}, [0])[0]
    task = config.task.build()
    assert task.drawing_bytes(6000, 1) == task.drawing_bytes(6000, 512) == 32 * 6000**2   # one kernel, any batch
    for members in (1, 3):   # one kernel for a whole pack too: built once (32 bytes an entry), kept (8)
        plain = data_bytes(task, 6000, config.train.eval_size) + members * data_bytes(task, 6000, config.train.batch_size)
        assert estimate_run(config, task, members=members).data == plain + 40 * 6000**2
    # a kernel kept for every length evaluated (a review, 2026-11-29: the estimate took the largest alone)
    config = build_configs("kernel-memory", {"length": 6000}, {}, {"steps": 1}, [0], (5000, 4000))[0]
    task = config.task.build()
    plain = data_bytes(task, 6000, config.train.eval_size) + data_bytes(task, 6000, config.train.batch_size)
    assert estimate_run(config, task).data == plain + 32 * 6000**2 + 8 * (6000**2 + 5000**2 + 4000**2)


def test_an_evaluation_length_refused_for_memory_names_the_longest_that_fits():
    """A fresh audit (2026-11-29): the refusal of --eval-lengths 356394 said "up to 356,394 now", the refused
    length read as a limit; it names a long evaluation length that fits the budget."""
    from dataclasses import replace

    from expressivity.errors import BudgetError
    from expressivity.training import RunConfig
    from expressivity.training.budget import Budget, check_run_budget, estimate_run

    config = RunConfig.for_task("reverse", {"length": 4}, steps=2, eval_lengths=(100_000,))
    task = config.build_task()
    budget = Budget(4 * 2**30, "a test")
    assert estimate_run(config, task, 1).chunks[100_000] == 1   # one sequence at a time: memory grows with length
    with pytest.raises(BudgetError) as info:
        check_run_budget(config, task, 1, budget)
    fits = int(re.search(r"--eval-lengths ([0-9,]+) fits", str(info.value)).group(1).replace(",", ""))
    assert "the longest, 100,000," in str(info.value) and 4 < fits < 100_000
    check_run_budget(replace(config, eval_lengths=(fits,)), task, 1, budget)   # it fits
    with pytest.raises(BudgetError):   # twice that does not (the estimate is not monotone length by length)
        check_run_budget(replace(config, eval_lengths=(2 * fits,)), task, 1, budget)
