"""Selection on validation, reporting on test; rows per evaluated length; varying settings."""

from expressivity.experiments.table import rows_of, select_runs, varying_settings


def record(seed, lr, val_loss, test_metric, status="done", heads=1, lengths=(4,)):
    cfg = {"task": {"name": "t", "args": {"length": 4}}, "model": {"heads": heads, "mixer": ["a", "b"]},
           "train": {"lr": lr}, "seed": seed, "eval_lengths": []}
    ls = {} if status == "failed" else {str(L): {"val_loss": val_loss * L / 4, "val_metric": 0.5, "test_loss": 1.0,
                                                 "test_metric": test_metric} for L in lengths}
    return {"id": f"{seed}-{lr}-{heads}", "config": cfg, "status": status, "lengths": ls,
            "reason": "nan: x" if status == "failed" else None}


RULE = {"train.lr": ("min", "val_loss")}


def test_the_lowest_validation_loss_wins_per_configuration_and_seed():
    recs = [record(0, 1e-3, 0.5, 0.1), record(0, 1e-2, 0.2, 0.3), record(1, 1e-3, 0.1, 0.7), record(1, 1e-2, 0.4, 0.9)]
    chosen = {r["config"]["seed"]: (r["config"]["train"]["lr"], n, ok) for r, n, ok in select_runs(recs, RULE)}
    assert chosen == {0: (1e-2, 2, 2), 1: (1e-3, 2, 2)}
    rows = rows_of(recs, RULE)
    assert sorted(r["test_metric"] for r in rows) == [0.3, 0.7]  # reported from test, chosen on validation


def test_selection_ignores_test_values_and_failed_runs():
    # The best *test* metric (0.99) is never looked at; a failed run is never chosen.
    recs = [record(0, 1e-3, 0.5, 0.99), record(0, 1e-2, 0.2, 0.1), record(0, 1e-1, 0.0, 0.0, status="failed")]
    (r, n, ok), = select_runs(recs, RULE)
    assert r["config"]["train"]["lr"] == 1e-2 and (n, ok) == (3, 2)


def test_a_group_whose_runs_all_failed_stays_as_one_failed_row():
    recs = [record(0, 1e-3, 0, 0, status="failed"), record(0, 1e-2, 0, 0, status="failed")]
    rows = rows_of(recs, RULE)
    assert len(rows) == 1 and rows[0]["status"] == "failed" and "all 2 candidates failed" in rows[0]["reason"]
    assert rows[0]["test_metric"] is None


def test_max_rule_and_no_rule():
    recs = [record(0, 1e-3, 0.5, 0.1), record(0, 1e-2, 0.2, 0.3)]
    assert len(select_runs(recs, {})) == 2
    recs[0]["lengths"]["4"]["val_metric"] = 0.9
    (r, _, _), = select_runs(recs, {"train.lr": ("max", "val_metric")})
    assert r["config"]["train"]["lr"] == 1e-3


def test_one_row_per_evaluated_length_with_the_training_length_marked():
    rows = rows_of([record(0, 1e-3, 0.5, 0.1, lengths=(4, 8))])
    assert [(r["length"], r["train_length"]) for r in rows] == [(4, 4), (8, 4)]
    assert rows[0]["model"]["mixer"] == "a,b"  # lists become one string per cell
    assert rows[1]["val_loss"] == 1.0


def test_non_finite_stored_values_become_missing():
    r = record(0, 1e-3, 0.5, 0.1)
    r["lengths"]["4"]["test_metric"] = "nan"
    r["seconds"] = "inf"
    row, = rows_of([r])
    assert row["test_metric"] is None and row["seconds"] is None


def test_varying_settings():
    a, b = record(0, 1e-3, 0, 0)["config"], record(1, 1e-2, 0, 0, heads=2)["config"]
    assert varying_settings([a, b]) == {"model.heads": [1, 2], "train.lr": [1e-3, 1e-2]}


# ---- groups judged against the whole sweep (its configurations), as for an unfinished sweep ----
def swept(*records):
    """``records`` with their ids as a sweep gives them: the content hash of the configuration."""
    from expressivity.records import content_hash

    return [{**r, "id": content_hash(r["config"])} for r in records]


def test_a_group_with_an_unrecorded_candidate_is_incomplete_not_selected():
    from expressivity.experiments.table import select_groups

    recs = swept(record(0, 1e-3, 0.5, 0.1), record(0, 1e-2, 0.2, 0.3), record(0, 1e-1, 0.9, 0.8),
                 record(1, 1e-3, 0.1, 0.7))
    configs = [r["config"] for r in recs] + [record(1, lr, 0, 0)["config"] for lr in (1e-2, 1e-1)]
    by_seed = {g.config["seed"]: g for g in select_groups(recs, RULE, configs)}
    # seed 0: all three learning rates recorded, the rule's choice; seed 1: one of three recorded
    assert by_seed[0].complete and by_seed[0].record["config"]["train"]["lr"] == 1e-2
    assert (by_seed[0].candidates, by_seed[0].candidates_recorded, by_seed[0].candidates_ok) == (3, 3, 3)
    g = by_seed[1]
    assert not g.complete and g.record is None and (g.candidates, g.candidates_recorded, g.candidates_ok) == (3, 1, 1)
    assert "lr" not in g.config["train"] and g.run_id is None
    # without the sweep's configurations the records are the whole sweep: seed 1's only run is "selected"
    assert all(g.complete for g in select_groups(recs, RULE))


def test_incomplete_groups_become_rows_without_values_at_every_evaluated_length():
    recs = swept(record(0, 1e-3, 0.5, 0.1), record(0, 1e-2, 0.2, 0.3))
    missing = record(1, 1e-3, 0, 0)["config"] | {"eval_lengths": [8]}
    rows = rows_of(recs, RULE, [r["config"] for r in recs] + [missing, {**missing, "train": {"lr": 1e-2}}])
    done = [r for r in rows if r["status"] != "incomplete"]
    assert [(r["seed"], r["test_metric"], r["candidates"], r["candidates_recorded"]) for r in done] == [(0, 0.3, 2, 2)]
    incomplete = [r for r in rows if r["status"] == "incomplete"]
    assert [(r["seed"], r["length"], r["test_metric"], r["val_loss"]) for r in incomplete] == [(1, 4, None, None),
                                                                                              (1, 8, None, None)]
    assert incomplete[0]["id"] is None and "lr" not in incomplete[0]["train"]
    assert incomplete[0]["reason"] == "0 of 2 candidates recorded; no selection until all are"
    assert (incomplete[0]["candidates"], incomplete[0]["candidates_recorded"], incomplete[0]["candidates_ok"]) == (2, 0, 0)


def test_without_selection_an_unrecorded_run_is_its_own_incomplete_row():
    from expressivity.records import content_hash

    recs = swept(record(0, 1e-3, 0.5, 0.1))
    missing = record(0, 1e-2, 0, 0)["config"]
    rows = rows_of(recs, None, [recs[0]["config"], missing])
    assert [(r["id"], r["status"], r["reason"]) for r in rows] == [
        (recs[0]["id"], "done", None), (content_hash(missing), "incomplete", "not recorded yet")]
    assert rows[1]["train"]["lr"] == 1e-2 and rows[1]["test_metric"] is None


def test_a_record_the_configurations_do_not_list_still_counts():
    recs = swept(record(0, 1e-3, 0.5, 0.1), record(0, 1e-2, 0.2, 0.3))
    rows = rows_of(recs, RULE, [recs[0]["config"]])   # the second record is not among the configurations
    assert [(r["status"], r["test_metric"], r["candidates"]) for r in rows] == [("done", 0.3, 2)]


def test_dropping_a_setting_copies_only_its_path_and_leaves_the_input_whole():
    from expressivity.experiments.table import drop_path

    config = {"seed": 1, "train": {"lr": 0.1, "steps": 5}, "model": {"heads": 2}}
    dropped = drop_path(config, "train.lr")
    assert dropped == {"seed": 1, "train": {"steps": 5}, "model": {"heads": 2}}
    assert config == {"seed": 1, "train": {"lr": 0.1, "steps": 5}, "model": {"heads": 2}}   # unchanged
    assert drop_path(config, "seed") == {"train": {"lr": 0.1, "steps": 5}, "model": {"heads": 2}}
    assert drop_path(config, "train.nothing") == config and drop_path(config, "seed.x") == config


def test_a_finished_candidate_with_no_validation_value_fails_its_group():
    """A fresh audit (2026-11-29): a candidate recorded "done" whose validation loss was NaN (an evaluation that
    overflowed, an edited record) was passed over, and its group reported the other learning rate's run with
    failed = 0 and no word; its validation number is unknown, as a crashed candidate's is."""
    from expressivity.experiments.table import select_groups

    for bad in ("nan", None, float("nan")):
        unknown = record(0, 1e-2, 0.2, 0.3)
        unknown["lengths"]["4"]["val_loss"] = bad
        recs = [record(0, 1e-3, 0.5, 0.1), unknown, record(1, 1e-3, 0.1, 0.7), record(1, 1e-2, 0.4, 0.9)]
        (first, second) = select_groups(recs, RULE)
        assert (first.crashed, second.crashed) == (1, 0)
        rows = {r["seed"]: r for r in rows_of(recs, RULE)}
        assert rows[0]["status"] == "failed" and "no validation value" in rows[0]["reason"]
        assert rows[0]["test_metric"] is None and rows[1]["status"] == "done" and rows[1]["test_metric"] == 0.7


def test_a_finished_candidate_whose_validation_loss_is_infinite_loses_the_selection_fairly():
    """A review (2026-11-29): an infinite validation loss is known (it diverged in evaluation), so it loses the
    selection as a diverged run does, and its group is not failed."""
    from expressivity.experiments.table import select_groups

    for bad in (float("inf"), "inf"):
        worse = record(0, 1e-2, 0.2, 0.3)
        worse["lengths"]["4"]["val_loss"] = bad
        recs = [record(0, 1e-3, 0.5, 0.1), worse]
        (group,) = select_groups(recs, RULE)
        assert group.crashed == 0 and group.record["config"]["train"]["lr"] == 1e-3
        (row,) = rows_of(recs, RULE)
        assert row["status"] == "done" and row["test_metric"] == 0.1
