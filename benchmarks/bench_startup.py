"""Start-up time of the command line: ``expressivity --help``, ``circuits`` and ``tasks`` against a bare
``python -c pass``, each a fresh interpreter, measured in interleaved rounds in this one process and
compared by medians (so a burst of machine load cannot favour one side).

Reported per command: median wall seconds, the median of the bare interpreter, and the difference
(what the package itself costs). Goal (issue 16): ``--help`` and ``circuits`` at most 1 s in all.
``tasks`` imports torch (the task classes sample with it) and is shown for contrast.

With ``--baseline-src DIR`` (another checkout's ``src``, e.g. ``git archive <commit> src | tar -x -C /tmp/base``)
the same commands run from that tree too, interleaved in the same rounds, and the ratio
baseline / this tree is printed: the before/after comparison on one loaded machine.

    python benchmarks/bench_startup.py [--json] [--rounds 7] [--baseline-src /tmp/base/src]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = {"--help": ["--help"], "circuits": ["circuits"], "tasks": ["tasks"]}
GOAL_SECONDS = {"--help": 1.0, "circuits": 1.0}
ENTRY = "from expressivity.cli.main import main; main()"


def _seconds(args: list[str], src: Path = SRC) -> float:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def measure(rounds: int, baseline: Path | None = None) -> dict:
    times = {"bare": [], **{name: [] for name in COMMANDS}, **{f"baseline {name}": [] for name in COMMANDS}}
    for _ in range(rounds):
        times["bare"].append(_seconds(["-c", "pass"]))
        for name, args in COMMANDS.items():
            times[name].append(_seconds(["-c", ENTRY, *args]))
            if baseline is not None:
                times[f"baseline {name}"].append(_seconds(["-c", ENTRY, *args], baseline))
    bare = statistics.median(times["bare"])
    rows = {}
    for name in COMMANDS:
        median = statistics.median(times[name])
        goal = GOAL_SECONDS.get(name)
        rows[name] = {"median_s": median, "package_s": median - bare, "goal_s": goal,
                      "meets_goal": None if goal is None else median <= goal}
        if baseline is not None:
            before = statistics.median(times[f"baseline {name}"])
            rows[name] |= {"baseline_median_s": before, "baseline_over_this": before / median}
    return {"bare_python_s": bare, "rounds": rounds, "commands": rows, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline-src", type=Path, default=None, help="another checkout's src folder to compare with")
    args = parser.parse_args()
    result = measure(args.rounds, args.baseline_src)
    if args.json:
        print(json.dumps(result))
        return
    print(f"bare python -c pass: {result['bare_python_s']:.3f} s (median of {args.rounds}; {result['machine']})")
    for name, row in result["commands"].items():
        goal = "" if row["goal_s"] is None else f"  goal <= {row['goal_s']:g} s: {'met' if row['meets_goal'] else 'MISSED'}"
        print(f"expressivity {name:9s} {row['median_s']:.3f} s (package {row['package_s']:.3f} s){goal}")
        if "baseline_median_s" in row:
            print(f"    baseline {row['baseline_median_s']:.3f} s: baseline / this = {row['baseline_over_this']:.2f}")


if __name__ == "__main__":
    main()
