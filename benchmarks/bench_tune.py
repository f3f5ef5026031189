"""The 48-run sweep through the engine vs Ray Tune running the same runs, on one local Ray.

Same Ray instance (2 CPUs, no dashboard), same 48 runs (``benchmarks/sweep_common.py``), each
trained by :func:`expressivity.training.run` with 1 PyTorch thread inside a Tune trial (a grid
search over the configurations, 1 CPU per trial, actors reused between trials as the engine reuses its
workers, results in a temporary folder). The engine runs
them as ``expressivity sweep run --backend ray`` does (one Ray task per pack of runs that differ
only in seed or lr), and, for context, on its local process pool. Timed in one process: engine,
Tune, engine (the median of the two engine rounds is used, so warm Ray workers favour no side).

Printed ratio = Tune / engine on Ray (goal: >= 3). Needs the ``[bench]`` extra (ray[tune]).

    python benchmarks/bench_tune.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOAL = 3.0


def tune_trial(params):
    import torch
    from ray import tune

    from expressivity.training import RunConfig, run

    torch.set_num_threads(1)
    result = run(RunConfig.from_dict(params["config"]))
    row = result.lengths[result.config.task.args["length"]]
    tune.report({"val_loss": row["val_loss"], "test_metric": row["test_metric"], "status": result.status})


def run_tune(configs, storage: Path) -> tuple[float, int]:
    from ray import tune

    tuner = tune.Tuner(
        tune.with_resources(tune_trial, {"cpu": 1}),
        param_space={"config": tune.grid_search([c.to_dict() for c in configs])},
        # actors reused, as the engine reuses its workers: with Ray's default (a fresh actor per trial, each
        # importing torch) this baseline timed process start-up, 19-25x; reused, 2.2x (a fresh audit, 2026-11-28)
        tune_config=tune.TuneConfig(metric="val_loss", mode="min", reuse_actors=True),
        run_config=tune.RunConfig(name="bench48", storage_path=str(storage), verbose=0))
    t0 = time.perf_counter()
    grid = tuner.fit()
    seconds = time.perf_counter() - t0
    ok = sum(1 for r in grid if r.error is None and r.metrics.get("status") in ("done", "target-reached"))
    return seconds, ok


def run_engine(sweep, out: Path, backend: str) -> tuple[float, int]:
    from expressivity.experiments import run_sweep

    t0 = time.perf_counter()
    report = run_sweep(sweep, out, backend=backend, workers=2, threads=1)
    return time.perf_counter() - t0, report.done


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import sweep_common
    from sweep_common import configs

    try:
        import ray
        from ray import tune  # noqa: F401
    except ModuleNotFoundError:
        raise SystemExit("bench_tune needs Ray Tune: pip install 'expressivity[bench]'") from None
    from expressivity.experiments import Sweep

    cfgs = configs()
    sweep = Sweep(tuple(cfgs), sweep_common.SELECT, sweep_common.NAME)
    os.environ.pop("RAY_ADDRESS", None)
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="error")
    init_s = time.perf_counter() - t0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            e1, n1 = run_engine(sweep, tmp / "engine1", "ray")
            t, nt = run_tune(cfgs, tmp / "tune")
            e2, n2 = run_engine(sweep, tmp / "engine2", "ray")
            loc, nl = run_engine(sweep, tmp / "local", "local")
    finally:
        ray.shutdown()
    engine = statistics.median([e1, e2])
    res = {"benchmark": "sweep_vs_ray_tune", "runs": len(cfgs), "ray_init_s": init_s, "tune_s": t, "tune_ok": nt,
           "engine_ray_s": engine, "engine_ray_rounds_s": [e1, e2], "engine_local_s": loc, "ratio": t / engine,
           "ratio_local": t / loc, "goal": f">= {GOAL}", "met": t / engine >= GOAL, "engine_done": [n1, n2, nl]}
    if a.json:
        print(json.dumps(res))
        return res
    print(f"{len(cfgs)} runs on a local Ray with 2 CPUs (init {init_s:.1f} s, not counted): Ray Tune {t:.1f} s "
          f"({nt} trials ok); engine on Ray {engine:.1f} s (rounds {e1:.1f}, {e2:.1f} s); engine on its local pool "
          f"{loc:.1f} s")
    print(f"ratio = {res['ratio']:.1f}   goal >= {GOAL}   {'MET' if res['met'] else 'NOT MET'}"
          f"   (Tune / engine local pool: {res['ratio_local']:.1f})")
    return res


if __name__ == "__main__":
    main()
