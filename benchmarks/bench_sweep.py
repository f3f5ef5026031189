"""A 48-run sweep through the engine vs the same runs as separate ``expressivity train`` processes.

The sweep (``benchmarks/sweep_common.py``): 48 tiny runs, learning rate selected on validation.
Baseline: what a shell loop does, one ``expressivity train ... --json`` process per run, one
after another, with ``--threads 1`` (fairest to it: on a loaded 2-core machine train's default
of 2 threads is many times slower; that default is timed too, on a sample of processes, for
context). Engine: one
``expressivity sweep run`` process (local backend: a worker per core, 1 thread each, runs packed
into ensembles). Both are timed as whole processes, start-up included, in this one script; the
engine is timed before and after the baseline and the median is used. The run ids printed by
``train --json`` are checked to equal the sweep's, so both sides train the same runs.

Printed ratio = baseline / engine (goal: >= 5); and against a second baseline, one
``train --seeds 0,...,5`` process per configuration (8 processes: the CLI's own multi-seed mode,
start-up paid 8 times), printed beside it.

    python benchmarks/bench_sweep.py [--json] [--baseline-runs 48]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL = 5.0


def _env() -> dict:
    """Child processes import the same ``expressivity`` as this one."""
    import expressivity

    src = Path(expressivity.__file__).resolve().parents[1]
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def engine_once(tmp: Path, tag: str) -> tuple[float, dict]:
    out = tmp / f"engine-{tag}"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "sweep", "run", str(HERE / "sweep_common.py"),
                           "--out", str(out), "--json"], env=_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the engine failed: {proc.stderr[-2000:]}")
    return seconds, json.loads(proc.stdout)


def baseline(configs, runs: int, threads: list[str]) -> tuple[float, int]:
    sys.path.insert(0, str(HERE))
    from sweep_common import train_args

    t0 = time.perf_counter()
    for c in configs[:runs]:
        proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "train", *train_args(c), *threads, "--json"],
                              env=_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"train failed: {proc.stderr[-2000:]}")
        got = json.loads(proc.stdout)["runs"][0]["id"]
        if got != c.id():
            raise SystemExit(f"train ran {got}, the sweep has {c.id()}: the two sides differ")
    return time.perf_counter() - t0, runs


def per_configuration(configs) -> float:
    """Seconds of the CLI's own way to run the grid without the engine: one ``expressivity train
    --seeds 0,...,5 --threads 1`` process per (heads, lr), its seeds one after another in one process
    (start-up paid 8 times, not 48; a fresh audit, 2026-11-28, found the 48-process baseline mostly
    measures Python start-up)."""
    sys.path.insert(0, str(HERE))
    from sweep_common import SEEDS, train_args

    t0 = time.perf_counter()
    firsts = [c for c in configs if c.seed == SEEDS[0]]
    for c in firsts:
        args = train_args(c)
        args[args.index("--seeds") + 1] = ",".join(map(str, SEEDS))
        proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "train", *args, "--threads", "1", "--json"],
                              env=_env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"train failed: {proc.stderr[-2000:]}")
        got = {r["id"] for r in json.loads(proc.stdout)["runs"]}
        want = {x.id() for x in configs if x.model == c.model and x.train == c.train}
        if got != want:
            raise SystemExit("train --seeds ran other runs than the sweep's: the two sides differ")
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline-runs", type=int, default=48, help="time this many train processes (scaled to 48)")
    p.add_argument("--default-threads-runs", type=int, default=4,
                   help="time this many train processes with train's default threads, for context (0: skip)")
    p.add_argument("--per-configuration", action=argparse.BooleanOptionalAction, default=True,
                   help="also time one 'train --seeds' process per configuration (8), the second baseline")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from sweep_common import configs

    cfgs = configs()
    with tempfile.TemporaryDirectory() as tmp:
        e1, summary = engine_once(Path(tmp), "1")
        b, n = baseline(cfgs, max(1, min(a.baseline_runs, len(cfgs))), ["--threads", "1"])
        d, nd = baseline(cfgs, min(a.default_threads_runs, len(cfgs)), []) if a.default_threads_runs > 0 else (0, 0)
        per = per_configuration(cfgs) if a.per_configuration else None
        e2, _ = engine_once(Path(tmp), "2")
    base_48 = b * len(cfgs) / n
    default_48 = d * len(cfgs) / nd if nd else None
    engine = statistics.median([e1, e2])
    res = {"benchmark": "sweep_vs_train_processes", "runs": len(cfgs), "engine_s": engine, "engine_rounds_s": [e1, e2],
           "baseline_s": base_48, "baseline_measured_runs": n, "ratio": base_48 / engine, "goal": f">= {GOAL}",
           "met": base_48 / engine >= GOAL, "packs": summary["packs"], "workers": summary["workers"],
           "threads": summary["threads"], "cores": os.cpu_count(), "baseline_default_threads_s": default_48,
           "ratio_default_threads": default_48 / engine if nd else None, "default_threads_measured_runs": nd,
           "per_configuration_s": per, "ratio_per_configuration": per / engine if per else None,
           "met_per_configuration": per / engine >= GOAL if per else None}
    if a.json:
        print(json.dumps(res))
        return res
    scaled = "" if n == len(cfgs) else f" ({n} measured, scaled to {len(cfgs)})"
    print(f"{len(cfgs)} runs: separate 'expressivity train --threads 1' processes {base_48:.1f} s{scaled}; "
          f"'expressivity sweep run' {engine:.1f} s ({summary['packs']} packs on {summary['workers']} workers x "
          f"{summary['threads']} threads; rounds {e1:.1f}, {e2:.1f} s)")
    print(f"ratio = {res['ratio']:.1f}   goal >= {GOAL}   {'MET' if res['met'] else 'NOT MET'}")
    if per:
        print(f"against one 'train --seeds 0,...,5 --threads 1' process per configuration (8): {per:.1f} s, ratio "
              f"{res['ratio_per_configuration']:.1f}   goal >= {GOAL}   {'MET' if res['met_per_configuration'] else 'NOT MET'}")
    if nd:
        print(f"  (context: with train's default threads {default_48:.1f} s for 48 ({nd} measured, scaled): "
              f"ratio {res['ratio_default_threads']:.1f})")
    return res


if __name__ == "__main__":
    main()
