"""Claims from the papers, each reproduced by one command: ``expressivity reproduce NAME``.

A :class:`Claim` states its **criterion before anything runs** (written to ``criterion.md`` in the
output folder first, with the time), then runs what it needs (numerics, or a sweep on the
experiment engine with learning rates selected on validation and test metrics reported), and
returns a :class:`ClaimResult`: a table, a figure, the key numbers and a verdict --
``reproduced`` (the criterion holds), ``not reproduced`` (it does not, and the data do not
contradict the claim with confidence) or ``refuted`` (the data contradict it: the opposite
holds with disjoint 95% intervals).

Output folder: ``criterion.md``, ``results.csv`` and ``results.json`` (the table), ``figure.png``,
``verdict.json``, ``run.json``, and ``sweep/`` for claims that train (the engine's folder, so a
killed reproduction resumes where it stopped when run again).
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from expressivity.errors import ExpressivityError
from expressivity.records import check_output_dir, jsonable, run_record, write_json

VERDICTS = ("reproduced", "not reproduced", "refuted")


@dataclass
class ClaimContext:
    """What a claim's run gets: where to write, how big to be, how to run sweeps."""

    out: Path
    quick: bool
    workers: int | None = None
    threads: int | None = None
    backend: str = "local"
    device: str = "cpu"
    ray_address: str | None = None
    on_progress: Callable | None = None
    overrides: dict = field(default_factory=dict)

    def size(self, name: str, quick, full):
        """A size setting of the claim: ``quick`` or ``full`` by mode, unless ``overrides`` names it
        (tests run claims end to end at toy sizes this way; the overrides are recorded in run.json)."""
        return self.overrides.get(name, quick if self.quick else full)

    def run_sweep(self, sweep, name: str = "sweep"):
        """Run ``sweep`` into ``out/name`` (resuming what a previous, interrupted call left)."""
        from expressivity.experiments.launch import run_sweep

        report = run_sweep(sweep, self.out / name, backend=self.backend, workers=self.workers, threads=self.threads,
                           device=self.device, ray_address=self.ray_address, on_progress=self.on_progress)
        return self.out / name, report


@dataclass
class ClaimResult:
    """A claim's outcome: ``rows`` (the table), ``figure`` (a PNG), ``numbers`` (what the verdict
    rests on) and the ``verdict`` with the ``reason`` in one or two sentences."""

    verdict: str
    reason: str
    rows: list[dict]
    figure: Path | None
    numbers: dict = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


@dataclass(frozen=True)
class Claim:
    """One checkable claim: where it comes from, the criterion, and how to test it."""

    name: str
    title: str
    source: str
    criterion: str
    run: Callable[[ClaimContext], ClaimResult]
    quick_budget: str = "10 CPU-minutes on 2 cores"
    full: str = ""
    trains: bool = True  # False: pure numerics, so the sweep options (backend, workers, device) do not apply


CLAIMS: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    if claim.name in CLAIMS:
        raise ValueError(f"claim {claim.name!r} registered twice")
    CLAIMS[claim.name] = claim
    return claim


def get_claim(name: str) -> Claim:
    _load_all()
    if name not in CLAIMS:
        raise ExpressivityError(f"unknown claim {name!r}; use one of {', '.join(sorted(CLAIMS))}")
    return CLAIMS[name]


def all_claims() -> dict[str, Claim]:
    _load_all()
    return dict(CLAIMS)


def _load_all() -> None:
    """Import the modules that register claims (each registers at import)."""
    import importlib

    for module in CLAIM_MODULES:
        importlib.import_module(module)


CLAIM_MODULES = ("expressivity.experiments.claims.wang_e", "expressivity.experiments.claims.lm")


def reproduce(name: str, out: Path, quick: bool = False, **context) -> ClaimResult:
    """State the criterion, run the claim, write the table, figure and verdict under ``out``."""
    claim = get_claim(name)
    out = check_output_dir(Path(out), f"reproduce {name}")
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    (out / "criterion.md").write_text(
        f"# {claim.title}\n\nSource: {claim.source}\n\nCriterion (stated before the run, "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(started))}):\n\n{claim.criterion}\n\n"
        f"Mode: {'quick' if quick else 'full'}\n")
    config = {"claim": name, "quick": quick, **{k: v for k, v in context.items() if k != "on_progress"}}
    write_json(out / "run.json", run_record(f"reproduce {name}", config))
    result = claim.run(ClaimContext(out, quick, **context))
    edges = [w for w in grid_edge_warnings(out) if "grid edge" not in result.notes]
    if edges:  # claims that report their own grid edges (the LM claims) are not warned twice
        result.notes = "\n".join([result.notes, *(f"warning: {w}" for w in edges)]).strip()
    write_table(result.rows, out / "results.csv")
    write_json(out / "results.json", {"rows": result.rows})
    verdict = {"claim": name, "title": claim.title, "source": claim.source, "criterion": claim.criterion,
               "verdict": result.verdict, "reason": result.reason, "numbers": result.numbers, "notes": result.notes,
               "quick": quick, "figure": None if result.figure is None else str(result.figure),
               "seconds": round(time.time() - started, 1)}
    write_json(out / "verdict.json", verdict)
    write_json(out / "run.json", run_record(f"reproduce {name}", config) | {"verdict": result.verdict})
    return result


def grid_edge_warnings(out: Path) -> list[str]:
    """One line per swept configuration whose validation selection picked the smallest or largest
    value of its grid (``train.lr``, or any selected axis) for some seed: then the grid may not
    bracket the optimum, and the verdict rests on an unbracketed choice. Reads every
    ``out/*/sweep.json`` with selection rules and the records beside it."""
    import json

    from expressivity.experiments.store import read_records
    from expressivity.experiments.sweep import parse_select
    from expressivity.experiments.table import select_runs

    lines = []
    for spec in sorted(Path(out).glob("*/sweep.json")):
        try:
            select = json.loads(spec.read_text()).get("select") or {}
            records = read_records(spec.parent)
        except (OSError, ValueError, ExpressivityError):
            continue
        if not select or not records:
            continue
        rules = parse_select(select, records[0]["config"])
        for axis in rules:
            grids: dict[str, set] = {}
            counts: dict[str, list[int]] = {}
            for r in records:
                grids.setdefault(_group_key(r["config"], axis), set()).add(
                    _lookup(r["config"], axis))
            for record, _, ok in select_runs(records, rules):
                key = _group_key(record["config"], axis)
                grid, value = grids[key], _lookup(record["config"], axis)
                edge = ok and len(grid) > 1 and value in (min(grid), max(grid))
                counts.setdefault(key, [0, 0])
                counts[key][0] += int(bool(edge))
                counts[key][1] += int(bool(ok))
            for key, (edge, total) in counts.items():
                if edge:
                    label = _describe_group(json.loads(key))
                    lines.append(f"{spec.parent.name}: {label}: selected {axis} at the grid edge for {edge} of {total} "
                                 f"seeds (grid {' '.join(f'{v:g}' for v in sorted(grids[key]))}): the grid may not "
                                 "bracket the optimum")
    return lines


def _lookup(config: dict, path: str):
    for part in path.split("."):
        config = config[part]
    return config


def _group_key(config: dict, axis: str) -> str:
    from expressivity.experiments.table import drop_path
    from expressivity.records import canonical_json

    return canonical_json(drop_path(drop_path(config, axis), "seed"))


def _describe_group(config: dict) -> str:
    """A short label of a configuration: task arguments and the model fields that vary in claims."""
    model = config.get("model", {})
    task = config.get("task", {})
    fields = {k: model.get(k) for k in ("mixer", "layers", "heads", "ffn_width", "rpe") if k in model}
    return f"{task.get('name')} {task.get('args', {})} " + " ".join(f"{k}={v}" for k, v in fields.items())


def write_table(rows: list[dict], path: Path) -> None:
    """``rows`` as CSV (columns in first-seen order)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: jsonable(row.get(k)) for k in columns})
    path.write_text(buf.getvalue())


# ---- verdict helpers ---------------------------------------------------------------------------------


def below(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """``a`` is below ``b`` with disjoint 95% intervals (each ``(value, low, high)``)."""
    return a[2] < b[1]


def compare(better: tuple[float, float, float], worse: tuple[float, float, float]) -> str:
    """``reproduced`` if ``better`` is below ``worse`` with disjoint intervals, ``refuted`` if the
    opposite holds with disjoint intervals, else ``not reproduced``."""
    if below(better, worse):
        return "reproduced"
    if below(worse, better):
        return "refuted"
    return "not reproduced"
