"""A claim's plan before anything trains: its runs, packs, memory per pack and the time they are
estimated to take on this machine and device (``expressivity reproduce NAME --plan``; every
``reproduce`` prints it before it starts).

The runs are the claim's own: the claim's run function is called with a context whose
``run_sweep`` hands the sweep back instead of running it (:func:`claim_sweep`; every claim runs
at most one sweep). Runs already recorded in the output folder are left out, as the engine
would. Packs and memory are the engine's (:func:`~expressivity.experiments.packing.plan_packs`,
:func:`~expressivity.training.budget.estimate_run`).

**Time** is measured, not guessed: a few training steps of the pack with the most FLOPs per
step, of the pack with the fewest, and of the largest pack of every other shape (while a minute
of timing lasts) are timed here, with the execution the runs will use
(device, precision, capture, sampler) and the threads a worker gets. A pack of a timed shape
costs its shape's time scaled by FLOPs; any other, the line through the two extremes, ``seconds
per step = a + b x FLOPs per step``; that prices every pack's steps and held-out passes (FLOPs by
:func:`~expressivity.nn.model.flops_per_token`, training 3x a forward pass), plus the first
step's start-up (compilation, caches) per pack. Packs run ``workers`` at a time. Runs that
reach their target metric early stop sooner, so the estimate is an upper bound there.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from expressivity.errors import BudgetError, ExpressivityError
from expressivity.experiments.claims import ClaimContext, get_claim
from expressivity.experiments.packing import Pack, pack_sizes
from expressivity.training.budget import Budget, GiB, estimate_run

CALIBRATION_STEPS = 3        # timed steps per calibrated pack, after one untimed step
CALIBRATION_SECONDS = 20.0   # stop timing a pack once this much was spent on it
CALIBRATION_TOTAL_SECONDS = 60.0   # time further shapes until this much was spent on timing in all
ASK_ABOVE = 3600.0           # seconds: a run estimated longer asks for --yes


class _Planned(Exception):
    def __init__(self, sweep, name: str):
        super().__init__(name)
        self.sweep, self.name = sweep, name


class _PlanningContext(ClaimContext):
    """A claim context whose ``run_sweep`` returns the sweep to the planner instead of running it."""

    def run_sweep(self, sweep, name: str = "sweep"):
        raise _Planned(sweep, name)


def claim_sweep(name: str, scale: str, out: Path, overrides: dict | None = None):
    """``(sweep, folder name)`` the claim would run at ``scale``, or ``None`` for a claim that
    does not train. Nothing is written."""
    claim = get_claim(name)
    if not claim.trains:
        return None
    try:
        claim.run(_PlanningContext(Path(out), scale, overrides=overrides or {}))
    except _Planned as planned:
        return planned.sweep, planned.name
    raise ExpressivityError(f"claim {name} trains but ran no sweep at scale {scale}")


@dataclass
class PackPlan:
    """One pack: its ``size`` (runs), training ``steps``, estimated ``memory`` (bytes, peak),
    ``flops_per_step`` (training), ``flops`` (all its training and held-out passes) and ``seconds``."""

    size: int
    steps: int
    memory: int
    flops_per_step: float
    flops: float
    seconds: float = 0.0


@dataclass
class Plan:
    """What a claim's reproduction will run and cost here; ``seconds`` is the estimated wall time."""

    claim: str
    scale: str
    device: str
    execution: dict
    workers: int
    threads: int
    budget: str
    runs: int = 0
    recorded: int = 0
    packs: list[PackPlan] = field(default_factory=list)
    calibration: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self) | {"pack_sizes": self.pack_sizes(), "largest_pack_memory_gib": self.largest_memory() / GiB}

    def pack_sizes(self) -> dict:
        return pack_sizes(self.packs)

    def largest_memory(self) -> int:
        return max((p.memory for p in self.packs), default=0)

    def lines(self) -> list[str]:
        """The plan in words, one fact a line."""
        if self.note and not self.packs:
            return [f"plan: {self.note}"]
        sizes = ", ".join(f"{n} of {size}" for size, n in self.pack_sizes().items())
        how = ", ".join(f"{k} {v}" for k, v in self.execution.items() if k not in ("device", "stream"))
        out = [f"plan: {self.runs} runs ({self.recorded} recorded before), {len(self.packs)} packs to train "
               f"({sizes or 'none'}) on {self.device} ({how}), {self.workers} at a time x {self.threads} threads",
               f"memory: largest pack about {self.largest_memory() / GiB:.3g} GiB of a budget of {self.budget}"]
        for c in self.calibration[:2]:     # the FLOPs extremes; every other shape timed in one line
            out.append(f"timed here: a pack of {c['size']} at {c['flops_per_step']:.3g} FLOPs a step, "
                       f"{1e3 * c['seconds_per_step']:.3g} ms a step ({c['steps']} steps; first step {c['first_step']:.2f} s)")
        if len(self.calibration) > 2:
            rest = [1e3 * c["seconds_per_step"] / c["size"] for c in self.calibration[2:]]
            shapes = "1 more shape" if len(rest) == 1 else f"{len(rest)} more shapes"
            out.append(f"timed here: {shapes}, {min(rest):.3g} to {max(rest):.3g} ms a step per run "
                       "(--json lists each)")
        if self.packs:
            out.append(f"estimated time: {format_seconds(self.seconds)} on this machine "
                       f"({sum(p.steps * p.size for p in self.packs):,} run-steps)")
        if self.note:
            out.append(f"note: {self.note}")
        return out


def format_seconds(seconds: float) -> str:
    """A duration in words: ``"42 s"``, ``"7.5 minutes"``, ``"3.1 hours"``, ``"42 hours"``, ``"880 hours (37 days)"``."""
    if seconds >= 100 * 3600:   # .2g would write 8.8e+02
        return f"{seconds / 3600:,.0f} hours ({seconds / 86400:,.0f} days)"
    if seconds >= 3600:
        hours = seconds / 3600
        return f"{hours:.1f} hours" if hours < 10 else f"{hours:.0f} hours"
    if seconds >= 60:
        return f"{seconds / 60:.2g} minutes"
    return f"{seconds:.2g} s"


def plan_claim(name: str, scale: str, out: Path, *, device: str = "cpu", execution: dict | None = None,
               workers: int | None = None, threads: int | None = None, backend: str = "local",
               memory_budget=None, overrides: dict | None = None, calibrate: bool = True) -> Plan:
    """The :class:`Plan` of ``reproduce name --scale scale`` into ``out`` (see the module docstring).
    ``calibrate=False`` skips the timing (no estimate of time)."""
    from expressivity.experiments.launch import _packs_to_run, default_max_pack, resolve_workers
    from expressivity.experiments.store import read_records
    from expressivity.training.budget import memory_budget as budget_of
    from expressivity.training.execution import Execution
    from expressivity.training.trainer import resolve_device

    device = resolve_device(device)
    chosen = Execution.choose(device, **(execution or {}))
    workers, threads = resolve_workers(backend, device, workers, threads)
    budget = budget_of(memory_budget, device, share=workers)
    plan = Plan(name, scale, device, chosen.record(), workers, threads, budget.line())
    found = claim_sweep(name, scale, out, overrides)
    if found is None:
        plan.note = "this claim is numerics on constructions: nothing trains (minutes on the CPU)"
        return plan
    sweep, folder = found
    Execution.refuse_unread(sweep.configs, execution)
    recorded = {r["id"] for r in read_records(Path(out) / folder)} if (Path(out) / folder).is_dir() else set()
    todo = {c.id() for c in sweep.configs if c.id() not in recorded}
    plan.runs, plan.recorded = len(sweep.configs), len(sweep.configs) - len(todo)
    try:
        packs = _packs_to_run(sweep, todo, default_max_pack(device), Path(out) / folder, device, budget)
    except BudgetError as exc:
        plan.note = f"refused: {exc}"
        return plan
    plan.packs = [_pack_plan(p, device) for p in packs]
    if calibrate and packs:
        _calibrate(plan, packs, chosen, threads)
    return plan


def _pack_plan(pack: Pack, device: str = "cpu") -> PackPlan:
    from expressivity.nn.model import flops_per_token

    c = pack.configs[0]
    task, tc = c.build_task(), c.train
    n = task.seq_len
    forward = flops_per_token(c.model, n) * n   # one sequence, forward
    per_step = 3 * forward * tc.batch_size * pack.size
    evals = tc.steps // tc.eval_every + 2 * (1 + len(c.eval_lengths))   # periodic, then val and test per length
    flops = tc.steps * per_step + evals * forward * tc.eval_size * pack.size
    return PackPlan(pack.size, tc.steps, estimate_run(c, task, pack.size, device).peak, per_step, flops)


def shape_of(pack: Pack) -> str:
    """What sets a pack's cost a step besides its size: its runs' configuration without seed and
    learning rate (task arguments, model, batch, steps; the selection group of
    :func:`~expressivity.experiments.claims.grids.group_key`). Time is not proportional to counted
    FLOPs across shapes (claim 7's 128-long, 16-wide sequences cost 515 ms a step at 2.0e9 FLOPs
    where a 9.2e9-FLOP pack of another shape cost 169 ms), so each shape is timed where time allows."""
    from expressivity.experiments.claims.grids import AXIS, group_key

    return group_key(pack.configs[0].to_dict(), AXIS)


def _calibrate(plan: Plan, packs: list[Pack], execution, threads: int) -> None:
    """Time the packs with the most and the fewest FLOPs a step, then the largest pack of every
    other shape (:func:`shape_of`), most total FLOPs first, until :data:`CALIBRATION_TOTAL_SECONDS`
    are spent. A pack of a timed shape costs that timing scaled by its FLOPs a step; a pack of a
    shape left untimed costs the line through the two extremes at its FLOPs (the larger of the two
    times where they do not rise with FLOPs). Held-out passes cost their FLOPs at the step's rate."""
    shape = [shape_of(p) for p in packs]
    order = sorted(range(len(packs)), key=lambda i: plan.packs[i].flops_per_step)
    largest: dict[str, int] = {}      # shape -> its pack with the most FLOPs a step
    total: dict[str, float] = {}      # shape -> FLOPs of all its packs
    for i in order:
        largest[shape[i]] = i
        total[shape[i]] = total.get(shape[i], 0.0) + plan.packs[i].flops
    extremes = list(dict.fromkeys([order[-1], order[0]]))
    timed: dict[str, tuple[float, float]] = {}     # shape -> (FLOPs a step, seconds a step) of its timed pack
    spent = 0.0
    for i in extremes + [largest[k] for k in sorted(total, key=total.get, reverse=True)]:
        if shape[i] in timed or (i not in extremes and spent > CALIBRATION_TOTAL_SECONDS):
            continue
        t0 = time.perf_counter()
        first, per_step, steps = time_pack(packs[i], execution, threads)
        spent += time.perf_counter() - t0
        timed[shape[i]] = (plan.packs[i].flops_per_step, per_step)
        plan.calibration.append({"size": packs[i].size, "flops_per_step": plan.packs[i].flops_per_step,
                                 "seconds_per_step": per_step, "first_step": first, "steps": steps})
    (f1, t1), (f2, t2) = timed[shape[order[-1]]], timed[shape[order[0]]]
    rising = f1 > f2 and t1 > t2

    def step_seconds(i: int) -> float:
        flops = plan.packs[i].flops_per_step
        if shape[i] in timed:
            f, t = timed[shape[i]]
            return t * flops / f
        return t2 + (t1 - t2) * (flops - f2) / (f1 - f2) if rising else max(t1, t2)

    startup = max(max(c["first_step"] - c["seconds_per_step"], 0.0) for c in plan.calibration)
    for i, p in enumerate(plan.packs):
        p.seconds = startup + step_seconds(i) * p.flops / p.flops_per_step
    plan.seconds = _wall(sorted((p.seconds for p in plan.packs), reverse=True), _lanes(plan))


def _lanes(plan: Plan) -> int:
    """How many packs really run at once: on the CPU no more than the cores hold at the threads each
    uses (workers beyond that time-slice the cores: 8 workers on 2 cores planned 38 s for 100 s of work)."""
    if plan.device != "cpu":
        return plan.workers
    from expressivity.experiments.local import cpu_count

    return max(1, min(plan.workers, cpu_count() // max(1, plan.threads)))


def _wall(durations: list[float], workers: int) -> float:
    """Finish time of ``durations`` (largest first, as the engine orders packs) on ``workers`` at a time."""
    ends = [0.0] * max(1, workers)
    for d in durations:
        k = min(range(len(ends)), key=ends.__getitem__)
        ends[k] += d
    return max(ends)


def time_pack(pack: Pack, execution, threads: int, steps: int = CALIBRATION_STEPS,
              limit: float = CALIBRATION_SECONDS, ran: list | None = None) -> tuple[float, float, int]:
    """``(first step seconds, seconds per later step, steps timed)`` of training ``pack`` here with
    ``execution`` on ``threads`` threads (nothing written; the pack's memory is allocated).
    ``ran``: a list that receives the execution the steps ran with (a failed compile's fallback
    recorded), for a caller that reports it."""
    import torch

    from expressivity.training.ensemble import EnsembleStepper
    from expressivity.training.step import forget_compiled
    from expressivity.training.trainer import SingleStepper

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        configs = list(pack.configs)
        task = configs[0].build_task()
        run = execution.for_task(task)
        stepper = (SingleStepper(configs[0], task, None, run) if len(configs) == 1
                   else EnsembleStepper(configs, task, None, run))
        alive = None if stepper.defers_sync else [True] * stepper.size

        def step(k: int) -> float:
            t0 = time.perf_counter()
            stepper.update(k, stepper.losses(k), alive)
            if run.device == "cuda":
                torch.cuda.synchronize()
            return time.perf_counter() - t0

        with run.matmul_mode():   # TF32 is timed as TF32, as the runs will compute
            first = step(0)
            timed, spent = [], 0.0
            while len(timed) < steps and spent < limit:
                timed.append(step(len(timed) + 1))
                spent += timed[-1]
        if ran is not None:
            ran.append(stepper.execution)
        del stepper
        return first, sorted(timed)[len(timed) // 2], len(timed)
    finally:
        torch.set_num_threads(before)
        if execution.capture == "compiled":
            forget_compiled()   # its CUDA graphs' pool would keep memory from the runs started next
        if execution.device == "cuda":
            torch.cuda.empty_cache()   # the runs, started next, get the memory back


def check_affordable(plan: Plan, yes: bool) -> None:
    """Refuse a plan estimated above an hour unless ``yes`` (the caller asks interactively first)."""
    if plan.seconds > ASK_ABOVE and not yes:
        raise ExpressivityError(f"this run is estimated at {format_seconds(plan.seconds)} on this machine; pass --yes "
                                "to start it (see the plan with --plan)")
