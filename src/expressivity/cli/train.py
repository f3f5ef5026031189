"""``expressivity train`` and ``expressivity tasks``: parse options into :class:`RunConfig`\\ s and
call :func:`expressivity.training.run` (or :func:`run_ensemble`); nothing else.

Run folder under ``--out DIR``: ``run.json`` (the record: command, base configuration, seeds,
run ids, package versions), ``manifest.json`` (what the folder holds), ``loss_curve.png``, and
per seed ``seed_<s>/metrics.jsonl`` and ``seed_<s>/checkpoint/``; an ensemble also keeps its group
checkpoint in ``ensemble/``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import click

from expressivity.cli.common import (interrupted_by, interrupted_exit_code, EXECUTION_PARAMS, check_memory_budget, console, emit_json, err_console,
                                     execution_choices, execution_options, option_flag, run_record, typed_options,
                                     write_json)
from expressivity.errors import ExpressivityError
from expressivity.records import check_output_dir, make_parents, remove_empty

# Options that choose how a command runs, not what it computes: allowed with --resume.
EXECUTION_OPTIONS = ("resume", "json", "threads", "as_json", "device", *EXECUTION_PARAMS)


def _threads(n: int | None) -> None:
    import torch

    cores = os.cpu_count() or 1
    if n is not None and n > cores:
        raise click.BadParameter(f"{n} is more than the {cores} CPU cores here; use 1 to {cores}", param_hint="--threads")
    # Small models run fastest on few threads; 2 suits the 2-core CI machines.
    torch.set_num_threads(n or max(1, min(2, cores)))


def _parse_task_args(values: tuple[str, ...]) -> dict:
    out = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE; write e.g. --task-arg vocab=32", param_hint="--task-arg")
        k, v = item.split("=", 1)
        key = k.strip().replace("-", "_")
        if not key:
            raise click.BadParameter(f"{item!r} has an empty key; write e.g. --task-arg vocab=32", param_hint="--task-arg")
        if key in out:
            raise click.BadParameter(f"{key} is given twice; give each task argument once", param_hint="--task-arg")
        out[key] = v.strip()
    return out


def _parse_int_list(text: str, option: str, example: str, least: int = 0) -> list[int]:
    from expressivity.training.config import MAX_SEED

    if any(not s.strip() for s in text.split(",")):
        raise click.BadParameter(f"{text!r} has an empty field; give distinct integers like {example}", param_hint=option)
    try:
        values = [int(s) for s in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers like {example}",
                                 param_hint=option) from None
    if any(not least <= v <= MAX_SEED for v in values):
        raise click.BadParameter(f"values must be integers in [{least}, 2^63); got {text!r}", param_hint=option)
    if len(set(values)) != len(values):
        raise click.BadParameter(f"give distinct integers like {example}; got {text!r}", param_hint=option)
    return values


def _refuse_unused_options(ctx: click.Context, model, task=None) -> None:
    """Options the user gave that no layer of the chosen model reads (ModelConfig cannot tell a given
    ``False`` or a head count from a default, so the command checks what was typed), or that the
    task cannot honour (``task``: a :class:`~expressivity.training.config.TaskSpec`)."""
    from expressivity.nn.mixers import readers, switches_read

    given = set(typed_options(ctx))
    read = switches_read(model.layer_mixers())
    unused = []
    if "causal" in given and set(model.layer_mixers()) == {"none"}:
        unused.append(f"{option_flag(ctx, 'causal')} (feed-forward-only blocks mix no tokens, so nothing is causal "
                      "or bidirectional)")
    if ctx.params.get("sampler") == "device" and task is not None and not task.build().device_sampling():
        unused.append(f"--sampler device (task {task.name} samples on the host only)")
    if "learn_slopes" in given and model.rpe not in ("lin", "log"):
        unused.append(f"{option_flag(ctx, 'learn_slopes')} (only lin and log biases have slopes)")
    if "heads" in given and "heads" not in read:
        unused.append(f"--heads (the mixers {', '.join(model.layer_mixers())} have no heads)")
    if "rotary" in given and "rotary" not in read:
        unused.append(f"{option_flag(ctx, 'rotary')} (no {readers('rotary')} layer)")
    softmax = "attention" in model.layer_mixers() and getattr(model, "normalization", "softmax") == "softmax"
    if ctx.params.get("attention_kernel") not in (None, "auto") and not softmax:
        unused.append(f"--attention-kernel (no softmax attention layer: the mixers are "
                      f"{', '.join(dict.fromkeys(model.layer_mixers()))}"
                      f"{', hardmax' if 'attention' in model.layer_mixers() else ''})")
    if unused:
        raise click.UsageError("options that do not apply: " + "; ".join(unused))


def _describe(m) -> str:
    mix = m.mixer if isinstance(m.mixer, str) else ",".join(m.mixer)
    return (f"{mix} L={m.layers} H={m.heads} d={m.d_model} ffn={m.ffn_width} rpe={m.rpe} ape={m.ape}"
            f"{' rotary' if m.rotary else ''} norm={m.norm} {'causal' if m.causal else 'bidirectional'}")


def build_configs(task_name: str, task_args: dict, model: dict, train: dict, seeds: list[int],
                  eval_lengths: tuple[int, ...] = ()) -> list:
    """One :class:`RunConfig` per seed; the task's defaults fill every unset value."""
    from expressivity.training import RunConfig

    mixer = model.get("mixer")
    if isinstance(mixer, str) and "," in mixer:
        model["mixer"] = tuple(m.strip() for m in mixer.split(","))
        model.setdefault("layers", len(model["mixer"]))
    base = RunConfig.for_task(task_name, task_args, model, train, seeds[0], eval_lengths)
    return [base.with_changes(seed=s) for s in seeds]


def execute(configs: list, out: Path | None, *, resume: bool, ensemble: bool, progress: bool,
            device: str = "cpu", execution: dict | None = None, memory_budget=None) -> list:
    """Train every config (one run per seed, or one ensemble); returns their results."""
    from expressivity import training

    how = {"device": device, "execution": execution, "memory_budget": memory_budget}
    if ensemble:
        results, _ = training.run_ensemble(configs, out, resume=resume, progress=progress, **how)
        return results
    results = []
    for c in configs:
        run_dir = out / f"seed_{c.seed}" if out is not None else None
        can_resume = resume and run_dir is not None and (run_dir / "checkpoint").exists()
        results.append(training.run(c, run_dir, resume=can_resume, progress=progress, **how))
    return results


@click.command("train")
@click.option("--task", "task_name", help="task name (see 'expressivity tasks')")
@click.option("--length", type=click.IntRange(min=1), help="training length (the task's 'length' argument)")
@click.option("--eval-lengths", "eval_lengths", help="also evaluate at these task lengths, e.g. 8,16,32")
@click.option("--task-arg", "task_arg", multiple=True, metavar="KEY=VALUE", help="task argument, repeatable")
@click.option("--mixer", help="token mixer, or one per layer comma-separated (an unknown name is refused with "
                               "the list of mixers)")
@click.option("--rpe", help="relative position bias: none, t5, lin, log, free, matrix")
@click.option("--learn-slopes/--fixed-slopes", default=None, help="learnable beta per head for lin/log RPE")
@click.option("--ape", help="absolute position encoding: none, sinusoidal, learned")
@click.option("--rotary/--no-rotary", default=None, help="rotary position embedding on queries and keys")
@click.option("--layers", type=click.IntRange(min=1), help="number of layers (default: the task's)")
@click.option("--heads", type=click.IntRange(min=1), help="heads per mixing layer (default: the task's)")
@click.option("--d-model", "d_model", type=click.IntRange(min=1), help="residual width (default: the task's)")
@click.option("--ffn-width", "ffn_width", type=click.IntRange(min=0), help="0 = FFN-free")
@click.option("--norm", help="none or pre (layer norm)")
@click.option("--causal/--bidirectional", default=None, help="mask future positions or not (default: the task's)")
@click.option("--steps", type=click.IntRange(min=1), help="optimizer steps (default: the task's)")
@click.option("--batch-size", "batch_size", type=click.IntRange(min=1), help="sequences per step (default: the task's)")
@click.option("--lr", type=float, help="peak learning rate (finite, > 0)")
@click.option("--target-metric", "target_metric", type=float, help="stop once the held-out metric reaches this")
@click.option("--eval-every", "eval_every", type=click.IntRange(min=1), help="steps between held-out evaluations (default: the task's)")
@click.option("--seeds", default="0", show_default=True, help="comma-separated seeds, one run each")
@click.option("--ensemble", is_flag=True, help="train all seeds at once with a model-batched forward")
@click.option("--threads", type=click.IntRange(min=1), help="torch CPU threads (default: min(2, cores))")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True,
              help="where to train (auto: CUDA when available, else the CPU)")
@execution_options
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), help="folder for run.json, metrics, checkpoints, figure")
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), help="continue the run in this --out folder")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.pass_context
def train(ctx, task_name, length, eval_lengths, task_arg, mixer, rpe, learn_slopes, ape, rotary, layers, heads, d_model,
          ffn_width, norm, causal, steps, batch_size, lr, target_metric, eval_every, seeds, ensemble, threads, device,
          precision, attention_kernel, capture, sampler, memory_budget, out, resume, as_json):
    """Train small models on a synthetic task and report loss and metric per seed."""
    _threads(threads)
    from expressivity.training.execution import Execution
    from expressivity.training.trainer import resolve_device

    device = resolve_device(device)
    check_memory_budget(memory_budget)
    execution = execution_choices(ctx.params)
    chosen = Execution.choose(device, **execution)   # bad combinations refused before anything is written
    if resume is not None:
        extra = [n for n in typed_options(ctx) if n not in EXECUTION_OPTIONS]
        if extra:
            raise click.UsageError("--resume continues a run exactly as it was configured; drop "
                                   + ", ".join(option_flag(ctx, n) for n in extra))
        kept = [n for n in ("precision", "sampler") if ctx.params.get(n) not in (None, "auto")]
        if kept:   # they change the numbers: the checkpoint's are kept (Execution.resumed)
            raise click.UsageError("a resumed run keeps the precision and sampler it started with; drop "
                                   + ", ".join(option_flag(ctx, n) for n in kept))
        configs, ensemble = _read_run_folder(resume)
        _refuse_unused_options(ctx, configs[0].model)   # --attention-kernel, the one such option a resume takes
        out = resume
    else:
        if not task_name:
            raise click.UsageError("missing --task; see 'expressivity tasks' for the names")
        args = _parse_task_args(task_arg)
        if length is not None:
            if "length" in args:
                raise click.UsageError("--length and --task-arg length=... both set the length; give one")
            args["length"] = length
        model = dict(mixer=mixer, rpe=rpe, ape=ape, rotary=rotary, layers=layers, heads=heads, d_model=d_model,
                     ffn_width=ffn_width, norm=norm, causal=causal, learnable_slopes=learn_slopes)
        model = {k: v for k, v in model.items() if v is not None}
        training = dict(steps=steps, batch_size=batch_size, lr=lr, eval_every=eval_every, target_metric=target_metric)
        lengths = tuple(_parse_int_list(eval_lengths, "--eval-lengths", "8,16", least=1)) if eval_lengths is not None else ()
        configs = build_configs(task_name, args, model, training, _parse_int_list(seeds, "--seeds", "0,1,2"), lengths)
        _refuse_unused_options(ctx, configs[0].model, configs[0].task)
        if ensemble:
            from expressivity.training.ensemble import check_packable

            if len(configs) < 2:
                raise click.UsageError("--ensemble trains several seeds at once; give two or more with --seeds")
            check_packable(configs)
        for c in configs:   # before anything is written (a folder read with --resume is checked when it trains)
            c.check_trainable()
        if out is not None:
            check_output_dir(out, "train")
            if (out / "run.json").exists():
                raise ExpressivityError(f"--out {out} already holds a run; continue it with --resume {out} "
                                        "or choose a new folder")
    created = out is not None and not out.exists()
    made = make_parents(out) if created else []
    if out is not None:   # one process trains into a folder at a time, until this command ends
        from expressivity.records import folder_in_use

        out.mkdir(exist_ok=True)
        ctx.call_on_close(folder_in_use(out, "train run").__enter__().__exit__)
        if resume is None and (out / "run.json").exists():   # written by the one that held it first
            raise ExpressivityError(f"--out {out} already holds a run; continue it with --resume {out} "
                                    "or choose a new folder")
    from expressivity.training.budget import memory_budget as budget_of

    record = run_record("train", configs[0].to_dict(), configs[0].seed) | {
        "seeds": [c.seed for c in configs], "ids": [c.id() for c in configs], "ensemble": ensemble, "device": device,
        "execution": chosen.record(), **_machine(device),
        # the budget the run was held to (--memory-budget or the device's): it was recorded nowhere (2026-11-28)
        "memory_budget": budget_of(memory_budget, device).line()}
    wrote = []
    try:
        if out is not None and resume is None:
            write_json(out / "run.json", record)
            wrote.append(out / "run.json")
            _write_manifest(out, configs, ensemble, finished=False)
            wrote.append(out / "manifest.json")
        results = execute(configs, out, resume=resume is not None, ensemble=ensemble,
                          progress=not as_json and err_console.is_terminal, device=device, execution=execution,
                          memory_budget=memory_budget)
        if resume is not None:   # after it ran: a resume refused (a damaged state.pt) recorded a session (a fuzz)
            _record_session(out, chosen)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) and resume is not None:
            _record_session(out, chosen)   # it trained until the interrupt
        # A run that failed before its first checkpoint leaves no folder behind; one with a
        # checkpoint is kept, so it can be resumed.
        kept = out is not None and any(out.rglob("config.json"))
        if created and not kept:
            shutil.rmtree(out, ignore_errors=True)
            remove_empty(made)
        elif not kept:   # an empty folder given by the user: it is left as it was
            for path in wrote:
                path.unlink(missing_ok=True)
        if isinstance(exc, KeyboardInterrupt):
            # at a step boundary (TrainingInterrupted, with its step), or outside the steps (held-out scores,
            # the last checkpoint), where click said only "aborted"
            step = getattr(exc, "step", None)
            where = ((f"; checkpoint at step {step} kept" if step is not None else "; the checkpoint is kept")
                     + f": continue with --resume {out}" if kept
                     else "; nothing was written" if out is None or created else "")
            err_console.print(f"error: interrupted{interrupted_by(exc)}{f' after step {step}' if step is not None else ''}"
                              f"{where}", markup=False, soft_wrap=True)
            sys.exit(interrupted_exit_code(exc))
        raise
    if out is not None and not (out / "run.json").is_file():
        # the folder was removed (or emptied) while it trained: the checkpoints written since re-made parts of it, and
        # "results in OUT" was printed over a folder with no run record (a fresh audit, 2026-11-28)
        raise ExpressivityError(f"{out} was removed while the run trained (its run.json is gone): what is there now "
                                f"is not a whole run; remove {out} and train again")
    runs = [r.summary() for r in results]
    if runs and runs[0].get("execution"):   # what ran: a resumed run keeps its checkpoint's precision and sampler
        ran = runs[0]["execution"]
        if out is not None and resume is None and ran != record["execution"]:
            # a compile that failed (eager instead) or a task that samples on the host: run.json says what ran
            write_json(out / "run.json", record | {"execution": ran})
        record["execution"] = ran
    summary = {"task": configs[0].task.name, "seconds": sum(r.seconds for r in results) if not ensemble
               else results[0].seconds, "runs": runs, "run": record}
    if out is not None:
        from expressivity.figures.training import plot_loss_curves

        try:
            plot_loss_curves({r.seed: r.history for r in results}, out / "loss_curve.png",
                             f"{configs[0].task.name}: {_describe(configs[0].model)}")
            _write_manifest(out, configs, ensemble, finished=True)
        except KeyboardInterrupt:   # was click's bare "aborted", naming neither what was kept nor how to finish
            err_console.print(f"error: interrupted{interrupted_by()} after training, before the loss curve and manifest were written; "
                              f"the trained checkpoints are kept: finish with --resume {out}", markup=False,
                              soft_wrap=True)
            sys.exit(interrupted_exit_code())
    if as_json:
        emit_json(summary)
    else:
        _print_runs(configs[0], results, out)
    diverged = [r.seed for r in results if r.status == "nan"]
    if diverged:  # like a failed run in a sweep: the command did not deliver a trained model
        from expressivity.training.checkpoint import checkpoint_exists

        kept = [s for s in diverged if out is not None and checkpoint_exists(out / f"seed_{s}" / "checkpoint")]
        # a run that turned non-finite before its first checkpoint has none: say which kept one
        said = ("" if out is None else " (the last finite weights are kept in the checkpoint)" if kept == diverged
                else " (no checkpoint was kept: the loss turned non-finite before the first one)" if not kept
                else f" (the last finite weights are kept in the checkpoints of seed(s) {', '.join(map(str, kept))}; "
                     "the others turned non-finite before their first checkpoint)")
        err_console.print(f"error: the loss became non-finite for seed(s) {', '.join(map(str, diverged))}; lower --lr"
                          + said, markup=False, soft_wrap=True)
        sys.exit(1)


def _machine(device: str) -> dict:
    """The CPU (or GPU) model and the thread count a session trains with: a run's bits are repeatable on
    one machine (training.md)."""
    import torch

    from expressivity.records import hardware

    return {"hardware": hardware(device), "threads": torch.get_num_threads()}


def _record_session(out: Path, chosen) -> None:
    """Append this session to ``run.json``'s ``resumed`` list (when, which code, where, how): steps trained after
    a resume were credited to the first session's commit (a fresh audit, 2026-11-28), and a resume with another
    attention kernel (which changes the numbers at float rounding) left run.json naming the first session's (a fresh
    audit, 2026-11-29). ``chosen``: this session's execution, its precision and sampler the checkpoint's."""
    import time

    import expressivity
    from expressivity.records import source_revision

    path = out / "run.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return   # _read_run_folder refused an unreadable folder already; nothing to add to
    if isinstance(record, dict):
        sessions = record.get("resumed") if isinstance(record.get("resumed"), list) else []
        saved = record.get("execution") if isinstance(record.get("execution"), dict) else None
        session = {"created_unix": time.time(), "source": source_revision(),
                   "expressivity_version": expressivity.__version__, "execution": chosen.resumed(saved).record(),
                   **_machine(record.get("device") or "cpu")}
        write_json(path, record | {"resumed": sessions + [session]})


def _write_manifest(out: Path, configs: list, ensemble: bool, finished: bool) -> None:
    """``out/manifest.json``: one trained run per seed. Written when the run starts, so an interrupted
    run (kept to be resumed) has one too, and again at the end, when the loss curve is drawn."""
    from expressivity.manifest import RUN_RECORD, NetworkEntry, trained_run_files, write_manifest

    files = {"run.json": RUN_RECORD + "; --resume reads it"}
    for c in configs:
        files |= trained_run_files(f"seed_{c.seed}/")
    if ensemble:
        files["ensemble/"] = "checkpoint of the whole ensemble (all seeds, for --resume)"
    if finished:
        files["loss_curve.png"] = "figure: loss curves, one per seed"
    networks = [NetworkEntry(f"seed_{c.seed}", f"seed {c.seed}", "trained run") for c in configs]
    write_manifest(out, "trained runs", "train", files, networks)


def _read_run_folder(folder: Path) -> tuple[list, bool]:
    """The configurations recorded in ``folder/run.json`` (written by ``train --out``)."""
    from expressivity.training import RunConfig

    path = folder / "run.json"
    if not path.exists():
        raise ExpressivityError(f"{path} not found; --resume takes a folder written by train --out")
    try:
        record = json.loads(path.read_text())
        if record.get("command") != "train":
            raise ExpressivityError(f"{path} records a '{record.get('command')}' command, not a training run; "
                                    "--resume takes a folder written by train --out")
        base = RunConfig.from_dict(record["config"])
        seeds, ensemble = record["seeds"], bool(record.get("ensemble", False))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise ExpressivityError(f"{path} is not a run record written by train --out ({type(exc).__name__}); "
                                "start a new run instead") from None
    configs = [base.with_changes(seed=s) for s in seeds]
    if [c.id() for c in configs] != record.get("ids", [c.id() for c in configs]):
        raise ExpressivityError(f"{path} was written by another version of this program (run ids differ); "
                                "start a new run instead")
    return configs, ensemble


def _print_runs(config, results, out: Path | None) -> None:
    from rich.table import Table

    from expressivity.cli.tables import print_table

    task = config.build_task()
    console.print(f"[bold]{task.name}[/] {json.dumps(config.task.args)}  model: {_describe(config.model)}")
    task_length = task.length
    lengths = [task_length, *(L for L in config.eval_lengths if L != task_length)]
    table = Table("seed", "status", "steps", "final loss", f"val {task.metric_name}", f"test {task.metric_name}",
                  *[f"test {task.metric_name} @ length {L}" for L in lengths[1:]], "params", "seconds")
    for r in results:
        table.add_row(str(r.seed), r.status, str(r.steps), f"{r.final_loss:.4g}",
                      "-" if r.final_metric is None else f"{r.final_metric:.4f}",
                      *[f"{r.lengths[L]['test_metric']:.4f}" if L in r.lengths else "-" for L in lengths],
                      str(r.params), f"{r.seconds:.1f}")
    print_table(console, table)
    if out is not None:
        kept = sum(r.status != "nan" or (out / f"seed_{r.seed}" / "checkpoint").is_dir() for r in results)
        console.print(f"results in {out}/: run.json, loss_curve.png, seed_*/metrics.jsonl and "
                      + ("checkpoints" if kept == len(results) else f"the checkpoints of {kept} of {len(results)} runs"))


@click.command("tasks")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def tasks(as_json):
    """List the training tasks with their arguments and defaults."""
    from expressivity.tasks import TASKS, task_args

    rows = []
    for name, cls in TASKS.items():
        doc = (cls.__doc__ or "").strip().splitlines()
        rows.append({"name": name, "kind": cls.kind, "metric": cls.metric_name, "args": task_args(name),
                     "description": doc[0] if doc else ""})
    if as_json:
        emit_json({"tasks": rows, "run": run_record("tasks", {})})
        return
    from rich.table import Table

    from expressivity.cli.tables import print_table

    table = Table("task", "kind", "metric", "arguments (defaults)")
    for r in rows:
        table.add_row(r["name"], r["kind"], r["metric"], ", ".join(f"{k}={v!r}" for k, v in r["args"].items()))
    print_table(console, table)


def demo_section(out_dir: Path) -> dict:
    """A short training run for ``expressivity demo``: a 1-layer model learns ``reverse`` on
    length-8 sequences (a few seconds on 2 CPU cores); writes ``train_loss_curve.png``."""
    from expressivity.figures.training import plot_loss_curves
    from expressivity.training import RunConfig, run

    _threads(None)
    config = RunConfig.for_task("reverse", {"length": 8}, train={"steps": 1500, "eval_every": 50})
    result = run(config)
    fig = plot_loss_curves({0: result.history}, Path(out_dir) / "train_loss_curve.png",
                           f"reverse (n=8): {_describe(config.model)}")
    summary = {"task": "reverse", "length": 8, "model": _describe(config.model), **result.summary(),
               "figure": str(fig)}
    # the test split's accuracy (final_metric is the validation one, which also stops training)
    test = result.lengths[config.build_task().length]["test_metric"]
    summary["test_metric"] = test
    console.print(f"trained {summary['model']} on reverse (n=8): test token accuracy {test:.4f} "
                  f"after {summary['steps']} steps, {summary['seconds']:.1f} s ({summary['status']}); figure {fig.name}")
    return summary
