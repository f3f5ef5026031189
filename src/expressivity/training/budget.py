"""Memory of a training run, estimated before anything is allocated, and the budget it must fit.

**The estimate** (:func:`estimate_run`) counts what a step really keeps, from the configuration
alone (no model is built: a ``vocab=10^9`` embedding is counted, not allocated):

* parameters: the weights, their gradients, AdamW's two moments and its two scratch rows
  (:class:`~expressivity.training.optimizer.FlatAdamW`: six float32 copies), plus, for an
  ensemble, the members' own models kept for read-out and one more copy while they are stacked
  (eight copies a member);
* a training step: each layer's values kept for the backward pass and the backward's working set
  (:func:`expressivity.nn.model.activation_footprint`, each mixer declaring its share), for the
  training batch, plus the input-independent position kernels;
* a held-out pass: no backward, so only the busiest layer's values at once, for one **chunk** of
  the held-out batch (:func:`eval_chunk`);
* the batches themselves.

The peak is the parameters and batches plus the larger of the training step and the held-out
pass (they never overlap: evaluation runs between steps), on CUDA their sum: a step captured as
CUDA graphs keeps its memory in the graphs' own pool, which the eager held-out pass cannot reuse
(counted so on CUDA whatever the capture: at most twice the larger, an estimate that stays
within 2x where it held before). Calibrated against measured peaks
(``benchmarks/bench_memory.py``: CPU peak RSS above the process's size before the run; on a GPU
``torch.cuda.max_memory_allocated``); the ratios are in that script's docstring.

**Held-out chunks** depend on the configuration alone, never on the device or the pack, so a
run's held-out numbers are computed the same way on every machine: a held-out pass is split into
near-equal chunks only when one pass over the whole held-out batch would hold more than the
larger of a training step and :data:`EVAL_FLOOR` per member. Runs that fitted the fixed guard
before this rule are never split (tested on every claim's quick and medium runs), so their
numbers are unchanged.

**The budget** (:func:`device_budget`) comes from the device: 90% of the GPU memory free now on
CUDA, 80% of the RAM available now (``MemAvailable``) on the CPU, shared by the processes that
train at once; ``--memory-budget`` overrides it. A run over its budget is refused with the
estimate and the fix (:class:`~expressivity.errors.BudgetError`) before anything is built.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from expressivity.errors import BudgetError, ExpressivityError
from expressivity.nn.model import ModelConfig, activation_footprint, parameter_count
from expressivity.verify.size import counted

FLOAT = 4                    # bytes of a float32
EVAL_FLOOR = 2**30           # bytes per member a held-out pass may hold before it is split into chunks
CPU_SHARE, GPU_SHARE = 0.8, 0.9   # of the available RAM / free GPU memory
FALLBACK_RAM = 4 * 2**30     # where the available RAM cannot be read (not Linux)
GiB = 2**30


@dataclass(frozen=True)
class Budget:
    """``bytes`` a pack may use, and where that number came from (for refusals and plans)."""

    bytes: int
    source: str

    def line(self, digits: int = 3) -> str:
        return f"{self.bytes / GiB:.{digits}g} GiB ({self.source})"


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one pack of ``members`` runs (see the module docstring): ``parameters`` (weights,
    gradients, optimizer), ``training`` (a step's activations), ``evaluation`` (the largest
    held-out pass, one chunk), ``data`` (the batches); ``chunks`` maps each held-out sequence
    length ``n`` to the sequences a held-out pass takes at once."""

    members: int
    parameters: int
    training: int
    evaluation: int
    data: int
    chunks: dict = field(default_factory=dict)
    eval_size: int = 0
    overlapping: bool = False   # the training step's memory still held during a held-out pass (CUDA)

    @property
    def peak(self) -> int:
        held = self.training + self.evaluation if self.overlapping else max(self.training, self.evaluation)
        return self.parameters + self.data + held

    def describe(self, digits: int = 3) -> str:
        split = [f"{self.eval_size} held-out sequences in chunks of {c} at length {n}"
                 for n, c in self.chunks.items() if c < self.eval_size]
        return (f"about {self.peak / GiB:.{digits}g} GiB: parameters and optimizer {self.parameters / GiB:.3g}, training step "
                f"{self.training / GiB:.3g}, held-out pass {self.evaluation / GiB:.3g}, batches {self.data / GiB:.3g}"
                f"{f', {self.members} members' if self.members > 1 else ''}" + (f"; {'; '.join(split)}" if split else ""))


def parameter_bytes(cfg: ModelConfig, members: int = 1) -> int:
    """Weights, gradients and AdamW state: six float32 copies for one run, eight a member of an ensemble."""
    return FLOAT * parameter_count(cfg) * (6 if members == 1 else 8 * members)


def training_bytes(cfg: ModelConfig, n: int, batch_size: int, members: int = 1) -> int:
    """A training step's activations on ``batch_size`` sequences of ``n`` tokens, every member."""
    fp = activation_footprint(cfg, n)
    return int(FLOAT * members * (batch_size * fp.saved + fp.fixed))


def evaluation_bytes(cfg: ModelConfig, n: int, chunk: int, members: int = 1) -> int:
    """A held-out pass (no backward) over ``chunk`` sequences of ``n`` tokens, every member."""
    fp = activation_footprint(cfg, n)
    return int(FLOAT * members * (chunk * fp.working + fp.fixed))


def eval_chunk(cfg: ModelConfig, n: int, eval_size: int, train_n: int, batch_size: int) -> int:
    """Held-out sequences of ``n`` tokens one pass takes: all ``eval_size`` unless that would hold
    more than the larger of a training step (at ``train_n`` tokens, ``batch_size`` sequences) and
    :data:`EVAL_FLOOR`, per member; then the largest of ``eval_size`` split in near-equal parts
    that does not. A function of the configuration alone (the same on every device and pack)."""
    if evaluation_bytes(cfg, n, eval_size) <= max(training_bytes(cfg, train_n, batch_size), EVAL_FLOOR):
        return eval_size
    limit = max(training_bytes(cfg, train_n, batch_size), EVAL_FLOOR)
    fp = activation_footprint(cfg, n)
    most = max(1, int((limit / FLOAT - fp.fixed) // fp.working))   # sequences that fit the limit
    return math.ceil(eval_size / math.ceil(eval_size / most))


def data_bytes(task, n: int, sequences: int) -> int:
    """A batch of ``sequences`` samples of ``n`` tokens of ``task`` (inputs, targets, mask)."""
    x = 8 if task.vocab_size > 0 else FLOAT * task.d_in
    y = 8 if task.kind == "classification" else FLOAT * task.d_out
    return sequences * n * (x + y + 1)


def estimate_run(config, task, members: int = 1, device: str = "cpu") -> MemoryEstimate:
    """The memory of ``members`` runs of ``config`` (a :class:`~expressivity.training.config.RunConfig`)
    trained as one pack on ``device``: the training step at the task's length and a held-out pass
    at every evaluation length (on CUDA both at once; the chunks do not depend on the device)."""
    cfg, tc, n = config.model, config.train, task.seq_len
    chunks, evaluation, data = {}, 0, 0
    drawing = task.drawing_bytes(n, members * tc.batch_size)   # what a task allocates while it draws a batch
    for length in dict.fromkeys((task.length, *config.eval_lengths)):
        m = task.sequence_length(length)
        chunks[m] = chunk = eval_chunk(cfg, m, tc.eval_size, n, tc.batch_size)
        evaluation = max(evaluation, evaluation_bytes(cfg, m, chunk, members))
        data = max(data, data_bytes(task, m, tc.eval_size))
        drawing = max(drawing, task.drawing_bytes(m, tc.eval_size))
    # what a task keeps per length (kernel-memory's kernels, one per length evaluated: a review, 2026-11-29)
    drawing += sum(task.cached_bytes(task.sequence_length(L))
                   for L in dict.fromkeys((task.length, *config.eval_lengths)))
    return MemoryEstimate(members, parameter_bytes(cfg, members), training_bytes(cfg, n, tc.batch_size, members),
                          evaluation, data + members * data_bytes(task, n, tc.batch_size) + drawing, chunks,
                          tc.eval_size, overlapping=device == "cuda")


def check_run_budget(config, task, models: int, budget: Budget, device: str = "cpu") -> MemoryEstimate:
    """:func:`estimate_run`, or :class:`BudgetError` with the estimate and the fix when it is above
    ``budget`` (:func:`device_budget`, or the user's ``--memory-budget``)."""
    estimate = estimate_run(config, task, models, device)
    if estimate.peak > budget.bytes:
        cfg = config.model
        need, have = estimate.peak / GiB, budget.bytes / GiB   # shown apart: never "0.00283 GiB ... above 0.00283"
        digits = next((d for d in range(3, 18) if float(f"{need:.{d}g}") > float(f"{have:.{d}g}")), 17)
        raise BudgetError(
            f"this run needs {estimate.describe(digits)} ({parameter_count(cfg):,} parameters, {task.seq_len} tokens, "
            f"batch {config.train.batch_size}, {counted(cfg.layers, 'layer')}, {counted(cfg.heads, 'head')}, d_model "
            f"{cfg.d_model}), above "
            f"the budget of {budget.line(digits)}; {_fix(estimate, config, task, models, budget, device)}")
    return estimate


def _fix(estimate: MemoryEstimate, config, task, models: int, budget: Budget, device: str) -> str:
    """The fix a refusal names: the evaluation lengths first where their held-out pass is most of it, with a
    length that fits (it named the refused length, 356,394, as "up to": a fresh audit, 2026-11-29)."""
    longest = max(config.eval_lengths, default=0)
    if longest > task.length and estimate.evaluation >= max(estimate.training, estimate.parameters):
        fits = _longest_evaluation(config, task, models, budget, device)
        return (f"use shorter evaluation lengths (--eval-lengths: the longest, {longest:,}, makes the held-out pass "
                f"{estimate.evaluation / GiB:.3g} GiB; "
                + (f"--eval-lengths {fits:,} fits" if fits else "none longer than the training length fits")
                + "), or --memory-budget SIZE where more memory is free")
    return ("use a shorter length, a smaller batch, model or pack, fewer workers, or --memory-budget SIZE where "
            "more memory is free")


def _longest_evaluation(config, task, models: int, budget: Budget, device: str) -> int | None:
    """A long single evaluation length (above the training length, below the longest asked) whose run fits
    ``budget``, found by bisection: memory grows with the length, though not strictly (the held-out chunks
    change size), so a few lengths below it may not fit, and one above may; the length named is checked to fit.
    ``None`` where none does."""
    from dataclasses import replace

    def fits(length: int) -> bool:
        try:
            return estimate_run(replace(config, eval_lengths=(length,)), task, models, device).peak <= budget.bytes
        except Exception:   # a length the task refuses is no answer
            return False

    lo, hi = task.length, max(config.eval_lengths)
    if not fits(lo + 1):
        return None
    lo += 1
    while hi - lo > 1:   # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


# ---- the budget ------------------------------------------------------------------------------------


def device_budget(device: str = "cpu", share: int = 1) -> Budget:
    """What one of ``share`` processes training at once on ``device`` may use: 90% of the free GPU
    memory (CUDA) or 80% of the available RAM (CPU), divided among them."""
    if device == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info()
        total, what = int(free * GPU_SHARE), f"{GPU_SHARE:.0%} of the {free / GiB:.3g} GiB of GPU memory free now"
    else:
        ram, known = available_ram()
        total = int(ram * CPU_SHARE)
        what = (f"{CPU_SHARE:.0%} of the {ram / GiB:.3g} GiB of RAM available now" if known
                else f"{CPU_SHARE:.0%} of {ram / GiB:.3g} GiB assumed: the available RAM is unknown here")
    if share > 1:
        return Budget(total // share, f"{what}, shared by {share} processes")
    return Budget(total, what)


def available_ram() -> tuple[int, bool]:
    """``(bytes, known)``: ``MemAvailable`` of ``/proc/meminfo`` (what the kernel can give without
    swapping), or less where this process's control group has a memory limit (a container's: the
    host's ``MemAvailable`` would admit runs the kernel then kills) or its address space is
    limited (:func:`address_space_left`), else :data:`FALLBACK_RAM` with ``known = False``."""
    found = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limited in (cgroup_memory_left(), address_space_left()):
        if limited is not None:
            found = limited if found is None else min(found, limited)
    return (found, True) if found is not None else (FALLBACK_RAM, False)


def address_space_left() -> int | None:
    """Bytes of address space this process may still map under its ``RLIMIT_AS`` (``ulimit -v``),
    or ``None`` with no such limit: an allocation past it fails whatever RAM is free (a fresh
    audit, 2026-11-28: a run estimated at 9.6 GiB passed a 22 GiB budget under a 3 GB limit and
    failed in torch's allocator)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    mapped = 0
    try:
        with open("/proc/self/status") as f:
            mapped = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except (OSError, ValueError, IndexError):
        pass
    return max(0, soft - mapped)


# the memory limit, use and statistics of this process's control group: cgroup v2, then v1 (an unlimited
# v1 group reports a limit near 2^63); the use counts page cache, which the kernel reclaims under the limit
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat",
                  "inactive_file"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                  "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"))


def cgroup_memory_left(files=None) -> int | None:
    """Bytes this process's control group may still take, or ``None`` with no limit: its limit less
    its working set (its use less the inactive page cache, which the kernel reclaims before it
    kills, as ``MemAvailable`` counts it available; a review: after a container wrote checkpoints,
    its use was mostly cache)."""
    for limit_file, used_file, stat_file, cache_key in files or _CGROUP_FILES:
        try:
            limit, used = (Path(name).read_text().strip() for name in (limit_file, used_file))   # closed at once
            used = int(used)
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 2**60:
            return None
        try:
            with open(stat_file) as f:
                stats = dict(line.split()[:2] for line in f if len(line.split()) >= 2)
            used -= min(int(stats.get(cache_key, 0)), used)
        except (OSError, ValueError):
            pass
        return max(int(limit) - used, 0)
    return None


_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


def parse_memory_size(text) -> int:
    """``"24GiB"``, ``"512 MB"``, ``"80G"`` (binary), ``"1e9"`` (bytes) -> bytes; one-line error otherwise."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(text))
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ExpressivityError(f"--memory-budget {text!r} is not a size; write e.g. 24GiB, 512MB or 80G")
    value = float(match.group(1)) * _UNITS[unit]
    if not math.isfinite(value) or value < 2**20 or value > 2**60:
        raise ExpressivityError(f"--memory-budget {text!r} is outside 1 MiB to 1 EiB; give the memory a run may use")
    return int(value)


def memory_budget(given, device: str, share: int = 1) -> Budget:
    """``--memory-budget`` (bytes or a size string) when given, else :func:`device_budget`."""
    if given is None:
        return device_budget(device, share)
    size = given if isinstance(given, int) and not isinstance(given, bool) else parse_memory_size(given)
    if size < 2**20:
        raise ExpressivityError(f"--memory-budget {given!r} is below 1 MiB; give the memory a run may use")
    return Budget(size, "--memory-budget")
