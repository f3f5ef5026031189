"""Running a sweep: plan packs, skip what is recorded, run the rest on a backend, record each
finished run as it arrives.

Output folder::

    DIR/run.json          run record of the latest 'sweep run' (command, sweep id, versions)
    DIR/sweep.json        the sweep: every configuration and the selection rules
    DIR/records.jsonl     one record per finished run (see expressivity.experiments.store)
    DIR/runs/<run id>/    metrics.jsonl, checkpoint/ and manifest.json of each run
    DIR/packs/<pack id>/  an ensemble's shared checkpoint while it trains

Running the same sweep again skips recorded runs and resumes interrupted ones from their
checkpoints; a sweep that only adds runs to the one in ``DIR`` extends it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from expressivity.errors import ExpressivityError, require_path
from expressivity.experiments.local import cpu_count, run_local
from expressivity.experiments.packing import DEFAULT_MAX_PACK, Pack, plan_packs
from expressivity.experiments.store import (LOCK, RECORDS, WORKERS_LOCK, FolderBusy, FolderLock, RecordWriter,
                                           read_records)
from expressivity.experiments.sweep import Sweep
from expressivity.experiments.worker import failed_record, pack_dir, run_dir
from expressivity.records import check_output_dir, make_parents, remove_empty, run_record, write_json

BACKENDS = ("local", "ray")


@dataclass
class SweepReport:
    """What one ``run_sweep`` call did. ``failures`` counts failed runs of the whole sweep (those
    recorded before included) by kind (``nan``, an exception name, ``worker``)."""

    out: str
    name: str
    sweep: str
    runs: int
    skipped: int = 0
    done: int = 0
    failed: int = 0
    failures: dict = field(default_factory=dict)
    packs: int = 0
    seconds: float = 0.0
    backend: str = "local"
    workers: int = 1
    threads: int = 1

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Progress:
    """Live counts for a progress display: runs ``done``, ``failed``, ``running`` (in started
    packs), of ``total`` to run now; ``eta_s`` from the work (steps x runs) done so far."""

    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    eta_s: float | None = None


def resolve_workers(backend: str, device: str, workers: int | None, threads: int | None) -> tuple[int, int]:
    """``(workers, threads per worker)`` so that ``workers x threads`` fits the cores."""
    cores = cpu_count()
    for name, value in (("--workers", workers), ("--threads", threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ExpressivityError(f"{name} must be a positive integer, got {value!r}")
    if backend == "ray":
        if workers is not None and workers > 4 * cores:
            raise ExpressivityError(f"--workers {workers} is far more than the {cores} CPU cores here; use at most "
                                    f"{4 * cores} (four per core)")
        return workers or cores, threads or 1
    if threads is not None and threads > cores:
        raise ExpressivityError(f"--threads {threads} is more than the {cores} CPU cores here; use 1 to {cores}")
    if workers is None:
        workers = 1 if device == "cuda" else max(1, cores // (threads or 1))
    if workers > 4 * cores:   # the limit said is the one checked (it said "at most 2" and took 8: a fresh audit, 2026-11-29)
        raise ExpressivityError(f"--workers {workers} is far more than the {cores} CPU cores here; use at most "
                                f"{4 * cores} (four per core)")
    if threads is not None and threads > 1 and workers * threads > cores:
        raise ExpressivityError(f"--workers {workers} x --threads {threads} is {workers * threads} threads on the {cores} "
                                f"CPU cores here, which oversubscribes them; use --threads {max(1, cores // workers)} "
                                "or fewer workers")
    return workers, threads or max(1, cores // workers)


def run_sweep(sweep: Sweep, out, *, backend: str = "local", workers: int | None = None, threads: int | None = None,
              device: str = "cpu", ray_address: str | None = None, max_pack: int | None = None,
              retry_failed: bool = False, on_progress: Callable[[Progress], None] | None = None,
              command: str = "sweep run", verbose: bool = False, execution: dict | None = None,
              memory_budget=None) -> SweepReport:
    """Run every not-yet-recorded run of ``sweep`` into the folder ``out``; see the module doc.

    A folder this call creates is removed again when it fails before any run recorded or
    checkpointed anything (an unreachable Ray cluster, an interruption at the start): nothing is
    left behind, and nothing that could be resumed is removed. ``verbose``
    lets Ray's own log lines through to the terminal. ``max_pack``: the most runs in a pack
    (default: :data:`~expressivity.experiments.packing.DEFAULT_MAX_PACK` on the CPU, a whole
    configuration on CUDA). ``execution``: choices of :class:`~expressivity.training.execution.Execution`
    for every run (default: the device's); ``memory_budget``: bytes or a size per pack (default:
    the device's memory shared by the workers).
    """
    if not isinstance(sweep, Sweep):
        raise ExpressivityError(f"run_sweep takes a Sweep (load_sweep(path) or Sweep(configs)), got {type(sweep).__name__}")
    require_path(out, "run_sweep's out folder")
    if backend not in BACKENDS:
        raise ExpressivityError(f"unknown backend {backend!r}; use {' or '.join(BACKENDS)}")
    if max_pack is not None and (isinstance(max_pack, bool) or not isinstance(max_pack, int) or max_pack < 1):
        raise ExpressivityError(f"--pack must be a positive integer, got {max_pack!r}")
    if device not in ("auto", "cpu", "cuda"):
        raise ExpressivityError(f"unknown device {device!r}; use auto, cpu or cuda")
    if backend == "local":
        from expressivity.training.trainer import resolve_device

        device = resolve_device(device)
    cluster = ray_address if ray_address is not None else os.environ.get("RAY_ADDRESS")
    if backend == "ray" and cluster not in (None, "", "local") and workers is not None:
        raise ExpressivityError("--workers does not apply to a Ray cluster (its CPUs decide how many packs run at "
                                "once); drop it, or leave out --ray-address for a private Ray of that many workers")
    workers, threads = resolve_workers(backend, device, workers, threads)
    from expressivity.training.execution import Execution

    if backend == "local" or device == "cpu":
        # bad choices refused before any folder is made (on Ray where the device is known: the CPU)
        Execution.choose(device, **(execution or {}))
    Execution.refuse_unread(sweep.configs, execution)
    # the packs depend on the sweep and the device asked for, not on the backend, so a folder resumes across
    # backends from its packs' checkpoints (Ray's "auto" packs as the CPU does)
    max_pack = max_pack or default_max_pack("cuda" if device == "cuda" else "cpu")
    if backend == "ray":
        from expressivity.experiments.ray_backend import check_address

        ray_address = check_address(ray_address)  # seconds, before any folder is made
    budget = _budget(memory_budget, backend, device, workers, ray_address)
    out = Path(out)
    only_locks = out.is_dir() and {p.name for p in out.iterdir()} <= {LOCK, WORKERS_LOCK}  # killed at once
    out = (out if only_locks else check_output_dir(out)).resolve()
    created = not out.exists()
    made = make_parents(out) if created else []
    try:
        return _run_in(out, sweep, backend, workers, threads, device, ray_address, max_pack, retry_failed,
                       on_progress, command, verbose, execution or {}, budget)
    except BaseException as exc:
        # a folder made here and refused to us (another driver took it meanwhile) is that driver's to keep: only the
        # lock's holder removes it (a fresh audit, 2026-11-28: the refused one deleted the other's folder)
        if created and not isinstance(exc, FolderBusy) and not _holds_work(out):
            import shutil

            shutil.rmtree(out, ignore_errors=True)
            remove_empty(made)
        raise


def default_max_pack(device: str) -> int | None:
    """The most runs in a pack by default: 16 on the CPU, no limit but memory on a GPU."""
    return DEFAULT_MAX_PACK if device == "cpu" else None


def _budget(given, backend: str, device: str, workers: int, ray_address: str | None = None):
    """What one pack may use: ``given``, else the local device's memory shared by the workers, on the local
    backend and on a private Ray (this machine's, as local packs are planned: 16 seeds of a wide model were split in
    2 packs locally and failed as 1 on Ray, --retry-failed failing them again: a fresh audit, 2026-11-29); on a
    cluster (an address) none: a Ray worker reads its own node's when its pack starts."""
    from expressivity.training.budget import memory_budget

    if given is None and backend == "ray" and (ray_address not in (None, "local") or device == "cuda"):
        return None   # a cluster's nodes, or a GPU (which the cluster's check finds, or not): read where packs run
    return memory_budget(given, device if device != "auto" else "cpu", share=workers)


def _write_manifest(out: Path, sweep: Sweep) -> None:
    """``out/manifest.json``: every run of the sweep is a trained run under ``runs/<id>`` (listed
    before it is trained, so a folder being filled has one too; a run not yet trained fails to load
    with its own message). Its command is the engine's, ``sweep run``, whoever started it (``sweep
    run`` or a claim of ``reproduce``); ``run.json`` has the full command line."""
    from expressivity.manifest import RUN_RECORD, NetworkEntry, write_manifest

    files = {"sweep.json": "the sweep: every configuration and the selection rules",
             "run.json": RUN_RECORD, RECORDS: "one result record per finished run (JSON lines)",
             "runs/": "one folder per run: metrics, checkpoint and its own manifest", "packs/": "ensembles while they train",
             LOCK: "lock held while a command writes the folder",
             WORKERS_LOCK: "lock shared by the workers of a run"}
    networks = [NetworkEntry(f"runs/{c.id()}", f"run {c.id()} (seed {c.seed}, lr {c.train.lr:g})", "trained run")
                for c in sweep.configs]
    write_manifest(out, "trained runs", "sweep run", files, networks)


def _holds_work(out: Path) -> bool:
    """Whether ``out`` holds a recorded run or any file of a run or pack (a checkpoint to resume)."""
    records = out / RECORDS
    if records.is_file() and records.stat().st_size > 0:
        return True
    return any(p.is_file() for sub in ("runs", "packs") for p in (out / sub).rglob("*"))


def _run_in(out: Path, sweep: Sweep, backend, workers, threads, device, ray_address, max_pack, retry_failed,
            on_progress, command, verbose, execution, budget) -> SweepReport:
    t0 = time.perf_counter()
    with FolderLock(out):
        _check_same_sweep(out, sweep)
        kept = {name: (out / name).read_bytes() if (out / name).is_file() else None
                for name in ("sweep.json", "run.json", "manifest.json")}
        records_before = (out / RECORDS).stat().st_size if (out / RECORDS).is_file() else 0
        try:
            return _run_locked(out, sweep, backend, workers, threads, device, ray_address, max_pack, retry_failed,
                               on_progress, command, verbose, execution, budget, t0)
        except BaseException:
            # a command that failed before recording anything (Ray unreachable, a cluster without the
            # resources asked for) leaves the folder's description as it found it
            if ((out / RECORDS).stat().st_size if (out / RECORDS).is_file() else 0) == records_before:
                work = _holds_work(out)   # a checkpoint made now: the folder must still describe its sweep
                for name, content in kept.items():
                    if content is not None:
                        (out / name).write_bytes(content)
                    elif not work:
                        (out / name).unlink(missing_ok=True)
            raise


def _run_locked(out: Path, sweep: Sweep, backend, workers, threads, device, ray_address, max_pack, retry_failed,
                on_progress, command, verbose, execution, budget, t0) -> SweepReport:
    """The body of :func:`_run_in`, with the folder locked: describe it, then run what is left."""
    write_json(out / "sweep.json", sweep.to_dict())
    write_json(out / "run.json", run_record(command, {"sweep": sweep.id(), "name": sweep.name, "runs": len(sweep.configs),
                                                      "select": sweep.select_text()})
               | {"backend": backend, "workers": workers, "threads": threads, "device": device, "max_pack": max_pack,
                  "execution": execution, "memory_budget": None if budget is None else budget.line()})
    _write_manifest(out, sweep)
    with RecordWriter(out / RECORDS) as writer:
        recorded = {r["id"]: r for r in read_records(out)}
        todo = {c.id() for c in sweep.configs if c.id() not in recorded or (
            retry_failed and recorded[c.id()]["status"] == "failed"
            and not str(recorded[c.id()].get("reason")).startswith("nan"))}
        packs = _packs_to_run(sweep, todo, max_pack, out, device, budget)
        report = SweepReport(str(out), sweep.name, sweep.id(), len(sweep.configs), len(sweep.configs) - len(todo),
                             packs=len(packs), backend=backend, workers=workers, threads=threads)
        # Largest packs first: the last ones to finish are then short (better balance), and the ETA, which scales
        # the time so far by the steps left, errs long rather than short. Largest by arithmetic: steps alone tie
        # across model sizes, and a width grid ran its small models first (an ETA of 1 s for 14 s left: an audit
        # at scale, 2026-11-28)
        order = sorted(range(len(packs)), key=lambda i: -_arithmetic(packs[i]))
        jobs = [(i, {"pack": packs[i].id, "configs": [c.to_dict() for c in packs[i].configs], "out": str(out),
                     "device": device, "threads": threads, "execution": execution, "share": workers,
                     "memory_budget": None if budget is None else [budget.bytes, budget.source]})
                for i in order]
        _drive(jobs, packs, todo, writer, report, backend, workers, threads, device, ray_address, on_progress,
               verbose)
    final = {r["id"]: r for r in read_records(out, warn=False)}   # what is wrong with it was said above
    _remove_stale_packs(out, final)
    _remove_if_empty(out / "packs")
    for c in sweep.configs:
        r = final.get(c.id())
        if r is not None and r["status"] == "failed":
            kind = str(r.get("reason") or "unknown").split(":", 1)[0]
            report.failures[kind] = report.failures.get(kind, 0) + 1
    report.seconds = time.perf_counter() - t0
    return report


def _arithmetic(pack: Pack) -> float:
    """A pack's training multiply-adds, roughly (its steps, members, batch and model at its task's length): the
    order packs start in, not a time (:mod:`~expressivity.experiments.plan` times them)."""
    from expressivity.nn.model import flops_per_token

    c = pack.configs[0]
    n = int(c.task.args.get("length", 1) or 1)
    return float(pack.work()) * c.train.batch_size * n * flops_per_token(c.model, n)


def _packs_to_run(sweep: Sweep, todo: set[str], max_pack: int | None, out: Path, device: str = "cpu",
                  budget=None) -> list[Pack]:
    """The packs of the whole sweep that hold runs to do. A pack some of whose runs are recorded
    is run whole only where it can resume (its ensemble checkpoint, or finished member folders:
    a driver killed while recording); otherwise its unrecorded runs are packed anew, so a sweep
    extended by new seeds or learning rates does not retrain what it has."""
    packs, leftover = [], []
    device = "cpu" if device == "auto" else device
    for p in plan_packs(sweep.configs, max_pack, device=device, budget=budget, dicts=sweep.config_dicts()):
        waiting = [c for c in p.configs if c.id() in todo]
        if len(waiting) == p.size or (waiting and _resumable(p, out)):
            packs.append(p)
        else:
            leftover += waiting
    return packs + (plan_packs(leftover, max_pack, device=device, budget=budget) if leftover else [])


def _resumable(pack: Pack, out: Path) -> bool:
    from expressivity.training.checkpoint import checkpoint_exists

    if checkpoint_exists(pack_dir(out, pack.id) / "ensemble"):
        return True
    return all(checkpoint_exists(run_dir(out, c.id()) / "checkpoint") for c in pack.configs)


def _drive(jobs, packs, todo, writer, report, backend, workers, threads, device, ray_address, on_progress,
           verbose=False) -> None:
    total_work = sum(packs[i].work() for i, _ in jobs) or 1
    state = Progress(total=len(todo))
    work_done, partial, started_at = 0, {}, time.perf_counter()

    def tell() -> None:
        if on_progress is None:
            return
        done = work_done + sum(partial.values())
        elapsed = time.perf_counter() - started_at
        state.eta_s = elapsed * (total_work - done) / done if done > 0 else None
        on_progress(state)

    if backend == "ray":
        from expressivity.experiments.ray_backend import run_ray

        events = run_ray(jobs, address=ray_address, workers=workers, threads=threads, device=device, verbose=verbose)
    else:
        events = run_local(jobs, workers, threads, Path(report.out))
    written: set[str] = set()
    try:
        for kind, index, payload in events:
            pack = packs[index]
            if kind == "start":
                state.running += sum(c.id() in todo for c in pack.configs)
            elif kind == "progress":
                partial[index] = min(payload, pack.work())
            else:
                if kind == "crashed":
                    payload = [failed_record(c, payload, {"id": pack.id, "size": pack.size}) for c in pack.configs]
                for record in payload:
                    if record["id"] in todo and record["id"] not in written:
                        writer.append(record)
                        written.add(record["id"])
                        state.running -= 1
                        if record["status"] == "failed":
                            state.failed += 1
                            report.failed += 1
                        else:
                            state.done += 1
                            report.done += 1
                partial.pop(index, None)
                work_done += pack.work()
            tell()
    finally:
        events.close()


def _check_same_sweep(out: Path, sweep: Sweep) -> None:
    path = out / "sweep.json"
    if not path.exists():
        if (out / RECORDS).exists() or (out / "run.json").exists():
            raise ExpressivityError(f"{out} holds another command's output (no sweep.json); use a new --out folder")
        return
    try:
        old = json.loads(path.read_text())
        old_ids = {_config_id(c) for c in old["configs"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExpressivityError(f"{path} is unreadable ({type(exc).__name__}); use a new --out folder") from None
    missing = old_ids - set(sweep.ids())
    if missing:
        raise ExpressivityError(f"{out} holds another sweep ({len(missing)} of its runs are not in this one); "
                                "use a new --out folder, or a sweep that only adds runs")
    from expressivity.experiments.select import parse_select, select_text

    try:
        old_select = parse_select(old.get("select") or {}, old["configs"][0])
    except (ExpressivityError, IndexError, TypeError, AttributeError):
        old_select = None
    if old_select is not None and old_select != sweep.select:
        # a rule changes what results report from the same runs; it was rewritten silently, the old one kept
        # nowhere (an audit, 2026-11-28)
        def text(rules):
            return ", ".join(f"{k}: {v}" for k, v in select_text(rules).items()) or "none"

        raise ExpressivityError(f"{out} was run selecting {text(old_select)}; this sweep selects {text(sweep.select)}: "
                                "a selection rule decides what its results report, so it is not replaced; keep the "
                                "folder's rule, or use a new --out folder ('results --no-select' shows every run)")


def _remove_stale_packs(out: Path, recorded: dict) -> None:
    """Remove the checkpoints of packs every member of which is recorded as finished: an interrupted
    pack whose runs were then trained in other packs (another --pack, --workers or budget) kept its
    checkpoint in the finished folder for good (an audit, 2026-11-28). A pack with a failed member
    keeps its checkpoint (--retry-failed may resume from it)."""
    from expressivity.manifest import remove_written
    from expressivity.training.checkpoint import checkpoint_exists, read_checkpoint_config
    from expressivity.training.ensemble import ENSEMBLE_FILES

    packs = out / "packs"
    for folder in sorted(packs.iterdir()) if packs.is_dir() else []:
        try:
            members = read_checkpoint_config(folder / "ensemble").get("members") \
                if checkpoint_exists(folder / "ensemble") else None
        except ExpressivityError:
            continue
        if isinstance(members, list) and members and all(
                isinstance(m, str) and m in recorded and recorded[m]["status"] != "failed" for m in members):
            remove_written(folder, ENSEMBLE_FILES)
            _remove_if_empty(folder)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # missing, or an interrupted ensemble still has its checkpoint there


def _config_id(d: dict) -> str:
    from expressivity.records import content_hash

    return content_hash(d)
