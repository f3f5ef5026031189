"""Ensemble throughput: K models of one architecture trained at once (native ensemble layers:
parameters with a leading K axis, batched matmuls, one AdamW on a (K, P) tensor) vs the same K
models trained one after another with the single-model trainer, in the same process, for the same
steps, seeds and batches.

Two ratios per size, each measured in interleaved rounds (sequential, then the ensemble and the
bound in turns: which of the two runs first alternates from round to round) and compared by
medians, so a burst of machine load cannot favour one side:

- ``packing`` = time of ONE model trained on a K-times larger batch, and evaluated on a K-times
  larger held-out batch, / ensemble time. The one big model does the same arithmetic (K members
  are evaluated on ``eval_size`` sequences each) with no per-model bookkeeping: the best any model
  batching can do here. Goal (issues 8 and 17): >= 0.9 at every size. (Until issue 17 the big
  model was evaluated on ``eval_size`` sequences only, 1/K of the ensemble's evaluation work.)
- ``speed-up`` = sequential time / ensemble time (issue 17's other goal: ``train --ensemble 8``
  >= 4x eight sequential runs), with its ceiling: the sequential time over the ensemble's matrix
  products at this machine's best matrix-product speed (``benchmarks/ensemble_ceiling.py``); where
  the ceiling is below 4, no ensemble reaches 4x at that size on this machine.

Sizes: ``micro`` a 1-layer attention model d=16, H=2, FFN 32 on reverse (n=8, batch 16), where
per-step overhead rather than arithmetic dominates; ``tiny`` is the Wang & E claim-3 model (1-layer DP-free, FFN-free, d=8, kernel-memory
n=64); ``small`` a 1-layer attention model d=32, H=2, FFN 64 on reverse (n=8, batch 32);
``medium`` the reverse default (d=64, H=4, FFN 128, batch 64).

    python benchmarks/bench_ensemble.py [--json] [--k 8] [--steps 60] [--rounds 5] [--threads 1] [--sizes tiny,small,medium]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from ensemble_ceiling import matmul_peak, training_flops

SIZES = {
    "micro": ("reverse", {"d_model": 16, "heads": 2, "ffn_width": 32}, 16),
    "tiny": ("kernel-memory", {}, 32),
    "small": ("reverse", {"d_model": 32, "heads": 2, "ffn_width": 64}, 32),
    "medium": ("reverse", {}, 64),
}


GOAL_PACKING, GOAL_SPEEDUP = 0.9, 4.0
EVAL_SIZE = 256


def measure(size: str, k: int, steps: int, rounds: int) -> dict:
    from expressivity.training import RunConfig, run, run_ensemble

    task_name, overrides, batch = SIZES[size]
    base = RunConfig.for_task(task_name, model=overrides, train={"steps": steps, "batch_size": batch,
                                                                 "eval_every": steps, "eval_size": EVAL_SIZE,
                                                                 "target_metric": None})
    cfgs = [base.with_changes(seed=s) for s in range(k)]
    warm = [c.with_changes(train={"steps": 3, "eval_every": 3}) for c in cfgs]
    run_ensemble(warm)
    run(warm[0])
    big = base.with_changes(train={"batch_size": k * batch, "eval_size": k * EVAL_SIZE})
    seq, ens, bound = [], [], []
    timed = {"ensemble": (lambda: run_ensemble(cfgs), ens), "one model": (lambda: run(big), bound)}
    for i in range(rounds):
        t0 = time.perf_counter()
        for c in cfgs:
            r = run(c)
        seq.append(time.perf_counter() - t0)
        # the ensemble and the one model take turns at running first after the sequential runs
        for name in (("ensemble", "one model") if i % 2 == 0 else ("one model", "ensemble")):
            job, times = timed[name]
            t0 = time.perf_counter()
            job()
            times.append(time.perf_counter() - t0)
    s, e, b = statistics.median(seq), statistics.median(ens), statistics.median(bound)
    ceiling = s / (training_flops(base, k) / matmul_peak(torch.get_num_threads()))
    return {"size": size, "task": task_name, "params_per_model": r.params, "batch_size": batch, "sequential_s": s,
            "ensemble_s": e, "one_model_k_batch_s": b, "packing": b / e, "packing_met": b / e >= GOAL_PACKING,
            "speedup": s / e, "speedup_met": s / e >= GOAL_SPEEDUP, "speedup_ceiling": ceiling}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sizes", default="micro,tiny,small,medium")
    # 1 thread: what each sweep worker uses; on a 2-core machine shared with other jobs, 2-thread
    # timings swing by factors of 5 between rounds (a contended thread pool stalls), 1-thread ones do not.
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    rows = [measure(s, a.k, a.steps, a.rounds) for s in a.sizes.split(",")]
    res = {"benchmark": "ensemble_packing", "k": a.k, "steps": a.steps, "threads": a.threads,
           "goal_packing": f">= {GOAL_PACKING}", "goal_speedup": f">= {GOAL_SPEEDUP}", "sizes": rows}
    if a.json:
        print(json.dumps(res))
        return res
    print(f"K={a.k} models x {a.steps} steps, {a.threads} threads; median of {a.rounds} interleaved rounds")
    for r in rows:
        print(f"  {r['size']:<7} ({r['params_per_model']:>6} params, {r['task']}, batch {r['batch_size']}): "
              f"ensemble {r['ensemble_s']:.2f} s, one model on a {a.k}x batch {r['one_model_k_batch_s']:.2f} s, "
              f"packing = {r['packing']:.2f}   goal >= {GOAL_PACKING}   {'MET' if r['packing_met'] else 'NOT MET'}"
              f"   (one after another {r['sequential_s']:.2f} s: speed-up {r['speedup']:.2f}, goal >= {GOAL_SPEEDUP}, "
              f"ceiling {r['speedup_ceiling']:.1f})")
    return res


if __name__ == "__main__":
    main()
