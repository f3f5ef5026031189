"""What bench_ensemble.py and bench_train_ensemble.py share: the most an ensemble could gain here
(the arithmetic bound), and how a ratio's 95% interval is read against a goal (:func:`verdict`).

An ensemble of K runs does K times the matrix products of one run; however it is batched, its
training cannot take less than ``flops / peak``, where ``flops`` counts the matrix products
(:func:`expressivity.nn.model.flops_per_token`: forward x 3 for a training step, forward alone
for the held-out evaluations; softmax, norms and element-wise work are left out, so this
undercounts) and ``peak`` is the best this machine does on one large float32 matrix product
with the same threads. A whole ``train`` process also cannot take less than importing torch.
So ``sequential / (floor + flops / peak)`` bounds the ratio any ensemble could reach against the
measured sequential time: when it is below a goal, the goal is out of reach on this machine at
that size and step count, whatever the implementation.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import time


def training_flops(config, members: int) -> float:
    """Matrix-product FLOPs of ``members`` runs of ``config`` (a RunConfig): every training step,
    every periodic held-out evaluation and the final evaluations at each length (val and test)."""
    from expressivity.nn.model import flops_per_token

    task, tc = config.build_task(), config.train
    n = task.seq_len
    per_token = flops_per_token(config.model, n)
    train = 3 * per_token * tc.batch_size * n * tc.steps
    evals = math.ceil(tc.steps / tc.eval_every)
    held_out = per_token * tc.eval_size * n * evals
    for length in dict.fromkeys((task.length, *config.eval_lengths)):
        m = task.sequence_length(length)
        held_out += 2 * flops_per_token(config.model, m) * tc.eval_size * m
    return members * (train + held_out)


def matmul_peak(threads: int, size: int = 1536, rounds: int = 5) -> float:
    """FLOP/s of the best of ``rounds`` float32 ``size^3`` matrix products on ``threads`` threads."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        best = math.inf
        for _ in range(rounds):
            t0 = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t0)
    finally:
        torch.set_num_threads(before)
    return 2 * size**3 / best


def import_floor(rounds: int = 3) -> float:
    """Median seconds of a fresh interpreter that imports torch and nothing else."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, env=os.environ)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ratio_interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of positive ``ratios`` with a 95% t interval on log10 (each ratio one
    independent draw); one ratio has no interval (infinite bounds)."""
    from expressivity.statistics import log10_t_interval

    return log10_t_interval(ratios) if len(ratios) >= 2 else (ratios[0], -math.inf, math.inf)


def interval_text(value: float, low: float, high: float, units: str) -> str:
    """``value [low, high]`` to two decimals, or ``value (one <unit>: no interval)``."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.2f} (one {units}: no interval)"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def verdict(value: float, low: float, high: float, goal: float) -> str:
    """``MET`` when the whole interval clears ``goal``, ``NOT MET`` when it wholly misses it,
    ``UNDECIDED`` otherwise (with the side the estimate falls on)."""
    if low >= goal:
        return "MET"
    if high < goal:
        return "NOT MET"
    return f"UNDECIDED (estimate {'above' if value >= goal else 'below'} the goal)"
