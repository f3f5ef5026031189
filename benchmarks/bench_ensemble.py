"""Ensemble throughput: K models of one architecture trained at once (parameters stacked, forward
and loss vmapped, one AdamW on a (K, P) tensor) vs the same K models trained one after another
with the single-model trainer, in the same process, for the same steps, seeds and batches.

Printed ratio = sequential time / ensemble time (goal: >= 4x for K = 8 small models on a
2-core CPU). Each size is measured in interleaved rounds (sequential, ensemble, sequential, ...)
and the medians are compared, so a burst of machine load cannot favour one side.

For context it also times ONE model trained on a K-times larger batch: the same arithmetic
with no per-model bookkeeping, roughly the best any model batching could do on this machine.

Sizes: ``micro`` a 1-layer attention model d=16, H=2, FFN 32 on reverse (n=8, batch 16), where
per-step overhead rather than arithmetic dominates; ``tiny`` is the Wang & E claim-3 model (1-layer DP-free, FFN-free, d=8, kernel-memory
n=64); ``small`` a 1-layer attention model d=32, H=2, FFN 64 on reverse (n=8, batch 32);
``medium`` the reverse default (d=64, H=4, FFN 128, batch 64).

    python benchmarks/bench_ensemble.py [--json] [--k 8] [--steps 60] [--rounds 3] [--sizes tiny,small,medium]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SIZES = {
    "micro": ("reverse", {"d_model": 16, "heads": 2, "ffn_width": 32}, 16),
    "tiny": ("kernel-memory", {}, 32),
    "small": ("reverse", {"d_model": 32, "heads": 2, "ffn_width": 64}, 32),
    "medium": ("reverse", {}, 64),
}


def measure(size: str, k: int, steps: int, rounds: int) -> dict:
    from expressivity.tasks import make_task
    from expressivity.training import TrainConfig, model_config_for, train, train_ensemble

    task_name, overrides, batch = SIZES[size]
    task = make_task(task_name)
    mc = model_config_for(task, **overrides)
    cfgs = [TrainConfig(steps=steps, batch_size=batch, seed=s, eval_every=steps, eval_size=256) for s in range(k)]
    warm = [TrainConfig(**{**c.to_dict(), "steps": 3}) for c in cfgs]
    train_ensemble(task, mc, warm)
    train(task, mc, warm[0])
    big = TrainConfig(**{**cfgs[0].to_dict(), "batch_size": k * batch})
    seq, ens, bound = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for c in cfgs:
            r = train(task, mc, c)
        seq.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        train_ensemble(task, mc, cfgs)
        ens.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        train(task, mc, big)
        bound.append(time.perf_counter() - t0)
    s, e, b = statistics.median(seq), statistics.median(ens), statistics.median(bound)
    return {"size": size, "task": task_name, "params_per_model": r.params, "batch_size": batch, "sequential_s": s,
            "ensemble_s": e, "ratio": s / e, "met": s / e >= 4.0,
            "one_model_k_batch_s": b, "ratio_bound": s / b}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", default="micro,tiny,small,medium")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    rows = [measure(s, a.k, a.steps, a.rounds) for s in a.sizes.split(",")]
    res = {"benchmark": "ensemble_vs_sequential", "k": a.k, "steps": a.steps, "threads": a.threads, "goal": ">= 4.0", "sizes": rows}
    if a.json:
        print(json.dumps(res))
        return res
    print(f"K={a.k} models x {a.steps} steps, {a.threads} threads; median of {a.rounds} interleaved rounds")
    for r in rows:
        print(f"  {r['size']:<7} ({r['params_per_model']:>6} params, {r['task']}, batch {r['batch_size']}): "
              f"one after another {r['sequential_s']:.2f} s, ensemble {r['ensemble_s']:.2f} s, "
              f"ratio = {r['ratio']:.2f}   goal >= 4.0   {'MET' if r['met'] else 'NOT MET'}"
              f"   (context: one model on a {a.k}x batch: ratio {r['ratio_bound']:.2f})")
    return res


if __name__ == "__main__":
    main()
