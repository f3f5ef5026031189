"""Start-up time of the light commands: every command that needs no torch (issue 32, item 4:
``--help``, ``circuits``, ``circuit``/``equivariance``/``run`` in exact and float64 arithmetic, the
RASP interpreter and the compiler's exact path, ``reproduce --list/--summary``, ``results``,
``fit``), each a fresh interpreter, against a bare ``python -c pass``, measured in interleaved
rounds in this one process and compared by medians (so a burst of machine load cannot favour
one side).

Reported per command: median wall seconds, median CPU seconds of the child (user + system, which
other processes' load moves much less than wall time), the package's share of the wall time
(median minus the bare interpreter's) and the heavy modules it imported (torch must never be
among them; ``tests/test_light_commands.py`` asserts it). Goal: every light command at most 1 s of
wall time on the 2-core machine. ``tasks`` imports torch (the task classes sample with it) and is
shown for contrast.

With ``--baseline-src DIR`` (another checkout's ``src``, e.g. ``git archive <commit> src | tar -x
-C /tmp/base``) the same commands run from that tree too, interleaved in the same rounds, and the
ratio baseline / this tree is printed: the before/after comparison on one loaded machine.

    python benchmarks/bench_startup.py [--json] [--rounds 7] [--only NAME,...] [--baseline-src /tmp/base/src]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ENTRY = "from expressivity.cli.main import main; main()"
# Run after the command in the same interpreter: which heavy modules it left imported.
PROBE = ("import sys, atexit; atexit.register(lambda: sys.stderr.write('\\nHEAVY ' + ' '.join(m for m in {heavy!r} "
         "if m in sys.modules) + '\\n'))\n")
HEAVY_MODULES = ("torch", "scipy", "duckdb", "matplotlib", "pandas", "pyarrow", "ray", "transformer_lens")

# name -> the command's arguments; {rev6}, {sort4}, {sweep}, {verdicts} and {new} are folders
# :func:`make_inputs` writes. Every one of these must stay torch-free and start within GOAL_SECONDS.
LIGHT = {
    "--help": ["--help"],
    "circuits": ["circuits"],
    "circuit reverse": ["circuit", "reverse"],
    "circuit exact": ["circuit", "max", "--dtype", "exact", "--scale", "inf"],
    "circuit --out": ["circuit", "reverse", "--out", "{new}/rev6"],
    "equivariance": ["equivariance", "reverse"],
    "equivariance exact": ["equivariance", "max", "--dtype", "exact", "--scale", "inf"],
    "run float64": ["run", "{rev6}", "--input", "1,2,3,4,5,6"],
    "run exact": ["run", "{sort4}", "--input", "0,3,1,2", "--dtype", "exact"],   # BOS (id 0) first
    "rasp eval": ["rasp", "eval", "sort", "--input", "3,1,2"],
    "rasp compile": ["rasp", "compile", "reverse", "--max-len", "4"],
    "rasp compile sort": ["rasp", "compile", "sort", "--max-len", "4"],
    "rasp compile --out": ["rasp", "compile", "sort", "--max-len", "4", "--out", "{new}/sort4"],
    "reproduce --list": ["reproduce", "--list"],
    "reproduce --summary": ["reproduce", "--summary", "{verdicts}"],
    "results": ["results", "{sweep}"],
    "results --json": ["results", "{sweep}", "--runs", "--json"],
    "fit": ["fit", "{sweep}", "--x", "train.lr", "--y", "test_metric"],
}
HEAVY = {"tasks": ["tasks"]}   # imports torch by design: shown for contrast
GOAL_SECONDS = 1.0

# A sweep of two tiny runs (two learning rates): what `results` and `fit` read.
SWEEP = {"base": {"task": {"name": "reverse", "args": {"length": 4, "vocab": 6}},
                  "model": {"layers": 1, "heads": 1, "d_model": 8, "ffn_width": 8},
                  "train": {"steps": 2, "batch_size": 8, "eval_every": 1, "eval_size": 16}},
         "grid": {"train.lr": [1e-3, 1e-2], "seed": [0]}, "select": {"train.lr": "min val_loss"}}
# What `reproduce --summary` reads of a finished run (the fields of verdict.json it uses); a real
# run takes seconds and is not what is timed here.
VERDICT = {"claim": "wang-e-8", "scale": "quick", "verdict": "reproduced", "tag": "[V]", "reason": "written by the benchmark",
           "regime": {"scale": "quick", "checks": {}, "notes": "float64 networks"}}


def _env(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def make_inputs(folder: Path, src: Path = SRC) -> dict[str, str]:
    """Write what the light commands read into ``folder``: a circuit and a compiled RASP program
    (each by its command), a finished sweep and a verdict; returns the placeholders of :data:`LIGHT`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sweep.json").write_text(json.dumps(SWEEP))
    (folder / "verdicts").mkdir(exist_ok=True)
    (folder / "verdicts" / "verdict.json").write_text(json.dumps(VERDICT))
    (folder / "verdicts" / "criterion.md").write_text("criterion written by the benchmark\n")   # --summary shows it
    # the run record a verdict is traced to (--summary refuses a verdict without one)
    (folder / "verdicts" / "run.json").write_text(json.dumps({"command": "reproduce wang-e-8", "config": {},
                                                              "verdict": VERDICT["verdict"]}))
    for args in (["circuit", "reverse", "--length", "6", "--out", folder / "rev6"],
                 ["rasp", "compile", "sort", "--max-len", "4", "--out", folder / "sort4"],
                 ["sweep", "run", folder / "sweep.json", "--out", folder / "sweep", "--workers", "1"]):
        subprocess.run([sys.executable, "-c", ENTRY, *map(str, args)], check=True, env=_env(src),
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    (folder / "new").mkdir(exist_ok=True)
    return {"rev6": str(folder / "rev6"), "sort4": str(folder / "sort4"), "sweep": str(folder / "sweep"),
            "verdicts": str(folder / "verdicts"), "new": str(folder / "new")}


def command_line(args: list[str], places: dict[str, str]) -> list[str]:
    return [a.format(**places) for a in args]


def run_once(args: list[str], src: Path = SRC) -> tuple[float, float, list[str], subprocess.CompletedProcess]:
    """One fresh interpreter running ``expressivity ARGS``: ``(wall s, CPU s, heavy modules, process)``."""
    code = PROBE.format(heavy=HEAVY_MODULES) + ENTRY
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], env=_env(src), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stderr.splitlines() if line.startswith("HEAVY")]
    heavy = lines[-1].split()[1:] if lines else ["?"]
    return wall, cpu, heavy, done


def measure(rounds: int, places: dict, commands: dict, baseline: Path | None = None) -> dict:
    sides = [("", SRC)] + ([("baseline ", baseline)] if baseline is not None else [])
    walls = {"bare": []}
    cpus, heavy = {}, {}
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        walls["bare"].append(time.perf_counter() - start)
        for name, args in commands.items():
            for prefix, src in sides:
                wall, cpu, modules, done = run_once(command_line(args, places), src)
                if done.returncode != 0:
                    raise SystemExit(f"{prefix}{name} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
                walls.setdefault(prefix + name, []).append(wall)
                cpus.setdefault(prefix + name, []).append(cpu)
                heavy[prefix + name] = modules
    bare = statistics.median(walls["bare"])
    rows = {}
    for name in commands:
        median = statistics.median(walls[name])
        goal = GOAL_SECONDS if name in LIGHT else None
        rows[name] = {"median_s": median, "cpu_s": statistics.median(cpus[name]), "package_s": median - bare,
                      "heavy_imports": heavy[name], "goal_s": goal,
                      "meets_goal": None if goal is None else median <= goal and "torch" not in heavy[name]}
        if baseline is not None:
            before = statistics.median(walls[f"baseline {name}"])
            rows[name] |= {"baseline_median_s": before, "baseline_cpu_s": statistics.median(cpus[f"baseline {name}"]),
                           "baseline_heavy_imports": heavy[f"baseline {name}"], "baseline_over_this": before / median}
    return {"bare_python_s": bare, "rounds": rounds, "commands": rows, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", default=None, help="comma-separated command names of LIGHT and HEAVY")
    parser.add_argument("--baseline-src", type=Path, default=None, help="another checkout's src folder to compare with")
    args = parser.parse_args()
    commands = {**LIGHT, **HEAVY}
    if args.only:
        wanted = [n.strip() for n in args.only.split(",")]
        unknown = [n for n in wanted if n not in commands]
        if unknown:
            parser.error(f"unknown command name(s) {unknown}; choose from {list(commands)}")
        commands = {n: commands[n] for n in wanted}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        places = make_inputs(Path(tmp))
        result = measure(args.rounds, places, commands, args.baseline_src)
    if args.json:
        print(json.dumps(result))
        return
    print(f"bare python -c pass: {result['bare_python_s']:.3f} s (median of {args.rounds}; {result['machine']}; "
          f"load average {', '.join(f'{x:.1f}' for x in result['load_average'])})")
    print(f"goal: every light command <= {GOAL_SECONDS:g} s wall and torch-free")
    for name, row in result["commands"].items():
        goal = "" if row["goal_s"] is None else f"  {'met' if row['meets_goal'] else 'MISSED'}"
        heavy = ",".join(row["heavy_imports"]) or "-"
        print(f"{name:20s} {row['median_s']:.3f} s wall, {row['cpu_s']:.3f} s CPU (package {row['package_s']:.3f} s; "
              f"heavy imports: {heavy}){goal}")
        if "baseline_median_s" in row:
            print(f"{'':20s} baseline {row['baseline_median_s']:.3f} s wall, {row['baseline_cpu_s']:.3f} s CPU "
                  f"(heavy: {','.join(row['baseline_heavy_imports']) or '-'}): baseline / this = "
                  f"{row['baseline_over_this']:.2f}")


if __name__ == "__main__":
    main()
