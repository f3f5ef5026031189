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
