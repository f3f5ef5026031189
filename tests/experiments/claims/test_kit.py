"""The claims' helpers: a value known only to lie beyond the grid is drawn as such; which selected runs
count as seeds."""

import json
import math

import pytest

import expressivity.figures as figures
from expressivity.experiments.claims.kit import line_figure, seed_values, selected_records


def test_a_censored_value_is_drawn_as_a_bound_not_left_out(tmp_path, monkeypatch):
    """Claim 1's lin-type H* at T = 48 lies beyond the grid's 16384 heads: the figure must show it
    (an open upward triangle at 16384, marked '> 16384', joined by a dotted segment), not end the
    line at T = 32, where the two curves have not crossed yet."""
    axes = []
    real = figures.finish
    monkeypatch.setattr(figures, "finish", lambda fig, ax, path, title: (axes.append(ax), real(fig, ax, path, title))[1])
    path = line_figure(tmp_path / "f.png", {"lin": ([4, 32, 48], [159.0, 3156.0, math.nan]),
                                             "log": ([4, 32, 48], [392.0, 3416.0, 6840.0])},
                       "lag T", "H*", "t", logx=False, censored={"lin": [(48, 16384)], "log": []})
    assert path.stat().st_size > 1000
    (ax,) = axes
    triangles = [line for line in ax.get_lines() if line.get_marker() == "^"]
    assert len(triangles) == 1 and list(triangles[0].get_xdata()) == [48] and list(triangles[0].get_ydata()) == [16384]
    assert triangles[0].get_label() == "lin: beyond the grid"
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert [list(d.get_xdata()) for d in dotted] == [[32, 48]]
    assert [t.get_text() for t in ax.texts] == ["> 16384"]


def test_a_run_with_a_non_finite_test_metric_is_failed_not_a_seed(tmp_path):
    # a fresh audit (2026-11-28): claims 3-5 gave a traceback on such a record ('1.0 - "nan"'), and
    # max(0, 1 - nan) would have read it as a perfect fit
    from expressivity.experiments.claims.kit import seed_values
    from expressivity.experiments.claims.wang_e_trained import _error
    from expressivity.experiments.store import RecordWriter
    from expressivity.records import content_hash

    with RecordWriter(tmp_path / "records.jsonl") as w:
        for seed, metric in enumerate([0.9, float("nan"), float("-inf"), 0.99]):
            cfg = {"task": {"name": "x", "args": {"length": 4}}, "model": {}, "train": {"lr": 0.01}, "seed": seed}
            w.append({"id": content_hash(cfg), "config": cfg, "status": "done", "reason": None,
                      "lengths": {"4": {"val_loss": 1.0, "test_loss": 1.0, "test_metric": metric}}})
    values, failed = seed_values(tmp_path, lambda c: "cell", _error)
    assert failed == {"cell": 2} and values["cell"] == {0: pytest.approx(0.1), 3: pytest.approx(0.01)}
    assert math.isnan(_error({"test_metric": float("nan")})) and _error({"test_metric": 1.0}) == 0.0


# Which selected runs a verdict may count as seeds (a fresh audit, 2026-11-28, planted truths into finished sweep
# folders: a run whose test pass turned NaN was a valid seed to the regime check and not to the rule, so claim 4
# said *reproduced* with a cell below its minimum of seeds; and a seed whose best learning rate's run crashed was
# decided on the rest of the grid, silently, which made claim 6's DP-free arm fail 20 of 20).
def _record(seed, lr, val, test, status="done", reason=None):
    row = {"val_loss": val, "val_metric": 0.5, "test_loss": test, "test_metric": 0.5}
    return {"id": f"run-{seed}-{lr}", "status": status, "reason": reason,
            "config": {"task": {"name": "t", "args": {"length": 4}}, "model": {"mixer": "m"}, "train": {"lr": lr},
                       "seed": seed},
            "lengths": {} if status == "failed" else {"4": row}}


def test_a_seed_counts_only_with_finite_test_numbers_and_no_crashed_candidate(tmp_path):
    records = [_record(0, 0.1, 1.0, 0.5), _record(0, 0.3, 2.0, 0.4),
               _record(1, 0.1, 1.0, "nan"), _record(1, 0.3, 2.0, 0.4),                 # the selected test pass diverged
               _record(2, 0.1, None, None, "failed", "RuntimeError: the worker process died"),  # a crash: unknown val
               _record(2, 0.3, 2.0, 0.4),
               _record(3, 0.1, None, None, "failed", "nan: the training loss became non-finite at step 3"),
               _record(3, 0.3, 2.0, 0.45)]                                                # diverged: fairly lost
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ok = {r["config"]["seed"]: (r["config"]["train"]["lr"], good) for r, good in selected_records(tmp_path)}
    assert ok == {0: (0.1, True), 1: (0.1, False), 2: (0.3, False), 3: (0.3, True)}
    values, failed = seed_values(tmp_path, lambda c: "cell", lambda row: row["test_loss"])
    assert values == {"cell": {0: 0.5, 3: 0.45}} and failed == {"cell": 2}


def test_a_log_figure_with_no_finite_value_is_drawn_not_a_traceback(tmp_path):
    """An audit: every run of claim 4 failed (a memory budget), and the figure raised matplotlib's "Data cannot be
    log-scaled because all values are <= 0" after training, with no verdict written."""
    pytest.importorskip("matplotlib")
    from expressivity.experiments.claims.kit import line_figure

    nan = float("nan")
    path = line_figure(tmp_path / "f.png", {"H = 2": ([4, 32], [nan, nan])}, "m", "1 - R^2", "all failed",
                       bands={"H = 2": ([nan, nan], [nan, nan])})
    assert path.stat().st_size > 1000


def test_seed_outcomes_count_a_diverged_seed_as_failing_and_leave_a_crashed_one_out(tmp_path):
    """For a pass/fail rule a seed that diverged trained and did not learn (an audit, 2026-11-29: left out, 40
    diverged seeds of 64 read as 24/24 successes); a crashed one has no result and is reported."""
    from expressivity.experiments.claims.kit import seed_outcomes, selected_runs
    records = [_record(0, 0.1, 1.0, 0.5), _record(0, 0.3, 2.0, 0.4),
               _record(1, 0.1, 1.0, "nan"), _record(1, 0.3, 2.0, 0.4),                 # the selected test pass diverged
               _record(2, 0.1, None, None, "failed", "RuntimeError: the worker process died"),  # a crash
               _record(2, 0.3, 2.0, 0.4),
               _record(3, 0.1, None, None, "failed", "nan: the training loss became non-finite at step 3"),
               _record(3, 0.3, None, None, "failed", "nan: the training loss became non-finite at step 5")]  # all diverged
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    states = {r["config"]["seed"]: state for r, state in selected_runs(tmp_path)}
    assert states == {0: "ok", 1: "diverged", 2: "crashed", 3: "diverged"}
    values, outcomes = seed_outcomes(tmp_path, lambda c: "cell", lambda row: -row["test_loss"], -0.45, -0.45)
    o = outcomes["cell"]
    assert values == {"cell": {0: -0.5}} and (o.valid, o.passed, o.failed, o.diverged, o.broken) == (3, 0, 3, 2, 1)
    assert seed_values(tmp_path, lambda c: "cell", lambda row: row["test_loss"]) == ({"cell": {0: 0.5}}, {"cell": 3})
