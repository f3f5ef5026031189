"""The regime check of a trained claim, cell by cell and tied to the effect compared.

A verdict rests on a few **cells** (a configuration over its seeds: an arm of a comparison). Each
is checked on its own -- a pooled share would let a whole compared arm still be learning while
the rest of the pool is flat -- and with a tolerance set by what is compared, not a fixed 5%:
over the last 20% of training (the last evaluation against the last one at or before 80% of the
steps) the cell's change, in the units of the quantity compared, averaged over its seeds with its 95%
t interval, must lie within plus or minus the **half-width of the interval of the comparison it
enters** (:func:`cell_regime`): an equivalence, not a point mean (a mean change of -0.011 with an
interval [-0.060, +0.039] passed a tolerance of 0.014, and a true drift of twice the tolerance passed
12% of the time at 5 seeds: an audit, 2026-11-29). So an LM
arm falling 1.95 -> 1.86 bits per byte is still learning when the effect compared is measured to
+-0.02, and a loss falling 4e-7 -> 4e-9 is settled when the quantity is floored at a resolution
above both (``measure`` applies the floor).
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

from expressivity.experiments.claims import Regime
from expressivity.experiments.claims.kit import DIVERGED, OK, eval_history, selected_runs

LAST_FIFTH = 0.8   # the window the check reads: evaluations after 80% of the steps


def last_fifth_change(points, steps: int, measure: Callable[[float, float | None], float]) -> float | None:
    """``measure`` at the last evaluation minus ``measure`` at the last one at or before 80% of
    ``steps``; ``None`` when the curve has no evaluation on either side (it cannot say)."""
    before = [p for p in points if p[0] <= LAST_FIFTH * steps]
    after = [p for p in points if p[0] > LAST_FIFTH * steps]
    if not before or not after:
        return None
    change = measure(*after[-1][1:]) - measure(*before[-1][1:])
    return change if math.isfinite(change) else None


def cell_regime(folder, scale: str, label: Callable[[dict], object], tolerance: dict, measure, units: str,
                min_seeds: int = 2, reference=None, extra_checks: dict | None = None,
                epoch_bytes: int | None = None, notes: str = "", name: Callable[[object], str] | None = None,
                diverged_counts: bool = False) -> Regime:
    """The regime of the cells ``label(config)`` names (``None``: not a cell the verdict rests on) that enter a
    comparison (have a ``tolerance``; a named cell without one is not a compared cell).

    ``tolerance[cell]``: the half-width of the comparison the cell enters, in the units of
    ``measure(validation loss, validation metric)`` (``units`` names them). Checks, each named with
    what was measured against what was required: every compared cell's change over the last 20% of training,
    averaged over its seeds, has its 95% t interval inside plus or minus its tolerance; every run of those cells evaluated before and after
    80% of training; at least ``min_seeds`` valid seeds in every compared cell. The record gives
    the largest model's parameters and the steps and tokens of the ``reference`` cell (default:
    the longest-trained), the epochs of the reference cell's tokens when ``epoch_bytes`` is given.
    ``name(cell)`` spells a cell in the checks' text (default: its parts joined). ``diverged_counts``: a seed
    that diverged is a valid seed, as a pass/fail rule counts it (a failure; it has no curve to settle)."""
    name = name or _name
    changes: dict = {}
    seeds: dict = {}
    unknown = total = params = 0
    shape: dict = {}
    for record, state in selected_runs(folder):
        cell = label(record["config"])
        # a cell no comparison reads has no tolerance: it was counted as settled (tolerance inf), a check that
        # could not fail, padding "0 of 5 moved more" (wang-e-depth's middle models; yun-hybrids' unchosen hybrid
        # where the refuting route read it: a fresh audit, 2026-11-29). Compared cells are the ones with one.
        if cell is None or cell not in tolerance:
            continue
        seeds.setdefault(cell, 0)
        changes.setdefault(cell, [])
        if state == DIVERGED and diverged_counts:
            seeds[cell] += 1
        if state != OK:
            continue
        cfg = record["config"]
        seeds[cell] += 1
        total += 1
        steps = int(cfg["train"]["steps"])
        change = last_fifth_change(eval_history(folder, record), steps, measure)
        unknown += change is None
        if change is not None:
            changes[cell].append(change)
        params = max(params, int(record.get("params") or 0))
        shape[cell] = max(shape.get(cell, (0, 0)), (steps, steps * int(cfg["train"]["batch_size"])
                                                    * int(cfg["task"]["args"].get("length", 1))))
    moved = {cell: _change(v) for cell, v in changes.items() if v}

    def reach(cell) -> float:   # how far the cell's change may lie from 0: its interval's farther end
        mean, low, high = moved[cell]
        return max(abs(low), abs(high))

    over = sorted(((reach(cell) / tolerance[cell] if tolerance[cell] > 0 else math.inf, cell)
                   for cell in moved if not reach(cell) < tolerance[cell]),
                  key=lambda t: -t[0])
    shown = "; ".join(f"{name(c)}: moved {_shown(moved[c])} {units}, tolerance {tolerance[c]:.3g}"
                      for _, c in over[:3]) + (f"; and {len(over) - 3} more" if len(over) > 3 else "")
    fewest = min(seeds.items(), key=lambda kv: kv[1], default=(None, 0))
    steps, tokens = shape.get(reference) if reference in shape else max(shape.values(), default=(0, 0))
    checks = {
        f"compared cells settled over the last 20% of training ({units}, each cell's mean change over its seeds and "
        f"its 95% interval within the half-width of its comparison): {len(over)} of {len(moved)} moved more or could "
        f"have" + (f" ({shown})" if over else "") + "; none allowed":
            bool(moved) and not over,
        f"every run of a compared cell evaluated before and after 80% of training: {unknown} of {total} not":
            total > 0 and unknown == 0,
        f">= {min_seeds} valid seeds in every compared cell: fewest {fewest[1]}"
        + (f" ({name(fewest[0])})" if fewest[0] is not None else ""): bool(seeds) and fewest[1] >= min_seeds,
        **(extra_checks or {})}
    return Regime(scale, checks, parameters=params or None, steps=steps or None, tokens_seen=tokens or None,
                  epoch_fraction=None if epoch_bytes is None else tokens / epoch_bytes,
                  still_falling=f"{len(over)} of {len(moved)} compared cells moved more than their tolerance",
                  seeds=fewest[1], notes=notes)


def _change(values: list[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of a cell's per-seed changes: the 95% t interval over its seeds; one seed (or identical
    changes) gives the value itself at both ends, which a seed-count check then judges."""
    from expressivity.statistics import t_interval

    mean = statistics.fmean(values)
    if len(values) < 2 or len(set(values)) == 1:
        return mean, mean, mean
    return t_interval(values)


def _shown(change: tuple[float, float, float]) -> str:
    mean, low, high = change
    return f"{mean:+.3g}" if low == high else f"{mean:+.3g} [{low:+.3g}, {high:+.3g}]"


def tolerances(pairs) -> dict:
    """``{cell: smallest half-width}`` from ``(cell, half-width)`` pairs: a cell entering several
    comparisons must be settled to the precision of the tightest."""
    out: dict = {}
    for cell, half in pairs:
        out[cell] = min(out.get(cell, math.inf), half)
    return out


def _name(cell) -> str:
    return " ".join(map(str, cell)) if isinstance(cell, tuple) else str(cell)


def numerics_regime(scale: str, notes: str = "") -> Regime:
    """Exact or kernel-level numerics: no training, so no regime conditions beyond the claim's own."""
    return Regime(scale, {}, notes=notes or "numerics: no training")
