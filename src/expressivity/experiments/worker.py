"""Executing one pack where a backend put it, and the record of each finished run.

:func:`execute_pack` is what every backend calls (a local worker process, a Ray task): it trains
the pack in ``out/`` (resuming from checkpoints where they exist) and returns one record per run.
It never raises for a run's own failure: a run that raises or turns NaN comes back as a record
with ``status: "failed"`` and its ``reason``.

Run folders: ``out/runs/<run id>/`` (``metrics.jsonl``, ``checkpoint/``) for every run;
``out/packs/<pack id>/ensemble/`` holds an ensemble's shared checkpoint while it trains.
"""

from __future__ import annotations

import platform
import time
import traceback
from pathlib import Path
from typing import Callable

import expressivity
from expressivity.errors import ExpressivityError
from expressivity.manifest import remove_written
from expressivity.training import RunConfig, run, run_ensemble
from expressivity.training.checkpoint import FINISHED, CheckpointUnreadable, checkpoint_exists, read_checkpoint_config
from expressivity.training.ensemble import ENSEMBLE_FILES
from expressivity.training.step import forget_compiled
from expressivity.training.trainer import clear_run_folder

OK_STATUSES = ("done", "target-reached")


def run_dir(out: Path, config_id: str) -> Path:
    return Path(out) / "runs" / config_id


def pack_dir(out: Path, pack_id: str) -> Path:
    return Path(out) / "packs" / pack_id


def execute_pack(job: dict, on_progress: Callable[[int], None] | None = None) -> list[dict]:
    """Train ``job["configs"]`` (configuration dicts) as one run or one ensemble in ``job["out"]``.

    ``job``: ``{"pack": id, "configs": [...], "out": folder or None, "device": "cpu"|"cuda"|"auto",
    "threads": int, "execution": {choices} (optional), "memory_budget": [bytes, source] or None
    (optional: the device's, shared by ``"share"`` processes)}``. ``on_progress(steps)`` is called
    with the steps done so far (at most about once a second). Returns one record per configuration,
    in order.
    """
    import torch

    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    configs = [RunConfig.from_dict(c) for c in job["configs"]]
    out = Path(job["out"]) if job.get("out") else None
    device = job.get("device", "cpu")
    pack = {"id": job["pack"], "size": len(configs)}
    ticker = _Ticker(on_progress)
    t0 = time.perf_counter()
    try:
        how = _how(job, device)
        if len(configs) == 1:
            results = [_run_one(configs[0], out, ticker, how, pack)]
        else:
            results = _run_many(configs, out, job["pack"], ticker, how, pack)
    except (Exception, SystemExit) as exc:  # a failure of this pack, not of the engine: record it
        reason = _reason(exc)
        return [failed_record(c, reason, pack, time.perf_counter() - t0) for c in configs]
    finally:
        if _compiles(job):
            forget_compiled()   # the next pack in this process compiles its own shape, with the memory back
    pack["seconds"] = time.perf_counter() - t0
    return [record_of(r, pack) for r in results]


def _note_resumed(pack: dict, checkpoint: Path) -> None:
    """Record in ``pack`` the step its training resumes from (``checkpoint``'s), where above 0: a run
    that straddled a resume was stamped with only the last session's code (an audit, 2026-11-28), so
    its record says from which step this session trained it. Called once the resume has been taken."""
    try:
        step = read_checkpoint_config(checkpoint).get("step")
    except (ExpressivityError, AttributeError):
        return
    if isinstance(step, int) and not isinstance(step, bool) and step > 0:
        pack["resumed_at_step"] = min(step, pack.get("resumed_at_step", step))


def _compiles(job: dict) -> bool:
    """Whether ``job``'s steps run through ``torch.compile`` (its execution as resolved on its device)."""
    from expressivity.training.execution import Execution
    from expressivity.training.trainer import resolve_device

    try:
        return Execution.choose(resolve_device(job.get("device", "cpu")), **(job.get("execution") or {})).capture == "compiled"
    except (ExpressivityError, TypeError, ValueError):
        return False


def _how(job: dict, device: str) -> dict:
    """The keyword arguments of how a pack runs: device, execution choices, memory budget."""
    from expressivity.training.budget import Budget, device_budget
    from expressivity.training.trainer import resolve_device

    device = resolve_device(device)
    given = job.get("memory_budget")
    budget = Budget(int(given[0]), str(given[1])) if given else device_budget(device, int(job.get("share") or 1))
    return {"device": device, "execution": dict(job.get("execution") or {}), "memory_budget": budget}


def _run_one(config: RunConfig, out: Path | None, ticker, how: dict, pack: dict | None = None):
    folder = run_dir(out, config.id()) if out is not None else None
    resume = folder is not None and checkpoint_exists(folder / "checkpoint")
    hook = (lambda step, model: ticker(step))
    noted = dict(pack or {})
    if resume:
        _note_resumed(noted, folder / "checkpoint")
    try:
        result = run(config, folder, resume=resume, on_step=hook, **how)
    except CheckpointUnreadable:
        if not resume:
            raise
        # An unreadable checkpoint (a disk that filled up, a foreign folder, a changed byte): start that run
        # afresh, removing only what a run writes (a file someone put beside it is kept). Other refusals (a
        # checkpoint that cannot be written, a memory budget) fail the run and keep its checkpoint.
        clear_run_folder(folder)
        return run(config, folder, on_step=hook, **how)   # from step 0: nothing resumed
    if pack is not None:
        pack.update(noted)
    return result


def _run_many(configs: list[RunConfig], out: Path | None, pack_id: str, ticker, how: dict, pack: dict | None = None):
    group = pack_dir(out, pack_id) if out is not None else None
    members = [run_dir(out, c.id()) for c in configs] if out is not None else None
    if members is not None and all(_finished(d) for d in members):
        # Trained before (the ensemble checkpoint is removed once every member folder is final)
        # but not all recorded: read the members back instead of training again; a member whose
        # checkpoint cannot be read is trained again alone (a member trains as its single run does).
        return [_run_one(c, out, ticker, how, pack) for c in configs]
    resume = group is not None and checkpoint_exists(group / "ensemble")
    hook = (lambda step: ticker(step * len(configs)))
    noted = dict(pack or {})
    if resume:
        _note_resumed(noted, group / "ensemble")
    try:
        results, _ = run_ensemble(configs, group, members, resume=resume, on_step=hook, **how)
    except CheckpointUnreadable:
        if not resume:
            raise
        remove_written(group, ENSEMBLE_FILES)
        results, _ = run_ensemble(configs, group, members, on_step=hook, **how)
        noted = dict(pack or {})   # from step 0: nothing resumed
    if pack is not None:
        pack.update(noted)
    if group is not None:
        remove_written(group, ENSEMBLE_FILES)  # every member folder now holds its final checkpoint
    return results


def _finished(folder: Path) -> bool:
    try:
        return read_checkpoint_config(folder / "checkpoint")["status"] in FINISHED
    except ExpressivityError:
        return False


class _Ticker:
    def __init__(self, callback):
        self.callback, self.last = callback, 0.0

    def __call__(self, steps: int) -> None:
        if self.callback is not None and time.monotonic() - self.last >= 1.0:
            self.last = time.monotonic()
            self.callback(steps)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where and not isinstance(exc, ExpressivityError) else ""
    return f"{type(exc).__name__}: {text[0] if text else ''}{at}"


def _facts() -> dict:
    import torch

    from expressivity.records import source_revision

    # the commit too: a sweep resumed under other code shows it run by run (run.json names the last session's)
    return {"version": expressivity.__version__, "source": source_revision(), "torch": torch.__version__,
            "python": platform.python_version(), "host": platform.node(), "finished_unix": time.time()}


def record_of(result, pack: dict) -> dict:
    """The store's record of a finished :class:`~expressivity.training.RunResult`.

    ``seconds`` is the run's share of its pack's wall time (``pack.seconds / pack.size``).
    A run that turned NaN is ``"failed"`` with reason ``"nan: ..."``.
    """
    s = result.summary()
    failed = s["status"] not in OK_STATUSES
    return {"id": s["id"], "config": result.config.to_dict(), "status": "failed" if failed else s["status"],
            "reason": f"nan: the training loss became non-finite at step {s['steps']}" if failed else None,
            **{k: s[k] for k in ("steps", "params", "final_loss", "final_metric", "best_metric", "best_step",
                                 "lengths", "device", "execution")},
            "seconds": pack["seconds"] / pack["size"], "pack": pack, **_facts()}


def failed_record(config: RunConfig, reason: str, pack: dict, seconds: float = 0.0) -> dict:
    """The record of a run that did not finish (it raised, or its worker died)."""
    return {"id": config.id(), "config": config.to_dict(), "status": "failed", "reason": reason, "steps": None,
            "params": None, "final_loss": None, "final_metric": None, "best_metric": None, "best_step": None,
            "lengths": {}, "device": None, "execution": None, "seconds": seconds / max(1, pack["size"]),
            "pack": {**pack, "seconds": seconds}, **_facts()}
