"""``expressivity sweep run|show``: parse options and call :func:`expressivity.experiments.run_sweep`."""

from __future__ import annotations

import json
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path

import click

from expressivity.cli.common import (interrupted_by, interrupted_exit_code, SweepProgress, check_memory_budget, console, emit_json, err_console,
                                     execution_choices, execution_options, human_output_to_stderr, run_record)
from expressivity.errors import ExpressivityError
from expressivity.verify.size import counted


@contextmanager
def warnings_as_lines():
    """Show library warnings (a torn record line...) as ``warning: ...`` lines on stderr."""
    def show(message, category, filename, lineno, file=None, line=None):
        err_console.print(f"warning: {message}", markup=False, soft_wrap=True)

    saved = warnings.showwarning
    warnings.showwarning = show
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            # NumPy's overflow/invalid-value warnings (e.g. matplotlib scaling values near 1e308) are
            # not the library's: results report non-finite values themselves.
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.showwarning = show
            yield
    finally:
        warnings.showwarning = saved


def _runs_recorded(records: Path) -> int:
    """How many runs ``records`` holds (its lines counted repeats, torn and malformed lines as runs: an audit at
    scale, 2026-11-28, read "18500 runs are recorded" where 18,000 were); its warnings were said already."""
    from expressivity.experiments.store import read_records

    try:
        return len({r["id"] for r in read_records(records, warn=False)}) if records.exists() else 0
    except ExpressivityError:
        return 0


@click.group("sweep")
def sweep():
    """Run a sweep of training runs (a .py file with configs(), or a JSON/TOML grid) into a folder."""


@sweep.command("run")
@click.argument("sweep_file", metavar="SWEEP", type=click.Path(dir_okay=False))   # a str: "" is not "."
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), required=True,
              help="folder for records.jsonl, runs/ and sweep.json; run again with the same folder to continue")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="local: a process pool on this machine; ray: Ray tasks (a cluster with --ray-address)")
@click.option("--workers", type=click.IntRange(min=1), help="parallel packs (local default: one per core)")
@click.option("--threads", type=click.IntRange(min=1), help="PyTorch threads per pack (default: cores / workers; Ray: 1)")
@click.option("--ray-address", "ray_address", help="Ray cluster address (auto, host:6379); default RAY_ADDRESS, else a private local Ray")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
@execution_options
@click.option("--pack", "max_pack", type=click.IntRange(min=1), default=None,
              help="most runs trained as one ensemble (runs differing only in seed or lr are packed; default: 16 on "
                   "the CPU, every seed and lr of a configuration on CUDA, split only to fit the memory budget)")
@click.option("--retry-failed", is_flag=True, help="run again the runs recorded as failed by an error (not NaN)")
@click.option("--verbose", is_flag=True, help="with --backend ray: show Ray's own log lines and the tasks' output")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def sweep_run(sweep_file, out, backend, workers, threads, ray_address, device, precision, attention_kernel, capture,
              sampler, memory_budget, max_pack, retry_failed, verbose, as_json):
    """Run every run of SWEEP not yet recorded in --out; exit 1 if any run failed."""
    from expressivity.experiments import load_sweep, run_sweep
    from expressivity.progress import progress_bar
    from expressivity.records import run_record

    if backend != "ray" and ray_address is not None:
        raise click.UsageError("--ray-address applies with --backend ray")
    if backend != "ray" and verbose:
        raise click.UsageError("--verbose shows Ray's log lines; it applies with --backend ray")
    from expressivity.records import refuse_inside_other_output

    refuse_inside_other_output(out)
    check_memory_budget(memory_budget)
    execution = execution_choices(click.get_current_context().params)
    with warnings_as_lines(), human_output_to_stderr(as_json):
        sw = load_sweep(sweep_file)
        label = f"sweep {sw.name}"
        try:
            with progress_bar(label, None, enabled=True) as bar:
                report = run_sweep(sw, out, backend=backend, workers=workers, threads=threads, device=device,
                                   ray_address=ray_address, max_pack=max_pack, retry_failed=retry_failed,
                                   on_progress=SweepProgress(label, bar, log=True),
                                   command=" ".join(["sweep run", *sys.argv[3:]])[:500],
                                   verbose=verbose, execution=execution, memory_budget=memory_budget)
        except KeyboardInterrupt:
            from expressivity.experiments.store import RECORDS

            n = _runs_recorded(out / RECORDS)
            err_console.print(f"error: interrupted{interrupted_by()}: {n} runs are recorded in {out}; run the same command again to "
                              "continue" if out.exists() else f"error: interrupted{interrupted_by()} before anything was recorded; nothing "
                              "was written", markup=False, soft_wrap=True)
            sys.exit(interrupted_exit_code())
    # what shaped the runs, as the folder's run.json records them resolved (the --json record said only sweep and
    # file; a first version copied what was typed, "pack": null where 16 applied: a review, 2026-11-28)
    try:
        ran = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        ran = {}
    config = {"sweep": report.sweep, "file": str(sweep_file), "out": str(out), "retry_failed": retry_failed,
              **{k: ran.get(k) for k in ("backend", "device", "workers", "threads", "max_pack", "execution",
                                         "memory_budget")}}
    summary = report.as_dict() | {"run": run_record("sweep run", config)}
    if as_json:
        emit_json(summary)
    else:
        console.print(f"sweep {report.name}: {report.runs} runs, {report.skipped} recorded before, {report.done} done "
                      f"and {report.failed} failed now, in {report.packs} packs on {report.backend} "
                      f"({report.workers} workers x {report.threads} threads), {report.seconds:.1f} s; "
                      f"records in {out}/records.jsonl", markup=False, soft_wrap=True)
    failed = sum(report.failures.values())
    if failed:
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(report.failures.items()))
        # the list without selection: a run that diverged loses its selection, and the selected view hid it; and
        # --retry-failed trains crashed runs only, so it is offered where some are (an audit, 2026-11-29: it was
        # offered for 9 diverged runs and trained none)
        crashed = failed - report.failures.get("nan", 0)
        advice = ("once their cause is fixed (a full disk, a missing file), train them again with --retry-failed"
                  if crashed else "")
        if report.failures.get("nan"):
            advice += ("; " if advice else "") + ("a run that diverged (nan) is a result, trained again by no "
                                                  "option: change its learning rate or settings in the sweep file")
        err_console.print(f"error: {failed} of {report.runs} runs failed ({kinds}); list them with: expressivity "
                          f"results {out} --runs --no-select --where \"status = 'failed'\" --format json; {advice}",
                          markup=False, soft_wrap=True)
        sys.exit(1)


@sweep.command("show")
@click.argument("sweep_file", metavar="SWEEP", type=click.Path(dir_okay=False))   # a str: "" is not "."
@click.option("--pack", "max_pack", type=click.IntRange(min=1), default=16, show_default=True,
              help="most runs trained as one ensemble, as 'sweep run --pack' plans them")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def sweep_show(sweep_file, max_pack, as_json):
    """Check SWEEP and show its runs, varying settings and packs, without training.

    The packs are the CPU's before the memory budget: `sweep run` splits a pack further where it is
    above the budget (many workers, a small machine, --memory-budget), and packs for a GPU."""
    from expressivity.experiments import load_sweep, plan_packs
    from expressivity.experiments.packing import pack_sizes
    from expressivity.experiments.table import varying_settings

    t0 = time.perf_counter()
    # a grid near the 100,000-run limit takes half a minute here to check and plan: say what is going on
    waiting = err_console.status("checking the sweep's runs and planning its packs ...") if err_console.is_terminal \
        else nullcontext()
    with waiting:
        sw = load_sweep(sweep_file)
        packs = plan_packs(sw.configs, max_pack, dicts=sw.config_dicts())
        varying = varying_settings(sw.config_dicts())
    sizes = pack_sizes(packs)
    # packs by size, as the plan gives them ("pack_sizes": [2, 6] of 3 packs listed the distinct sizes only, and
    # "seconds" did not say of what: a fresh audit, 2026-11-29)
    out = {"name": sw.name, "sweep": sw.id(), "runs": len(sw.configs), "packs": len(packs),
           "pack_sizes": {str(size): n for size, n in sizes.items()}, "select": sw.select_text(),
           "varying": varying, "steps": sum(c.train.steps for c in sw.configs),
           "planning_seconds": time.perf_counter() - t0}
    if as_json:
        record = run_record("sweep show", {"sweep_file": str(sweep_file), "pack": max_pack})
        emit_json(out | {"configs": sw.config_dicts(), "run": record})
        return
    by_size = ", ".join(f"{counted(n, 'pack')} of {size}" for size, n in sizes.items())
    console.print(f"sweep {sw.name} ({sw.id()}): {counted(len(sw.configs), 'run')} in {counted(len(packs), 'pack')} "
                  f"({by_size}), {out['steps']:,} training steps in all", markup=False, soft_wrap=True)
    for k, values in varying.items():
        console.print(f"  {k}: {', '.join(map(str, values))}", markup=False, soft_wrap=True)
    for k, rule in sw.select_text().items():
        console.print(f"  select {k}: {rule} (per configuration and seed; reported on test)", markup=False, soft_wrap=True)
