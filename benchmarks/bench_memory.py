"""The memory guard's estimate (``training/budget.py``) against the measured peak of the same
pack: a few training steps and one held-out pass at the run's length, in a fresh process.

Measured on the CPU as the process's peak resident memory (``VmHWM``, reset after the imports and
the task's data are loaded) above its size at that moment; on CUDA as
``torch.cuda.max_memory_allocated`` (tensors only; the CUDA context is not in the estimate).
Printed per size: the estimate, the measurement, their ratio and the verdict against the goal
(issue 29: within 2x of the measured peak on every size tried; the fixed guard it replaced
estimated 195 GiB against about 27 GiB measured for 15 members of wang-e-dp's L = 8 model).

    python benchmarks/bench_memory.py [--device cpu|cuda] [--sizes claim7,dp-quick,lm-full-2,lm-full-8] [--json]

Measured on the 2-core CPU machine (2026-11-27, numbers in the README/docs): see the output.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

GOAL = 2.0

# name -> (task, task args, model settings, train settings, members)
SIZES = {
    # claim 7's widest scan cell: 2 attention layers of 2 heads, d 16, one-hot pointers, T = 64
    "claim7": ("nested-memory", {"length": 128, "max_lag": 64, "depth": 1},
               {"layers": 2, "heads": 2, "d_model": 16, "ffn_width": 32, "rpe": "free", "ape": "none"},
               {"batch_size": 32, "eval_size": 256}, 20),
    # wang-e-dp quick's L = 4 model with the dot product, a pack of 10
    "dp-quick": ("lm-causal", {"length": 64},
                 {"mixer": "attention", "layers": 4, "heads": 4, "d_model": 64, "ffn_width": 256, "rpe": "t5"},
                 {"batch_size": 16, "eval_size": 256}, 10),
    # wang-e-dp full's L = 2 DP-free model, two members (held-out pass in chunks)
    "lm-full-2": ("lm-causal", {"length": 256},
                  {"mixer": "dpfree", "layers": 2, "heads": 4, "d_model": 128, "ffn_width": 512, "rpe": "t5"},
                  {"batch_size": 64, "eval_size": 1024}, 2),
    # wang-e-dp full's L = 8 model with the dot product, one member (the 1.8 GiB a member)
    "lm-full-8": ("lm-causal", {"length": 256},
                  {"mixer": "attention", "layers": 8, "heads": 4, "d_model": 128, "ffn_width": 512, "rpe": "t5"},
                  {"batch_size": 64, "eval_size": 1024}, 1),
}


def measure(name: str, device: str) -> dict:
    """Run one size in a child process (this file with ``--child``) and read its report."""
    import expressivity

    src = Path(expressivity.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, __file__, "--child", name, "--device", device], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the measuring process failed: {proc.stderr[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise SystemExit(f"/proc/self/status has no {field}")


def child(name: str, device: str) -> dict:
    """Train ``SIZES[name]`` for three steps and evaluate once; the estimate and the measured peak."""
    import gc

    import torch

    from expressivity.training import RunConfig
    from expressivity.training.budget import estimate_run
    from expressivity.training.ensemble import EnsembleStepper
    from expressivity.training.memory import keep_freed_memory
    from expressivity.training.trainer import SingleStepper, eval_batch

    torch.set_num_threads(2)
    task_name, args, model, train, members = SIZES[name]
    base = RunConfig.for_task(task_name, args, model=model, train={**train, "steps": 10})
    configs = [base.with_changes(seed=s) for s in range(members)]
    task = base.build_task()
    estimate = estimate_run(base, task, members, device)
    keep_freed_memory()
    gc.collect()
    if device == "cuda":
        torch.cuda.init()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
    else:
        with open("/proc/self/clear_refs", "w") as f:   # reset VmHWM (the peak) to the current size
            f.write("5")
        start = _rss("VmRSS")
    stepper = (SingleStepper(base, task, None, device, estimate.chunks) if members == 1
               else EnsembleStepper(configs, task, None, device, chunks=estimate.chunks))
    alive = None if stepper.defers_sync else [True] * members
    for step in range(3):
        stepper.update(step, stepper.losses(step), alive)
    stepper.evaluate(eval_batch(task, base.train.eval_size, device=device))
    peak = torch.cuda.max_memory_allocated() - start if device == "cuda" else _rss("VmHWM") - start
    return {"size": name, "members": members, "estimate": estimate.peak, "measured": peak,
            "ratio": estimate.peak / peak, "chunks": {str(k): v for k, v in estimate.chunks.items()},
            "parts": {"parameters": estimate.parameters, "training": estimate.training,
                      "evaluation": estimate.evaluation, "data": estimate.data}}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--sizes", default=",".join(SIZES))
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.device)))
        return []
    names = [s for s in a.sizes.split(",") if s]
    unknown = [s for s in names if s not in SIZES]
    if unknown:
        raise SystemExit(f"unknown sizes {unknown}; use {', '.join(SIZES)}")
    rows = [measure(name, a.device) for name in names]
    met = all(1 / GOAL <= r["ratio"] <= GOAL for r in rows)
    if a.json:
        print(json.dumps({"benchmark": "memory_estimate", "device": a.device, "rows": rows,
                          "goal": f"estimate within {GOAL:g}x of the measured peak", "met": met}))
    else:
        what = "peak RSS above the start" if a.device == "cpu" else "max_memory_allocated"
        print(f"{'size':<10} {'members':>7} {'estimate GiB':>13} {'measured GiB':>13} {'ratio':>6}   ({what})")
        for r in rows:
            print(f"{r['size']:<10} {r['members']:>7} {r['estimate'] / 2**30:>13.3f} {r['measured'] / 2**30:>13.3f} "
                  f"{r['ratio']:>6.2f}")
        print(f"goal: every ratio within {GOAL:g}x   {'MET' if met else 'NOT MET'}")
    return rows


if __name__ == "__main__":
    main()
