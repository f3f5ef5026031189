"""The claims toolkit, shared by every claim: per-seed values after learning-rate selection on
validation, learning curves, and the figures. The decision rules are in :mod:`.rules`, the
regime check in :mod:`.regime`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

SELECT = {"train.lr": ("min", "val_loss")}


def distinct(configs) -> list:
    """``configs`` (RunConfigs) with repeats left out, in first-seen order (equal configurations share an id)."""
    return list({c.id(): c for c in configs}.values())


# ---- per-seed values after selection on validation ---------------------------------------------------


def selected_records(folder) -> list[tuple[dict, bool]]:
    """``(record, ok)`` per configuration and seed of a sweep folder, the learning rate chosen by
    the lowest **validation** loss (never a test number): the engine's selection. ``ok``: a seed
    the verdicts may count -- its selected run finished with finite test numbers, and no candidate
    of its grid crashed (a crashed candidate's validation loss is unknown: the best of the rest is
    not the rule's choice, so the seed counts as a failed run; ``--retry-failed`` trains it again)."""
    return [(record, state == OK) for record, state in selected_runs(folder)]


OK, DIVERGED, CRASHED = "ok", "diverged", "crashed"


def selected_runs(folder) -> list[tuple[dict, str]]:
    """``(record, state)`` per configuration and seed, selected as :func:`selected_records` does. ``state``:
    ``"ok"``; ``"diverged"``, no candidate crashed but the selected run's loss or test numbers are not finite
    (every learning rate diverged, or the test pass did): the seed trained and failed, a fact about training;
    ``"crashed"``, a candidate failed without a result (an error, a worker that died) or the run has no numbers
    at its training length: unknown, a fact about the machine."""
    from expressivity.experiments.store import read_records
    from expressivity.experiments.table import crashed, select_groups

    out = []
    for group in select_groups(read_records(folder), SELECT):
        record = group.record
        row = train_length_row(record)
        if group.crashed or crashed(record) or (record.get("status") != "failed" and row is None):
            state = CRASHED
        elif bool(group.candidates_ok) and record.get("status") != "failed" and _finite_tests(row):
            state = OK
        else:
            state = DIVERGED
        out.append((record, state))
    return out


def _finite_tests(row: dict) -> bool:
    """Whether a row's held-out test numbers are there and finite (a test pass that diverged stores
    ``"nan"``: counted as a valid seed by the regime check while the rule dropped it, the two then
    disagreed on a cell's seeds, a fresh audit, 2026-11-28)."""
    numbers = _floats(row)
    present = [numbers[k] for k in ("test_loss", "test_metric") if k in numbers]
    return "test_loss" in numbers and all(isinstance(v, (int, float)) and math.isfinite(v) for v in present)


def train_length_row(record: dict) -> dict | None:
    """The record's validation/test numbers at its training length."""
    return (record.get("lengths") or {}).get(str(record["config"]["task"]["args"]["length"]))


def seed_values(folder, label: Callable[[dict], object], value: Callable[[dict], float]) -> tuple[dict, dict]:
    """``({label: {seed: value}}, {label: failed runs})`` over the selected runs of ``folder``.

    ``label(config dict)`` names the cell; ``value(row)`` reads a number from the record's row at
    its training length (``row["test_metric"]``, ``row["test_loss"]``...), where non-finite numbers
    (stored as the strings ``"nan"``, ``"inf"``) are floats again. A finished run whose value is not
    finite (a test pass that diverged) is a failed run, never a seed. For rules on values; a pass/fail
    rule counts a diverged seed as one that failed (:func:`seed_outcomes`)."""
    values, diverged, crashed_runs = _seed_values(folder, label, value)
    return values, {key: diverged.get(key, 0) + crashed_runs.get(key, 0) for key in values}


def seed_outcomes(folder, label: Callable[[dict], object], value: Callable[[dict], float],
                  pass_at: float, fail_at: float) -> tuple[dict, dict]:
    """``({label: {seed: value}}, {label: Outcomes})`` for a pass/fail rule (higher ``value`` is better).

    A seed that diverged (every learning rate, or its test pass) trained and did not learn: it counts as a
    valid seed that failed (:class:`~.rules.Outcomes` ``diverged``). Left out of the count, 40 diverged seeds
    of 64 read as 24/24 successes and a trainability claim as "reproduced" (an audit, 2026-11-29). A crashed
    run (no result) is reported and not counted; the rules decide only what holds whatever it would have been."""
    from expressivity.experiments.claims.rules import Outcomes

    values, diverged, crashed_runs = _seed_values(folder, label, value)
    return values, {key: Outcomes.of(values[key], pass_at, fail_at, broken=crashed_runs.get(key, 0),
                                     diverged=diverged.get(key, 0)) for key in values}


def _seed_values(folder, label, value) -> tuple[dict, dict, dict]:
    """``(values, diverged, crashed)``: ``{label: {seed: finite value}}`` and the seeds of each label left out,
    by :func:`selected_runs` state (a finished run whose value is not finite counts as diverged)."""
    values: dict = {}
    diverged: dict = {}
    crashed_runs: dict = {}
    for record, state in selected_runs(folder):
        key = label(record["config"])
        values.setdefault(key, {})
        number = float(value(_floats(train_length_row(record)))) if state == OK else None
        if state == CRASHED:
            crashed_runs[key] = crashed_runs.get(key, 0) + 1
        elif number is None or not math.isfinite(number):
            diverged[key] = diverged.get(key, 0) + 1
        else:
            values[key][record["config"]["seed"]] = number
    return values, diverged, crashed_runs


def _floats(row: dict) -> dict:
    """``row`` with the strings a record stores for non-finite floats (:func:`~expressivity.records.jsonable`)
    read back as floats."""
    return {k: float(v) if v in ("nan", "inf", "-inf") else v for k, v in row.items()}


def selected_lrs(folder, label: Callable[[dict], object]) -> dict:
    """``{label: {seed: selected learning rate}}``."""
    out: dict = {}
    for record, _ in selected_records(folder):
        out.setdefault(label(record["config"]), {})[record["config"]["seed"]] = record["config"]["train"]["lr"]
    return out


# ---- learning curves ---------------------------------------------------------------------------------


def eval_history(folder, record: dict) -> list[tuple[int, float, float | None]]:
    """``[(step, validation loss, validation metric)]`` of one run, from ``runs/<id>/metrics.jsonl``
    (empty if absent or unreadable)."""
    path = Path(folder) / "runs" / record["id"] / "metrics.jsonl"
    out = []
    try:
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if isinstance(entry.get("eval_loss"), (int, float)):
                metric = entry.get("eval_metric")
                out.append((int(entry["step"]), float(entry["eval_loss"]),
                            float(metric) if isinstance(metric, (int, float)) else None))
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return out


def history(folder, record: dict) -> list[tuple[int, float]]:
    """``[(step, validation loss)]`` of one run (empty if absent)."""
    return [(step, loss) for step, loss, _ in eval_history(folder, record)]


# ---- figures --------------------------------------------------------------------------------------


def line_figure(path, series: dict, xlabel: str, ylabel: str, title: str, logx=True, logy=True,
                bands: dict | None = None, hlines: dict | None = None, vlines: dict | None = None,
                censored: dict | None = None):
    """Lines (with optional 95% bands) on one axis; ``series`` maps a label to ``(x, y)``; non-finite
    band edges are left out. ``censored`` maps a label to ``[(x, bound)]``: values known only to
    exceed ``bound`` (beyond the grid), drawn as open upward triangles at the bound, joined to the
    line by a dotted segment and marked ``> bound``."""
    from expressivity.figures import finish, interval_band, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, (x, y) in series.items():
        line, = ax.plot(x, y, marker="o", label=label)
        beyond = (censored or {}).get(label) or []
        if beyond:
            finite = [(a, b) for a, b in zip(x, y) if b is not None and math.isfinite(b)]
            if finite:
                ax.plot([finite[-1][0], beyond[0][0]], [finite[-1][1], beyond[0][1]], ls=":", color=line.get_color())
            ax.plot([a for a, _ in beyond], [b for _, b in beyond], ls="none", marker="^", markersize=9,
                    markerfacecolor="none", color=line.get_color(), label=f"{label}: beyond the grid")
            for a, b in beyond:
                ax.annotate(f"> {b:g}", (a, b), textcoords="offset points", xytext=(-10, 0), ha="right", va="center",
                            color=line.get_color(), fontsize=8)
        if bands and label in bands:
            interval_band(ax, list(x), *bands[label], line.get_color())
    for label, y in (hlines or {}).items():
        ax.axhline(y, ls="--", color="k", lw=0.8, label=label)
    for label, x in (vlines or {}).items():
        ax.axvline(x, ls=":", color="gray", lw=1.0, label=label)

    def positive(values) -> bool:
        return any(v is not None and math.isfinite(v) and v > 0 for v in values)

    xs = [v for x, _ in series.values() for v in x]
    ys = [v for _, y in series.values() for v in y]
    # a log axis needs a positive value: a claim whose every run failed has none, and matplotlib raised
    # a traceback at the figure (a fresh audit); the figure says so and the verdict is written
    ax.set_xscale("log" if logx and positive(xs) else "linear")
    ax.set_yscale("log" if logy and positive(ys) else "linear")
    if not positive(ys) and not any(v is not None and math.isfinite(v) for v in ys):
        ax.text(0.5, 0.5, "no finite value to draw (see the table)", transform=ax.transAxes, ha="center")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return finish(fig, ax, path, title)


def curves_figure(path, curves: dict, title: str, ylabel: str = "validation loss"):
    """Learning curves: ``curves`` maps a label to a list of per-seed ``[(step, loss)]``; the mean
    over seeds at each evaluation step is drawn, the seeds thin behind it."""
    from expressivity.figures import finish, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, runs in curves.items():
        runs = [r for r in runs if r]
        if not runs:
            continue
        steps = sorted(set.intersection(*(set(s for s, _ in r) for r in runs)))
        mean = [sum(dict(r)[s] for r in runs) / len(runs) for s in steps]
        line, = ax.plot(steps, mean, label=f"{label} (mean of {len(runs)})")
        for r in runs:
            ax.plot([s for s, _ in r], [v for _, v in r], color=line.get_color(), alpha=0.2, lw=0.7)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    return finish(fig, ax, path, title)
