"""Every claim that selects learning rates says when a selection fell on the edge of its grid."""

import json

from expressivity.experiments.claims import grid_edge_warnings


def _record(run_id, heads, seed, lr, val_loss):
    config = {"task": {"name": "copy", "args": {"length": 8}}, "model": {"mixer": "attention", "heads": heads},
              "train": {"lr": lr}, "seed": seed}
    return {"id": run_id, "config": config, "status": "done", "lengths": {"8": {"val_loss": val_loss}}}


def _sweep(folder, best_lr_by_heads):
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(json.dumps({"name": "s", "select": {"train.lr": "min val_loss"}, "configs": []}))
    lines = []
    for heads, best in best_lr_by_heads.items():
        for seed in (0, 1, 2):
            for lr in (0.001, 0.01, 0.1):
                lines.append(_record(f"{heads}-{seed}-{lr}", heads, seed, lr, abs(lr - best) + seed))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


def test_interior_selections_give_no_warning(tmp_path):
    _sweep(tmp_path / "sweep", {1: 0.01, 2: 0.01})
    assert grid_edge_warnings(tmp_path) == []


def test_edge_selections_are_counted_per_configuration(tmp_path):
    _sweep(tmp_path / "sweep", {1: 0.1, 2: 0.01, 4: 0.001})
    lines = grid_edge_warnings(tmp_path)
    assert len(lines) == 2
    assert any("heads=1" in line and "3 of 3 seeds" in line and "grid 0.001 0.01 0.1" in line for line in lines)
    assert any("heads=4" in line and "3 of 3 seeds" in line for line in lines)
    assert not any("heads=2" in line for line in lines)


def _decided():
    from expressivity.experiments.claims import ClaimResult

    return ClaimResult("reproduced", "the gap is decided", [], None)


def test_most_seeds_on_an_edge_make_a_decided_verdict_undecided(tmp_path):
    from expressivity.experiments.claims import apply_grid_edges, grid_edges

    _sweep(tmp_path / "sweep", {1: 0.1, 2: 0.01})
    result = apply_grid_edges(_decided(), grid_edges(tmp_path))
    assert result.verdict == "undecided" and result.reason.startswith("lr on grid edge")
    assert "heads=1 (3 of 3 seeds, grid 0.001 0.01 0.1)" in result.reason and "heads=2" not in result.reason
    assert result.numbers["verdict_if_bracketed"] == {"verdict": "reproduced", "reason": "the gap is decided"}


def test_an_edge_for_a_minority_of_seeds_or_an_undecided_verdict_is_left_alone(tmp_path):
    from expressivity.experiments.claims import ClaimResult, GridEdge, apply_grid_edges

    minority = [GridEdge("sweep", "heads=1", "train.lr", 1, 3, (0.001, 0.01, 0.1))]
    assert apply_grid_edges(_decided(), minority).verdict == "reproduced"
    half = [GridEdge("sweep", "heads=1", "train.lr", 2, 4, (0.001, 0.01, 0.1))]
    assert apply_grid_edges(_decided(), half).verdict == "reproduced"   # half is not most
    undecided = ClaimResult("undecided", "out of regime: too short", [], None)
    majority = [GridEdge("sweep", "heads=1", "train.lr", 3, 3, (0.001, 0.01, 0.1))]
    kept = apply_grid_edges(undecided, majority)
    assert kept.reason == "out of regime: too short" and "verdict_if_bracketed" not in kept.numbers


def test_an_edge_outside_the_cells_the_verdict_rests_on_stays_a_warning(tmp_path):
    from expressivity.experiments.claims import ClaimResult, apply_grid_edges, grid_edges

    _sweep(tmp_path / "sweep", {1: 0.1, 2: 0.01})          # heads=1 on the edge for every seed
    edges = grid_edges(tmp_path)
    assert [e.config["model"]["heads"] for e in edges] == [1]   # the group's configuration travels with the edge

    outside = ClaimResult("reproduced", "the gap is decided", [], None, decides=lambda c: c["model"]["heads"] == 2)
    kept = apply_grid_edges(outside, edges)
    assert kept.verdict == "reproduced" and "verdict_if_bracketed" not in kept.numbers
    assert ["heads=1" in line for line in kept.numbers["grid_edges_outside_the_verdict"]] == [True]

    inside = ClaimResult("reproduced", "the gap is decided", [], None, decides=lambda c: c["model"]["heads"] == 1)
    assert apply_grid_edges(inside, edges).verdict == "undecided"


def test_claim_3_rests_on_its_two_compared_arms_only():
    from expressivity.experiments.claims.wang_e import CLAIM3_LIN_HEADS, _decides3

    def config(kernel, rpe, heads):
        return {"task": {"args": {"length": 64, "kernel": kernel}}, "model": {"rpe": rpe, "heads": heads}}

    assert _decides3(config("power", "log", 1)) and _decides3(config("power", "lin", CLAIM3_LIN_HEADS))
    assert not _decides3(config("power", "lin", 1))           # reported beside the comparison, not in it
    assert not _decides3(config("exp", "log", CLAIM3_LIN_HEADS))   # the [D] light-tail mirror


def test_claim_7_rests_on_the_scan_above_the_bound_and_the_depth_table():
    from expressivity.experiments.claims.wang_e import SCAN_MODEL, capacity_bound, claim7_decides

    bound = capacity_bound(2, 2, 16, 8)
    decides = claim7_decides(SCAN_MODEL, bound)

    def scan(T):
        return {"task": {"args": {"max_lag": T, "depth": 1}}, "model": {**SCAN_MODEL, "mixer": "dpfree"}}

    assert bound == 18 and not decides(scan(4)) and not decides(scan(16)) and decides(scan(32)) and decides(scan(64))
    depth = {"task": {"args": {"max_lag": 8, "depth": 2}}, "model": {"d_model": 32, "layers": 2, "heads": 2}}
    assert decides(depth) and decides({**depth, "model": {**depth["model"], "layers": 1}})
