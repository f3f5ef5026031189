"""``expressivity train`` and ``expressivity tasks``: thin commands over :mod:`expressivity.training`.

Run layout under ``--out DIR``: ``run.json`` (the run record: command, config, seeds, package
version), ``loss_curve.png``, and per seed ``seed_<s>/metrics.jsonl`` and
``seed_<s>/checkpoint/`` (safetensors + JSON config + optimizer/RNG state).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from expressivity.cli.common import console, emit_json, err_console, run_record, write_json
from expressivity.errors import ExpressivityError
from expressivity.nn import APE_NAMES, MIXER_NAMES, RPE_NAMES


def _threads(n: int | None) -> None:
    import torch

    # Small models run fastest on few threads; 2 suits the 2-core CI machines.
    torch.set_num_threads(n or max(1, min(2, os.cpu_count() or 1)))


def _parse_task_args(values: tuple[str, ...]) -> dict:
    out = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE; write e.g. --task-arg vocab=32", param_hint="--task-arg")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _parse_seeds(text: str) -> list[int]:
    if any(not s.strip() for s in text.split(",")):
        raise click.BadParameter(f"{text!r} has an empty field; give distinct seeds like 0,1,2", param_hint="--seeds")
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers like 0,1,2", param_hint="--seeds") from None
    if any(s < 0 for s in seeds):
        raise click.BadParameter(f"seeds must be >= 0; got {text!r}", param_hint="--seeds")
    if not seeds or len(set(seeds)) != len(seeds):
        raise click.BadParameter(f"give distinct seeds like 0,1,2; got {text!r}", param_hint="--seeds")
    return seeds


def plot_loss_curves(histories: dict[int, list[dict]], path: Path, title: str) -> Path:
    """Training loss (and held-out metric, if any) against step, one line per seed; PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.4))
    for seed, hist in histories.items():
        tr = [(h["step"], h["loss"]) for h in hist if "lr" in h]
        ev = [(h["step"], h["eval_metric"]) for h in hist if "eval_metric" in h]
        if tr:
            ax1.plot(*zip(*tr), label=f"seed {seed}")
        if ev:
            ax2.plot(*zip(*ev), marker=".", label=f"seed {seed}")
    ax1.set_yscale("log")
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss")
    ax2.set_xlabel("step")
    ax2.set_ylabel("held-out metric")
    ax1.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_training(config: dict, out: Path | None, resume: bool, progress: bool, ensemble: bool = False) -> dict:
    """Train every seed of ``config`` (keys: task, task_args, model, train, seeds)."""
    from expressivity.nn import ModelConfig
    from expressivity.tasks import make_task
    from expressivity.training import TrainConfig, train, train_ensemble

    task = make_task(config["task"], **config["task_args"])
    model_cfg = ModelConfig.from_dict(config["model"])
    cfgs = [TrainConfig.from_dict({**config["train"], "seed": s}) for s in config["seeds"]]
    if ensemble:
        if resume:
            raise ExpressivityError("--resume is not supported for --ensemble runs; resume them one seed at a time")
        t0 = time.perf_counter()
        results, _ = train_ensemble(task, model_cfg, cfgs)
        seconds = time.perf_counter() - t0
        if out is not None:
            for r in results:
                d = out / f"seed_{r.seed}"
                d.mkdir(parents=True, exist_ok=True)
                (d / "metrics.jsonl").write_text("".join(json.dumps(h) + "\n" for h in r.history))
    else:
        results = []
        for c in cfgs:
            run_dir = out / f"seed_{c.seed}" if out is not None else None
            can_resume = resume and run_dir is not None and (run_dir / "checkpoint").exists()
            results.append(train(task, model_cfg, c, run_dir, resume=can_resume, progress=progress))
        seconds = sum(r.seconds for r in results)
    if out is not None:
        plot_loss_curves({r.seed: r.history for r in results}, out / "loss_curve.png", f"{task.name}: {_describe(model_cfg)}")
    return {"task": task.name, "seconds": seconds, "runs": [r.summary() for r in results], "_results": results,
            "_task": task, "_model": model_cfg}


def _describe(m) -> str:
    mix = m.mixer if isinstance(m.mixer, str) else ",".join(m.mixer)
    return (f"{mix} L={m.layers} H={m.heads} d={m.d_model} ffn={m.ffn_width} rpe={m.rpe} ape={m.ape}"
            f"{' rotary' if m.rotary else ''} norm={m.norm} {'causal' if m.causal else 'bidirectional'}")


@click.command("train")
@click.option("--task", "task_name", help="task name (see 'expressivity tasks')")
@click.option("--length", type=click.IntRange(min=1), help="sequence length (the task's 'length' argument)")
@click.option("--task-arg", "task_arg", multiple=True, metavar="KEY=VALUE", help="task argument, repeatable")
@click.option("--mixer", help=f"token mixer, or one per layer comma-separated: {', '.join(MIXER_NAMES)}")
@click.option("--rpe", type=click.Choice(RPE_NAMES), help="relative position bias")
@click.option("--learn-slopes/--fixed-slopes", default=None, help="learnable beta per head for lin/log RPE")
@click.option("--ape", type=click.Choice(APE_NAMES), help="absolute position encoding")
@click.option("--rotary/--no-rotary", default=None, help="rotary position embedding on queries and keys")
@click.option("--layers", type=click.IntRange(min=1))
@click.option("--heads", type=click.IntRange(min=1))
@click.option("--d-model", "d_model", type=click.IntRange(min=1))
@click.option("--ffn-width", "ffn_width", type=click.IntRange(min=0), help="0 = FFN-free")
@click.option("--norm", type=click.Choice(["none", "pre"]))
@click.option("--causal/--bidirectional", default=None)
@click.option("--steps", type=click.IntRange(min=1))
@click.option("--batch-size", "batch_size", type=click.IntRange(min=1))
@click.option("--lr", type=click.FloatRange(min=0, min_open=True))
@click.option("--target-metric", "target_metric", type=float, help="stop once the held-out metric reaches this")
@click.option("--eval-every", "eval_every", type=click.IntRange(min=1))
@click.option("--seeds", default="0", show_default=True, help="comma-separated seeds, one run each")
@click.option("--ensemble", is_flag=True, help="train all seeds at once with a model-batched forward")
@click.option("--threads", type=click.IntRange(min=1), help="torch CPU threads (default: min(2, cores))")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), help="directory for run.json, metrics, checkpoints, figure")
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False), help="continue the run in this --out directory")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def train(task_name, length, task_arg, mixer, rpe, learn_slopes, ape, rotary, layers, heads, d_model, ffn_width,
          norm, causal, steps, batch_size, lr, target_metric, eval_every, seeds, ensemble, threads, out, resume, as_json):
    """Train small models on a synthetic task and report loss and metric per seed."""
    _threads(threads)
    from expressivity.tasks import make_task
    from expressivity.training import model_config_for

    if resume is not None:
        record_path = resume / "run.json"
        if not record_path.exists():
            raise ExpressivityError(f"{record_path} not found; --resume takes a directory written by --out")
        config = json.loads(record_path.read_text())["config"]
        if steps is not None:
            config["train"]["steps"] = steps
        out = resume
    else:
        if not task_name:
            raise click.UsageError("missing --task; see 'expressivity tasks' for the names")
        args = _parse_task_args(task_arg)
        if length is not None:
            args["length"] = length
        task = make_task(task_name, **args)
        overrides = dict(mixer=tuple(mixer.split(",")) if mixer and "," in mixer else mixer, rpe=rpe, ape=ape, rotary=rotary,
                         layers=layers, heads=heads, d_model=d_model, ffn_width=ffn_width, norm=norm, causal=causal,
                         learnable_slopes=learn_slopes)
        if isinstance(overrides["mixer"], tuple) and layers is None:
            overrides["layers"] = len(overrides["mixer"])
        model_cfg = model_config_for(task, **overrides)
        tr = task.train_defaults()
        tr.update({k: v for k, v in dict(steps=steps, batch_size=batch_size, lr=lr, eval_every=eval_every).items() if v is not None})
        if target_metric is not None:
            tr["target_metric"] = target_metric
        from expressivity.training import TrainConfig

        from expressivity.training.budget import check_training_budget

        train_cfg = TrainConfig(**tr)  # validate before writing anything
        check_training_budget(model_cfg, task.seq_len, train_cfg.batch_size, train_cfg.eval_size,
                              models=len(_parse_seeds(seeds)) if ensemble else 1)
        config = {"task": task.name, "task_args": task.kwargs(), "model": model_cfg.to_dict(), "train": tr,
                  "seeds": _parse_seeds(seeds)}
        if out is not None:
            write_json(out / "run.json", run_record("train", config, seed=config["seeds"][0]))
    result = run_training(config, out, resume is not None, progress=not as_json and err_console.is_terminal, ensemble=ensemble)
    summary = {k: v for k, v in result.items() if not k.startswith("_")}
    summary["run"] = run_record("train", config, seed=config["seeds"][0])
    if as_json:
        emit_json(summary)
        return
    from rich.table import Table

    task_obj = result["_task"]
    console.print(f"[bold]{task_obj.name}[/] {json.dumps(task_obj.kwargs())}  model: {_describe(result['_model'])}")
    table = Table("seed", "status", "steps", "final loss", task_obj.metric_name, "params", "seconds")
    for r in summary["runs"]:
        table.add_row(str(r["seed"]), r["status"], str(r["steps"]), f"{r['final_loss']:.4g}",
                      "-" if r["final_metric"] is None else f"{r['final_metric']:.4f}", str(r["params"]), f"{r['seconds']:.1f}")
    console.print(table)
    if out is not None:
        console.print(f"wrote {out}/run.json, {out}/loss_curve.png, {out}/seed_*/metrics.jsonl and checkpoints")


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
        emit_json({"tasks": rows})
        return
    from rich.table import Table

    table = Table("task", "kind", "metric", "arguments (defaults)")
    for r in rows:
        table.add_row(r["name"], r["kind"], r["metric"], ", ".join(f"{k}={v!r}" for k, v in r["args"].items()))
    console.print(table)


def demo_section(out_dir: Path) -> dict:
    """A short training run for ``expressivity demo``: a 1-layer model learns ``reverse`` on
    length-8 sequences (a few seconds on 2 CPU cores); writes ``train_loss_curve.png``."""
    _threads(None)
    from expressivity.tasks import make_task
    from expressivity.training import TrainConfig, model_config_for
    from expressivity.training import train as train_one

    task = make_task("reverse", length=8)
    model_cfg = model_config_for(task)
    cfg = TrainConfig(**{**task.train_defaults(), "steps": 1500, "eval_every": 50})
    result = train_one(task, model_cfg, cfg)
    fig = plot_loss_curves({0: result.history}, Path(out_dir) / "train_loss_curve.png", f"reverse (n=8): {_describe(model_cfg)}")
    summary = {"task": "reverse", "length": 8, "model": _describe(model_cfg), **result.summary(), "figure": str(fig)}
    console.print(f"trained {summary['model']} on reverse (n=8): held-out token accuracy {summary['final_metric']:.4f} "
                  f"after {summary['steps']} steps, {summary['seconds']:.1f} s ({summary['status']}); figure {fig.name}")
    return summary
