"""From records to a table: one row per run and evaluated length, after selection.

A row (what ``expressivity results`` queries; nested settings keep the paths of the sweep grid)::

    id, status, reason, seed, task {name, args {...}}, model {...}, train {...},
    length (the evaluated task length), train_length, val_loss, val_metric, test_loss, test_metric,
    steps, seconds, params, final_loss, best_metric, best_step, candidates, candidates_ok

Selection (``{"train.lr": ("min", "val_loss")}``): runs equal in everything but the selected
settings -- the same configuration and seed -- form one group; the run with the best validation
value at the training length is kept, with all its lengths, and its test columns are what gets
reported. Equal values break toward the **interior** of the selected settings' grid (the value
farthest from its smallest and largest), so a tie never makes an edge look chosen. ``candidates``
counts the group's runs, ``candidates_ok`` those that finished. A group whose runs all failed is
kept as one failed row. Without selection both are 1.
"""

from __future__ import annotations

import copy
import math

from expressivity.records import canonical_json

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
    d = copy.deepcopy(d)
    parts = path.split(".")
    cur = d
    for p in parts[:-1]:
        cur = cur.get(p, {}) if isinstance(cur, dict) else {}
    if isinstance(cur, dict):
        cur.pop(parts[-1], None)
    return d


def train_length(record: dict) -> int | None:
    args = record.get("config", {}).get("task", {}).get("args", {})
    return args.get("length") if isinstance(args, dict) else None


def criterion(record: dict, column: str):
    """A validation value at the training length, or ``None`` for a failed or unevaluated run."""
    if record.get("status") == "failed":
        return None
    row = (record.get("lengths") or {}).get(str(train_length(record)))
    return _number(row.get(column)) if isinstance(row, dict) else None


def select_runs(records: list[dict], select: dict) -> list[tuple[dict, int, int]]:
    """``(record, candidates, candidates_ok)`` per configuration and seed, the best run kept."""
    if not select:
        return [(r, 1, int(r.get("status") != "failed")) for r in records]
    groups: dict[str, list[dict]] = {}
    for r in records:
        key = r["config"]
        for path in select:
            key = drop_path(key, path)
        groups.setdefault(canonical_json(key), []).append(r)
    out = []
    direction, column = next(iter(select.values()))  # parse_select made the rules one
    sign = 1 if direction == "min" else -1
    for members in groups.values():
        edge = _edge_distance(members, select)
        ok = [(sign * v, -edge[k], k, r) for k, r in enumerate(members) if (v := criterion(r, column)) is not None]
        if ok:
            out.append((min(ok, key=lambda t: t[:3])[3], len(members), len(ok)))
        else:
            out.append((members[0], len(members), 0))
    return out


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


def rows_of(records: list[dict], select: dict | None = None) -> list[dict]:
    """The table rows of ``records`` (see the module doc)."""
    rows = []
    for r, candidates, ok in select_runs(records, select or {}):
        cfg = r["config"]
        base = {"id": r["id"], "status": r.get("status"), "reason": r.get("reason"), "seed": cfg.get("seed"),
                "task": _flat_lists(cfg.get("task")), "model": _flat_lists(cfg.get("model")),
                "train": _flat_lists(cfg.get("train")), "train_length": train_length(r),
                "steps": r.get("steps"), "seconds": _number(r.get("seconds")), "params": r.get("params"),
                "final_loss": _number(r.get("final_loss")), "best_metric": _number(r.get("best_metric")),
                "best_step": r.get("best_step"), "candidates": candidates, "candidates_ok": ok}
        if ok == 0 and candidates > 1:
            base["status"], base["reason"] = "failed", f"all {candidates} candidates failed ({r.get('reason')})"
        lengths = r.get("lengths") or {} if base["status"] != "failed" else {}
        if not lengths:
            rows.append({**base, "length": base["train_length"], **{m: None for m in METRICS}})
        for length, values in sorted(lengths.items(), key=lambda kv: int(kv[0])):
            rows.append({**base, "length": int(length), **{m: _number(values.get(m)) for m in METRICS}})
    return rows


def varying_settings(configs: list[dict], skip=("seed",)) -> dict[str, list]:
    """``{"model.heads": [1, 2, 4], ...}``: the settings whose values differ between ``configs``."""
    values: dict[str, dict[str, object]] = {}

    def walk(d, prefix):
        for k, v in d.items():
            path = f"{prefix}{k}"
            if isinstance(v, dict):
                walk(v, path + ".")
            else:
                values.setdefault(path, {})[canonical_json(v)] = v

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
