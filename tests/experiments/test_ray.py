"""The Ray backend against a real local Ray: the same 48-run sweep with learning-rate selection
gives the same per-run results as the local pool, and failures come back as records."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments import run_sweep, sweep_from_spec
from expressivity.experiments.ray_backend import run_ray
from expressivity.experiments.table import rows_of

from tests.experiments.helpers import grid_spec

GRID = {"model.heads": [1, 2], "train.lr": [1e-3, 3e-3, 1e-2, 3e-2], "seed": [0, 1, 2, 3, 4, 5]}


def records(out):
    return {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}


def test_a_48_run_sweep_gives_equal_results_locally_and_on_ray(tmp_path, ray_local):
    sw = sweep_from_spec(grid_spec(GRID, select={"train.lr": "min val_loss"}))
    assert len(sw.configs) == 48
    local = run_sweep(sw, tmp_path / "local", workers=2)
    on_ray = run_sweep(sw, tmp_path / "ray", backend="ray", threads=1)
    assert (local.done, on_ray.done, on_ray.backend) == (48, 48, "ray")
    a, b = records(tmp_path / "local"), records(tmp_path / "ray")
    assert a.keys() == b.keys() == set(sw.ids())
    for i in a:  # bit-equal: the same packs, the same threads, the same arithmetic
        assert (a[i]["lengths"], a[i]["final_loss"], a[i]["status"]) == (b[i]["lengths"], b[i]["final_loss"],
                                                                         b[i]["status"])
    select = sw.select
    picked = [{(r["id"], r["test_metric"]) for r in rows_of(list(x.values()), select)} for x in (a, b)]
    assert picked[0] == picked[1] and len(picked[0]) == 12  # 2 architectures x 6 seeds, one lr each
    assert ray_local.is_initialized()  # the backend used the session's Ray and left it running


def test_ray_failures_and_rerun(tmp_path, ray_local):
    sw = sweep_from_spec(grid_spec({"train.lr": [1e-3, 1e6], "seed": [0]}))
    report = run_sweep(sw, tmp_path / "s", backend="ray")
    assert (report.done, report.failed, report.failures) == (1, 1, {"nan": 1})
    again = run_sweep(sw, tmp_path / "s", backend="ray")
    assert (again.skipped, again.done) == (2, 0) and len(records(tmp_path / "s")) == 2


def test_a_task_that_raises_outside_the_pack_is_reported_as_crashed(ray_local):
    events = list(run_ray([(0, {"pack": "x", "configs": [{"not": "a config"}], "out": None})]))
    kind, index, reason = events[-1]
    assert (kind, index) == ("crashed", 0) and reason.startswith("ray: the task failed")


def test_more_threads_than_the_cluster_has(ray_local):
    with pytest.raises(ExpressivityError, match="lower --threads"):
        list(run_ray([(0, {"pack": "x", "configs": [], "out": None})], threads=64))
