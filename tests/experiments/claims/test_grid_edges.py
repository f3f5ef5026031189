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
