"""The GPU check anyone can run in one go (issue 29, item 4): on a machine with one GPU, in at most
about 9 minutes, it prints and writes to one folder (``gpu_check.json`` and ``gpu_check.md``):

* steps per second of claim 7's widest pack (T = 64, attention, 20 runs) and of wang-e-dp's L = 8
  pack (attention, every seed and learning rate: 20 runs at 4 rates x 5 seeds), eager and captured (``torch.compile``, CUDA graphs), in fp32, TF32
  and bf16 autocast, with the device sampler and host reads at the log cadence (goal: a tiny
  model's step >= 5x faster captured than eager);
* the ensemble against the same runs one after another on claim 4's widest cell (goal: 8 runs
  >= 8x faster as one ensemble);
* the memory guard's estimate against the measured peak (``torch.cuda.max_memory_allocated``) of
  those packs (goal: within 2x);
* runs per hour of the claim-7 and wang-e-dp full profiles against the same figures on this
  machine's CPU with 2 threads (the CI machines' 2 cores);
* TF32 and bf16 against fp32 on two claims' cells, paired over 5 seeds, against the seed-to-seed
  spread (``precision_agreement.py``).

The CPU half runs first, everywhere: the same packs on the CPU (eager fp32, the reference) and
the claim-4 comparison there. On a machine without a GPU the script says so in one line after
the CPU half and exits 0. ``--quick`` shrinks every size (the test of this script uses it).

Nine minutes are kept by construction, not hoped for: ``--budget-s`` (default 540) is the whole
script's wall time, and a part that would start after it is spent is recorded and printed as
skipped, never run past it (the CPU half times packs of at most four members, 20 s a way, since
its figures are rates a run). Compilation on a GPU was not measured here (no GPU was lent to the
sessions that wrote this): the order of the parts is the order of their worth.

    bash benchmarks/gpu_check.sh [--out gpu_check] [--quick] [--budget-s 540]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CPU_MEMBERS, CPU_SECONDS_A_WAY = 4, 20.0


def write_report(report: dict, out: Path) -> dict:
    """Write ``report`` as it stands to ``out/gpu_check.json`` (after every part, so a check cut
    off by its caller leaves what it measured)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


class Clock:
    """The script's time budget: ``left()`` seconds until ``budget`` wall seconds from its start."""

    def __init__(self, budget: float):
        self.start, self.budget = time.perf_counter(), budget

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def skipped(self) -> dict:
        return {"skipped": f"the {self.budget:g} s budget was spent"}


GOALS = {"captured_vs_eager_tiny": 5.0, "ensemble_vs_sequential": 8.0, "memory_ratio": 2.0}
WAYS = [(capture, precision) for capture in ("eager", "compiled") for precision in ("fp32", "tf32", "bf16")]
CLAIM4_CELL = ("fixed-memory", {"length": 16, "lags": "2,5", "readout": "sin-product-diff"},
               {"mixer": "dpfree", "rpe": "free", "heads": 8, "d_model": 16, "ffn_width": 32},
               {"batch_size": 32, "eval_every": 150, "eval_size": 256})


def claim_pack(name: str, scale: str, keep, members: int | None = None) -> list:
    """The configurations of claim ``name`` at ``scale`` that ``keep(config)`` selects (one pack:
    every seed and learning rate of one configuration), the first ``members`` of them."""
    from expressivity.experiments.plan import claim_sweep

    sweep, _ = claim_sweep(name, scale, Path("/nonexistent-gpu-check"))
    configs = [c for c in sweep.configs if keep(c)]
    return configs[:members] if members else configs


def packs(quick: bool) -> dict:
    """``{label: (configs, timed steps)}``: claim 7's widest pack and wang-e-dp's L = 8 pack of the
    full profiles (``quick``: two runs of claim 7's T = 8 cell and one of wang-e-dp's quick L = 2)."""
    scale, T, L = ("quick", 8, 2) if quick else ("full", 64, 8)
    claim7 = claim_pack("wang-e-7", scale, lambda c: c.task.args.get("max_lag") == T and c.model.mixer == "attention"
                        and c.model.layers == 2, 2 if quick else None)
    dp = claim_pack("wang-e-dp", scale, lambda c: c.model.layers == L and c.model.mixer == "attention",
                    1 if quick else None)
    return {f"claim 7 T={T} pack": (claim7, 2 if quick else 50), f"wang-e-dp L={L} pack": (dp, 1 if quick else 20)}


def time_ways(configs: list, device: str, ways, steps: int, threads: int, clock: Clock,
              limit: float = 60.0) -> list[dict]:
    """Steps per second of ``configs`` as one pack on ``device`` for each ``(capture, precision)``
    (at most ``limit`` seconds of timed steps each; a way that would start after ``clock`` ran out
    is marked skipped)."""
    from expressivity.experiments.packing import Pack
    from expressivity.experiments.plan import time_pack
    from expressivity.training.execution import Execution

    rows = []
    for capture, precision in ways:
        if clock.left() <= 0:
            rows.append({"capture": capture, "precision": precision} | clock.skipped())
            continue
        execution = Execution.choose(device, capture=capture, precision=precision)
        first, per_step, timed = time_pack(Pack(tuple(configs)), execution, threads, steps=steps,
                                           limit=min(limit, max(clock.left(), 1.0)))
        rows.append({"capture": capture, "precision": precision, "first_step_s": first, "step_s": per_step,
                     "steps_per_s": 1 / per_step, "run_steps_per_s": len(configs) / per_step, "timed": timed,
                     "execution": execution.record()})
    return rows


def ensemble_vs_sequential(device: str, k: int, steps: int, clock: Clock, quick: bool = False) -> dict:
    """Wall seconds of ``k`` runs of claim 4's widest cell one after another and as one ensemble.
    The runs one after another stop early where the rest would not leave the ensemble its time
    in ``clock``'s budget: the sequential seconds are then the mean run's times ``k`` (``timed``
    says how many ran)."""
    from expressivity.training import RunConfig, run, run_ensemble

    task, args, model, train = CLAIM4_CELL
    train = {**train, "eval_every": 2, "eval_size": 16} if quick else train
    base = RunConfig.for_task(task, args, model=model, train={**train, "steps": steps})
    configs = [base.with_changes(seed=s) for s in range(k)]
    run(configs[0].with_changes(train={"steps": 2}), device=device)   # warm: kernels, caches
    each = []
    for c in configs:
        t0 = time.perf_counter()
        run(c, device=device)
        each.append(time.perf_counter() - t0)
        if clock.left() < 2 * sum(each) / len(each):   # keep an ensemble's time (at most a run's, by the goal)
            break
    sequential = k * sum(each) / len(each)
    t0 = time.perf_counter()
    run_ensemble(configs, device=device)
    ensemble = time.perf_counter() - t0
    return {"runs": k, "timed": len(each), "steps": steps, "sequential_s": sequential, "ensemble_s": ensemble,
            "ratio": sequential / ensemble, "goal": f">= {GOALS['ensemble_vs_sequential']:g}"}


def memory_rows(configs_by_label: dict, device: str) -> list[dict]:
    """The guard's estimate against the measured peak of each pack (a few steps and a held-out pass)."""
    import torch

    from expressivity.training.budget import estimate_run
    from expressivity.training.ensemble import EnsembleStepper
    from expressivity.training.trainer import SingleStepper, eval_batch

    rows = []
    for label, (configs, _) in configs_by_label.items():
        task = configs[0].build_task()
        estimate = estimate_run(configs[0], task, len(configs), device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        stepper = (SingleStepper(configs[0], task, None, device, estimate.chunks) if len(configs) == 1
                   else EnsembleStepper(configs, task, None, device, chunks=estimate.chunks))
        alive = None if stepper.defers_sync else [True] * len(configs)
        for step in range(3):
            stepper.update(step, stepper.losses(step), alive)
        stepper.evaluate(eval_batch(task, configs[0].train.eval_size, device=device))
        peak = torch.cuda.max_memory_allocated() - start
        rows.append({"pack": label, "members": len(configs), "estimate_gib": estimate.peak / 2**30,
                     "measured_gib": peak / 2**30, "ratio": estimate.peak / peak})
        del stepper
    return rows


def runs_per_hour(rows: list[dict], configs: list) -> float | None:
    """Runs of ``configs``' length an hour at the best way's run-steps per second (None where
    every way was skipped)."""
    timed = [r["run_steps_per_s"] for r in rows if "skipped" not in r]
    return 3600 * max(timed) / configs[0].train.steps if timed else None


def cpu_half(quick: bool, report: dict, clock: Clock, out: Path) -> dict:
    import torch

    threads = 2
    torch.set_num_threads(threads)
    chosen = packs(quick)
    report["cpu"] = {"threads": threads, "packs": {}}
    for label, (configs, steps) in chosen.items():
        configs = configs[:CPU_MEMBERS]   # a rate a run: a CPU pack of 16 is no faster a run than one of 4
        rows = time_ways(configs, "cpu", [("eager", "fp32")], steps, threads, clock, CPU_SECONDS_A_WAY)
        report["cpu"]["packs"][label] = {"members": len(configs), "ways": rows,
                                         "runs_per_hour": runs_per_hour(rows, configs)}
        write_report(report, out)
    # 300 steps, not the cell's 1,500: both sides are timed in this process, a rate a step
    report["cpu"]["ensemble_vs_sequential"] = (
        ensemble_vs_sequential("cpu", 2 if quick else 8, 4 if quick else 300, clock, quick) if clock.left() > 0
        else clock.skipped())
    write_report(report, out)
    return chosen


def gpu_half(quick: bool, chosen: dict, report: dict, clock: Clock, out: Path) -> None:
    """The GPU figures, most telling first: the packs (fp32 eager and captured before the other
    precisions), the memory estimate, the ensemble, then precision against fp32."""
    import torch

    report["gpu"] = {"device": torch.cuda.get_device_name(0), "packs": {}}
    ways = sorted(WAYS, key=lambda w: w[1] != "fp32")
    for label, (configs, steps) in chosen.items():
        rows = time_ways(configs, "cuda", ways, steps, 1, clock, 30.0)
        eager, captured = (next(r for r in rows if r["capture"] == c and r["precision"] == "fp32")
                           for c in ("eager", "compiled"))
        both = "skipped" not in eager and "skipped" not in captured
        report["gpu"]["packs"][label] = {"members": len(configs), "ways": rows,
                                         "captured_vs_eager": eager["step_s"] / captured["step_s"] if both else None,
                                         "runs_per_hour": runs_per_hour(rows, configs)}
        write_report(report, out)
    report["gpu"]["memory"] = memory_rows(chosen, "cuda") if clock.left() > 0 else []
    write_report(report, out)
    report["gpu"]["ensemble_vs_sequential"] = (
        ensemble_vs_sequential("cuda", 2 if quick else 8, 4 if quick else 1500, clock, quick) if clock.left() > 0
        else clock.skipped())
    write_report(report, out)
    from precision_agreement import CELLS, compare

    report["gpu"]["precision"], last = [], 0.0
    for precision in ("tf32", "bf16"):
        for label in CELLS:   # one comparison is not started where the last one's time is not left
            if clock.left() <= last:
                report["gpu"]["precision"].append({"cell": label, "precision": precision} | clock.skipped())
                continue
            t0 = time.perf_counter()
            report["gpu"]["precision"].append(compare(label, "cuda", 2 if quick else 5, 20 if quick else 1500,
                                                      precision))
            last = time.perf_counter() - t0
            write_report(report, out)


def lines(report: dict) -> list[str]:
    out = []
    for side in ("cpu", "gpu"):
        if side not in report:
            continue
        where = f"GPU ({report['gpu']['device']})" if side == "gpu" else f"CPU ({report['cpu']['threads']} threads)"
        for label, p in report[side]["packs"].items():
            ways = "; ".join(f"{r['capture']} {r['precision']} " + (f"skipped ({r['skipped']})" if "skipped" in r
                                                                      else f"{r['steps_per_s']:.3g} steps/s")
                             for r in p["ways"])
            rate = f"{p['runs_per_hour']:.3g} runs an hour" if p["runs_per_hour"] else "no rate"
            out.append(f"{where}: {label} of {p['members']}: {ways}; {rate}")
            if p.get("captured_vs_eager"):
                out.append(f"  captured / eager (fp32): {p['captured_vs_eager']:.2f}x (goal >= "
                           f"{GOALS['captured_vs_eager_tiny']:g} on a tiny model)")
        e = report[side]["ensemble_vs_sequential"]
        out.append(f"{where}: claim 4's widest cell: skipped ({e['skipped']})" if "skipped" in e else
                   f"{where}: claim 4's widest cell, {e['runs']} runs of {e['steps']} steps: one after another "
                   f"{e['sequential_s']:.1f} s" + (f" ({e['timed']} timed, times {e['runs']})" if e["timed"] < e["runs"]
                                                  else "") + f", one ensemble {e['ensemble_s']:.1f} s: {e['ratio']:.2f}x "
                   f"(goal {e['goal']})")
        for m in report[side].get("memory", []):
            out.append(f"{where}: {m['pack']} of {m['members']}: estimate {m['estimate_gib']:.3g} GiB, measured "
                       f"{m['measured_gib']:.3g} GiB, ratio {m['ratio']:.2f} (goal within 2x)")
        for r in report[side].get("precision", []):
            if "skipped" in r:
                out.append(f"{where}: {r['cell']}: {r['precision']} against fp32 skipped ({r['skipped']})")
                continue
            d = r["paired_minus_fp32"]
            out.append(f"{where}: {r['cell']}: final test loss {r['precision']} - fp32 {d['value']:.3g} [{d['low']:.3g}, "
                       f"{d['high']:.3g}] over {r['seeds']} seeds, seed sd {r['seed_sd_fp32']:.3g}: {r['verdict']}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("gpu_check"))
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks the script, measures nothing useful")
    p.add_argument("--budget-s", type=float, default=540.0, help="wall seconds for the whole script (default 540)")
    a = p.parse_args(argv)
    if not a.budget_s > 0 or a.budget_s == float("inf"):
        p.error(f"--budget-s must be a positive number of seconds, got {a.budget_s}")
    import torch

    import expressivity

    clock = Clock(a.budget_s)
    report = {"version": expressivity.__version__, "torch": torch.__version__, "quick": a.quick,
              "goals": GOALS, "budget_s": a.budget_s}
    has_gpu = torch.cuda.is_available()
    # With a GPU the CPU half gets a third of the budget; the GPU half what is left.
    chosen = cpu_half(a.quick, report, Clock(a.budget_s / 3) if has_gpu else clock, a.out)
    if has_gpu:
        gpu_half(a.quick, chosen, report, clock, a.out)
    report["seconds"] = time.perf_counter() - clock.start
    write_report(report, a.out)
    text = lines(report)
    if not has_gpu:
        text.append("no CUDA GPU here: the GPU half did not run (the CPU figures above are this machine's)")
    (a.out / "gpu_check.md").write_text("\n".join(f"- {line}" for line in text) + "\n")
    print("\n".join(text))
    print(f"written to {a.out}/gpu_check.json and gpu_check.md in {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
