"""``expressivity results``, ``fit`` and ``plot``: tables, rate fits and figures over stored results
(:mod:`expressivity.experiments.query`); this module only parses and prints."""

from __future__ import annotations

import numbers
import warnings
from pathlib import Path

import click

from expressivity.cli.common import console, emit_json, human_output_to_stderr, typed_options
from expressivity.cli.sweep import warnings_as_lines
from expressivity.errors import ExpressivityError
from expressivity.verify.size import counted

SOURCE = click.argument("source", metavar="DIR|TABLE", type=click.Path(path_type=Path))
WHERE = click.option("--where", help="keep rows where this SQL condition holds, e.g. \"model.rpe = 'log'\"")
LENGTH = click.option("--length", default="train", show_default=True,
                      help="evaluated length of sweep rows: train (the training length), all, or a number")


MAX_TABLE_ROWS = 20_000   # rows a text table draws in about 10 s here (0.45 ms a row; 10^6 ran past 2 minutes)
MAX_PLOT_LINES = 24       # lines a plot's legend and colours can still tell apart


def _print_table(head, rows, title: str = "") -> None:
    if len(rows) > MAX_TABLE_ROWS:
        raise ExpressivityError(f"the table has {len(rows):,} rows, above the {MAX_TABLE_ROWS:,} a text table draws "
                                "in seconds; use --format csv or json, or keep fewer rows with --where")
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.experiments.query import format_number

    table = Table(*head, title=title or None)
    for r in rows:
        table.add_row(*(format_number(v) for v in r))
    print_table(console, table)   # numbers whole at any width (expressivity.cli.tables)


def _output_kind(fmt: str, command: str, head, out: Path | None = None) -> "OutputFile":
    """How ``--out`` of ``command`` in format ``fmt`` recognises a file it may replace; for CSV,
    the same columns ``head`` (``None`` before the query ran: any file, checked again on writing)."""
    from expressivity.experiments.query import delimiter_for, parquet_written_by, to_csv
    from expressivity.records import OutputFile

    if fmt == "csv":
        if head is None:
            return OutputFile(command, "a CSV table", lambda path: True)
        # either separator: a .tsv that results wrote before 2026-11-29 holds commas, and was refused as foreign
        ours = [OutputFile.csv(command, to_csv(head, [], sep)) for sep in dict.fromkeys((delimiter_for(out), ","))]
        return OutputFile(command, "a CSV table with the same columns", lambda path: any(o.recognise(path) for o in ours))
    if fmt == "parquet":
        return OutputFile(command, "a Parquet table",
                          lambda path: parquet_written_by(path) == OutputFile.software(command))
    return OutputFile.json(command)


def _check_out(out: Path | None, fmt: str, command: str) -> None:
    """Refuse an --out file that must not be replaced, or a format that needs none, before any work."""
    from expressivity.experiments.query import TABLE_FORMATS
    from expressivity.records import check_output_file

    if fmt == "parquet" and out is None:
        raise click.UsageError("--format parquet needs --out FILE.parquet")
    if fmt == "table" and out is not None:
        typed = "fmt" in typed_options(click.get_current_context(), ["fmt"])
        raise click.UsageError("--format table is for the terminal; --out writes csv, json or parquet" if typed
                               else f"--out {out}: a table file ends in .csv, .tsv, .json, .jsonl or .parquet; rename it, or "
                                    "add --format")
    if out is not None:
        # the readers go by suffix: CSV written into t.parquet (or Parquet into t.csv) was refused when read back
        # (a fresh audit, 2026-11-29)
        suffix = TABLE_FORMATS.get(Path(out).suffix.lower())
        check_output_file(out, _output_kind(fmt, command, None))
        if suffix is not None and suffix != fmt:
            raise click.UsageError(f"--out {out} ends in {Path(out).suffix} but the table is written as {fmt}; give "
                                   f"--format {suffix}, or a file name ending in .{fmt if fmt != 'json' else 'jsonl'}")


def _formats(fmt: str, out: Path | None, as_json: bool) -> tuple[str, bool]:
    """``(format of the table, whether stdout is one JSON object describing the written file)``. ``--json``
    asks for JSON on stdout: the table itself without ``--out``; with ``--out`` the table goes to the file
    (in ``--format``, JSON when none is given) and stdout says what was written (it was left empty)."""
    from expressivity.experiments.query import TABLE_FORMATS

    typed = "fmt" in typed_options(click.get_current_context(), ["fmt"])
    if as_json and typed and (fmt == "table" or (out is None and fmt != "json")):
        raise click.UsageError(f"--json and --format {fmt} ask for two formats; give one")
    # --out t.csv without --format was refused ("add --format") though its name says the format (an item earlier
    # notes left open, 2026-11-29): a known suffix stands for --format; an unknown one still needs it
    named = TABLE_FORMATS.get(out.suffix.lower()) if out is not None and not typed else None
    if not as_json:
        return named or fmt, False
    if out is None:
        return "json", False
    return (fmt if typed else named or "json"), True


def _write(head, rows, fmt: str, out: Path | None, meta: dict, summary: bool = False) -> None:
    """The table in ``fmt`` to ``out`` (else stdout); with ``summary`` (``--json --out``) stdout gets one
    JSON object naming the file, its format and row count, and the run record."""
    import math

    from expressivity.experiments.query import delimiter_for, to_csv, to_records, write_parquet
    from expressivity.records import OutputFile, run_record, staged_file

    if fmt != "table":
        # said, not silent: groups keyed inf, -inf and NaN came out as three rows keyed null (a fresh audit,
        # 2026-11-29); a text "inf" would turn the column into text for every reader, DuckDB's included
        odd = sum(isinstance(v, float) and not math.isfinite(v) for r in rows for v in r)
        if odd:
            warnings.warn(f"{counted(odd, 'cell')} {'holds' if odd == 1 else 'hold'} inf or NaN, written as empty "
                          f"(null): {fmt} has no number for them; the text table (no --format) shows them")
    if fmt == "parquet":  # with --out: _check_out ran first
        with staged_file(out, _output_kind(fmt, meta["command"], head)) as temp:
            write_parquet(head, rows, temp, OutputFile.software(meta["command"]))
        _wrote(out, fmt, head, rows, meta, summary)
        return
    if fmt == "csv":
        text = to_csv(head, rows, delimiter_for(out))
    elif fmt == "json":
        import json

        from expressivity.records import jsonable

        text = json.dumps(jsonable({**meta, "columns": head, "rows": to_records(head, rows),
                                    "run": run_record(meta.get("command", ""), meta)})) + "\n"
    else:
        _print_table(head, rows, meta.get("title", ""))
        return
    if out is None:
        click.echo(text, nl=False)
        return
    with staged_file(out, _output_kind(fmt, meta["command"], head, out)) as temp:
        temp.write_text(text)
    _wrote(out, fmt, head, rows, meta, summary)


def _wrote(out: Path, fmt: str, head, rows, meta: dict, summary: bool) -> None:
    from expressivity.experiments.query import TABLE_FORMATS
    from expressivity.records import run_record

    if Path(out).suffix.lower() not in TABLE_FORMATS:
        # written all the same (a table named .txt is a user's choice), but said: results, fit and plot read
        # a table file by its suffix and would refuse this one (a fresh audit, 2026-11-29)
        warnings.warn(f"{out} is written as {fmt}, but results, fit and plot read a table file only by its "
                      f"suffix ({', '.join(sorted(TABLE_FORMATS))}) and will not read this one")
    if summary:
        emit_json({"out": str(out), "format": fmt, "rows": len(rows), "columns": list(head),
                   "run": run_record(meta.get("command", ""), {k: v for k, v in meta.items() if k != "title"})})
    else:
        console.print(f"wrote {counted(len(rows), 'row')} to {out}", markup=False, soft_wrap=True)


def _format_option(f):
    f = click.option("--out", type=click.Path(path_type=Path),
                     help="write the table to this file; a name ending in .csv, .jsonl or .parquet gives the format "
                          "without --format")(f)
    f = click.option("--json", "as_json", is_flag=True,
                     help="one JSON object on stdout: the table, or with --out what was written")(f)
    return click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
                        show_default=True)(f)


def _refuse_length_on_table(src) -> None:
    """Refuse ``--length`` on a plain table (it has no evaluation lengths)."""
    if not src.from_records and typed_options(click.get_current_context(), ["length"]):
        raise click.UsageError("--length selects evaluation lengths of a sweep's runs; a plain table has none")


def _refuse_inapplicable(runs: bool) -> None:
    """Refuse the options of ``results`` that do not apply to its mode, before any work: with
    ``--runs`` (one row per run, nothing aggregated), ``--log`` and ``--group-by``."""
    ctx = click.get_current_context()
    if runs:
        for name, flag in (("log", "--log"), ("group_by", "--group-by")):
            if name in typed_options(ctx, [name]):
                raise click.UsageError(f"{flag} applies to aggregates; --runs lists one row per run, nothing is "
                                       f"aggregated: drop {flag} or --runs")


def _refuse_no_select(source: Path) -> None:
    """Refuse ``--no-select`` on a source without selection rules to ignore: only a sweep folder has
    them (a table file or a records file has none, and every row is shown already)."""
    if typed_options(click.get_current_context(), ["no_select"]) and source.exists() and not source.is_dir():
        raise click.UsageError(f"--no-select ignores a sweep folder's selection rules; {source} is a file, which has "
                               "none (every row is shown): drop --no-select, or give the sweep folder")


def _warn_empty(head: list[str], rows: list[list], metric: str, where: str | None) -> None:
    """Say where the table has no numbers, which exit 0 with an empty table did silently (a fresh audit,
    2026-11-29: ``--metric test_metric/0`` printed n = 0 in every group; DuckDB's x/0 is NULL): no row kept by
    ``--where``, or rows kept whose metric is no finite number (left out of the means, counted in ``missing``)."""
    def count(row, column):
        return row[head.index(column)] if column in head else 0

    # (without groups, SQL answers a table with no rows with one row of zero counts)
    if not any(count(r, "n") or count(r, "failed") or count(r, "missing") or count(r, "incomplete") for r in rows):
        warnings.warn(f"no row{' matches --where ' + repr(where) if where else ''}: the table is empty")
        return
    missing = sum(count(r, "missing") for r in rows)
    if missing:
        none = all(count(r, "n") == 0 for r in rows)
        warnings.warn(f"{missing} row(s) have no finite value of {metric} (empty, NaN or inf; a division by zero in "
                      f"an expression gives none) and are left out of the means (column missing)"
                      + ("; no row has one, so the table has no means: check the metric" if none else ""))


@click.command("results")
@SOURCE
@WHERE
@click.option("--group-by", "group_by", help="comma-separated columns (default: the settings that vary, less seed and "
                                             "selected ones; '' pools every row into one group)")
@click.option("--metric", default="test_metric", show_default=True, help="column or SQL expression to aggregate")
@click.option("--log", "log", is_flag=True, help="geometric mean, interval on log10 (errors spanning decades); "
                                                  "not with --runs")
@LENGTH
@click.option("--runs", is_flag=True, help="one row per run instead of aggregates")
@click.option("--no-select", "no_select", is_flag=True, help="ignore the sweep's selection rules (every recorded run: "
                                                            "an unfinished sweep's runs so far); sweep folders only")
@_format_option
def results(source, where, group_by, metric, log, length, runs, no_select, fmt, out, as_json):
    """Aggregate a sweep's results (or any table) over seeds: mean and 95% t interval per group.

    In a sweep folder, a configuration and seed with a run not yet recorded (an unfinished sweep)
    is no selection: it is counted in the column ``incomplete``, not in ``n``, and a warning says how
    many runs are unrecorded; --no-select shows every recorded run."""
    from expressivity.experiments.query import STATISTIC_COLUMNS, aggregate, open_source, run_rows, split_list

    fmt, summary = _formats(fmt, out, as_json)
    _refuse_inapplicable(runs)
    _refuse_no_select(source)
    _check_out(out, fmt, "results")
    with warnings_as_lines(), human_output_to_stderr(as_json):
        src = open_source(source, select=not no_select)
        _refuse_length_on_table(src)
        # --group-by "" asks for one row over everything; unset means the varying settings
        groups = (split_list(group_by) if group_by.strip() else []) if group_by is not None else None
        if runs:
            head, rows = run_rows(src, where, length, metric if metric != "test_metric" else None)
            title = f"{src.label}: {counted(len(rows), 'row')}"
        else:
            clash = [g for g in groups or () if g in STATISTIC_COLUMNS]
            if clash:   # the table's key would be overwritten by the statistic's column (JSON kept one "n")
                raise click.UsageError(f"--group-by {clash[0]} is named like a column of the table results writes "
                                       f"({', '.join(STATISTIC_COLUMNS)}); group by it as an expression: "
                                       f"--group-by '({clash[0]})'")
            head, rows = aggregate(src, metric, groups, where, length, log)
            _warn_empty(head, rows, metric, where)
            title = (f"{src.label}: {'geometric mean' if log else 'mean'} of {metric} with 95% t interval over seeds"
                     + (f"; selected per configuration and seed: {', '.join(src.selected)} (on validation)"
                        if src.selected else ""))
        if src.unrecorded:
            title += (f"; {src.unrecorded} of {src.sweep_runs} runs not recorded yet: {src.incomplete} "
                      f"{'groups' if src.selected else 'runs'} incomplete")
        _write(head, rows, fmt, out, {"command": "results", "source": str(source), "metric": metric, "log": log,
                                      "where": where, "length": length, "group_by": groups, "runs": runs,
                                      "no_select": no_select, "selected": src.selected, **src.counts(),
                                      "title": title}, summary)


@click.command("fit")
@SOURCE
@click.option("--x", "x", required=True, help="column or expression on the x axis (e.g. model.heads)")
@click.option("--y", "y", required=True, help="column or expression to fit (e.g. \"1 - test_metric\")")
@click.option("--by", help="comma-separated columns: one fit per group")
@click.option("--seed-col", "seed_col", help="column naming the seed: interval across seeds (default: seed, where "
              "there is one)")
@click.option("--ci", type=click.Choice(["t", "bootstrap"]), default="t", show_default=True)
@click.option("--breakpoint", "breakpoint_", is_flag=True, help="also fit one break point (threshold) in log-log")
@WHERE
@LENGTH
@_format_option
def fit(source, x, y, by, seed_col, ci, breakpoint_, where, length, fmt, out, as_json):
    """Fit y = A x^b per group (a line in log-log): slope b with a 95% interval, A, R²."""
    from expressivity.experiments.query import fit_groups, open_source, split_list

    fmt, summary = _formats(fmt, out, as_json)
    _check_out(out, fmt, "fit")
    with warnings_as_lines(), human_output_to_stderr(as_json):
        src = open_source(source)
        _refuse_length_on_table(src)
        if seed_col is None and (src.from_records or "seed" in src.columns):
            # a table with a seed column (results --runs writes one) too: its points pooled as independent gave a
            # slope interval that covered 65-83% (an audit, 2026-11-28)
            seed_col = "seed"
        bys = split_list(by)
        fits = fit_groups(src, x, y, bys, seed_col, where, length, ci, breakpoint_)
        failed = sum(f.get("failed") or 0 for f in fits)   # failed or incomplete runs, left out of the fits
        if fits and not any(f.get("n_points") for f in fits):
            # no group has a point a log-log line can take: a table of dashes with exit 0, where plot refuses the
            # same data (a fresh audit, 2026-11-29)
            dropped = sum(f.get("dropped") or 0 for f in fits)
            if failed and not dropped:
                raise ExpressivityError(f"nothing to fit: all {failed} run(s) failed or are incomplete (list them with "
                                        f"expressivity results {source} --runs --no-select --where \"status = "
                                        "'failed'\")")
            raise ExpressivityError(f"nothing to fit: none of the {dropped} point(s) has a positive, finite {x} and "
                                    f"{y} (a line in log-log cannot take x or y <= 0, NaN or inf); check --y and --where, "
                                    f"or floor exact zeros (--y 'greatest({y}, 1e-12)')")
        keys = list(dict.fromkeys(k for f in fits for k in f))
        head = keys
        rows = [[f.get(k) for k in keys] for f in fits]
        if fmt == "table":
            show = [*bys, "n_points", "n_seeds", "slope", "ci_low", "ci_high", "prefactor", "r2", "dropped",
                    *(["failed"] if "failed" in keys else [])]
            if breakpoint_:
                show += ["break_x", "slope_left", "slope_right", "break_p", "preferred"]
            head, rows = show, [[f.get(k) for k in show] for f in fits]
        method = next((f["ci_method"] for f in fits if f.get("ci_method")), "none")
        _write(head, rows, fmt, out, {"command": "fit", "source": str(source), "x": x, "y": y, "by": bys,
                                      "seed_col": seed_col, "ci": ci, "breakpoint": breakpoint_, "where": where,
                                      "length": length,
                                      "title": f"{y} = A·({x})^slope; 95% interval: {method}"}, summary)
        problems = {f.get(k) for f in fits for k in ("problem", "break_problem") if f.get(k)}
        dropped = sum(f.get("dropped") or 0 for f in fits)
        if dropped:   # a y of 0 is often the most telling point (an exact answer): say it went, and the choices
            problems.add(f"{dropped} point(s) with x or y <= 0, not finite or not a number, were left out of the fits (a line in "
                         f"log-log cannot take them; with seeds, their seeds' slopes span fewer x); floor exact zeros "
                         f"(--y 'greatest({y}, 1e-12)') or leave them out yourself (--where)")
        if failed:   # a failed group read as "x or y <= 0", with advice about zeros (an audit, 2026-11-29)
            problems.add(f"{failed} failed or incomplete run(s) were left out of the fits (column failed; list them "
                         f"with: expressivity results {source} --runs --no-select --where \"status = 'failed'\")")
        for p in sorted(problems):
            console.print(f"note: {p}", markup=False, soft_wrap=True)


def _refuse_unplottable(series: dict, x: str, y: str) -> None:
    """Refuse values an axis cannot span: near float64's largest number matplotlib's margin and tick arithmetic
    overflows (1e308 plotted ended in "ValueError: arange: cannot compute length", or on a log x axis an
    OverflowError, tracebacks: a fuzz pass, 2026-11-29)."""
    for option, name, values, what in (("--x", x, [pt[0] for pts in series.values() for pt in pts], ""),
                                       ("--y", y, [v for pts in series.values() for pt in pts for v in pt[1:]],
                                        " (its 95% interval included)")):
        big = max((abs(float(v)) for v in values   # numbers only: an axis of dates or names has no such limit
                   if isinstance(v, numbers.Number) and not isinstance(v, (bool, complex))), default=0.0)
        if big > PLOT_LIMIT:
            raise ExpressivityError(f"{option} {name} reaches {big:.3g}{what}, beyond the {PLOT_LIMIT:g} an axis can "
                                    f"span; scale it, e.g. {option} '({name}) / 1e300'")


PLOT_LIMIT = 1e300   # near float64's 1.8e308 the axis' margins and ticks overflow


@click.command("plot")
@SOURCE
@click.option("--x", "x", required=True, help="column or expression on the x axis")
@click.option("--y", "y", default="test_metric", show_default=True, help="column or expression averaged over seeds")
@click.option("--by", help="comma-separated columns: one line per group")
@click.option("--logx", is_flag=True)
@click.option("--logy", is_flag=True, help="log y axis, geometric means with intervals on log10")
@WHERE
@LENGTH
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True, help="PNG file to write")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object (the plotted points)")
def plot(source, x, y, by, logx, logy, where, length, out, as_json):
    """Plot means of y against x with 95% interval bands, one line per --by group (PNG)."""
    import json

    from expressivity.experiments.plots import plot_bands
    from expressivity.experiments.query import band_series, open_source, split_list
    from expressivity.records import OutputFile, jsonable, run_record, staged_file

    with warnings_as_lines(), human_output_to_stderr(as_json):
        if out.suffix.lower() != ".png":
            raise ExpressivityError(f"--out {out} must end in .png")
        staging = staged_file(out, OutputFile.png("plot"))
        src = open_source(source)
        _refuse_length_on_table(src)
        series, left_out = band_series(src, x, y, split_list(by), where, length, logy, logx)
        if not any(pt[1] is not None for pts in series.values() for pt in pts):
            # a --y with no finite value anywhere (test_metric/0) drew empty axes, exit 0 (a fuzz, 2026-11-29)
            raise ExpressivityError(f"nothing to plot (no rows with a finite value of {y}; check --y, --where and "
                                    "--length)")
        _refuse_unplottable(series, x, y)
        if len(series) > MAX_PLOT_LINES:   # 60 lines drew a legend over the data, ten colours six lines each
            raise ExpressivityError(f"--by gives {len(series)} lines, above the {MAX_PLOT_LINES} a figure can tell "
                                    "apart; group by fewer settings, or keep some groups with --where")
        # the figure says how it was made: the filter in its title, the run record in its Description chunk, and
        # "95% CI" only where a band is drawn (two plots, one of a single seed, were alike: an audit, 2026-11-29)
        record = run_record("plot", {"source": str(source), "x": x, "y": y, "by": by, "logx": logx, "logy": logy,
                                     "where": where, "length": length})
        banded = any(pt[2] is not None and pt[3] is not None for pts in series.values() for pt in pts)
        mean = f"{'geometric ' if logy else ''}mean"
        ylabel = f"{y} ({mean}, 95% CI)" if banded else f"{y} ({mean}, no interval)"
        title = src.label + (f" where {where}" if where else "")
        points = sum(pt[1] is not None for pts in series.values() for pt in pts)
        with staging as temp:
            plot_bands(series, temp, x, ylabel, title, logx, logy, software=OutputFile.software("plot"),
                       description=json.dumps(jsonable(record), sort_keys=True))
    dropped = (f"note: {left_out} row(s) without a finite value of {y} (empty, NaN or inf) were left out of the "
               "means") if left_out else None
    alone = "note: the figure has one point; `results` shows the same as a table" if points == 1 else None
    if as_json:
        emit_json({"figure": str(out), "series": series, "left_out": left_out, "run": record})
    else:
        console.print(f"wrote {out} ({len(series)} line{'s' if len(series) != 1 else ''})", markup=False, soft_wrap=True)
        for note in (dropped, alone):
            if note:
                console.print(note, markup=False, soft_wrap=True)
