"""Queries over stored results through DuckDB (the ``[results]`` extra): filter, group, aggregate
over seeds with 95% intervals, and write tables as text, CSV, JSON or Parquet.

A source is a sweep folder (its records become rows, see :mod:`~expressivity.experiments.table`,
with the sweep's selection applied; its ``sweep.json`` says which runs the sweep has, so the runs
of an unfinished sweep not yet recorded are counted and their groups reported as ``incomplete``,
with a warning), a ``records.jsonl`` (every recorded run, no selection), or any table file -- CSV,
JSON Lines or Parquet -- with columns of its own. Expressions (``--where``, ``--group-by``, ``--metric``,
``--x``...) are DuckDB SQL over the rows: nested settings read as in a sweep grid
(``model.heads``, ``task.args.kernel``); a name that is a column of the file (``"model.heads"`` in
a CSV written by ``results``) means that column.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shlex
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from expressivity.errors import ExpressivityError
from expressivity.experiments.store import RECORDS, precision_counts, read_records, stream_counts
from expressivity.experiments.table import group_rows, select_groups, varying_settings
from expressivity.records import jsonable
from expressivity.statistics import rounding_width, t_quantile_975
from expressivity.verify.size import counted

FORMATS = ("table", "csv", "json", "parquet")


def duckdb_module():
    try:
        import duckdb
    except ModuleNotFoundError:
        raise ExpressivityError("results queries need DuckDB: pip install 'expressivity[results]'") from None
    return duckdb


class IncompleteSweepWarning(UserWarning):
    """A sweep folder whose sweep has runs not recorded yet (or whose ``sweep.json`` does not list
    its records): shown as one ``warning:`` line by the commands."""


@dataclass
class Source:
    """Rows loaded into DuckDB as the table ``t``. ``from_records``: rows made from run records
    (then ``settings`` lists the paths that vary between runs and ``selected`` the selected ones).

    For a sweep folder whose ``sweep.json`` lists every recorded run: ``sweep_runs`` (the sweep's
    runs), ``unrecorded`` (those not recorded yet) and ``incomplete`` (configuration-seed groups, or
    runs without selection, with an unrecorded run: rows of status ``incomplete``); ``None`` where
    not known (a table or a records file)."""

    con: object
    columns: list[str]
    from_records: bool
    settings: list[str] = field(default_factory=list)
    selected: list[str] = field(default_factory=list)
    label: str = ""
    sweep_runs: int | None = None
    unrecorded: int | None = None
    incomplete: int | None = None
    metric_range: tuple[float | None, float | None] | None = None   # of the records' metric columns, where known

    def counts(self) -> dict:
        """``{"sweep_runs", "unrecorded", "incomplete"}`` (for ``--json``)."""
        return {"sweep_runs": self.sweep_runs, "unrecorded": self.unrecorded, "incomplete": self.incomplete}


def _read_sweep(folder: Path) -> tuple[dict, list[dict]]:
    """``(selection rules, configurations)`` of the sweep in ``folder`` (its ``sweep.json``); a
    missing or unreadable file is a one-line error naming the fix."""
    from expressivity.experiments.select import parse_select

    path = folder / "sweep.json"
    if not path.exists():
        raise ExpressivityError(f"{folder} has {RECORDS} but no sweep.json (the sweep's runs and selection rules), so "
                                f"neither its selection nor its unrecorded runs can be told; restore {path}, or give "
                                f"{folder / RECORDS} to read every recorded run without selection")
    try:
        stored = json.loads(path.read_text())
        select = stored.get("select") or {}
        configs = stored["configs"]
        example = configs[0]
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            raise TypeError
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        # 'sweep run' refuses a folder whose sweep.json it cannot read, so "run the sweep again to rewrite it" could
        # not work (a fresh audit, 2026-11-29)
        raise ExpressivityError(f"{path} is unreadable, and without it the records cannot be grouped; run the sweep "
                                "again into a new --out folder ('sweep run' does not rewrite it in place)") from None
    return parse_select(select, example), configs


def _resume_hint(folder: Path) -> str:
    """The command that resumes the sweep in ``folder``: the one in its ``run.json`` when that was a
    ``sweep run`` with its arguments, else its general form."""
    try:
        command = json.loads((folder / "run.json").read_text()).get("command")
    except (OSError, ValueError, AttributeError):
        command = None
    if isinstance(command, str) and command.startswith("sweep run ") and "--out" in command:
        try:
            words = shlex.split(command)
            at = words.index("--out") + 1
        except (ValueError, IndexError):
            words, at = [], 0
        if 0 < at < len(words):
            # a copied or moved folder resumes where it is now, not where run.json says it was written
            words[at] = str(folder)
            return f"'expressivity {shlex.join(words)}' resumes them"
    return f"'expressivity sweep run SWEEP --out {folder}' (or the command that wrote {folder}) resumes them"


def _is_records_file(path: Path) -> bool:
    if path.name == RECORDS:
        return True
    with path.open("rb") as f:
        first = f.readline()
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and "config" in obj and "id" in obj


# a table file's format by its suffix: what the readers take, and what results/fit write (--out must agree)
TABLE_FORMATS = {".csv": "csv", ".tsv": "csv", ".jsonl": "json", ".json": "json", ".parquet": "parquet"}


def delimiter_for(path) -> str:
    """The field separator a delimited table named ``path`` is written with: a tab for ``.tsv`` (it held commas
    until 2026-11-29), else a comma. DuckDB's reader finds either by itself."""
    return "\t" if path is not None and Path(path).suffix.lower() == ".tsv" else ","


def open_source(source, select: bool | dict = True) -> Source:
    """Load ``source`` into DuckDB. ``select``: ``True`` applies the sweep's own selection rules,
    ``False`` none, a dict these rules."""
    duckdb = duckdb_module()
    path = Path(source)
    if not path.exists():
        raise ExpressivityError(f"{path} not found; give a sweep folder or a table file (.csv, .jsonl, .parquet)")
    con = duckdb.connect()
    suffix = path.suffix.lower()
    if path.is_dir() or (suffix in (".jsonl", ".json") and _is_records_file(path)):
        if path.is_dir() and not (path / RECORDS).exists():
            raise ExpressivityError(f"{path} has no {RECORDS}; give a folder written by 'expressivity sweep run'")
        rules, configs = _read_sweep(path) if path.is_dir() else ({}, None)
        rules = rules if select is True else (select or {})
        records = read_records(path)
        if not records:
            raise ExpressivityError(f"{path} holds no finished runs yet")
        if configs is not None:
            from expressivity.records import content_hash

            listed = {content_hash(c) for c in configs}
            strays = sum(1 for r in records if r["id"] not in listed)
            if strays:
                warnings.warn(f"{path / 'sweep.json'} does not list {strays} of the {len(records)} recorded runs, so "
                              "which runs of the sweep are unrecorded cannot be told; every recorded run is taken as "
                              "the sweep (restore the sweep.json that 'expressivity sweep run' wrote)",
                              IncompleteSweepWarning, stacklevel=2)
                configs = None
        groups = select_groups(records, rules, configs)
        rows = group_rows(groups)
        broken = [g for g in groups if g.crashed and g.candidates > 1]
        if broken:
            warnings.warn(f"{len(broken)} configuration-seed group(s) in {path} have a candidate that crashed (an error "
                          "or a worker that died, not a NaN) or finished with no validation value: no selection "
                          "there, counted as failed; the command "
                          f"that wrote {path} with --retry-failed trains them again", IncompleteSweepWarning,
                          stacklevel=2)
        settings = [p for p in varying_settings(configs if configs is not None else [r["config"] for r in records])
                    if p not in rules]
        counts = {}
        if configs is not None:
            unrecorded = len(listed) - len(records)
            incomplete = sum(1 for g in groups if not g.complete)
            counts = {"sweep_runs": len(listed), "unrecorded": unrecorded, "incomplete": incomplete}
            if unrecorded:
                what = (f"{incomplete} of {len(groups)} configuration-seed groups are incomplete (no selection, no "
                        "values)" if rules else f"{incomplete} runs are incomplete (no values)")
                warnings.warn(f"{unrecorded} of {len(listed)} runs of the sweep in {path} are not recorded yet: "
                              f"{what}; {_resume_hint(path)}", IncompleteSweepWarning, stacklevel=2)
        if rules:
            _warn_grid_edges(path, records, rules)
            _warn_uneven_selection(path, configs if configs is not None else [r["config"] for r in records], rules)
        _warn_mixed_precision(path, records)
        if configs is not None:
            from expressivity.mixer_switches import unread_variation

            try:
                found = unread_variation(configs)
            except (ExpressivityError, KeyError, TypeError, AttributeError):   # an old or odd sweep.json
                found = None
            if found:   # a folder made before sweeps refused it: its rows of that setting are one model
                warnings.warn(f"runs of the sweep in {path} {found} (rows that differ only in it show one "
                              "model twice, not the setting's effect)", IncompleteSweepWarning, stacklevel=2)
        if path.is_dir() and select is True:
            _warn_select_not_recorded(path, rules)
        _load_rows(con, rows)
        _seal(con)
        return Source(con, _columns(con), True, settings, list(rules), str(path), **counts,
                      metric_range=metric_range(records))
    if suffix not in TABLE_FORMATS:
        raise ExpressivityError(f"{path}: unknown table format {suffix or '(no suffix)'}; use .csv, .jsonl or .parquet")
    readers = {"csv": "read_csv_auto", "json": "read_json_auto", "parquet": "read_parquet"}
    try:
        con.execute(f"CREATE TABLE t AS SELECT * FROM {readers[TABLE_FORMATS[suffix]]}(?)", [str(path)])
        if TABLE_FORMATS[suffix] == "json" and {"command", "columns", "rows", "run"} <= set(_columns(con)):
            # this package's own JSON result (results/fit --format json --out): its table is "rows", which was read
            # as one row of metadata columns (a review, 2026-11-29)
            con.execute("DROP TABLE t")
            con.execute("CREATE TABLE t AS SELECT unnest(rows, recursive := true) FROM read_json_auto(?)", [str(path)])
    except duckdb.Error as exc:
        raise ExpressivityError(f"{path} is not a readable {suffix[1:]} table ({_first(exc)})") from None
    if con.execute("SELECT count(*) FROM t").fetchone()[0] == 0:
        raise ExpressivityError(f"{path} has no rows")
    _seal(con)
    return Source(con, _columns(con), False, label=str(path))


def _seal(con) -> None:
    """Once the table ``t`` is loaded, no query reads or writes a file: a --where, --metric or --group-by typed (or
    pasted from someone else's notes) read /etc/passwd through read_csv and wrote a file through '; COPY ... TO'
    (a fresh audit, 2026-11-29). The setting is locked, so no later statement turns it back on."""
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _warn_mixed_precision(path: Path, records: list[dict]) -> None:
    """Warn where the recorded runs were trained in more than one precision: a folder resumed with
    ``--precision bf16`` averaged fp32 and bf16 runs into one interval without a word, and bf16 moves
    held-out losses about as much as another seed does (an audit, 2026-11-28)."""
    counts = precision_counts(records)
    if len(counts) > 1:
        warnings.warn(f"the runs recorded in {path} were trained in {len(counts)} precisions "
                      f"({', '.join(f'{k}: {v}' for k, v in counts.items())}), averaged together here; a lower "
                      "precision moves held-out losses about as much as another seed: compare runs of one precision "
                      "(train the others again in it, in another folder)",
                      MixedPrecisionWarning, stacklevel=3)
    streams = stream_counts(records)
    if len(streams) > 1:   # a sweep resumed on a GPU: the device sampler draws other batches under the same ids
        warnings.warn(f"the runs recorded in {path} drew their training data from {len(streams)} streams "
                      f"({', '.join(f'stream {k}: {v}' for k, v in streams.items())}; 1 is the host sampler, 2 the "
                      "device sampler, which draws other batches from the same seed), averaged together here; a run's "
                      "data is its id and its stream (execution.stream): compare runs of one stream, or say so",
                      MixedPrecisionWarning, stacklevel=3)


def _warn_select_not_recorded(path: Path, rules: dict) -> None:
    """Warn where ``sweep.json``'s selection rules are not the ones ``run.json`` recorded (a hand
    edit of ``sweep.json`` changed what results reported, unnoticed: an audit, 2026-11-28)."""
    try:
        recorded = json.loads((path / "run.json").read_text())["config"]["select"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    from expressivity.experiments.select import select_text

    now = select_text(rules)
    if isinstance(recorded, dict) and recorded != now:
        warnings.warn(f"{path / 'sweep.json'} selects {now or 'nothing'}, but {path / 'run.json'} recorded "
                      f"{recorded or 'nothing'} when the runs were trained; the table uses sweep.json's (restore "
                      "the one 'expressivity sweep run' wrote)", IncompleteSweepWarning, stacklevel=3)


class MixedPrecisionWarning(UserWarning):
    """Runs of one folder trained in several precisions, or on several data streams (one ``warning:`` line)."""


class GridEdgeWarning(UserWarning):
    """Selections at the edge of their grid: the best setting may lie beyond it (one ``warning:`` line)."""


def _warn_grid_edges(path: Path, records: list[dict], rules: dict) -> None:
    """Warn where a configuration's selection (``train.lr``, say) chose the smallest or largest
    value of its grid (of three or more values) for most seeds: the table's number is then the
    grid's edge, not the optimum (``reproduce`` decides such a claim *undecided* and extends the
    grid; a sweep of one's own was silent, a fresh audit, 2026-11-28)."""
    from expressivity.experiments.claims.grids import edges_of, group_key
    from expressivity.experiments.table import select_groups

    for axis in rules:
        # a grid of three or more values searches for the best; two values are a comparison, all edge
        edges = [e for e in edges_of(path.name, records, rules, axis, select_groups)
                 if e.most_seeds and len(e.grid) >= 3]
        if edges:
            configs = len({group_key(r["config"], axis) for r in records})
            first = edges[0]
            sides = " and ".join(f"the {side} for {n}" for side, n in (("smallest", first.low), ("largest", first.high))
                                 if n)
            warnings.warn(f"{len(edges)} of {configs} configurations selected {axis} at its grid's edge for most "
                          f"seeds (e.g. {first.label}: grid {' '.join(f'{v:g}' for v in first.grid)}, {sides} of "
                          f"{first.total} seeds): their numbers may not be the best the setting gives; extend the grid "
                          "beyond that edge", GridEdgeWarning, stacklevel=3)


def _warn_uneven_selection(path: Path, configs: list[dict], rules: dict) -> None:
    """Warn where the seeds of one configuration select among different grids of the selected
    settings (a Python ``configs()`` sweep can give seed 0 the learning rates 1e-3 and 1e-2 and
    seed 1 only 1e-3): the table averages the seeds as one group, though each was the best of
    another set of candidates (averaged without a word: the seventeenth audit)."""
    from expressivity.experiments.table import _lookup, drop_path
    from expressivity.records import canonical_json

    grids: dict[str, dict] = {}
    for config in configs:
        key = config
        for axis in rules:
            key = drop_path(key, axis)
        chosen = tuple(canonical_json(_lookup(config, axis)) for axis in sorted(rules))
        grids.setdefault(canonical_json(drop_path(key, "seed")), {}).setdefault(
            canonical_json(config.get("seed")), set()).add(chosen)
    uneven = [by_seed for by_seed in grids.values() if len({frozenset(g) for g in by_seed.values()}) > 1]
    if uneven:
        first = uneven[0]
        examples = "; ".join(f"seed {json.loads(seed)}: {len(grid)} candidate(s)" for seed, grid in
                             sorted(first.items(), key=lambda kv: (len(kv[1]), kv[0]))[:2])
        warnings.warn(f"in {len(uneven)} of {len(grids)} configurations of {path} the seeds select "
                      f"{', '.join(sorted(rules))} among different grids (e.g. {examples}), yet each row averages "
                      "them as one group: give every seed the same grid (or compare the seeds' grids apart with "
                      "--no-select)", IncompleteSweepWarning, stacklevel=3)


def _load_rows(con, rows: list[dict]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        path.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in rows))
        con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, format='newline_delimited', sample_size=-1)",
                    [str(path)])


def _columns(con) -> list[str]:
    return [d[0] for d in con.execute("SELECT * FROM t LIMIT 0").description]


def _first(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def path_sql(path: str) -> str:
    """``model.heads`` -> ``"model"."heads"`` (safe for keywords such as ``task.args.values``)."""
    return ".".join(quote(p) for p in path.split("."))


def expr(text: str, src: Source, what: str) -> str:
    """A user expression as SQL: an exact column name is quoted, anything else is taken as SQL."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressivityError(f"{what} is empty; give a column or an expression such as test_metric")
    text = text.strip()
    if text in src.columns:
        return quote(text)
    name = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", text)
    if name and text.split(".")[0] not in src.columns and text.lower() not in ("true", "false", "null"):
        # a bare name that is no column: DuckDB's own message spoke of "the SELECT clause" (a fresh fuzz)
        listed = ", ".join(src.columns[:10]) + (f", ... ({len(src.columns)} in all)" if len(src.columns) > 10 else "")
        raise ExpressivityError(f"{what} {text!r} is no column of {src.label}; its columns: {listed}")
    return text


def condition(where: str | None, src: Source | None = None) -> str:
    """``--where`` as SQL: ``TRUE`` when not given; an empty or blank one is refused (it read as "no filter"
    in one place and as a DuckDB cast error about TUPLE in another, a fresh fuzz, 2026-11-28). A table's
    flat column whose name has a dot (``model.heads`` in a CSV that ``results --runs`` wrote) is quoted
    where it appears unquoted, as ``--group-by`` and ``--x`` read it (DuckDB read it as a table)."""
    if where is None:
        return "TRUE"
    if not str(where).strip():
        raise ExpressivityError("--where is empty; give an SQL condition such as \"model.rpe = 'log'\", or leave it out")
    if src is not None and not src.from_records:
        # outside string literals and quoted names only: 'a model.heads b' became 'a "model.heads" b' and matched
        # nothing (a fresh audit, 2026-11-29)
        pieces = re.split(r"""('(?:[^']|'')*'|"(?:[^"]|"")*")""", where)
        for name in sorted((c for c in src.columns if "." in c), key=len, reverse=True):
            pattern = r'(?<![\w."\'])' + re.escape(name) + r'(?![\w"])'
            pieces = [re.sub(pattern, lambda _m, n=name: quote(n), p) if k % 2 == 0 else p
                      for k, p in enumerate(pieces)]
        where = "".join(pieces)
    return where


def split_list(text: str | None) -> list[str]:
    """``"a, f(b, c), d"`` -> ``["a", "f(b, c)", "d"]``: commas at parenthesis depth 0, outside quotes."""
    if text is None:
        return []
    parts, depth, cur, quote_char = [], 0, "", None
    for ch in text:
        if quote_char:
            quote_char = None if ch == quote_char else quote_char
        elif ch in "'\"":
            quote_char = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    parts.append(cur.strip())
    if any(not p for p in parts):
        raise ExpressivityError(f"{text!r} has an empty entry; give comma-separated columns like model.heads, model.rpe")
    twice = next((p for k, p in enumerate(parts) if p in parts[:k]), None)
    if twice is not None:   # a column grouped by twice wrote two columns of one name (a fuzz, 2026-11-28)
        raise ExpressivityError(f"{text!r} names {twice} twice; give each column once")
    return parts


def length_filter(src: Source, length) -> str:
    """SQL condition for ``--length``: ``train`` (the training length), ``all``, or a number
    (refused, listing the evaluated lengths, when no run was evaluated there)."""
    if not src.from_records or length in (None, "all"):
        return "TRUE"
    if length == "train":
        return "length = train_length"
    if isinstance(length, str) and re.fullmatch(r"[1-9]\d{0,8}", length.strip()):
        length = int(length)
    if not (isinstance(length, int) and not isinstance(length, bool) and length >= 1):
        raise ExpressivityError(f"--length must be train, all or a task length such as 64, got {length!r}")
    lengths = [row[0] for row in src.con.execute("SELECT DISTINCT length FROM t ORDER BY length").fetchall()]
    if lengths and length not in lengths:
        raise ExpressivityError(f"--length {length}: no run was evaluated at that length; evaluated lengths: "
                                f"{', '.join(map(str, lengths))}")
    return f"length = {length}"


def run_sql(src: Source, sql: str, params=None):
    duckdb = duckdb_module()
    try:
        statements = len(src.con.extract_statements(sql))
    except duckdb.Error:
        statements = 1   # a syntax error: the query below names it
    if statements > 1:   # a ';' in an expression ended the query and ran another after it
        raise ExpressivityError("an expression (--where, --metric, --group-by, --x, --y, --by) holds ';', which would "
                                "end the query and run another; give one SQL expression")
    try:
        cur = src.con.execute(sql, params or [])
        return [d[0] for d in cur.description], cur.fetchall()
    except duckdb.Error as exc:
        hint = ", ".join(src.columns[:24])
        nested = " (nested: model.<field>, train.<field>, task.args.<arg>)" if src.from_records else ""
        raise ExpressivityError(f"bad query ({_first(exc)}); columns: {hint}{nested}") from None


def default_group_by(src: Source, length) -> list[str]:
    groups = list(src.settings) if src.from_records else []
    if src.from_records and length == "all":
        groups.append("length")
    return groups


NONNEGATIVE_COLUMNS = ("val_loss", "test_loss", "final_loss")   # a record's losses (cross-entropy, squared error)
METRIC_COLUMNS = ("val_metric", "test_metric", "best_metric", "final_metric")   # a record's task metric
# The values each task's metric can take (accuracy in [0, 1], R^2 at most 1): a torch-free copy of the tasks'
# metric_name, which tests/experiments check against expressivity.tasks.TASKS
TASK_METRICS = {"fixed-memory": "r2", "adaptive-memory": "r2", "nested-memory": "r2", "kernel-memory": "r2",
                "reverse": "accuracy", "sort": "accuracy", "copy": "accuracy", "sum": "accuracy", "parity": "accuracy",
                "associative-recall": "accuracy", "yun-target": "r2", "lm-causal": "accuracy", "lm-masked": "accuracy"}
METRIC_RANGES = {"accuracy": (0.0, 1.0), "r2": (None, 1.0)}


def metric_range(records: list[dict]) -> tuple[float | None, float | None] | None:
    """The range of the records' metric (``(lo, hi)``, ``None`` for no end) where every record's task has the same
    metric, else ``None``."""
    names = {TASK_METRICS.get(str(((r.get("config") or {}).get("task") or {}).get("name"))) for r in records}
    return METRIC_RANGES.get(names.pop()) if len(names) == 1 else None


_VALUE, _STATUS = '"expressivity: value"', '"expressivity: status"'   # aliases no table's column is called
_SEED = '"expressivity: seed"'


STATISTIC_COLUMNS = ("n", "mean", "geomean", "ci_low", "ci_high", "sd", "sd_log10", "min", "max", "failed",
                     "missing", "incomplete", "values")


class RepeatedXWarning(UserWarning):
    """``fit`` without seeds on points that share an ``x`` (seeds of one setting, pooled as independent)."""


class PooledSeedsWarning(UserWarning):
    """A group of ``results`` holds several values of one seed (lengths or settings it does not group by)."""


def _range_text(bounded: tuple) -> str:
    low, high = bounded
    return f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"


def _metric_bounds(metric: str, src: Source) -> tuple[float | None, float | None] | None:
    """Where the mean of ``metric`` can lie, for a sweep's records: a loss column is at least 0, a task metric column
    within its range (accuracy in [0, 1], R^2 at most 1: :data:`TASK_METRICS`), and ``c - column``, ``c + column``,
    ``column + c`` or ``column - c`` (a number ``c``) the range moved; ``None`` for anything else. The interval
    stops there (an R^2 interval reached 1.098, an accuracy's -0.365, and the error rate ``1 - test_metric`` reached
    1.018 where ``test_metric``'s stopped at 0: fresh audits, 2026-11-29), as reproduce's clips R^2 at 1."""
    if not src.from_records:
        return None
    # the column as DuckDB reads it: "(test_loss)", "TEST_LOSS" and a quoted name are the loss too (a review)
    text = re.sub(r'[\s()"]', "", metric).lower()
    number = r"[0-9.]+(?:e[+-]?[0-9]+)?"
    # c + column, c - column (c may carry a sign) and column + c, column - c: "-1 + test_metric" and
    # "test_metric - 1" were not clipped where "1 - test_metric" was (a fresh audit, 2026-11-29)
    before = re.fullmatch(rf"(?:([+-]?{number})([+-]))?([a-z_]+)", text)
    after = re.fullmatch(rf"([a-z_]+)([+-])({number})", text)
    if before is not None:
        constant, sign, column = before.groups()
    elif after is not None:
        column, op, number_text = after.groups()
        constant, sign = (number_text if op == "+" else "-" + number_text), "+"
    else:
        return None
    if column in NONNEGATIVE_COLUMNS:
        low, high = 0.0, None
    elif column in METRIC_COLUMNS and src.metric_range is not None:
        low, high = src.metric_range
    else:
        return None
    if constant is None:
        return low, high
    try:
        c = float(constant)
    except ValueError:
        return None
    if sign == "+":
        return (None if low is None else c + low), (None if high is None else c + high)
    return (None if high is None else c - high), (None if low is None else c - low)


def seed_column(src: Source) -> str | None:
    """The SQL of a source's seed: a sweep's records' ``seed``, a table's column ``seed``; ``None`` without one."""
    if src.from_records:
        return path_sql("seed")
    return quote("seed") if "seed" in src.columns else None


def aggregate(src: Source, metric: str = "test_metric", group_by: list[str] | None = None, where: str | None = None,
              length="train", log: bool = False, log_option: str = "--log") -> tuple[list[str], list[list]]:
    """Mean (or, with ``log``, geometric mean) of ``metric`` per group, with a 95% Student-t interval (on log10
    with ``log``) across the group's seeds (none for fewer than two seeds or identical values: a zero-width
    interval states no uncertainty).

    The unit is the seed (a sweep's records, or a table's column ``seed``; else each row): a group holding several
    values of one seed (its lengths with ``--length all`` and no ``length`` group, or settings it does not group
    by) averages each seed's values first, so ``n`` counts seeds, and a :class:`PooledSeedsWarning` says so;
    the column ``values`` then counts the values (a fresh audit, 2026-11-28: 9 values of 3 seeds were "n = 9",
    their interval three times too narrow).

    Columns: the groups, ``n`` (seeds), ``mean``/``geomean``, ``ci_low``, ``ci_high``, ``sd`` (across seeds; of
    log10 with ``log``), ``min``, ``max`` (of the values), ``failed`` (failed runs), ``missing`` (other rows
    without a value: empty cells, inf or NaN) and ``incomplete`` (rows of configuration-seed groups with a run not
    recorded yet: no selection, no value), the last only where some group has such rows, and ``values`` only where
    some group has more values than seeds. With ``log``, a finite value <= 0 is refused (``log_option`` names
    the option): a geometric mean cannot take it, and leaving it out biases the mean up ({0, 0.25, 0.25} gave
    0.25, its minimum 0.25: an audit). The interval of a loss of a sweep's records (a non-negative quantity) stops
    at 0: the t interval reached below it (test_loss -0.0077 at two seeds: an audit, 2026-11-28), and cutting off
    values the mean cannot take keeps its coverage; so does a task metric's (accuracy in [0, 1], R^2 at most 1,
    where every record's task has the same metric: :data:`TASK_METRICS`), with ``log`` as well. The test split is one fixed sample shared by the seeds, so the
    interval is over seeds on that split (its own sampling error is not in it).
    """
    groups = default_group_by(src, length) if group_by is None else group_by
    bounded = _metric_bounds(metric, src)
    exprs = [path_sql(g) if src.from_records and g in src.settings else expr(g, src, "--group-by") for g in groups]
    m = expr(metric, src, "--metric")
    finite = f"isfinite(({m})::DOUBLE)"  # inf and NaN (e.g. a metric expression 1/0) count as missing
    # a failed run and an incomplete group have no value, whatever the expression (a constant, a setting...)
    known = "status IS DISTINCT FROM 'incomplete' AND status IS DISTINCT FROM 'failed' AND " if src.from_records else ""
    value = f"CASE WHEN {known}{finite} THEN ({m})::DOUBLE END"
    cond = f"({length_filter(src, length)}) AND ({condition(where, src)})"
    seed = seed_column(src)
    # each row its own unit where there is no seed, and where the seed is empty
    unit = (f"COALESCE(CAST({seed} AS VARCHAR), 'row ' || CAST(row_number() OVER () AS VARCHAR))" if seed
            else "'row ' || CAST(row_number() OVER () AS VARCHAR)")
    # the inner query names only what the outer one reads, so a table's own column called like an alias
    # (a CSV with a column "v") cannot stand in for the filtered value
    inner = [f"{e} AS {quote(g)}" for e, g in zip(exprs, groups)]
    inner += [f"{'status' if src.from_records else 'NULL'} AS {_STATUS}", f"{value} AS {_VALUE}", f"{unit} AS {_SEED}"]
    keys = "".join(f"{quote(g)}, " for g in groups)
    v = _VALUE
    logged = f"CASE WHEN {v} > 0 THEN log10({v}) END" if log else v
    per_seed = (f"SELECT {keys}{_SEED}, avg({logged}) AS u, min({v}) AS lo, max({v}) AS hi, count({v}) AS k, "
                f"count(*) FILTER (WHERE {v} <= 0) AS nonpositive, "
                f"count(*) FILTER (WHERE {_STATUS} = 'failed') AS f, "
                f"count(*) FILTER (WHERE {_STATUS} = 'incomplete') AS inc, count(*) AS rows "
                f"FROM (SELECT {', '.join(inner)} FROM t WHERE {cond}) GROUP BY {keys}{_SEED}")
    sql = (f"SELECT {keys}count(u) AS n, avg(u) AS mean, stddev_samp(u) AS sd, min(lo) AS lo, max(hi) AS hi, "
           f"sum(f) AS failed, sum(rows) - sum(k) - sum(f) - sum(inc) AS missing, sum(inc) AS incomplete, "
           f"sum(k) AS vals, sum(nonpositive) AS nonpositive FROM ({per_seed}) "
           + (f"GROUP BY {', '.join(quote(g) for g in groups)} ORDER BY {', '.join(quote(g) for g in groups)}"
              if groups else ""))
    _, rows = run_sql(src, sql)
    if log:
        below = [(row[:len(groups)], int(row[-1])) for row in rows if row[-1]]
        if below:
            where_ = ", ".join(", ".join(f"{b}={v}" for b, v in zip(groups, g)) or "all rows" for g, _ in below[:3])
            raise ExpressivityError(
                f"{log_option}: {sum(c for _, c in below)} value(s) of {metric} are <= 0 ({where_}"
                f"{', ...' if len(below) > 3 else ''}), which a geometric mean cannot take (leaving them out biases it "
                f"up); drop {log_option}, or leave them out yourself with "
                + (f"--where \"({metric}) > 0 OR status = 'failed'\" (failed runs stay counted)" if src.from_records
                   else f"--where '({metric}) > 0'"))
    head = [*groups, "n", "geomean" if log else "mean", "ci_low", "ci_high", "sd_log10" if log else "sd", "min", "max",
            "failed", "missing", "incomplete", "values"]
    out = []
    overflowed = 0
    for row in rows:
        g, (n, mean, sd, lo, hi, failed, missing, incomplete, vals, _) = list(row[:len(groups)]), row[len(groups):]
        failed, missing, incomplete, vals = (int(x or 0) for x in (failed, missing, incomplete, vals))
        if n == 0:
            out.append([*g, 0, None, None, None, None, None, None, failed, missing, incomplete, vals])
            continue
        # identical values give no interval, not a zero-width one: a sample of seeds cannot state no uncertainty
        # (the convention of expressivity.statistics)
        half = t_quantile_975(n - 1) * sd / math.sqrt(n) if n > 1 and sd else None
        if half is not None and rounding_width(mean - half, mean + half):   # equal up to float64's rounding too
            half = None
        ci = (mean - half, mean + half) if half is not None else (None, None)
        if bounded is not None and ((bounded[0] is not None and lo is not None and lo < bounded[0]) or
                                    (bounded[1] is not None and hi is not None and hi > bounded[1])):
            # the interval is clipped to where the mean can lie; a value outside left the mean outside its own
            # interval (an accuracy of 5.0 edited into records.jsonl: mean 2.999 in [0, 1], an audit, 2026-11-29)
            where_ = ", ".join(f"{b}={v}" for b, v in zip(groups, g)) or "all rows"
            raise ExpressivityError(
                f"{metric} has values outside the range its records' task gives it ({_range_text(bounded)}): min "
                f"{lo:.6g}, max {hi:.6g} ({where_}); the records were edited or are not the trainer's: check "
                "records.jsonl, or leave those rows out with --where")
        beyond = False
        if log:
            powers = [_pow10(v) for v in (mean, *ci)]
            beyond = any(v is not None and p is None for v, p in zip((mean, *ci), powers))
            mean, *ci = powers
        if bounded is not None and ci[0] is not None:
            # with --log too, after the power of ten: an accuracy's geometric interval reached 94 at two seeds
            # (a fresh audit, 2026-11-29); the geometric mean of values in [lo, hi] lies there as well
            low, high = bounded
            ci = (ci[0] if low is None else max(ci[0], low), ci[1] if high is None else min(ci[1], high))
        # a sum of values near the float64 limit overflows: such a statistic is reported as missing (None), and
        # said; an interval without its mean is no interval (ci_low alone was shown: a fuzz pass, 2026-11-29)
        finite = [v if v is None or math.isfinite(v) else None for v in (mean, sd, *ci)]
        overflowed += beyond or any(a is not None and b is None for a, b in zip((mean, sd, *ci), finite))
        mean, sd, *ci = finite
        if mean is None or None in ci:   # half an interval is none (ci_low alone was shown: a review, 2026-11-29)
            ci = [None, None]
        out.append([*g, n, mean, *ci, sd, lo, hi, failed, missing, incomplete, vals])
    if overflowed:
        # the query's sums of values, or of their squares (the spread's: values above about 1e154), overflow, though
        # the statistic itself may not (1e200, 2e200, 1.5e200: sd 5e199, "beyond float64" read false: a review)
        warnings.warn(f"{counted(overflowed, 'group')} {'has' if overflowed == 1 else 'have'} a statistic of {metric} "
                      "that overflowed float64 in the "
                      "query's sums (of the values, or of their squares for the spread: values above about 1e154), "
                      f"shown as missing with its interval; scale the metric, e.g. --metric '({metric}) / 1e300'")
    pooled = [(row[:len(groups)], row[len(groups)], row[-1]) for row in out if row[-1] > row[len(groups)]]
    if pooled:
        g, n, vals = pooled[0]
        label = ", ".join(f"{b}={x}" for b, x in zip(groups, g)) or "the one group"
        warnings.warn(PooledSeedsWarning(
            f"{len(pooled)} group(s) hold several values of one seed ({label}: {vals} values of {n} seeds; lengths or "
            f"settings not grouped by): each seed's values are averaged first, so n counts seeds and the interval is "
            f"across them; group by the setting that differs (or length) to see them apart"))
    # "values" and "incomplete" only where some group has them (a finished sweep's table looks as it did)
    # (by position: a group, plot's x among them, may be called like a statistic)
    last = len(head) - 1   # "values"; "incomplete" just before it
    shown = {last - 1: any(row[last - 1] for row in out), last: bool(pooled)}
    keep = [k for k in range(len(head)) if shown.get(k, True)]
    return [head[k] for k in keep], [[row[k] for k in keep] for row in out]


def run_rows(src: Source, where: str | None = None, length="train", metric: str | None = None) -> tuple[list, list]:
    """One row per run (and length): identity, the varying settings as dotted columns, metrics."""
    cond = f"({length_filter(src, length)}) AND ({condition(where, src)})"
    if not src.from_records:
        extra = f", ({expr(metric, src, '--metric')}) AS metric" if metric else ""
        return run_sql(src, f"SELECT *{extra} FROM t WHERE {cond}")
    cols = ["id", "status", "reason", "task.name", *src.settings, *src.selected, "seed", "length", "val_loss",
            "val_metric", "test_loss", "test_metric", "steps", "seconds", "candidates", "candidates_recorded",
            "candidates_ok"]
    cols = list(dict.fromkeys(cols))
    # a selected setting that no row has (every group of an unfinished sweep incomplete: their rows carry the
    # configuration less the selected setting) is a column of NULLs, not a DuckDB binder error
    parts = [f"{path_sql(c) if _has_path(src, c) else 'NULL'} AS {quote(c)}" for c in cols]
    if metric:
        parts.append(f"({expr(metric, src, '--metric')}) AS metric")
    return run_sql(src, f"SELECT {', '.join(parts)} FROM t WHERE {cond} ORDER BY id, length")


def _has_path(src: Source, path: str) -> bool:
    """Whether the table has the (dotted, nested) column ``path``."""
    duckdb = duckdb_module()
    try:
        src.con.execute(f"SELECT {path_sql(path)} FROM t LIMIT 0")
        return True
    except duckdb.BinderException:   # no such column or key; any other error is the query's own, left to it
        return False


# ---- output ------------------------------------------------------------------------------------
def _cell(v):
    if isinstance(v, float):
        return None if not math.isfinite(v) else v
    if isinstance(v, (int, str, type(None))):
        return v
    return jsonable(v)   # a date, an interval, a blob: their text (JSON and Parquet output take no other kind)


def to_csv(head, rows, delimiter: str = ",") -> str:
    """The table as delimited text (``delimiter`` ``"\t"`` for a ``.tsv`` file), one line per row."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", delimiter=delimiter)
    w.writerow(head)
    for r in rows:
        w.writerow(["" if _cell(v) is None else _cell(v) for v in r])
    return buf.getvalue()


def to_records(head, rows) -> list[dict]:
    return [{h: _cell(v) for h, v in zip(head, r)} for r in rows]


def write_parquet(head, rows, path: Path, software: str = "expressivity") -> None:
    """Write the table as Parquet to ``path`` (through DuckDB), with ``software`` as the file's
    ``written_by`` key-value metadata. Write to a temporary name (:class:`expressivity.records.staged_file`)
    when a failure must not leave a partial file."""
    duckdb = duckdb_module()
    path = Path(path)
    con = duckdb.connect()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "t.jsonl"
        src.write_text("".join(json.dumps(r, allow_nan=False) + "\n" for r in to_records(head, rows)))
        cols = ", ".join(quote(h) for h in head)
        try:
            con.execute(f"COPY (SELECT {cols} FROM read_json(?, format='newline_delimited', sample_size=-1)) "
                        f"TO {_sql_text(path)} (FORMAT parquet, KV_METADATA {{written_by: {_sql_text(software)}}})",
                        [str(src)])
        except duckdb.Error as exc:
            raise ExpressivityError(f"cannot write {path} ({_first(exc)})") from None


def parquet_written_by(path: Path) -> str | None:
    """The ``written_by`` metadata of a Parquet file (see :func:`write_parquet`), or ``None``."""
    duckdb = duckdb_module()
    try:
        rows = duckdb.connect().execute("SELECT value FROM parquet_kv_metadata(?) WHERE key = 'written_by'",
                                        [str(path)]).fetchall()
    except duckdb.Error:
        return None
    return rows[0][0].decode("utf-8", "replace") if rows else None


def _sql_text(value) -> str:
    """A SQL string literal (quotes doubled)."""
    return "'" + str(value).replace("'", "''") + "'"


def format_number(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:.4g}" if 1e-3 <= abs(v) < 1e5 or v == 0 else f"{v:.2e}"
    return str(v)


# ---- fits and figures over a source ------------------------------------------------------------
def _group_exprs(src: Source, groups: list[str], what: str) -> list[str]:
    return [path_sql(g) if src.from_records and g in src.settings else expr(g, src, what) for g in groups]


def xy_rows(src: Source, x: str, y: str, by: list[str], seed_col: str | None, where: str | None, length) -> list:
    """``(by..., x, y, seed, no result)`` per row, as numbers (x and y cast to DOUBLE); ``no result``: a run
    record's row of a failed or incomplete run (always ``False`` for a table)."""
    parts = [f"{e} AS {quote(g)}" for e, g in zip(_group_exprs(src, by, "--by"), by)]
    parts += [f"TRY_CAST(({expr(x, src, '--x')}) AS DOUBLE) AS __x", f"TRY_CAST(({expr(y, src, '--y')}) AS DOUBLE) AS __y",
              f"CAST(({expr(seed_col, src, '--seed-col')}) AS VARCHAR) AS __s" if seed_col else "NULL AS __s",
              "coalesce(status IN ('failed', 'incomplete'), false) AS __bad" if src.from_records else "false AS __bad"]
    cond = f"({length_filter(src, length)}) AND ({condition(where, src)})"
    _, rows = run_sql(src, f"SELECT {', '.join(parts)} FROM t WHERE {cond}")
    return rows


def fit_groups(src: Source, x: str, y: str, by: list[str] | None = None, seed_col: str | None = None,
               where: str | None = None, length="train", ci: str = "t", breakpoint: bool = False) -> list[dict]:
    """:func:`~expressivity.experiments.fit.fit_power_law` per group of ``by``."""
    from expressivity.experiments.fit import fit_power_law

    by = by or []
    if seed_col is not None and not str(seed_col).strip():
        # read as "no seed" in the query but as a seed in the checks: every point fell under "seed None" (an item
        # earlier notes left open, 2026-11-29)
        raise ExpressivityError("--seed-col is empty; name the column of seeds (such as seed), or leave it out")
    rows = xy_rows(src, x, y, by, seed_col, where, length)
    if not rows:
        raise ExpressivityError("no rows to fit (check --where and --length)")
    unseeded = sum(1 for r in rows if seed_col is not None and not r[-1] and (r[-2] is None or r[-2].lower() == "nan"))
    if unseeded:
        # pooled into one pseudo-seed "None", whose slope entered the t interval as one unit beside the named seeds,
        # where results counts each such row as its own unit (a fresh audit, 2026-11-29)
        raise ExpressivityError(f"{unseeded} row(s) have no {seed_col} (empty or NaN): fit cannot tell which seed "
                                f"their points belong to; give every row its seed, or leave them out with --where "
                                f"\"coalesce(lower(CAST({seed_col} AS VARCHAR)) <> 'nan', false)\"")
    groups: dict[tuple, list] = {}
    no_result: dict[tuple, int] = {}
    for r in rows:   # NaN equals nothing, itself included: one group of them, as results makes (not one per row)
        key = tuple(_NAN if isinstance(v, float) and math.isnan(v) else v for v in r[:len(by)])
        groups.setdefault(key, [])
        no_result[key] = no_result.get(key, 0) + bool(r[-1])
        if not r[-1]:   # a failed or incomplete run is no point; counted apart, not as "x or y <= 0" (an audit)
            groups[key].append(r[len(by):-1])
    out = []
    for key in sorted(groups, key=lambda k: [_order(v) for v in k]):   # numbers by value, as results orders them
        pts = groups[key]
        xs, ys, ss = zip(*pts) if pts else ((), (), ())   # a group of failed runs only: no point, counted apart
        distinct = len({x for x in xs if x is not None})
        if seed_col is None and distinct < sum(x is not None for x in xs):
            label = ", ".join(f"{b}={v}" for b, v in zip(by, key)) or "the points"
            warnings.warn(RepeatedXWarning(
                f"{label}: {sum(x is not None for x in xs)} points at {distinct} distinct x: the slope's interval takes "
                "every point as independent, which seeds of one setting are not (it then covers far less than 95%); "
                "name the seed column with --seed-col"))
        pairs = [(sd, xv) for xv, sd in zip(xs, ss) if xv is not None]
        if seed_col is not None and len(set(pairs)) < len(pairs):
            # lengths (--length all) or settings --by leaves out, pooled into each seed's own slope: results and plot
            # warned of the same pooling, fit did not (a fresh audit, 2026-11-29)
            seed, at = next(p for k, p in enumerate(pairs) if p in pairs[:k])
            label = ", ".join(f"{b}={v}" for b, v in zip(by, key)) or "the points"
            warnings.warn(PooledSeedsWarning(
                f"{label}: seed {seed} has {pairs.count((seed, at))} points at x = "
                f"{format(at, 'g') if isinstance(at, float) else at} (lengths or settings not in "
                "--by): each seed's slope is fitted through all of them; add the setting that differs (or length) "
                "to --by, or keep one with --where or --length"))
        xs = [float("nan") if v is None else v for v in xs]
        ys = [float("nan") if v is None else v for v in ys]
        fit = fit_power_law(xs, ys, list(ss) if seed_col else None, ci=ci, breakpoint=breakpoint)
        out.append({**dict(zip(by, key)), **fit, **({"failed": no_result[key]} if src.from_records else {})})
    return out


_NAN = float("nan")   # the one NaN group keys share


def _is_number(value) -> bool:
    """A number as DuckDB returns one (``int``, ``float``, or ``Decimal`` for ``x * 1.5``), not a bool."""
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _order(value) -> tuple:
    """A sort key for a group's value: numbers by value (8 before 16; DuckDB's DECIMAL too), then text, then
    nothing."""
    if _is_number(value) and not math.isnan(value):
        return (0, float(value), "")
    return (1, 0.0, str(value)) if value is not None else (2, 0.0, "")


def _pow10(v):
    """``10 ** v``, ``None`` past float64's largest number (log10 of it is 308.25: 308 dropped a geometric mean
    of 1.14e308, a fuzz pass, 2026-11-29)."""
    if v is None or not math.isfinite(v) or v > math.log10(sys.float_info.max):
        return None
    try:
        return 10 ** v
    except OverflowError:   # at log10 of the largest itself, rounded up (a review, 2026-11-29: a traceback)
        return None


def band_series(src: Source, x: str, y: str, by: list[str] | None, where: str | None, length, log: bool,
                logx: bool = False) -> tuple[dict, int]:
    """``({label: [(x, centre, low, high), ...]}, left_out)``: mean (geometric with ``log``) and 95%
    interval of ``y`` over the rows at each ``x`` of each ``by`` group, and how many rows had no
    finite value of ``y`` (left out of every mean; failed runs are not counted here). With ``log``,
    values <= 0 are refused by count and where they are: a geometric mean cannot take them, and
    leaving them out drew {0, 0.25, 0.25} at 0.25 (a fresh audit, 2026-11-28)."""
    by = by or []
    expr(x, src, "--x")   # named as the options they came from (an empty --x was called --group-by)
    expr(y, src, "--y")
    head, rows = aggregate(src, y, [*by, x], where, length, log, "--logy")
    k = len(by)
    series: dict = {}
    left_out = sum(r[head.index("missing")] or 0 for r in rows)
    # a group with no x has no place on the axis: it was left out without a word, "left_out": 0 (a third of a
    # sweep over model.d_head = null, 2, 8: a fresh audit, 2026-11-29)
    empty = sum(r[k] is None or (isinstance(r[k], float) and not math.isfinite(r[k])) for r in rows)
    if empty:   # NaN and inf too: matplotlib skipped a NaN x without a word (a review, 2026-11-29)
        raise ExpressivityError(f"--x {x} is empty, NaN or infinite in {counted(empty, 'group')} of rows, which have "
                                f"no place on the x axis; leave them out with --where \"isfinite(({x})::DOUBLE)\" (or "
                                "IS NOT NULL for text), or plot against a column every row has")
    for r in rows:
        label = ", ".join(f"{b}={v}" for b, v in zip(by, r[:k]))
        series.setdefault(label, []).append((r[k], r[k + 2], r[k + 3], r[k + 4]))
    if logx:   # a log axis drops x <= 0 without a word: `plot --logx` hid a point at x = 0 (an audit, 2026-11-28)
        bad = [pt[0] for pts in series.values() for pt in pts   # DuckDB gives x * 1.5 as a Decimal: a number too
               if not _is_number(pt[0]) or not pt[0] > 0]
        if bad:
            raise ExpressivityError(
                f"--logx: {len(bad)} value(s) of {x} are not positive numbers ({', '.join(map(str, bad[:3]))}"
                f"{', ...' if len(bad) > 3 else ''}), which a log axis cannot show; plot without --logx, or leave "
                f"them out yourself with --where '({x}) > 0'")
    return series, left_out
