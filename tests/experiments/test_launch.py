"""Running sweeps on the local pool: every run recorded once, reruns skip, sweeps extend, failures
are recorded with their reasons, and the engine does not change what a run computes."""

import json
from pathlib import Path

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.experiments import read_records, run_sweep, sweep_from_spec
from expressivity.experiments.local import run_local
from expressivity.experiments.worker import run_dir
from expressivity.training import run, run_ensemble

from tests.experiments.helpers import BASE, grid_spec


def lines(out):
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


def test_a_sweep_records_every_run_once_and_a_rerun_skips_them(tmp_path):
    sw = sweep_from_spec(grid_spec({"model.heads": [1, 2], "train.lr": [1e-3, 1e-2], "seed": [0, 1]}))
    seen = []
    report = run_sweep(sw, tmp_path / "s", workers=2, on_progress=lambda p: seen.append((p.done, p.running)))
    assert (report.runs, report.done, report.failed, report.skipped, report.packs) == (8, 8, 0, 0, 2)
    recs = lines(tmp_path / "s")
    assert sorted(r["id"] for r in recs) == sorted(sw.ids())
    assert all(r["status"] == "done" and r["pack"]["size"] == 4 and r["lengths"]["4"]["test_metric"] >= 0 for r in recs)
    assert seen[-1] == (8, 0) and max(r for _, r in seen) >= 4
    for i in sw.ids():  # every run folder is an ordinary finished run; the pack checkpoints are gone
        assert json.loads((tmp_path / "s" / "runs" / i / "checkpoint" / "config.json").read_text())["status"] == "done"
    assert not (tmp_path / "s" / "packs").exists()
    again = run_sweep(sw, tmp_path / "s", workers=2)
    assert (again.done, again.skipped) == (0, 8) and len(lines(tmp_path / "s")) == 8


def test_records_equal_direct_calls_of_the_trainer(tmp_path):
    spec = grid_spec([{"model.heads": [1, 2], "train.lr": [1e-3, 1e-2], "seed": [0]}, {"model.heads": [4], "seed": [5]}])
    sw = sweep_from_spec(spec)
    report = run_sweep(sw, tmp_path / "s", workers=2, max_pack=2)
    assert report.packs == 3  # two ensembles of two, one single run
    by_id = {r["id"]: r for r in read_records(tmp_path / "s")}
    torch.set_num_threads(1)  # as in the workers
    for heads in (1, 2):
        results, _ = run_ensemble([c for c in sw.configs if c.model.heads == heads])
        for r in results:
            assert by_id[r.id]["lengths"]["4"] == r.summary()["lengths"]["4"]
    single = next(c for c in sw.configs if c.model.heads == 4)
    assert by_id[single.id()]["final_loss"] == run(single).final_loss


def test_a_sweep_that_adds_runs_extends_the_folder_and_another_is_refused(tmp_path):
    small = sweep_from_spec(grid_spec({"seed": [0, 1]}))
    run_sweep(small, tmp_path / "s", workers=1)
    bigger = sweep_from_spec(grid_spec({"seed": [0, 1, 2]}))
    report = run_sweep(bigger, tmp_path / "s", workers=1)
    assert (report.done, report.skipped) == (1, 2) and len(lines(tmp_path / "s")) == 3
    with pytest.raises(ExpressivityError, match="holds another sweep"):
        run_sweep(sweep_from_spec(grid_spec({"seed": [7]})), tmp_path / "s")
    (tmp_path / "trained").mkdir()
    (tmp_path / "trained" / "run.json").write_text("{}")  # a 'train --out' folder
    with pytest.raises(ExpressivityError, match="another command's output"):
        run_sweep(small, tmp_path / "trained")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(ExpressivityError, match="did not write"):
        run_sweep(small, tmp_path / "mine")


def test_failures_are_recorded_with_their_reason_and_the_sweep_continues(tmp_path):
    sw = sweep_from_spec(grid_spec({"train.lr": [1e-3, 1e6], "seed": [0, 1]}))
    report = run_sweep(sw, tmp_path / "s", workers=2)
    assert (report.done, report.failed, report.failures) == (2, 2, {"nan": 2})
    failed = [r for r in lines(tmp_path / "s") if r["status"] == "failed"]
    assert all(r["config"]["train"]["lr"] == 1e6 and r["reason"].startswith("nan: ") for r in failed)
    again = run_sweep(sw, tmp_path / "s", retry_failed=True)  # NaN is deterministic: not retried
    assert (again.done, again.failed, again.failures) == (0, 0, {"nan": 2})


def test_a_worker_that_dies_is_reported_and_replaced():
    good = sweep_from_spec(grid_spec({"seed": [0]})).configs[0]
    jobs = [(0, {"pack": "x", "configs": [{"not": "a config"}], "out": None}),
            (1, {"pack": "y", "configs": [good.to_dict()], "out": None})]
    events = {(k, i): p for k, i, p in run_local(jobs, workers=1, threads=1)}
    assert ("done", 1) in events
    assert events["crashed", 0].startswith("worker: the worker process died (exit code 1)")


@pytest.mark.parametrize("kwargs, needle", [
    (dict(backend="spark"), "unknown backend"),
    (dict(workers=0), "--workers must be"),
    (dict(workers=10_000), "far more than"),
    (dict(threads=10_000), "more than the"),
    (dict(max_pack=0), "--pack must be"),
    (dict(device="tpu"), "unknown device"),
])
def test_bad_settings_are_refused_before_anything_runs(tmp_path, kwargs, needle):
    with pytest.raises(ExpressivityError, match=needle):
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", **kwargs)
    assert not (tmp_path / "s").exists()


def test_a_claims_sweep_lives_inside_the_claims_folder_and_a_failed_start_leaves_nothing(tmp_path):
    from expressivity.records import run_record, write_json

    write_json(tmp_path / "claim" / "run.json", run_record("reproduce wang-e-3", {}))
    base = {**BASE, "train": {**BASE["train"], "steps": 2, "eval_every": 1, "checkpoint_every": 1}}
    sw = sweep_from_spec(grid_spec({"seed": [0]}, base=base))
    assert run_sweep(sw, tmp_path / "claim" / "sweep", workers=1).done == 1
    # a Ray address where nothing listens: refused before the folder (or its parents) is made
    with pytest.raises(ExpressivityError, match="cannot reach Ray"):
        run_sweep(sw, tmp_path / "new" / "deep" / "sweep", backend="ray", ray_address="127.0.0.1:1")
    assert not (tmp_path / "new").exists()


def test_a_command_that_fails_before_recording_keeps_a_folder_with_checkpoints_resumable(tmp_path, monkeypatch):
    """A failed command restores the folder's description (a failed Ray join rewrote run.json and manifest.json);
    where it made a checkpoint before failing, the new description stays, so the folder resumes."""
    import expressivity.experiments.launch as launch

    sw = sweep_from_spec(grid_spec({"seed": [0]}))

    def interrupted(jobs, packs, todo, writer, report, *args, **kwargs):
        (Path(report.out) / "packs" / "p").mkdir(parents=True)
        (Path(report.out) / "packs" / "p" / "checkpoint").write_text("a pack's checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(launch, "_drive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sw, tmp_path / "s", workers=1)
    assert all((tmp_path / "s" / name).is_file() for name in ("sweep.json", "run.json", "manifest.json"))


def test_a_finished_folders_selection_rule_is_not_replaced(tmp_path):
    """Running a finished folder again with another `select` rewrote sweep.json and run.json to the new rule (what
    results report from the same runs), the old one kept nowhere (an audit, 2026-11-28)."""
    grid = {"train.lr": [1e-3, 1e-2], "seed": [0]}
    run_sweep(sweep_from_spec(grid_spec(grid, select={"train.lr": "min val_loss"})), tmp_path / "s", workers=1)
    with pytest.raises(ExpressivityError, match="was run selecting train.lr: min val_loss; this sweep selects "
                                                "train.lr: max val_metric"):
        run_sweep(sweep_from_spec(grid_spec(grid, select={"train.lr": "max val_metric"})), tmp_path / "s", workers=1)
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["select"] == {"train.lr": "min val_loss"}
    report = run_sweep(sweep_from_spec(grid_spec(grid, select={"train.lr": "min val_loss"})), tmp_path / "s", workers=1)
    assert report.skipped == 2


def test_a_stale_pack_checkpoint_is_removed_once_its_runs_are_recorded(tmp_path):
    """A sweep interrupted mid-pack and resumed with another --pack trained the runs in new packs, and the old pack's
    checkpoint (status running) stayed in the finished folder for good (an audit, 2026-11-28)."""
    from expressivity.experiments.packing import plan_packs
    from expressivity.experiments.worker import pack_dir

    run_sweep(sweep_from_spec(grid_spec({"seed": [5]})), tmp_path / "s", workers=1)   # the folder, as a sweep wrote it
    sw = sweep_from_spec(grid_spec({"seed": [5, 0, 1]}))
    [pack] = plan_packs([c for c in sw.configs if c.seed != 5], 2)

    class Stop(Exception):
        pass

    def stop(step):
        if step >= 15:
            raise Stop

    with pytest.raises(Stop):
        run_ensemble(list(pack.configs), pack_dir(tmp_path / "s", pack.id),
                     [run_dir(tmp_path / "s", c.id()) for c in pack.configs], on_step=stop)   # as a worker does
    assert (pack_dir(tmp_path / "s", pack.id) / "ensemble" / "config.json").exists()
    report = run_sweep(sw, tmp_path / "s", workers=1, max_pack=1)   # another composition: each run alone
    assert report.done == 2 and not (tmp_path / "s" / "packs").exists()


def test_a_driver_refused_the_lock_leaves_the_holders_new_folder_alone(tmp_path, monkeypatch):
    """A sweep run decided it made the folder, lost the lock to another driver that took the fresh folder meanwhile,
    and removed it on the way out: the holder's folder (a fresh audit, 2026-11-28)."""
    import expressivity.experiments.launch as launch
    from expressivity.experiments.store import FolderLock

    out = tmp_path / "s"
    holder = FolderLock(out)
    make_parents = launch.make_parents

    def another_driver_starts(path):   # between "the folder is new" and this driver's lock
        made = make_parents(path)
        holder.__enter__()
        (out / "sweep.json").write_text("{}")
        return made

    monkeypatch.setattr(launch, "make_parents", another_driver_starts)
    try:
        with pytest.raises(ExpressivityError, match="being written by another sweep run"):
            run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), out, workers=1)
        assert (out / "sweep.json").read_text() == "{}"   # the holder's folder is still there
    finally:
        holder.__exit__()


def test_a_damaged_records_file_is_warned_about_once_per_run(tmp_path):
    """A rerun read the records twice (before and after training) and said the same warning twice (an audit at
    scale, 2026-11-28)."""
    import warnings

    from expressivity.experiments.store import RecordWarning

    sw = sweep_from_spec(grid_spec({"seed": [0]}))
    run_sweep(sw, tmp_path / "s", workers=1)
    records = tmp_path / "s" / "records.jsonl"
    records.write_bytes(records.read_bytes() * 2)   # every run recorded twice
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run_sweep(sw, tmp_path / "s", workers=1).skipped == 1
    said = [str(w.message) for w in caught if issubclass(w.category, RecordWarning)]
    assert len(said) == 1 and "more than one record" in said[0], said


def test_the_packs_with_the_most_arithmetic_start_first(tmp_path):
    """Packs were ordered by steps x members, which ties across model sizes: a width grid ran its small models
    first and the ETA said 1 s with 14 s left (an audit at scale, 2026-11-28). One worker runs the packs in order."""
    sw = sweep_from_spec(grid_spec([{"model.d_model": [8], "model.ffn_width": [8], "seed": [0, 1]},
                                    {"model.d_model": [32], "model.ffn_width": [64], "seed": [0]}]))
    run_sweep(sw, tmp_path / "s", workers=1, max_pack=1)
    assert [r["config"]["model"]["d_model"] for r in lines(tmp_path / "s")] == [32, 8, 8]


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_the_workers_limit_said_is_the_one_checked(tmp_path, backend):
    """'--workers 9' on 2 cores said "use at most 2" while 8 was accepted (four per core; a fresh audit,
    2026-11-29)."""
    from expressivity.experiments.local import cpu_count

    cores = cpu_count()
    with pytest.raises(ExpressivityError, match=rf"use at most {4 * cores} \(four per core\)"):
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", workers=4 * cores + 1, backend=backend)
    assert not (tmp_path / "s").exists()


def test_a_private_ray_plans_packs_with_the_local_memory_budget():
    """16 seeds of a wide model were split in 2 packs locally and ran as 1 pack on a private Ray, whose worker then
    refused it for its memory, and --retry-failed failed it again (a fresh audit, 2026-11-29): a private Ray plans
    as the local backend does; a cluster (an address) leaves the budget to each node."""
    from expressivity.experiments.launch import _budget

    local = _budget(None, "local", "cpu", 2)
    for address in (None, "local"):
        private = _budget(None, "ray", "cpu", 2, address)
        # (the RAM available is read at each call: the same within a few percent)
        assert private is not None and private.source.split("(")[0] == local.source.split("(")[0]
        assert abs(private.bytes - local.bytes) <= 0.05 * local.bytes
    assert _budget(None, "ray", "cpu", 2, "10.0.0.1:6379") is None
    assert _budget(None, "ray", "cuda", 2) is None   # read by the task on its GPU (this machine may have none)
