"""DuckDB queries over records: intervals equal the Student-t interval, failures and values a
geometric mean cannot take are counted apart, keyword-named settings work, lists split right."""

import json
import math

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments.query import aggregate, open_source, split_list
from expressivity.experiments.store import RecordWriter
from expressivity.records import content_hash
from expressivity.statistics import log10_t_interval, t_interval


def write_records(folder, rows, select=None):
    """A finished sweep folder: one record per row, its sweep.json listing exactly those runs."""
    folder.mkdir()
    configs = []
    with RecordWriter(folder / "records.jsonl") as w:
        for heads, seed, metric, status in rows:
            cfg = {"task": {"name": "associative-recall", "args": {"length": 4, "values": 3}},
                   "model": {"heads": heads}, "train": {"lr": 0.01}, "seed": seed, "eval_lengths": []}
            configs.append(cfg)
            w.append({"id": content_hash(cfg), "config": cfg, "status": status, "reason": None,
                      "lengths": {} if status == "failed" else {"4": {"val_loss": 1, "val_metric": 0, "test_loss": 1,
                                                                      "test_metric": metric}}})
    (folder / "sweep.json").write_text(json.dumps({"select": select or {}, "configs": configs}))
    return folder


def test_intervals_failed_and_missing(tmp_path):
    folder = write_records(tmp_path / "s", [(1, 0, 0.5, "done"), (1, 1, 0.7, "done"), (1, 2, 0.6, "done"),
                                            (2, 0, 0.9, "done"), (2, 1, 1.0, "done"), (2, 2, None, "failed"),
                                            (2, 3, 0.8, "done")])
    src = open_source(folder)
    assert src.settings == ["model.heads"]
    head, rows = aggregate(src)
    by = {r[0]: dict(zip(head, r)) for r in rows}
    mean, lo, hi = t_interval([0.5, 0.7, 0.6])
    assert by[1]["n"] == 3 and by[1]["mean"] == pytest.approx(mean) and (by[1]["ci_low"], by[1]["ci_high"]) == \
        pytest.approx((lo, hi))
    assert (by[2]["n"], by[2]["failed"], by[2]["missing"]) == (3, 1, 0)
    with pytest.raises(ExpressivityError, match=r"--log: 1 value\(s\) of 1 - test_metric are <= 0 \(model.heads=2\)"):
        aggregate(src, "1 - test_metric", log=True)   # 1 - 1.0 = 0 has no logarithm: left out, it biased the mean up
    with pytest.raises(ExpressivityError, match=r"OR status = 'failed'\" \(failed runs stay counted\)"):
        aggregate(src, "1 - test_metric", log=True)
    head, rows = aggregate(src, "1 - test_metric", log=True, where="(1 - test_metric) > 0 OR status = 'failed'")
    by = {r[0]: dict(zip(head, r)) for r in rows}
    assert (by[2]["n"], by[2]["failed"], by[2]["missing"]) == (2, 1, 0)   # the where the refusal names keeps it
    g, glo, ghi = log10_t_interval([0.5, 0.3, 0.4])
    assert by[1]["geomean"] == pytest.approx(g) and by[1]["ci_high"] == pytest.approx(ghi)
    head, rows = aggregate(src, group_by=["task.args.values", "model.heads"])
    assert [r[:2] for r in rows] == [[3, 1], [3, 2]]
    head, rows = aggregate(src, group_by=[], where="model.heads = 1")
    assert rows[0][0] == 3 and math.isclose(rows[0][1], 0.6)


def test_a_group_with_one_value_has_no_interval(tmp_path):
    src = open_source(write_records(tmp_path / "s", [(1, 0, 0.5, "done"), (2, 0, 0.5, "done")]))
    head, rows = aggregate(src)
    assert all(dict(zip(head, r))["ci_low"] is None for r in rows)


def test_identical_values_have_no_interval_not_a_zero_width_one(tmp_path):
    src = open_source(write_records(tmp_path / "s", [(1, 0, 0.5, "done"), (1, 1, 0.5, "done"), (1, 2, 0.5, "done")]))
    head, rows = aggregate(src)
    row = dict(zip(head, rows[0]))
    assert (row["n"], row["mean"], row["ci_low"], row["ci_high"]) == (3, 0.5, None, None)


def test_a_failed_run_is_no_value_even_of_a_setting(tmp_path):
    # a metric that every record has (a setting, a constant) counted the failed runs as values: the
    # learning rates "chosen" for a configuration whose every run failed, and missing = -3
    folder = write_records(tmp_path / "s", [(1, 0, 0.5, "done"), (1, 1, 0.7, "done"), (2, 0, None, "failed"),
                                            (2, 1, None, "failed"), (2, 2, None, "failed")])
    for metric in ("train.lr", "1"):
        head, rows = aggregate(open_source(folder), metric)
        by = {r[0]: dict(zip(head, r)) for r in rows}
        assert (by[1]["n"], by[1]["failed"], by[1]["missing"]) == (2, 0, 0)
        assert (by[2]["n"], by[2]["mean"], by[2]["failed"], by[2]["missing"]) == (0, None, 3, 0)


@pytest.mark.parametrize("log", [False, True])
def test_a_table_column_named_like_an_inner_alias_is_still_filtered(tmp_path, log):
    # a CSV column "v" stood in for the filtered value: NaN and (with --log) negatives were averaged
    (tmp_path / "t.csv").write_text("g,v\na,1\na,-5\na,3\nc,nan\nc,2\nc,3\n")
    if log:   # -5 has no logarithm: refused, not left out
        with pytest.raises(ExpressivityError, match="1 value"):
            aggregate(open_source(tmp_path / "t.csv"), "v", group_by=["g"], log=log)
        (tmp_path / "t.csv").write_text("g,v\na,1\na,nan\na,3\nc,nan\nc,2\nc,3\n")
    head, rows = aggregate(open_source(tmp_path / "t.csv"), "v", group_by=["g"], log=log)
    by = {r[0]: dict(zip(head, r)) for r in rows}
    assert (by["a"]["n"], by["a"]["missing"]) == ((2, 1) if log else (3, 0))
    assert (by["c"]["n"], by["c"]["missing"]) == (2, 1)
    if log:
        assert by["a"]["geomean"] == pytest.approx(math.sqrt(3))
    else:
        assert by["c"]["mean"] == pytest.approx(2.5) and by["c"]["max"] == 3


def test_split_list():
    assert split_list("a, f(b, c), 'x,y', d") == ["a", "f(b, c)", "'x,y'", "d"]
    assert split_list(None) == []
    with pytest.raises(ExpressivityError, match="empty entry"):
        split_list("a,")
    with pytest.raises(ExpressivityError, match="names g twice"):   # a fuzz: two columns "g" in every format
        split_list("g, h, g")


def test_a_group_s_interval_is_across_its_seeds_not_its_rows(tmp_path):
    """An audit (2026-11-28): `results --length all` grouped by a setting alone pooled 3 lengths of 3 seeds as
    "n = 9", an interval a third as wide as the seeds give; rows per seed are now averaged first, n counts seeds,
    min and max are the values', and a warning names the group. A table with a seed column is read the same way;
    one without treats each row as its own."""
    import warnings

    from expressivity.experiments.query import PooledSeedsWarning

    (tmp_path / "t.csv").write_text("m,len,v,seed\na,4,1,0\na,8,3,0\na,4,2,1\na,8,6,1\na,4,4,2\na,8,5,2\n")
    src = open_source(tmp_path / "t.csv")
    with pytest.warns(PooledSeedsWarning, match="m=a: 6 values of 3 seeds"):
        head, rows = aggregate(src, "v", group_by=["m"])
    row = dict(zip(head, rows[0]))
    mean, lo, hi = t_interval([2.0, 4.0, 4.5])   # the seeds' means
    assert (row["n"], row["values"], row["min"], row["max"]) == (3, 6, 1, 6)
    assert row["mean"] == pytest.approx(mean) and (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        head, rows = aggregate(src, "v", group_by=["m", "len"])   # one value per seed: no warning, no column
    assert "values" not in head and [r[2] for r in rows] == [3, 3]
    (tmp_path / "u.csv").write_text("m,v\na,1\na,3\na,2\n")
    head, rows = aggregate(open_source(tmp_path / "u.csv"), "v", group_by=["m"])
    assert dict(zip(head, rows[0]))["n"] == 3


def test_the_torch_free_table_of_task_metrics_matches_the_tasks():
    """results clips a task metric's interval to the values the metric takes, from a copy of each task's metric_name
    that does not import torch: it must name every task and agree with it."""
    from expressivity.experiments.query import METRIC_RANGES, TASK_METRICS
    from expressivity.tasks import TASKS

    assert TASK_METRICS == {name: cls.metric_name for name, cls in TASKS.items()}
    assert set(TASK_METRICS.values()) <= set(METRIC_RANGES)


def _lr_sweep(folder, grids):
    """A finished sweep folder selecting train.lr per seed: ``grids`` maps seed -> its learning rates."""
    folder.mkdir()
    configs = []
    with RecordWriter(folder / "records.jsonl") as w:
        for seed, lrs in grids.items():
            for lr in lrs:
                cfg = {"task": {"name": "associative-recall", "args": {"length": 4, "values": 3}},
                       "model": {"heads": 1}, "train": {"lr": lr}, "seed": seed, "eval_lengths": []}
                configs.append(cfg)
                w.append({"id": content_hash(cfg), "config": cfg, "status": "done", "reason": None,
                          "lengths": {"4": {"val_loss": lr, "val_metric": 0, "test_loss": 1, "test_metric": 0.5}}})
    (folder / "sweep.json").write_text(json.dumps({"select": {"train.lr": "min val_loss"}, "configs": configs}))
    return folder


def test_seeds_selecting_among_different_grids_are_named(tmp_path):
    # a Python configs() sweep gave seed 1 fewer learning rates than seed 0: each row averaged the seeds'
    # selections over different candidate sets without a word (the seventeenth audit)
    from expressivity.experiments.query import IncompleteSweepWarning

    with pytest.warns(IncompleteSweepWarning, match=r"in 1 of 1 configurations .* select train.lr among different "
                                                    r"grids \(e.g. seed 1: 1 candidate\(s\); seed 0: 2"):
        open_source(_lr_sweep(tmp_path / "uneven", {0: [0.001, 0.01], 1: [0.01]}))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", IncompleteSweepWarning)
        open_source(_lr_sweep(tmp_path / "even", {0: [0.001, 0.01], 1: [0.01, 0.001]}))


def test_a_metric_outside_its_range_is_refused_not_clipped_around(tmp_path):
    """An audit (2026-11-29): an accuracy of 5.0 edited into records.jsonl gave mean 2.999 with the "95% interval"
    [0, 1], clipped to the accuracy's range: a mean outside its own interval. Values outside the range are refused."""
    folder = write_records(tmp_path / "s", [(1, 0, 0.998, "done"), (1, 1, 5.0, "done"), (2, 0, 0.5, "done"),
                                            (2, 1, 0.7, "done")])
    with pytest.raises(ExpressivityError, match=r"test_metric has values outside the range .*\[0, 1\].*max 5 "
                                                r"\(model.heads=1\)"):
        aggregate(open_source(folder))
    head, rows = aggregate(open_source(folder), where="model.heads = 2")   # the rows left out: an interval again
    assert dict(zip(head, rows[0]))["ci_low"] is not None


@pytest.mark.parametrize("metric, bounds", [("test_metric", (0.0, 1.0)), ("1 - test_metric", (0.0, 1.0)),
                                            ("-1 + test_metric", (-1.0, 0.0)), ("test_metric - 1", (-1.0, 0.0)),
                                            ("(test_metric) + 2", (2.0, 3.0)), ("TEST_LOSS - 0.5", (-0.5, None)),
                                            ("2 * test_metric", None), ("-test_metric", None)])
def test_a_metric_moved_by_a_constant_on_either_side_is_clipped_to_its_moved_range(metric, bounds):
    # A fresh audit (2026-11-29): "-1 + test_metric" and "test_metric - 1" kept an interval reaching +0.00026 where the
    # quantity is at most 0; only "c - column" and "c + column" with an unsigned c were clipped
    from types import SimpleNamespace

    from expressivity.experiments.query import _metric_bounds

    assert _metric_bounds(metric, SimpleNamespace(from_records=True, metric_range=(0.0, 1.0))) == bounds
