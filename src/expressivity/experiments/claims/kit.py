"""The claims toolkit, shared by every claim: per-seed values after learning-rate selection on
validation, comparisons that yield a :class:`~expressivity.experiments.claims.Verdict` (paired
over seeds where the arms share seeds, unpaired otherwise, success rates with exact intervals),
the regime check of a trained sweep, and the figures.

Every comparison is decided only with an interval from at least two seeds (see
:mod:`expressivity.statistics`); otherwise it is *undecided: underpowered*.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable

from expressivity.experiments.claims import Regime, Verdict
from expressivity.statistics import Interval, clopper_pearson, fisher_exact, interval, paired_difference

SELECT = {"train.lr": ("min", "val_loss")}
FLAT_TOLERANCE = 0.05  # a run is still falling if its last 20% cut validation loss by more than 5%
FLAT_SHARE = 0.75      # the regime needs at least this share of the selected runs flat


# ---- per-seed values after selection on validation ---------------------------------------------------


def selected_records(folder) -> list[tuple[dict, bool]]:
    """``(record, ok)`` per configuration and seed of a sweep folder, the learning rate chosen by
    the lowest **validation** loss (never a test number): the engine's selection."""
    from expressivity.experiments.store import read_records
    from expressivity.experiments.table import select_runs

    out = []
    for record, _, ok in select_runs(read_records(folder), SELECT):
        row = train_length_row(record)
        good = bool(ok) and record.get("status") != "failed" and row is not None and row.get("test_loss") is not None
        out.append((record, good))
    return out


def train_length_row(record: dict) -> dict | None:
    """The record's validation/test numbers at its training length."""
    return (record.get("lengths") or {}).get(str(record["config"]["task"]["args"]["length"]))


def seed_values(folder, label: Callable[[dict], object], value: Callable[[dict], float]) -> tuple[dict, dict]:
    """``({label: {seed: value}}, {label: failed runs})`` over the selected runs of ``folder``.

    ``label(config dict)`` names the cell; ``value(row)`` reads a number from the record's row at
    its training length (``row["test_metric"]``, ``row["test_loss"]``...)."""
    values: dict = {}
    failed: dict = {}
    for record, ok in selected_records(folder):
        key = label(record["config"])
        values.setdefault(key, {})
        failed.setdefault(key, 0)
        if not ok:
            failed[key] += 1
            continue
        values[key][record["config"]["seed"]] = float(value(train_length_row(record)))
    return values, failed


def selected_lrs(folder, label: Callable[[dict], object]) -> dict:
    """``{label: {seed: selected learning rate}}``."""
    out: dict = {}
    for record, _ in selected_records(folder):
        out.setdefault(label(record["config"]), {})[record["config"]["seed"]] = record["config"]["train"]["lr"]
    return out


# ---- comparisons -------------------------------------------------------------------------------------


def compare_paired(diff: Interval, what: str) -> Verdict:
    """``diff`` = claimed-better minus claimed-worse, per seed (lower is better). Reproduced if the
    whole interval is below 0, refuted if above, else undecided (underpowered)."""
    if not diff.decided:
        return Verdict("undecided", f"underpowered: {what}: {diff.n} paired seed(s), an interval needs 2")
    if diff.high < 0:
        return Verdict("reproduced", f"{what}: paired difference {diff.fmt()} < 0")
    if diff.low > 0:
        return Verdict("refuted", f"{what}: paired difference {diff.fmt()} > 0 (the reverse)")
    return Verdict("undecided", f"underpowered: {what}: paired difference {diff.fmt()} contains 0")


def compare(better: Interval, worse: Interval, what: str) -> Verdict:
    """Unpaired: reproduced if ``better`` lies wholly below ``worse``, refuted if wholly above,
    else undecided (underpowered). Use :func:`compare_paired` when the arms share seeds."""
    if not (better.decided and worse.decided):
        return Verdict("undecided", f"underpowered: {what}: {better.n} and {worse.n} seed(s), intervals need 2")
    if better.below(worse):
        return Verdict("reproduced", f"{what}: {better.fmt()} below {worse.fmt()}")
    if worse.below(better):
        return Verdict("refuted", f"{what}: {better.fmt()} above {worse.fmt()} (the reverse)")
    return Verdict("undecided", f"underpowered: {what}: {better.fmt()} and {worse.fmt()} overlap")


def paired(a: dict, b: dict, what: str) -> tuple[Interval, Verdict]:
    """``a`` claimed lower than ``b`` (both ``{seed: value}``): the paired difference and its verdict."""
    diff = paired_difference(a, b)
    return diff, compare_paired(diff, what)


def success_rate(successes: int, trials: int) -> Interval:
    """A pass/fail outcome as a rate with its exact (Clopper-Pearson) interval."""
    return clopper_pearson(successes, trials)


def compare_rates(a: tuple[int, int], b: tuple[int, int]) -> dict:
    """Two arms' ``(successes, trials)``: both rates with exact intervals and Fisher's exact p."""
    return {"rate_a": success_rate(*a), "rate_b": success_rate(*b), "fisher_p": fisher_exact(*a, *b)}


def combine(parts: dict[str, Verdict]) -> Verdict:
    """Any part refuted: refuted; all reproduced: reproduced; any not reproduced: not reproduced;
    else undecided, with the parts' reasons."""
    words = {v.word for v in parts.values()}
    summary = "; ".join(f"{k}: {v.word}" for k, v in parts.items())
    if "refuted" in words:
        return Verdict("refuted", summary)
    if words == {"reproduced"}:
        return Verdict("reproduced", summary)
    if "not reproduced" in words:
        return Verdict("not reproduced", summary)
    first = next(v.reason for v in parts.values() if v.word == "undecided")
    return Verdict("undecided", f"{first.split(':')[0]}: {summary}")


def mean_interval(values: dict) -> Interval:
    """The mean and t interval of ``{seed: value}``."""
    return interval(values.values())


# ---- the regime of a trained sweep ------------------------------------------------------------------


def history(folder, record: dict) -> list[tuple[int, float]]:
    """``[(step, validation loss)]`` of one run, from ``runs/<id>/metrics.jsonl`` (empty if absent)."""
    path = Path(folder) / "runs" / record["id"] / "metrics.jsonl"
    out = []
    try:
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "eval_loss" in entry and isinstance(entry["eval_loss"], (int, float)):
                out.append((int(entry["step"]), float(entry["eval_loss"])))
    except (OSError, ValueError):
        return []
    return out


def still_falling(points: list[tuple[int, float]], steps: int, tolerance: float = FLAT_TOLERANCE) -> bool | None:
    """Did validation loss fall by more than ``tolerance`` (relative) over the last 20% of ``steps``?
    ``None`` without an evaluation at or before 80% and one after (the curve cannot say)."""
    before = [loss for step, loss in points if step <= 0.8 * steps]
    after = [loss for step, loss in points if step > 0.8 * steps]
    if not before or not after or not all(math.isfinite(v) for v in (before[-1], min(after))):
        return None
    return min(after) < before[-1] * (1 - tolerance) if before[-1] > 0 else min(after) < before[-1] - tolerance


def sweep_regime(folder, scale: str, cells: Callable[[dict], bool] | None = None, extra_checks: dict | None = None,
                 epoch_bytes: int | None = None, notes: str = "") -> Regime:
    """The regime of the selected runs of ``folder`` that ``cells(config)`` keeps (default all):
    the largest model's parameters, the longest run's steps and tokens, seeds per cell, and how
    many runs were still falling. Checks: validation flat over the last 20% for at least 3/4 of
    the runs, every run evaluated often enough to tell, at least 2 seeds per cell; plus
    ``extra_checks``. ``epoch_bytes``: the training set's size, for an epoch fraction."""
    falling, unknown, total, params, steps, tokens = 0, 0, 0, 0, 0, 0
    seeds: dict = {}
    for record, ok in selected_records(folder):
        cfg = record["config"]
        if cells is not None and not cells(cfg):
            continue
        seeds.setdefault(json.dumps({k: v for k, v in cfg.items() if k not in ("seed", "train")}, sort_keys=True),
                         set()).add(cfg["seed"])
        if not ok:
            continue
        total += 1
        n_steps = int(cfg["train"]["steps"])
        flag = still_falling(history(folder, record), n_steps)
        unknown += flag is None
        falling += bool(flag)
        params = max(params, int(record.get("params") or 0))
        steps = max(steps, n_steps)
        tokens = max(tokens, n_steps * int(cfg["train"]["batch_size"]) * int(cfg["task"]["args"].get("length", 1)))
    min_seeds = min((len(s) for s in seeds.values()), default=0)
    checks = {"validation loss flat (< 5% drop) over the last 20% of training for >= 3/4 of the selected runs":
              total > 0 and falling <= (1 - FLAT_SHARE) * total,
              "every selected run evaluated before and after 80% of training": total > 0 and unknown == 0,
              ">= 2 seeds in every cell": min_seeds >= 2, **(extra_checks or {})}
    return Regime(scale, checks, parameters=params or None, steps=steps or None, tokens_seen=tokens or None,
                  epoch_fraction=None if epoch_bytes is None else tokens / epoch_bytes,
                  still_falling=f"{falling} of {total} runs", seeds=min_seeds, notes=notes)


def numerics_regime(scale: str, notes: str = "") -> Regime:
    """Exact or kernel-level numerics: no training, so no regime conditions beyond the claim's own."""
    return Regime(scale, {}, notes=notes or "numerics: no training")


# ---- figures --------------------------------------------------------------------------------------


def line_figure(path, series: dict, xlabel: str, ylabel: str, title: str, logx=True, logy=True,
                bands: dict | None = None, hlines: dict | None = None, vlines: dict | None = None):
    """Lines (with optional 95% bands) on one axis; ``series`` maps a label to ``(x, y)``; non-finite
    band edges are left out."""
    from expressivity.figures import finish, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, (x, y) in series.items():
        line, = ax.plot(x, y, marker="o", label=label)
        if bands and label in bands:
            lo, hi = bands[label]
            keep = [k for k in range(len(x)) if math.isfinite(lo[k]) and math.isfinite(hi[k])]
            if keep:
                ax.fill_between([x[k] for k in keep], [lo[k] for k in keep], [hi[k] for k in keep],
                                color=line.get_color(), alpha=0.2)
    for label, y in (hlines or {}).items():
        ax.axhline(y, ls="--", color="k", lw=0.8, label=label)
    for label, x in (vlines or {}).items():
        ax.axvline(x, ls=":", color="gray", lw=1.0, label=label)
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
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
