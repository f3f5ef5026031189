"""``expressivity train --seeds 0,...,7 --ensemble`` vs the same eight runs one after another.

Both sides are whole ``expressivity train ... --json`` processes (start-up included) on the same
task, model, steps and seeds; the sequential side is one process with ``--seeds`` and no
``--ensemble`` (the runs one after another, as ``execute`` trains them), so both sides pay one
start-up. Rounds are interleaved (sequential, ensemble, ...), so a burst of machine load cannot
favour one side. The run ids printed by both sides are checked to be equal.

Printed ratio = sequential time / ensemble time (goal, issue 17: >= 4): the geometric mean of the
rounds' paired ratios with a 95% t interval on log10 over rounds (every round is two fresh
processes, so rounds are independent draws; on this shared machine they differ widely: 3.10 to
4.26 on claim 4's cell and 1.34 to 2.15 at the reverse default, 5 rounds each on 2026-11-26).
The goal is ``MET`` when the whole interval clears it, ``NOT MET`` when it wholly misses it,
``UNDECIDED`` otherwise. Beside it the ceiling (``benchmarks/ensemble_ceiling.py``): the sequential time over the least an ensemble
process could take here, importing torch plus the ensemble's matrix products at this machine's
best matrix-product speed. Where the ceiling is below the goal, no ensemble reaches it at this
size and step count on this machine. Each side's training-loop seconds (what ``train --json``
reports per run) are printed too, so start-up and bookkeeping can be told from training.

``--model "OPTIONS"`` passes model, task and training options to both sides, e.g. the small
models of the claims' sweeps: ``--task fixed-memory --steps 1500 --model "--task-arg length=16
--task-arg lags=2,5 --task-arg readout=sin-product-diff --mixer dpfree --rpe free --heads 8
--d-model 16 --ffn-width 32 --batch-size 32 --eval-every 150"`` (claim 4's widest cell).

    python benchmarks/bench_train_ensemble.py [--json] [--k 8] [--task reverse] [--steps 200] [--rounds 5] [--threads N] [--model "OPTIONS"]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ensemble_ceiling import import_floor, interval_text, matmul_peak, ratio_interval, training_flops, verdict

GOAL = 4.0


def _env() -> dict:
    """Child processes import the same ``expressivity`` as this one."""
    import expressivity

    src = Path(expressivity.__file__).resolve().parents[1]
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def train(args: list[str]) -> tuple[float, dict]:
    """Wall seconds of one ``train ... --json`` process and what it printed."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "train", *args, "--json"], env=_env(),
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"train failed: {proc.stderr[-2000:]}")
    return seconds, json.loads(proc.stdout)


def loop_seconds(out: dict) -> float:
    """Training-loop seconds of a ``train --json`` answer (an ensemble's runs share one loop)."""
    runs = out["runs"]
    return runs[0]["seconds"] if out["run"]["ensemble"] else sum(r["seconds"] for r in runs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--task", default="reverse")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, help="train --threads (default: train's own default)")
    p.add_argument("--model", default="", help='train options for the model, e.g. "--d-model 16 --heads 2"')
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if min(a.k, a.steps, a.rounds) < 1 or (a.threads is not None and a.threads < 1):
        p.error("--k, --steps, --rounds and --threads must be at least 1")
    common = ["--task", a.task, "--steps", str(a.steps), "--seeds", ",".join(map(str, range(a.k))), *a.model.split()]
    if a.threads:
        common += ["--threads", str(a.threads)]
    seq, ens, seq_loop, ens_loop, floor = [], [], [], [], []
    for _ in range(a.rounds):
        s, seq_out = train(common)
        e, ens_out = train([*common, "--ensemble"])
        if [r["id"] for r in seq_out["runs"]] != [r["id"] for r in ens_out["runs"]]:
            raise SystemExit("the two sides trained different runs")
        seq.append(s)
        ens.append(e)
        seq_loop.append(loop_seconds(seq_out))
        ens_loop.append(loop_seconds(ens_out))
        floor.append(import_floor(rounds=1))
    s, e = statistics.median(seq), statistics.median(ens)
    ratios = [one / ensemble for one, ensemble in zip(seq, ens)]
    ratio, low, high = ratio_interval(ratios)
    import torch

    from expressivity.training import RunConfig

    threads = a.threads or max(1, min(2, os.cpu_count() or 1))
    flops = training_flops(RunConfig.from_dict(ens_out["run"]["config"]), a.k)
    peak, f = matmul_peak(threads), statistics.median(floor)
    ceiling = s / (f + flops / peak)
    res = {"benchmark": "train_ensemble_vs_sequential", "k": a.k, "task": a.task, "steps": a.steps, "model": a.model,
           "threads": threads, "torch": torch.__version__, "sequential_s": s, "ensemble_s": e,
           "sequential_loop_s": statistics.median(seq_loop), "ensemble_loop_s": statistics.median(ens_loop),
           "rounds_sequential_s": seq, "rounds_ensemble_s": ens, "rounds_ratio": ratios, "ratio": ratio,
           "ratio_ci95": [low, high], "goal": f">= {GOAL}", "verdict": verdict(ratio, low, high, GOAL),
           "import_torch_s": f, "ensemble_gflop": flops / 1e9, "matmul_peak_gflops": peak / 1e9,
           "ceiling": ceiling, "reachable": ceiling >= GOAL}
    if a.json:
        print(json.dumps(res))
        return res
    print(f"train --task {a.task} --steps {a.steps} --seeds 0..{a.k - 1} {a.model} ({threads} threads), medians of "
          f"{a.rounds} interleaved rounds: one after another {s:.1f} s (training loops {res['sequential_loop_s']:.1f} s), "
          f"--ensemble {e:.1f} s (training loop {res['ensemble_loop_s']:.1f} s)")
    print(f"ratio = {interval_text(ratio, low, high, 'round')} (geometric mean of the rounds' {', '.join(f'{r:.2f}' for r in ratios)})"
          f"   goal >= {GOAL}   {res['verdict']}")
    print(f"ceiling = {ceiling:.2f}: {s:.1f} s / ({f:.1f} s to import torch + {flops / 1e9:.1f} GFLOP of matrix products "
          f"at {peak / 1e9:.0f} GFLOP/s, this machine's best); "
          + ("the goal is within the arithmetic here" if ceiling >= GOAL else
             "no ensemble reaches the goal at this size and step count on this machine"))
    return res


if __name__ == "__main__":
    main()
