"""Sweeps: a list of run configurations, and the axes to select over on validation data.

A sweep comes from a Python file whose ``configs()`` returns :class:`RunConfig`\\ s (or dicts as
below; an optional module-level ``SELECT`` dict names the selection axes), or from a JSON or TOML
grid::

    {"base": <a configuration as "train --json" prints it under run.config, or any part of one>,
     "grid": {"model.heads": [1, 2, 4], "train.lr": [1e-3, 3e-3, 1e-2], "seed": [0, 1, 2]},
     "select": {"train.lr": "min val_loss"}}

``grid`` maps a dotted path into the configuration (``seed``, ``eval_lengths``, ``task.name``,
``task.args.<arg>``, ``model.<field>``, ``train.<field>``) to the list of its values; the sweep
is their Cartesian product (a list of grids gives the union). Unset settings take the task's
defaults. When a grid point changes the task, settings in ``base`` that merely equal the base
task's defaults (``vocab_size``, ``max_len``, the task's default model...) are recomputed for the
new task, so a base copied from ``train --json`` still fits every task in the grid.

``select`` maps an axis to ``"min val_loss"`` or ``"max val_metric"``: for every configuration and
seed, the run with the best *validation* value along that axis is the one reported, and what is
reported comes from the separate *test* split (see :mod:`expressivity.experiments.table`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import itertools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from expressivity.errors import ExpressivityError, require_path
from expressivity.experiments.select import SELECT_COLUMNS, get_path, parse_select, select_text  # noqa: F401  (re-exported)
from expressivity.records import canonical_json, content_hash
from expressivity.training import RunConfig

MAX_RUNS = 100_000  # a larger grid is almost always a typo (an extra axis); split it into several sweeps
ROOTS = ("task", "model", "train", "seed", "eval_lengths")


@dataclass(frozen=True)
class Sweep:
    """Run configurations (distinct) and the selection rules ``{axis path: (direction, column)}``."""

    configs: tuple[RunConfig, ...]
    select: dict = field(default_factory=dict)
    name: str = "sweep"

    def __post_init__(self) -> None:
        if isinstance(self.configs, (str, bytes, dict)) or not hasattr(self.configs, "__iter__"):
            raise ExpressivityError(f"a sweep's configs must be a list of RunConfig, got {type(self.configs).__name__}")
        object.__setattr__(self, "configs", tuple(self.configs))
        bad = next((c for c in self.configs if not isinstance(c, RunConfig)), None)
        if bad is not None:
            raise ExpressivityError(f"a sweep's configs must be RunConfig (RunConfig.for_task(...)), got "
                                    f"{type(bad).__name__}")
        if not self.configs:
            raise ExpressivityError(f"sweep {self.name!r} has no runs; give at least one configuration")
        if len(self.configs) > MAX_RUNS:
            raise ExpressivityError(f"sweep {self.name!r} has {len(self.configs):,} runs, above the limit of "
                                    f"{MAX_RUNS:,}; split it into several sweeps")
        for c in self.configs:   # a sweep is made to be trained: refused before any run starts
            c.check_trainable()
        # each configuration's dict and id once (they were computed five times a run: 90 s at 100,000 runs)
        dicts = [c.to_dict() for c in self.configs]
        ids = [content_hash(d) for d in dicts]
        object.__setattr__(self, "_dicts", dicts)
        object.__setattr__(self, "_ids", ids)
        if len(set(ids)) != len(ids):
            seen: set = set()   # the first repeat in one pass (ids.count per run was quadratic: 19 s at 40,000 runs)
            dup = next(c for c, i in zip(self.configs, ids) if i in seen or seen.add(i))
            raise ExpressivityError(f"sweep {self.name!r} lists the same run more than once (seed {dup.seed}, "
                                    f"id {dup.id()}); remove the repeated grid values")
        _refuse_unread_variation(dicts, self.name)
        object.__setattr__(self, "select", parse_select(self.select, dicts[0]))

    def ids(self) -> list[str]:
        """The runs' ids, in order (computed once)."""
        return list(self._ids)

    def config_dicts(self) -> list[dict]:
        """The runs' configurations as :meth:`RunConfig.to_dict` gives them, in order (computed once;
        read them, do not change them)."""
        return self._dicts

    def id(self) -> str:
        """Content hash of the run ids (as a set) and the selection rules."""
        return content_hash({"ids": sorted(self.ids()), "select": self.select_text()})

    def select_text(self) -> dict:
        return select_text(self.select)

    def to_dict(self) -> dict:
        return {"name": self.name, "select": self.select_text(), "configs": self.config_dicts()}

    @classmethod
    def from_dict(cls, d: dict) -> "Sweep":
        """Rebuild from :meth:`to_dict` (what ``sweep.json`` in an output folder holds)."""
        if not isinstance(d, dict) or not isinstance(d.get("configs"), list):
            raise ExpressivityError('a stored sweep must be {"name", "select", "configs": [...]}')
        return cls(tuple(RunConfig.from_dict(c) for c in d["configs"]), d.get("select") or {}, str(d.get("name", "sweep")))


def _refuse_unread_variation(dicts: list[dict], name: str) -> None:
    """Refuse two runs that differ only in settings no layer of their model reads: a grid of
    ``model.heads`` over sepconv trained one model three times and ``results`` showed the three as
    rows of "heads" with equal losses, as if heads had no effect (an audit, 2026-11-28)."""
    from expressivity.mixer_switches import unread_variation

    found = unread_variation(dicts)
    if found:
        raise ExpressivityError(f"sweep {name!r} has runs that {found}")


# ---- dotted paths (parse_select and get_path live in expressivity.experiments.select) ----------
def set_path(d: dict, path: str, value) -> None:
    parts = path.split(".")
    if parts[0] not in ROOTS or any(not p for p in parts) or (parts[0] in ("seed", "eval_lengths") and len(parts) > 1) \
            or (parts[0] in ("model", "train") and len(parts) != 2) \
            or (parts[0] == "task" and parts[1:2] not in (["name"], ["args"])):
        raise ExpressivityError(f"grid axis {path!r} is not a setting; use seed, eval_lengths, task.name, "
                                "task.args.<arg>, model.<field> or train.<field>")
    cur = d
    for part in parts[:-1]:
        if not isinstance(cur.get(part), dict):
            cur[part] = {}
        cur = cur[part]
    cur[parts[-1]] = value


# ---- building configurations -------------------------------------------------------------------
class _Defaults:
    """The task's default configuration, cached per (task, args, eval lengths)."""

    def __init__(self):
        self.cache: dict[str, RunConfig] = {}

    def __call__(self, task: dict, eval_lengths) -> RunConfig:
        key = canonical_json([task, eval_lengths])
        if key not in self.cache:
            self.cache[key] = RunConfig.for_task(task["name"], task.get("args") or {}, eval_lengths=tuple(eval_lengths))
        return self.cache[key]


def build_config(point: dict, defaults: _Defaults | None = None) -> RunConfig:
    """A :class:`RunConfig` from a (possibly partial) configuration dict: unset settings take the
    task's defaults; unknown settings are refused by name."""
    defaults = defaults or _Defaults()
    if not isinstance(point, dict):
        raise ExpressivityError(f"a run configuration must be an object, got {type(point).__name__}")
    unknown = sorted(set(point) - set(ROOTS))
    if unknown:
        raise ExpressivityError(f"unknown configuration keys {', '.join(map(str, unknown))}; use {', '.join(ROOTS)}")
    task = point.get("task")
    if not (isinstance(task, dict) and isinstance(task.get("name"), str) and isinstance(task.get("args", {}), dict)):
        raise ExpressivityError('every run needs "task": {"name": ..., "args": {...}}')
    unknown = sorted(set(task) - {"name", "args"})
    if unknown:
        raise ExpressivityError(f"unknown task keys {', '.join(map(str, unknown))}; a task is "
                                '{"name": ..., "args": {...}}')
    lengths = point.get("eval_lengths", [])
    if not isinstance(lengths, (list, tuple)) or any(isinstance(v, bool) or not isinstance(v, int) for v in lengths):
        raise ExpressivityError('"eval_lengths" must be a list of integers')
    model, train = point.get("model", {}), point.get("train", {})
    for part, value in (("model", model), ("train", train)):
        if not isinstance(value, dict):
            raise ExpressivityError(f'"{part}" must be an object of settings, got {type(value).__name__}')
    default = defaults(task, list(lengths))
    known = default.model.to_dict()
    bad = sorted(set(model) - set(known))
    if bad:
        raise ExpressivityError(f"unknown model settings {', '.join(map(str, bad))}; known: {', '.join(known)}")
    _check_types(model, type(default.model), "model")
    return RunConfig.from_dict({"task": default.task.to_dict(), "model": {**known, **model},
                                "train": {**default.train.to_dict(), **train}, "seed": point.get("seed", 0),
                                "eval_lengths": list(lengths)})


def _check_types(settings: dict, cls, part: str) -> None:
    """Refuse a value whose JSON type the dataclass field cannot take (read from its annotation, so
    fields added later are checked too): ``"two"`` for an int, ``1.5`` for a bool, NaN anywhere."""
    kinds = {f.name: str(f.type) for f in dataclasses.fields(cls)}
    for key, value in settings.items():
        ann = kinds.get(key, "")
        ok = (value is None and "None" in ann) \
            or (isinstance(value, bool) and "bool" in ann) \
            or (isinstance(value, int) and not isinstance(value, bool) and ("int" in ann or "float" in ann)) \
            or (isinstance(value, float) and "float" in ann and math.isfinite(value)) \
            or (isinstance(value, str) and "str" in ann) \
            or (isinstance(value, (list, tuple)) and "tuple" in ann and all(isinstance(v, str) for v in value))
        if not ok:
            raise ExpressivityError(f"{part}.{key} = {value!r} does not fit its type ({ann}); give one like the "
                                    "task's default")


def expand_grid(spec: dict) -> list[RunConfig]:
    """The configurations of one ``{"base": ..., "grid": ...}`` spec (``grid`` a dict or a list of dicts)."""
    base = spec.get("base", {})
    if not isinstance(base, dict):
        raise ExpressivityError('"base" must be a run configuration object (see "expressivity train --json")')
    grids = spec.get("grid", {})
    grids = [grids] if isinstance(grids, dict) else grids
    if not isinstance(grids, list) or not grids or any(not isinstance(g, dict) for g in grids):
        raise ExpressivityError('"grid" must be an object {"axis": [values, ...]} or a list of such objects')
    defaults = _Defaults()
    base_key = canonical_json([base.get("task"), base.get("eval_lengths", [])])
    base_default = None
    out = []
    for grid in grids:
        axes = list(grid.items())
        size = 1
        for axis, values in axes:
            if not isinstance(values, list) or not values:
                raise ExpressivityError(f"grid axis {axis!r} must be a non-empty list of values, got {values!r}")
            size *= len(values)
        if size + len(out) > MAX_RUNS:
            raise ExpressivityError(f"the grid has {size + len(out):,} runs, above the limit of {MAX_RUNS:,}; "
                                    "split it into several sweeps")
        for combo in itertools.product(*(v for _, v in axes)):
            point = copy.deepcopy(base)
            for (axis, _), value in zip(axes, combo):
                set_path(point, axis, copy.deepcopy(value))
            if canonical_json([point.get("task"), point.get("eval_lengths", [])]) != base_key:
                if base_default is None:
                    base_default = build_config({"task": base.get("task"), "eval_lengths": base.get("eval_lengths", [])},
                                                defaults)
                _drop_base_defaults(point, base_default, {a for a, _ in axes})
            out.append(build_config(point, defaults))
    return out


def _drop_base_defaults(point: dict, base_default: RunConfig, axes: set[str]) -> None:
    """Remove settings that only repeat the base task's defaults, so the new task's apply."""
    ref = base_default.to_dict()
    for part in ("model", "train"):
        settings = point.get(part)
        if isinstance(settings, dict):
            for key in list(settings):
                if f"{part}.{key}" not in axes and key in ref[part] and _same(settings[key], ref[part][key]):
                    del settings[key]


def _same(a, b) -> bool:
    return canonical_json(a) == canonical_json(b)


# ---- loading -----------------------------------------------------------------------------------
def load_sweep(path) -> Sweep:
    """A sweep from a ``.py`` file (``configs()``, optional ``SELECT`` and ``NAME``), or a ``.json``
    / ``.toml`` grid; every problem is a one-line error naming the file."""
    if isinstance(path, str) and not path.strip():   # Path("") is "." (said "sweep file . not found")
        raise ExpressivityError("the sweep file is empty; give a .py, .json or .toml sweep")
    path = require_path(path, "load_sweep's sweep file (.py, .json or .toml)")
    if not path.is_file():
        raise ExpressivityError(f"sweep file {path} not found; give a .py, .json or .toml sweep")
    suffix = path.suffix.lower()
    if suffix == ".py":
        return _load_python(path)
    if suffix not in (".json", ".toml"):
        raise ExpressivityError(f"sweep file {path} must end in .py, .json or .toml")
    try:
        text = path.read_text()
        if suffix == ".json":
            spec = json.loads(text, object_pairs_hook=_object_without_repeats)
        else:
            import tomllib

            spec = tomllib.loads(text)
    except _RepeatedKey as exc:
        raise ExpressivityError(f"sweep file {path}: key {exc.args[0]!r} appears twice in one object; keep one "
                                "(JSON would silently keep the last)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ExpressivityError(f"sweep file {path} is not valid {suffix[1:].upper()} "
                                f"({_first_line(exc)}{_toml_key_at(text, exc) if suffix == '.toml' else ''})") from None
    try:
        return sweep_from_spec(spec, default_name=path.stem)
    except ExpressivityError as exc:
        raise ExpressivityError(f"sweep file {path}: {exc}") from None


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (carries the key)."""


def _object_without_repeats(pairs: list) -> dict:
    """``json.loads`` object hook: a dict, refusing a key given twice (JSON itself keeps the last)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def _toml_key_at(text: str, exc: Exception) -> str:
    """``; key 'x'`` for a TOML error about a repeated key or table: tomllib names the line, not the key."""
    import re

    where = re.search(r"at line (\d+)", str(exc))
    if where is None or not re.search(r"overwrite|declare", str(exc)):
        return ""
    lines = text.splitlines()
    number = int(where.group(1))
    line = lines[number - 1].strip() if 0 < number <= len(lines) else ""
    key = line.strip("[] ") if line.startswith("[") else line.split("=", 1)[0].strip()
    return f"; key {key!r} is given twice" if key else ""


def sweep_from_spec(spec, default_name: str = "sweep") -> Sweep:
    """A sweep from a grid spec dict (``base``, ``grid``, optional ``select`` and ``name``)."""
    if not isinstance(spec, dict):
        raise ExpressivityError('a sweep must be an object {"base": ..., "grid": ..., "select": ...}')
    unknown = sorted(set(spec) - {"base", "grid", "select", "name"})
    if unknown:
        raise ExpressivityError(f"unknown sweep keys {', '.join(map(str, unknown))}; use base, grid, select, name")
    if "grid" not in spec and "base" not in spec:
        raise ExpressivityError('a sweep needs "base" and "grid"; see "expressivity sweep --help"')
    _check_finite(spec)
    sweep = Sweep(tuple(expand_grid(spec)), spec.get("select") or {}, str(spec.get("name", default_name)))
    grids = spec.get("grid", {})
    axes = {axis for grid in ([grids] if isinstance(grids, dict) else grids) for axis in grid}
    for axis in sweep.select:
        if axis not in axes:
            raise ExpressivityError(f"select names {axis!r}, which is not a grid axis (axes: {', '.join(sorted(axes))}); "
                                    "select chooses among a grid axis's values, so add it to grid or drop it")
    _check_select_varies(sweep)
    return sweep


def _check_select_varies(sweep: Sweep) -> None:
    """Refuse a selection axis on which every run has the same value: nothing to choose from."""
    for axis in sweep.select:
        values = {canonical_json(get_path(c.to_dict(), axis)) for c in sweep.configs}
        if len(values) < 2:
            raise ExpressivityError(f"select names {axis!r}, but every run has the same {axis} "
                                    f"({next(iter(values))}); select over a setting the runs vary")


def _check_finite(value, where: str = "sweep") -> None:
    # JSON allows NaN/Infinity literals in Python's parser; a NaN learning rate is never meant.
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressivityError(f"{where} holds {value}; give finite numbers")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(v, f"{where}.{k}" if where != "sweep" else str(k))
    elif isinstance(value, list):
        for v in value:
            _check_finite(v, where)


def _load_python(path: Path) -> Sweep:
    spec = importlib.util.spec_from_file_location(f"_sweep_{content_hash(str(path.resolve()), 8)}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        # A print in the user's file must not end up in a --json answer on stdout.
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
            make = getattr(module, "configs", None)
            if not callable(make):
                raise ExpressivityError(f"sweep file {path} defines no configs() function returning run configurations")
            # at most one past the limit: a generator without end, or 10^7 configurations, filled the memory before
            # the count was refused (13 GB in a minute, an audit of the engine at scale, 2026-11-28)
            items = list(itertools.islice(make(), MAX_RUNS + 1))
            if len(items) > MAX_RUNS:
                raise ExpressivityError(f"configs() gives more than {MAX_RUNS:,} runs, above the limit; split it into "
                                        "several sweeps")
    except ExpressivityError as exc:
        raise ExpressivityError(f"sweep file {path}: {exc}") from None
    except (Exception, SystemExit) as exc:  # user code: any failure is the file's problem, said in one line
        raise ExpressivityError(f"sweep file {path} raised {type(exc).__name__}: {_first_line(exc)}") from None
    defaults = _Defaults()
    configs = []
    for k, item in enumerate(items):
        if isinstance(item, RunConfig):
            configs.append(item)
        elif isinstance(item, dict):
            try:
                configs.append(build_config(item, defaults))
            except ExpressivityError as exc:
                raise ExpressivityError(f"sweep file {path}, run {k}: {exc}") from None
        else:
            raise ExpressivityError(f"sweep file {path}: configs() item {k} is a {type(item).__name__}; "
                                    "return RunConfig objects or configuration dicts")
    name = getattr(module, "NAME", path.stem)
    try:
        sweep = Sweep(tuple(configs), getattr(module, "SELECT", {}) or {}, str(name))
        _check_select_varies(sweep)
    except ExpressivityError as exc:
        raise ExpressivityError(f"sweep file {path}: {exc}") from None
    return sweep


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
