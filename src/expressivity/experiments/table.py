"""From records to a table: one row per run and evaluated length, after selection.

A row (what ``expressivity results`` queries; nested settings keep the paths of the sweep grid)::

    id, status, reason, seed, task {name, args {...}}, model {...}, train {...},
    length (the evaluated task length), train_length, val_loss, val_metric, test_loss, test_metric,
    steps, seconds, params, final_loss, best_metric, best_step, candidates, candidates_recorded,
    candidates_ok

Selection (``{"train.lr": ("min", "val_loss")}``): runs equal in everything but the selected
settings -- the same configuration and seed -- form one group; the run with the best validation
value at the training length is kept, with all its lengths, and its test columns are what gets
reported. Equal values break toward the **interior** of the selected settings' grid (the value
farthest from its smallest and largest), so a tie never makes an edge look chosen. ``candidates``
counts the group's runs, ``candidates_ok`` those that finished. A group whose runs all failed is
kept as one failed row. Without selection both are 1.

Given the sweep's configurations (``configs``: what ``sweep.json`` lists), a group is judged
against the whole grid: ``candidates`` counts its runs in the sweep and ``candidates_recorded``
those recorded. A group with a run not yet recorded (an unfinished sweep) is no selection -- the
best of part of the grid is not the rule's choice -- so it is kept as rows of status
``incomplete`` without values (one per length the sweep evaluates), its selected settings empty.
Without ``configs`` the records are taken as the whole sweep.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from expressivity.records import canonical_json, content_hash

METRICS = ("val_loss", "val_metric", "test_loss", "test_metric")


def _number(value):
    """Floats as stored (``"nan"``/``"inf"`` strings from jsonable) -> float, or ``None`` if not finite."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _flat_lists(d):
    """Lists in settings (a mixer per layer) become comma-separated strings: one SQL type per column."""
    if isinstance(d, dict):
        return {k: _flat_lists(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return ",".join(map(str, d))
    return d


def drop_path(d: dict, path: str) -> dict:
    """``d`` without the setting at the dotted ``path`` (``d`` unchanged where it has none). Only the dicts along
    the path are copied; the rest is shared with ``d``, so neither may be changed in place (a deep copy per run
    and rule was 40% of ``results`` on 10^5 runs: an audit at scale, 2026-11-28)."""
    head, _, rest = path.partition(".")
    if not isinstance(d, dict) or head not in d:
        return d
    if not rest:
        return {k: v for k, v in d.items() if k != head}
    return {**d, head: drop_path(d[head], rest)}


def train_length(record: dict) -> int | None:
    args = record.get("config", {}).get("task", {}).get("args", {})
    return args.get("length") if isinstance(args, dict) else None


def criterion(record: dict, column: str):
    """A validation value at the training length, or ``None`` for a failed or unevaluated run."""
    if record.get("status") == "failed":
        return None
    row = (record.get("lengths") or {}).get(str(train_length(record)))
    return _number(row.get(column)) if isinstance(row, dict) else None


def _unknown(record: dict, column: str) -> bool:
    """Whether a finished run has no validation value at its training length to be selected on: missing, not a
    number, or NaN. An infinite one is known (a loss that diverged in evaluation), and loses the selection fairly,
    as a run that diverged in training does (a review, 2026-11-29)."""
    if criterion(record, column) is not None:
        return False
    row = (record.get("lengths") or {}).get(str(train_length(record)))
    value = row.get(column) if isinstance(row, dict) else None
    try:
        return not (isinstance(value, (int, float, str)) and not isinstance(value, bool) and math.isinf(float(value)))
    except (TypeError, ValueError):
        return True


def crashed(record: dict) -> bool:
    """A run that failed without a result: an error or a worker that died (a run whose loss turned
    NaN is failed too, with a reason ``nan: ...``, and has a result: it diverged)."""
    return record.get("status") == "failed" and not str(record.get("reason") or "").startswith("nan")


@dataclass
class Group:
    """One configuration and seed of a sweep after selection: ``record`` is the kept run (``None``
    when the group is incomplete), ``config`` the group's configuration (the kept run's; for an
    incomplete group its first run's, less the selected settings), ``candidates`` its runs in the
    sweep, ``candidates_recorded`` those recorded, ``candidates_ok`` the recorded ones that
    finished. ``run_id``: the id of the group's only run (``None`` for a group of several).
    ``crashed``: recorded candidates that failed without a result (a worker that died, an error;
    not a loss that diverged, which fairly loses the selection), or finished with no validation value
    at the training length (missing or NaN; an infinite one lost fairly): their validation numbers are
    unknown, so the kept run is the best of part of the grid only."""

    record: dict | None
    config: dict
    candidates: int
    candidates_recorded: int
    candidates_ok: int
    run_id: str | None = None
    crashed: int = 0

    @property
    def complete(self) -> bool:
        """Whether every run of the group is recorded (only then is its selection the rule's)."""
        return self.candidates_recorded == self.candidates


def select_groups(records: list[dict], select: dict, configs: list[dict] | None = None) -> list[Group]:
    """The groups of ``records`` per configuration and seed (each run its own group without
    ``select``), the best recorded run kept where every run of the group is recorded.

    ``configs``: every configuration of the sweep (``sweep.json``); a configuration whose run id
    is not among the records' is an unrecorded run, and a record not among ``configs`` still
    counts. Groups come in the order of ``configs``, then of the records."""
    by_id = {r["id"]: r for r in records}
    members: list[tuple[dict, dict | None, str]] = []
    listed: set[str] = set()
    for config in configs or []:
        run_id = content_hash(config)
        listed.add(run_id)
        members.append((config, by_id.get(run_id), run_id))
    members += [(r["config"], r, r["id"]) for r in records if r["id"] not in listed]
    groups: dict[str, list[tuple[dict, dict | None, str]]] = {}
    for index, (config, record, run_id) in enumerate(members):
        key = config
        for path in select:
            key = drop_path(key, path)
        groups.setdefault(canonical_json(key) if select else str(index), []).append((config, record, run_id))
    direction, column = next(iter(select.values())) if select else ("min", None)  # parse_select made the rules one
    sign = 1 if direction == "min" else -1
    out = []
    for group in groups.values():
        recorded = [r for _, r, _ in group if r is not None]
        only = group[0][2] if len(group) == 1 else None
        if len(recorded) < len(group):
            config = group[0][0]
            for path in select:
                config = drop_path(config, path)
            ok = sum(1 for r in recorded if r.get("status") != "failed")
            out.append(Group(None, config, len(group), len(recorded), ok, only))
            continue
        if not select:
            r = recorded[0]
            out.append(Group(r, r["config"], 1, 1, int(r.get("status") != "failed"), only))
            continue
        edge = _edge_distance(recorded, select)
        ok = [(sign * v, -edge[k], k, r) for k, r in enumerate(recorded) if (v := criterion(r, column)) is not None]
        kept = min(ok, key=lambda t: t[:3])[3] if ok else recorded[0]
        # a finished candidate with no finite validation value at its training length (an evaluation that
        # overflowed, an edited record) is as unknown as a crashed one: it was passed over, and the group reported
        # the other learning rate's run with failed = 0 and no word (a fresh audit, 2026-11-29)
        unknown = sum(1 for r in recorded if crashed(r) or (r.get("status") != "failed" and _unknown(r, column)))
        out.append(Group(kept, kept["config"], len(group), len(group), len(ok), only, unknown))
    return out


def select_runs(records: list[dict], select: dict) -> list[tuple[dict, int, int]]:
    """``(record, candidates, candidates_ok)`` per configuration and seed, the best run kept (the
    records taken as the whole sweep: see :func:`select_groups`)."""
    return [(g.record, g.candidates, g.candidates_ok) for g in select_groups(records, select)]


def _edge_distance(members: list[dict], select: dict) -> list[int]:
    """Per member, how many grid steps its selected settings lie from the nearest edge of the
    group's grid (summed over the selected settings): the tie-break toward the interior."""
    out = [0] * len(members)
    for path in select:
        values = [_lookup(r["config"], path) for r in members]
        try:
            grid = sorted(set(values))
        except TypeError:   # values of mixed types: no order, no interior
            continue
        for k, v in enumerate(values):
            rank = grid.index(v)
            out[k] += min(rank, len(grid) - 1 - rank)
    return out


def _lookup(config: dict, path: str):
    for part in path.split("."):
        config = config.get(part) if isinstance(config, dict) else None
    return config


def rows_of(records: list[dict], select: dict | None = None, configs: list[dict] | None = None) -> list[dict]:
    """The table rows of ``records`` (see the module doc); ``configs``: the sweep's configurations
    (its groups with an unrecorded run become ``incomplete`` rows)."""
    return group_rows(select_groups(records, select or {}, configs))


def group_rows(groups: list[Group]) -> list[dict]:
    """The table rows of ``groups`` (:func:`select_groups`): per evaluated length of the kept run,
    one row for a failed group, one ``incomplete`` row per length the sweep evaluates for an
    incomplete group."""
    rows = []
    for g in groups:
        r = g.record if g.record is not None else {"id": g.run_id, "config": g.config, "status": "incomplete"}
        cfg = g.config
        # eval_lengths too: a grid over it is a varying setting, and results grouped by a column the rows lacked
        # (DuckDB's Binder Error: a review, 2026-11-28)
        base = {"id": r["id"], "status": r.get("status"), "reason": r.get("reason"), "seed": cfg.get("seed"),
                "eval_lengths": _flat_lists(cfg.get("eval_lengths") or []),
                "task": _flat_lists(cfg.get("task")), "model": _flat_lists(cfg.get("model")),
                "train": _flat_lists(cfg.get("train")), "train_length": train_length(r),
                "steps": r.get("steps"), "seconds": _number(r.get("seconds")), "params": r.get("params"),
                "final_loss": _number(r.get("final_loss")), "best_metric": _number(r.get("best_metric")),
                "best_step": r.get("best_step"), "candidates": g.candidates,
                "candidates_recorded": g.candidates_recorded, "candidates_ok": g.candidates_ok}
        if g.record is None:
            base["reason"] = (f"{g.candidates_recorded} of {g.candidates} candidates recorded; no selection until "
                              "all are" if g.candidates > 1 else "not recorded yet")
            for length in dict.fromkeys((base["train_length"], *(cfg.get("eval_lengths") or []))):
                rows.append({**base, "length": length, **{m: None for m in METRICS}})
            continue
        if g.candidates_ok == 0 and g.candidates > 1:
            base["status"], base["reason"] = "failed", f"all {g.candidates} candidates failed ({r.get('reason')})"
        elif g.crashed and g.candidates > 1:
            # a crashed candidate's validation loss is unknown, so the best of the rest is not the rule's choice: the
            # group counts as failed, as the claims count it (results reported the rest's best with failed = 0: a
            # fresh audit, 2026-11-29)
            base["status"], base["reason"] = "failed", (f"{g.crashed} of {g.candidates} candidates crashed or have no "
                                                        "validation value, so no selection (the best of the rest is "
                                                        "not the rule's choice); train crashed ones again with --retry-failed, and check the "
                                                        "records of the others")
        lengths = r.get("lengths") or {} if base["status"] != "failed" else {}
        if not lengths:
            rows.append({**base, "length": base["train_length"], **{m: None for m in METRICS}})
        for length, values in sorted(lengths.items(), key=lambda kv: int(kv[0])):
            rows.append({**base, "length": int(length), **{m: _number(values.get(m)) for m in METRICS}})
    return rows


def _scalar_key(v):
    """What canonical JSON tells apart, cheaper: 1, 1.0, True and -0.0, 0.0 apart; NumPy's 3 and 0.01 as
    Python's (a sweep of 100,000 runs spent most of varying_settings in canonical JSON)."""
    if v is None or isinstance(v, (bool, str)):
        return type(v).__name__, v
    if isinstance(v, numbers.Integral):
        return "int", int(v)
    if isinstance(v, numbers.Real):
        return "float", repr(float(v))
    return canonical_json(v)


def varying_settings(configs: list[dict], skip=("seed",)) -> dict[str, list]:
    """``{"model.heads": [1, 2, 4], ...}``: the settings whose values differ between ``configs``."""
    values: dict[str, dict[str, object]] = {}

    def walk(d, prefix):
        for k, v in d.items():
            path = f"{prefix}{k}"
            if isinstance(v, dict):
                walk(v, path + ".")
            else:   # keyed as canonical JSON would (1, 1.0, True and -0.0, 0.0 apart; NumPy's 0.01 as 0.01), cheaper
                values.setdefault(path, {})[_scalar_key(v)] = v

    for c in configs:
        walk(_flat_lists(c), "")
    n = len(configs)
    out = {}
    for path, seen in values.items():
        present = sum(1 for c in configs if _has(c, path))
        if path not in skip and (len(seen) > 1 or 0 < present < n):
            out[path] = sorted(seen.values(), key=lambda v: (str(type(v)), v if v is not None else 0))
    return out


def _has(d: dict, path: str) -> bool:
    cur = d
    for p in path.split("."):
        if not isinstance(cur, dict) or p not in cur:
            return False
        cur = cur[p]
    return True
