"""The GPU check anyone can run in one go (issue 29, item 4): on a machine with one GPU, in at most
about 9 minutes, it prints and writes to one folder (``gpu_check.json`` and ``gpu_check.md``):

* steps per second of claim 7's widest pack (T = 64, attention, 60 runs) and of wang-e-dp's L = 8
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
  spread (``precision_agreement.py``);
* first of all, whether the fast paths compute what the reference computes there: each model
  kind of claims 6, 7 and wang-e-dp (two members, the full profiles' shapes) a few steps with the
  explicit softmax, with SDPA and compiled, and its first step on the device against the CPU's
  (``agreement``; relative tolerance 1e-4 in fp32).

On a GPU the GPU parts run first, in the order of their worth (agreement; each pack eager and
captured in fp32; the memory estimate; the ensemble; the other precisions; precision against
fp32), then the CPU half with what is left: the same packs on the CPU (eager fp32, the
reference) and the claim-4 comparison there. On a machine without a GPU the CPU half runs (with
the agreement of the CPU's own paths) and the script says so in one line and exits 0.
``--quick`` shrinks every size (the test of this script uses it).

Nine minutes are kept by construction, not hoped for: ``--budget-s`` (default 540) is the whole
script's wall time; a part that would start after it is spent, or a compiled way with less than
:data:`COMPILE_RESERVE_S` left, is recorded and printed as skipped, and a part still running when
the budget runs out is stopped there (an interval timer; a compile is stopped too, at its next
Python step), so the script ends within about a second of its budget and says that a part was cut
off (``cut_at_budget``). A part that raises is recorded with its error and the others still run;
Ctrl-C (or SIGINT from a caller's deadline) ends the script with what it measured written
(``.json`` and ``.md``), exit 130. Compilation on a GPU was not measured here (no GPU was lent to the sessions
that wrote this).

    bash benchmarks/gpu_check.sh [--out gpu_check] [--quick] [--budget-s 540]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CPU_MEMBERS, CPU_SECONDS_A_WAY = 4, 20.0
MAX_TIMER_S = 1e6          # setitimer takes no more (a time_t); a budget past it is not kept by the timer
COMPILE_RESERVE_S = 60.0   # a compiled way is not started with less left: its compile is not bounded by the clock
AGREEMENT_RTOL = 1e-4      # fp32 paths of one device, and the CPU's against a GPU's first step



def write_report(report: dict, out: Path) -> dict:
    """Write ``report`` as it stands to ``out/gpu_check.json`` (after every part, so a check cut
    off by its caller leaves what it measured)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1) + "\n")
    if "seconds" not in report:   # the lines so far too: a check killed past its limit keeps its .md
        try:
            text = lines(report) + ["(written as the check ran: it was cut off before its end)"]
        except Exception:   # noqa: BLE001 - a part half-recorded: the JSON holds it
            text = ["(written as the check ran: see gpu_check.json)"]
        (out / "gpu_check.md").write_text("\n".join(f"- {line}" for line in text) + "\n")
    return report


class BudgetSpent(BaseException):
    """Raised in the main thread when the budget runs out, in whatever part is running (a
    ``BaseException``: a part's ``except Exception`` must not record it as that part's error)."""


class Clock:
    """The script's time budget: ``left()`` seconds until ``budget`` wall seconds from its start;
    :meth:`bounded` stops a part still running when it runs out."""

    def __init__(self, budget: float):
        self.start, self.budget, self.running = time.perf_counter(), budget, False

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def skipped(self, reserve: float = 0.0) -> dict:
        if reserve and self.left() > 0:
            return {"skipped": f"{self.left():.0f} s of the {self.budget:g} s budget left, under the {reserve:g} s "
                               "a compile may take"}
        return {"skipped": f"the {self.budget:g} s budget was spent"}

    def bounded(self, measure):
        """``measure()``, stopped if the budget runs out while it runs (SIGALRM in the main thread;
        the handler before is put back): its value, or a record that it was skipped or stopped.
        Within another ``bounded`` call it runs under that call's stop."""
        if self.left() <= 0:
            return self.skipped()
        if self.running:
            return measure()

        def spent(signum, frame):
            raise BudgetSpent()

        previous, self.running = signal.signal(signal.SIGALRM, spent), True
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, min(max(self.left(), 1e-3), MAX_TIMER_S))
                return measure()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BudgetSpent:   # a value measured as the alarm rang is lost too: a microsecond's window
            return {"skipped": f"stopped when the {self.budget:g} s budget ran out"}
        finally:
            signal.signal(signal.SIGALRM, previous)
            self.running = False


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
              limit: float = 60.0, reserve: float = COMPILE_RESERVE_S) -> list[dict]:
    """Steps per second of ``configs`` as one pack on ``device`` for each ``(capture, precision)``
    (at most ``limit`` seconds of timed steps each; a way that would start after ``clock`` ran out,
    or a compiled one with less than ``reserve`` seconds left, is marked skipped; one that raises
    is recorded with its error)."""
    from expressivity.experiments.packing import Pack
    from expressivity.experiments.plan import time_pack
    from expressivity.training.execution import Execution

    rows = []
    for capture, precision in ways:
        way = {"capture": capture, "precision": precision}
        if clock.left() <= 0 or (capture == "compiled" and clock.left() < reserve):
            rows.append(way | clock.skipped(reserve if capture == "compiled" else 0.0))
            continue
        execution, ran = Execution.choose(device, capture=capture, precision=precision), []
        try:
            timing = clock.bounded(lambda: time_pack(Pack(tuple(configs)), execution, threads, steps=steps,
                                                     limit=min(limit, max(clock.left(), 1.0)), ran=ran))
        except Exception as exc:   # noqa: BLE001 - one way's failure (a compile, memory) is a figure too
            rows.append(way | failure(exc))
            continue
        if isinstance(timing, dict):   # stopped at the budget
            rows.append(way | timing)
            continue
        first, per_step, timed = timing
        used = ran[0] if ran else execution
        row = way | {"first_step_s": first, "step_s": per_step, "steps_per_s": 1 / per_step,
                     "run_steps_per_s": len(configs) / per_step, "timed": timed, "execution": used.record()}
        if used.capture != capture or used.fallbacks:   # a compile that failed timed the eager step: not this way's
            row |= {"error": "fell back: " + "; ".join(used.fallbacks or (f"ran with capture {used.capture}",))}
        rows.append(row)
    return rows


def failure(exc: BaseException) -> dict:
    """A part's error as recorded: its type and first line (the GPU memory it held given back)."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:   # noqa: BLE001 - recording the first error matters more
        pass
    text = str(exc).strip().splitlines()
    return {"error": f"{type(exc).__name__}: {text[0] if text else ''}"[:300]}


AGREEMENT_CELLS = {   # label -> (claim, full-profile selection, quick selection): each model kind of the full runs
    "claim 7 attention": ("wang-e-7", lambda c: c.task.args.get("max_lag") == 64 and c.model.mixer == "attention"
                          and c.model.layers == 2,
                          lambda c: c.task.args.get("max_lag") == 8 and c.model.mixer == "attention" and c.model.layers == 2),
    "claim 7 DP-free": ("wang-e-7", lambda c: c.task.args.get("max_lag") == 64 and c.model.mixer == "dpfree",
                        lambda c: c.task.args.get("max_lag") == 8 and c.model.mixer == "dpfree"),
    "wang-e-dp L=2 attention": ("wang-e-dp", lambda c: c.model.layers == 2 and c.model.mixer == "attention",
                                lambda c: c.model.layers == 2 and c.model.mixer == "attention"),
    "claim 6 attention": ("wang-e-6", lambda c: c.model.mixer == "attention", lambda c: c.model.mixer == "attention"),
}
COMPILED_AGREEMENT = ("claim 7 attention", "wang-e-dp L=2 attention")   # a compile each: the two kinds timed below


def pack_losses(configs: list, execution, steps: int):
    """``((steps, K) training losses, the first step's gradient)`` of ``configs`` trained as one pack
    with ``execution`` (float64, CPU), zero-initialised tables drawn from one seed; a ``RuntimeError`` where the steps did not run as chosen (a compile that fell back to
    eager would compare eager with eager and be called agreement)."""
    import torch

    from expressivity.training.ensemble import EnsembleStepper

    task = configs[0].build_task()
    run = execution.for_task(task)
    stepper = EnsembleStepper(configs, task, None, run)
    # Tables that start at zero (the position biases) would not enter 3 steps' losses at all: a kernel
    # that dropped the bias agreed (a fresh audit, 2026-11-28). They get values drawn from one seed,
    # the same on every path, and the first step's gradient is compared with the losses.
    draw = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for _, param in sorted(stepper.model.named_parameters()):
            if not param.any():
                param.copy_(0.5 * torch.randn(param.shape, generator=draw, dtype=torch.float64))
    alive = None if stepper.defers_sync else [True] * stepper.size
    rows, gradient = [], None
    with run.matmul_mode():
        for k in range(steps):
            losses = stepper.losses(k)
            rows.append(losses.detach().double().cpu())
            stepper.update(k, losses, alive)
            if gradient is None:
                gradient = stepper.optimizer.grad.detach().double().cpu().clone()
    if stepper.execution.capture != execution.capture or stepper.execution.fallbacks:
        raise RuntimeError("fell back: " + "; ".join(stepper.execution.fallbacks or ("capture changed",)))
    return torch.stack(rows), gradient


def agreement(device: str, quick: bool, clock: Clock, compile_ways: bool = True) -> list[dict]:
    """Whether ``device``'s fast paths compute what its reference computes: for each model kind of
    the full runs (two members, 3 steps, fp32, zero-initialised tables drawn from one seed), the
    largest relative difference of the training losses and of the first step's gradient with SDPA
    and compiled (SDPA) against the explicit softmax, eager; on CUDA also the first step's losses
    and gradient against the CPU's (host sampler on both: the same batches)."""
    from expressivity.training.execution import Execution

    scale, steps, rows = ("quick" if quick else "full"), 3, []
    for label, (claim, keep_full, keep_quick) in AGREEMENT_CELLS.items():
        if clock.left() <= 0:
            rows.append({"cell": label} | clock.skipped())
            continue
        row = {"cell": label, "steps": steps, "members": 2, "rtol": AGREEMENT_RTOL}

        def measure(row=row, label=label, claim=claim, keep=keep_quick if quick else keep_full):
            configs = claim_pack(claim, scale, keep, 2)
            fp32 = {"precision": "fp32"}
            reference, ref_grad = pack_losses(configs, Execution.choose(device, **fp32, attention="explicit",
                                                                       capture="eager"), steps)
            ways = {"sdpa": {"attention": "sdpa", "capture": "eager"}}
            if compile_ways and label in COMPILED_AGREEMENT and clock.left() >= (0 if quick else COMPILE_RESERVE_S):
                ways["compiled"] = {"attention": "sdpa", "capture": "compiled"}
            scale_of = float(reference.abs().max().clamp(min=1e-12))
            grad_of = float(ref_grad.abs().max().clamp(min=1e-12))
            row["relative"] = {}
            for way, given in ways.items():
                losses, grad = pack_losses(configs, Execution.choose(device, **fp32, **given), steps)
                row["relative"][way] = float((losses - reference).abs().max()) / scale_of
                row["relative"][f"{way}, first gradient"] = float((grad - ref_grad).abs().max()) / grad_of
            if device == "cuda":
                host = {**fp32, "attention": "explicit", "capture": "eager", "sampler": "host"}
                gpu, gpu_grad = pack_losses(configs, Execution.choose("cuda", **host), 1)
                cpu, cpu_grad = pack_losses(configs, Execution.choose("cpu", **host), 1)
                row["relative"]["cuda vs cpu, first step"] = float((gpu - cpu).abs().max()) / float(cpu.abs().max())
                row["relative"]["cuda vs cpu, first gradient"] = (float((gpu_grad - cpu_grad).abs().max())
                                                                   / float(cpu_grad.abs().max().clamp(min=1e-12)))
            row["ok"] = all(r <= AGREEMENT_RTOL for r in row["relative"].values())

        try:
            stopped = clock.bounded(measure)
            if stopped is not None:   # the budget ran out in this cell: its partial figures are not kept
                row = {"cell": label} | stopped
        except Exception as exc:   # noqa: BLE001 - recorded, and the next cell still runs
            row |= failure(exc) | {"ok": False}
        rows.append(row)
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
    # warm both shapes (one run, and K members: on CUDA each compiles once), so neither side pays a compile
    run(configs[0].with_changes(train={"steps": 2}), device=device)
    run_ensemble([c.with_changes(train={"steps": 2}) for c in configs], device=device)
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
        # what the caching allocator holds besides (CUDA graphs' private pools among it)
        reserved = torch.cuda.max_memory_reserved()
        rows.append({"pack": label, "members": len(configs), "estimate_gib": estimate.peak / 2**30,
                     "measured_gib": peak / 2**30, "reserved_gib": reserved / 2**30, "ratio": estimate.peak / peak})
        del stepper
    return rows


def runs_per_hour(rows: list[dict], configs: list) -> float | None:
    """Runs of ``configs``' length an hour at the best way's run-steps per second (None where
    every way was skipped)."""
    timed = [r["run_steps_per_s"] for r in rows if "run_steps_per_s" in r and "error" not in r]   # not skipped, failed, fallen back
    return 3600 * max(timed) / configs[0].train.steps if timed else None


def cpu_half(quick: bool, chosen: dict, report: dict, clock: Clock, out: Path) -> None:
    """The same packs on the CPU with 2 threads (eager fp32, the reference: rates a run, packs of at
    most four), claim 4's ensemble against its runs one after another, and where there is no GPU,
    the agreement of the CPU's own fast paths."""
    import torch

    threads = 2
    torch.set_num_threads(threads)
    report["cpu"] = {"threads": threads, "packs": {}}
    if not torch.cuda.is_available():
        report["cpu"]["agreement"] = part(lambda: agreement("cpu", quick, clock, compile_ways=not quick), clock, stop=False)
        write_report(report, out)
    for label, (configs, steps) in chosen.items():
        configs = configs[:CPU_MEMBERS]   # a rate a run: a CPU pack of 16 is no faster a run than one of 4
        rows = time_ways(configs, "cpu", [("eager", "fp32")], steps, threads, clock, CPU_SECONDS_A_WAY)
        report["cpu"]["packs"][label] = {"members": len(configs), "ways": rows,
                                         "runs_per_hour": runs_per_hour(rows, configs)}
        write_report(report, out)
    # 300 steps, not the cell's 1,500: both sides are timed in this process, a rate a step
    report["cpu"]["ensemble_vs_sequential"] = part(
        lambda: ensemble_vs_sequential("cpu", 2 if quick else 8, 4 if quick else 300, clock, quick), clock)
    write_report(report, out)


def part(measure, clock: Clock, stop: bool = True):
    """``measure()``, or a record that it was skipped or stopped (budget spent) or raised (its
    error): one part's failure, a compile or an out-of-memory on a GPU never tried, leaves the
    others' figures. ``stop=False`` where ``measure`` stops its own steps at the budget."""
    if clock.left() <= 0:
        return clock.skipped()
    try:
        return clock.bounded(measure) if stop else measure()
    except Exception as exc:   # noqa: BLE001 - recorded in the report and its lines
        return failure(exc)


def gpu_half(quick: bool, chosen: dict, report: dict, clock: Clock, out: Path) -> None:
    """The GPU figures, most telling first: the fast paths' agreement with the reference, each pack
    eager and captured in fp32, the memory estimate, the ensemble, the other precisions, then
    precision against fp32 over seeds."""
    import torch

    report["gpu"] = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                     "cuda": torch.version.cuda, "packs": {}}
    reserve = 0.0 if quick else COMPILE_RESERVE_S
    report["gpu"]["agreement"] = part(lambda: agreement("cuda", quick, clock), clock, stop=False)
    write_report(report, out)
    first_ways = [("eager", "fp32"), ("compiled", "fp32")]
    for label, (configs, steps) in chosen.items():
        rows = time_ways(configs, "cuda", first_ways, steps, 1, clock, 30.0, reserve)
        report["gpu"]["packs"][label] = {"members": len(configs), "ways": rows}
        set_rates(report["gpu"]["packs"][label], configs)
        write_report(report, out)
    report["gpu"]["memory"] = part(lambda: memory_rows(chosen, "cuda"), clock)
    write_report(report, out)
    report["gpu"]["ensemble_vs_sequential"] = part(
        lambda: ensemble_vs_sequential("cuda", 2 if quick else 8, 4 if quick else 1500, clock, quick), clock)
    write_report(report, out)
    for label, (configs, steps) in chosen.items():
        rest = [w for w in WAYS if w not in first_ways]
        report["gpu"]["packs"][label]["ways"] += time_ways(configs, "cuda", rest, steps, 1, clock, 30.0, reserve)
        set_rates(report["gpu"]["packs"][label], configs)
        write_report(report, out)
    from precision_agreement import CELLS, compare

    report["gpu"]["precision"], last = [], 0.0
    for precision in ("tf32", "bf16"):
        for label in CELLS:   # one comparison is not started where the last one's time is not left
            if clock.left() <= max(last, reserve):
                report["gpu"]["precision"].append({"cell": label, "precision": precision} | clock.skipped())
                continue
            t0 = time.perf_counter()
            row = part(lambda: compare(label, "cuda", 2 if quick else 5, 20 if quick else 1500, precision), clock)
            report["gpu"]["precision"].append({"cell": label, "precision": precision} | row)
            last = time.perf_counter() - t0
            write_report(report, out)


def set_rates(pack: dict, configs: list) -> None:
    """A pack's captured-over-eager ratio (fp32) and best runs an hour, from its timed ways."""
    rows = pack["ways"]
    eager, captured = (next((r for r in rows if r["capture"] == c and r["precision"] == "fp32"), {}) for c in
                       ("eager", "compiled"))
    timed = all("step_s" in r and "error" not in r for r in (eager, captured))   # a fallback timed eager twice
    pack["captured_vs_eager"] = eager["step_s"] / captured["step_s"] if timed else None
    pack["runs_per_hour"] = runs_per_hour(rows, configs)


def lines(report: dict) -> list[str]:
    out = []
    for side in ("gpu", "cpu"):
        if side not in report:
            continue
        r_side = report[side]
        where = (f"GPU ({r_side['device']}, torch {r_side.get('torch')}, CUDA {r_side.get('cuda')})" if side == "gpu"
                 else f"CPU ({r_side['threads']} threads)")
        rows = r_side.get("agreement")
        if isinstance(rows, dict):   # the whole part skipped or failed
            out.append(f"{where}: agreement with the reference: {rows.get('skipped') or rows.get('error')}")
        for row in rows if isinstance(rows, list) else []:
            if "relative" in row:
                worst = ", ".join(f"{way} {value:.2g}" for way, value in row["relative"].items())
                out.append(f"{where}: {row['cell']}: fast paths against the reference, largest relative difference "
                           f"of {row['steps']} steps' losses and of the first gradient: {worst} (tolerance {row['rtol']:g}): "
                           f"{'AGREE' if row['ok'] else 'DISAGREE'}")
            else:
                out.append(f"{where}: {row['cell']}: agreement not measured ({row.get('skipped') or row.get('error')})")
        for label, p in r_side["packs"].items():
            ways = "; ".join(f"{r['capture']} {r['precision']} " + (f"skipped ({r['skipped']})" if "skipped" in r
                                                                      else f"failed ({r['error']})" if "error" in r
                                                                      else f"{r['steps_per_s']:.3g} steps/s")
                             for r in p["ways"])
            rate = f"{p['runs_per_hour']:.3g} runs an hour" if p.get("runs_per_hour") else "no rate"
            out.append(f"{where}: {label} of {p['members']}: {ways}; {rate}")
            if p.get("captured_vs_eager"):
                out.append(f"  captured / eager (fp32): {p['captured_vs_eager']:.2f}x (goal >= "
                           f"{GOALS['captured_vs_eager_tiny']:g} on a tiny model)")
        e = r_side.get("ensemble_vs_sequential")
        if e is not None and ("skipped" in e or "error" in e):
            out.append(f"{where}: claim 4's widest cell: {'skipped (' + e['skipped'] if 'skipped' in e else 'failed (' + e['error']})")
        elif e is not None:   # not reached where the check was interrupted before it
            out.append(f"{where}: claim 4's widest cell, {e['runs']} runs of {e['steps']} steps: one after another "
                       f"{e['sequential_s']:.1f} s" + (f" ({e['timed']} timed, times {e['runs']})" if e["timed"] < e["runs"]
                                                      else "") + f", one ensemble {e['ensemble_s']:.1f} s: "
                       f"{e['ratio']:.2f}x (goal {e['goal']})")
        memory = r_side.get("memory", [])
        if isinstance(memory, dict):
            out.append(f"{where}: memory: {memory.get('skipped') or memory.get('error')}")
        for m in memory if isinstance(memory, list) else []:
            out.append(f"{where}: {m['pack']} of {m['members']}: estimate {m['estimate_gib']:.3g} GiB, measured "
                       f"{m['measured_gib']:.3g} GiB (reserved {m['reserved_gib']:.3g}), ratio {m['ratio']:.2f} "
                       "(goal within 2x)")
        for r in r_side.get("precision", []):
            if "skipped" in r or "error" in r:
                out.append(f"{where}: {r['cell']}: {r['precision']} against fp32 "
                           f"{'skipped (' + r['skipped'] if 'skipped' in r else 'failed (' + r['error']})")
                continue
            d = r["paired_minus_fp32"]
            out.append(f"{where}: {r['cell']}: final test loss {r['precision']} - fp32 {d['value']:.3g} [{d['low']:.3g}, "
                       f"{d['high']:.3g}] over {r['seeds']} seeds, seed sd {r['seed_sd_fp32']:.3g}: {r['verdict']}")
    return out


def main(argv=None) -> int:
    from full_on_gpu import Parser   # its one-line errors (the two scripts run together on a GPU)

    p = Parser(description=__doc__.splitlines()[0])
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
    code = 0
    try:
        chosen = packs(a.quick)
        if has_gpu:   # the GPU's figures first; the CPU half gets what is left
            gpu_half(a.quick, chosen, report, clock, a.out)
        cpu_half(a.quick, chosen, report, clock, a.out)
    except KeyboardInterrupt:   # Ctrl-C, or a caller's deadline: keep what was measured
        report["interrupted"], code = True, 130
    report["seconds"] = time.perf_counter() - clock.start
    write_report(report, a.out)
    text = lines(report)
    if report.get("interrupted"):
        text.append(f"interrupted after {report['seconds']:.0f} s: the figures above are those measured before")
    if not has_gpu:
        text.append("no CUDA GPU here: the GPU half did not run (the CPU figures above are this machine's)")
    (a.out / "gpu_check.md").write_text("\n".join(f"- {line}" for line in text) + "\n")
    print("\n".join(text))
    print(f"written to {a.out}/gpu_check.json and gpu_check.md in {report['seconds']:.0f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
