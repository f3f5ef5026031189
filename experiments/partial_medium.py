"""Tables of a ``reproduce`` run stopped before its sweep finished, read from its sweep store.

``expressivity reproduce NAME --scale medium --out DIR`` writes its table and verdict only once
every run of the sweep is done; a stopped run resumes where it stopped when run again. This script
reads what ``DIR/sweep`` already holds and prints the cells that are complete, with the same
selection (learning rate per configuration and seed on validation), the same statistics
(``expressivity.statistics``) and the same grid-edge check as ``reproduce`` (no verdict: a verdict
needs every cell). Claims 3 and 7 and wang-e-dp.

    PYTHONPATH=src python experiments/partial_medium.py DIR [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from expressivity.experiments.claims.grids import grid_edges
from expressivity.experiments.claims.kit import seed_values
from expressivity.experiments.claims.rules import Outcomes
from expressivity.experiments.claims.wang_e_trained import (CLAIM3_LIN_HEADS, CLAIM7_FAILED, CLAIM7_SOLVED, SCAN_MODEL,
                                                            _cell3, _label7, _log_errors, error_cell, kernel_errors)
from expressivity.experiments.store import read_records
from expressivity.statistics import interval, paired_difference
from expressivity.training import RunConfig


def complete_cells(folder: Path, label) -> set:
    """Labels whose every configuration (all seeds, every learning rate of the grid) has a record:
    only there is the validation selection the one the finished run would make."""
    done = {r["id"] for r in read_records(folder)}
    cells: dict = {}
    for c in json.loads((folder / "sweep.json").read_text())["configs"]:
        cells.setdefault(label(c), []).append(RunConfig.from_dict(c).id() in done)
    return {key for key, flags in cells.items() if all(flags)}


def _cell(iv) -> dict:
    return {"value": iv.value, "ci": [iv.low, iv.high], "n": iv.n}


def claim7(folder: Path) -> dict:
    """Per-seed outcomes and mean test R^2 per pointer range and arm (the scan at d 16), per DP-free
    width and per depth cell (d 32)."""
    def label(c):   # the labels claim 7 itself uses
        return _label7(c, SCAN_MODEL)

    values, failed = seed_values(folder, label, lambda row: row["test_metric"])
    values = {k: v for k, v in values.items() if k in complete_cells(folder, label)}

    def cell(key) -> dict:
        return {**_cell(interval(values[key].values())),
                "outcomes": Outcomes.of(values[key], CLAIM7_SOLVED, CLAIM7_FAILED, failed.get(key, 0)).fmt()}

    scan = {}
    for T in sorted({k[1] for k in values if k[0] == "scan"}):
        if ("scan", T, "attention") not in values or ("scan", T, "dpfree") not in values:
            continue
        dp, free = values[("scan", T, "attention")], values[("scan", T, "dpfree")]
        scan[T] = {"dp": cell(("scan", T, "attention")), "dpfree": cell(("scan", T, "dpfree")),
                   "paired_dp_minus_dpfree": _cell(paired_difference(dp, free))}
    depth = {f"k={k[1]} L={k[2]}": cell(k) for k in sorted(values) if k[0] == "depth"}
    width = {f"d={k[1]}": cell(k) for k in sorted(values) if k[0] == "width"}
    return {"scan": scan, "depth": depth, "width": width}


def claim3(folder: Path) -> dict:
    """l1 of the learned kernel per cell (geometric mean over seeds) and paired log10 l1 of log 1 head minus lin
    CLAIM3_LIN_HEADS heads."""
    complete = complete_cells(folder, _cell3)
    l1 = {k: v for k, v in kernel_errors(folder, _cell3).items() if k in complete}
    cells = {" ".join(map(str, k)): _cell(error_cell(v)) for k, v in sorted(l1.items())}
    logs = {k: _log_errors(v) for k, v in l1.items()}
    paired = {}
    for N in sorted({k[0] for k in l1}):
        a, b = logs.get((N, "power", "log", 1), {}), logs.get((N, "power", "lin", CLAIM3_LIN_HEADS), {})
        if a and b:
            paired[N] = _cell(paired_difference(a, b))
    return {"l1": cells, f"paired_log10_l1_log1_minus_lin{CLAIM3_LIN_HEADS}": paired}


def lm_dp(folder: Path) -> dict:
    """Mean test bits per byte per (mixer, layers) over the seeds done so far."""
    def label(c):
        return f"{c['model']['mixer']} L={c['model']['layers']}"

    values, _ = seed_values(folder, label, lambda r: r["test_loss"])
    complete = complete_cells(folder, label)
    return {k: _cell(interval(v.values())) for k, v in sorted(values.items()) if k in complete}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="the reproduce --out folder (holding sweep/ and run.json)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    folder = a.out / "sweep"
    try:
        claim = json.loads((a.out / "run.json").read_text())["config"]["claim"]
        readers = {"wang-e-7": claim7, "wang-e-3": claim3, "wang-e-dp": lm_dp}
        if claim not in readers or not (folder / "records.jsonl").is_file():
            raise ValueError(f"holds no sweep of {', '.join(readers)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: {a.out} is not a reproduce --out folder of claim 3, 7 or wang-e-dp ({exc}); give one",
              file=sys.stderr)
        raise SystemExit(2) from None
    done = len(read_records(folder))   # runs recorded (a retried run once)
    total = len(json.loads((folder / "sweep.json").read_text())["configs"])
    table = readers[claim](folder)
    edges = [e.line() for e in grid_edges(a.out) if e.most_seeds]
    result = {"claim": claim, "runs_done": done, "runs": total, "table": table, "unbracketed_selections": edges}
    print(json.dumps(result, indent=1, default=str) if a.json else json.dumps(result, default=str))
    return result


if __name__ == "__main__":
    main()
