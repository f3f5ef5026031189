"""``expressivity demo``: the main job on embedded defaults.

Runs every tutorial circuit in every arithmetic that applies, checks permutation equivariance,
draws the reversal attention pattern and the error-vs-scale figure, then runs the demo
sections of the other subsystems (Yun compiler, training) when they are installed. Everything
lands under ``--out`` with a ``summary.json``, a ``run.json`` recording the configuration and a
``manifest.json`` listing every file (a folder of kind ``results``).
"""

from __future__ import annotations

import importlib
import math
import time
from pathlib import Path

import click

from expressivity.cli.circuits import circuit_result, equivariance_result
from expressivity.cli.common import console, emit_json, err_console, human_output_to_stderr, run_record, write_json
from expressivity.records import check_output_dir, staged_output

DEMO_LENGTH = 8
DEMO_SEED = 0
ERROR_SCALES = tuple(10 ** (-1 + 4.5 * k / 27) for k in range(28))   # 28 scales, log-spaced from 0.1 to 10^3.5

# Subsystems that contribute a ``demo_section(out_dir) -> dict`` (module path, section name).
SECTIONS = (("expressivity.cli.yun", "yun"), ("expressivity.cli.train", "training"))


def circuits_section(out: Path) -> dict:
    """Every circuit at the demo length: hardmax in exact arithmetic, auto scale in float64 and float32."""
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.constructions.circuits import CIRCUITS

    rows = []
    for name, circuit in CIRCUITS.items():
        row = {"circuit": name}
        if circuit.scaled:
            row["exact"] = circuit_result(name, DEMO_LENGTH, math.inf, "exact", seed=DEMO_SEED)["max_abs_error"]
        elif name != "attention":
            row["exact"] = circuit_result(name, DEMO_LENGTH, "auto", "exact", seed=DEMO_SEED)["max_abs_error"]
        for dtype in ("float64", "float32"):
            # float32 rounding exceeds the 1e-10 bounds: measured here, not checked (the check refuses it)
            res = circuit_result(name, DEMO_LENGTH, "auto", dtype, seed=DEMO_SEED, measure_outside=True)
            row[dtype] = res["max_abs_error"]
            row["scale"] = res["scale"]
        row["equivariant"] = equivariance_result(name, DEMO_LENGTH, seed=DEMO_SEED)["equivariant"]
        row["positional"] = circuit.positional
        rows.append(row)
    table = Table(title=f"tutorial circuits, L={DEMO_LENGTH}, inputs U[-1,1) seed {DEMO_SEED}: max |output - target|")
    for col in ("circuit", "auto scale", "exact (hardmax)", "float64", "float32", "f(PX)=Pf(X)?"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["circuit"], "-" if r.get("scale") is None else f"{r['scale']:.4g}",
                      "n/a (softmax)" if "exact" not in r else f"{r['exact']:.1e}",
                      f"{r['float64']:.1e}", f"{r['float32']:.1e}",
                      ("yes" if r["equivariant"] else "no") + (" (positional)" if r["positional"] else ""))
    print_table(console, table)
    return {"rows": rows}


def figures_section(out: Path) -> dict:
    from expressivity.figures.circuits import error_vs_scale, plot_attention_pattern, plot_error_vs_scale

    paths = {
        "reverse_attention": plot_attention_pattern("reverse-dot", 16, "auto", out / "reverse_dot_attention_auto.png"),
        "reverse_attention_soft": plot_attention_pattern("reverse-dot", 16, 2.0, out / "reverse_dot_attention_scale2.png"),
        "reverse_bias_attention": plot_attention_pattern("reverse", 16, "auto", out / "reverse_bias_attention.png"),
    }
    rows = error_vs_scale("reverse-dot", 32, ERROR_SCALES, seed=DEMO_SEED)
    paths["error_vs_scale"] = plot_error_vs_scale(rows, out / "reverse_dot_error_vs_scale.png",
                                                  "reverse-dot, L=32: error vs scale")
    write_json(out / "reverse_dot_error_vs_scale.json", {"rows": rows})
    at = next((k for k, r in enumerate(rows) if not math.isfinite(r["float32_naive"])), None)
    first_nan = None if at is None else rows[at]["scale"]
    console.print(f"figures: {', '.join(p.name for p in paths.values())}")
    if first_nan is not None:
        # the grid's points bracket the overflow; its place is a property of the scores, not of the grid
        below = f" (finite at {rows[at - 1]['scale']:.3g}, the grid's point below)" if at > 0 else ""
        console.print(f"naive float32 softmax overflows to NaN at scale {first_nan:.3g} of the scales tried{below}; "
                      "the evaluators' max-subtracted softmax stays finite at every scale")
    return {"figures": {k: str(v) for k, v in paths.items()}, "naive_float32_nan_from_scale": first_nan}


@click.command("demo")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("demo_out"),
              show_default=True, help="Folder for figures and JSON results.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object on stdout.")
def demo(out_dir: Path, as_json: bool):
    """Run the main job on embedded defaults: every circuit checked, equivariance, figures, a Yun build and a
    short training run."""
    with human_output_to_stderr(as_json):
        summary = run_demo(out_dir)
    if as_json:
        emit_json(summary)
    else:
        console.print(f"demo finished in {summary['seconds']:.1f} s; results in {out_dir}/")


def run_demo(out_dir: Path) -> dict:
    """Run every demo section, write ``summary.json`` and ``run.json`` under ``out_dir``; return the summary.

    The folder is written whole or not at all: the sections write into a staging folder that
    replaces ``out_dir`` only when everything succeeded (Ctrl-C or an error leaves nothing)."""
    import json

    from expressivity.records import jsonable

    check_output_dir(out_dir, "demo", replaces=True)
    started = time.perf_counter()
    summary: dict = {}
    with staged_output(out_dir, "demo") as stage:
        with console.status("circuits and equivariance ..."):
            summary["circuits"] = circuits_section(stage)
        with console.status("figures ..."):
            summary["figures"] = figures_section(stage)
        for module_name, section in SECTIONS:
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError:
                continue
            if hasattr(module, "demo_section"):
                err_console.print(f"[bold]{section}[/]")
                summary[section] = module.demo_section(stage / section)
        summary["seconds"] = time.perf_counter() - started
        summary["run"] = run_record("demo", {"out": str(out_dir), "length": DEMO_LENGTH}, DEMO_SEED)
        # Paths inside the summary name the final folder, not the staging one.
        summary = json.loads(json.dumps(jsonable(summary)).replace(json.dumps(str(stage))[1:-1],
                                                                    json.dumps(str(out_dir))[1:-1]))
        write_json(stage / "summary.json", summary)
        write_json(stage / "run.json", summary["run"])
        _write_manifest(stage)
    return summary


# What the demo's files are, by name (anything else a section wrote: "written by its section").
DEMO_FILES = {"summary.json": "the demo's results: every section's numbers (JSON)", "run.json": "run record",
              "reverse_dot_error_vs_scale.json": "reverse-dot error against scale, the figure's numbers (JSON)"}


def _write_manifest(stage: Path) -> None:
    """``stage/manifest.json``, a ``results`` folder listing every file the demo wrote (so running
    it again replaces its own files only: anything else put there is named and kept)."""
    from expressivity.manifest import write_manifest

    files = {}
    for path in sorted(p for p in stage.rglob("*") if p.is_file()):
        rel = path.relative_to(stage)
        section = f"the {rel.parts[0]} section" if len(rel.parts) > 1 else "the figures section"
        files[rel.as_posix()] = DEMO_FILES.get(rel.as_posix()) or (f"figure of {section}" if path.suffix == ".png"
                                                                   else f"written by {section}")
    write_manifest(stage, "results", "demo", files, [])
