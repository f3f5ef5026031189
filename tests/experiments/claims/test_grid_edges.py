"""Every claim that selects learning rates says when a selection fell on the edge of its grid, the
grid is extended by a rule fixed in advance, ties break toward the interior, and a sweep file that
cannot be read fails closed."""

import json

import pytest

from expressivity.experiments.claims import CLAIMS, Claim, ClaimResult, Regime, reproduce
from expressivity.experiments.claims.grids import (MAX_EXTENSIONS, GridEdge, apply_grid_edges, extended,
                                                   extension_steps, grid_edge_warnings, grid_edges)


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


def test_a_seed_with_a_crashed_candidate_is_no_selection_at_the_edge(tmp_path):
    """A review (2026-11-28): a seed whose interior learning rate crashed (its validation loss unknown) counted
    toward "edge for most seeds", while the verdicts count that seed as a failed run."""
    _sweep(tmp_path / "sweep", {1: 0.1})
    records = [json.loads(line) for line in (tmp_path / "sweep" / "records.jsonl").read_text().splitlines()]
    for r in records:
        if r["config"]["seed"] in (0, 1) and r["config"]["train"]["lr"] == 0.01:
            r.update(status="failed", reason="RuntimeError: the worker process died", lengths={})
    (tmp_path / "sweep" / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (edge,) = grid_edges(tmp_path)
    assert (edge.edge, edge.total) == (1, 1)   # seed 2 alone is a selection (3 of 3 counted before)


def _decided():
    return ClaimResult("reproduced", "the gap is decided", [], None)


def test_most_seeds_on_an_edge_make_a_decided_verdict_undecided(tmp_path):
    _sweep(tmp_path / "sweep", {1: 0.1, 2: 0.01})
    result = apply_grid_edges(_decided(), grid_edges(tmp_path))
    assert result.verdict == "undecided" and result.reason.startswith("lr on grid edge")
    assert "heads=1 (3 of 3 seeds, grid 0.001 0.01 0.1)" in result.reason and "heads=2" not in result.reason
    assert result.numbers["verdict_if_bracketed"] == {"verdict": "reproduced", "reason": "the gap is decided"}


def test_an_edge_for_a_minority_of_seeds_is_left_alone_and_an_undecided_verdict_says_it(tmp_path):
    minority = [GridEdge("sweep", "heads=1", "train.lr", 1, 3, (0.001, 0.01, 0.1))]
    assert apply_grid_edges(_decided(), minority).verdict == "reproduced"
    half = [GridEdge("sweep", "heads=1", "train.lr", 2, 4, (0.001, 0.01, 0.1))]
    assert apply_grid_edges(_decided(), half).verdict == "reproduced"   # half is not most
    undecided = ClaimResult("undecided", "out of regime: too short", [], None)
    majority = [GridEdge("sweep", "heads=1", "train.lr", 3, 3, (0.001, 0.01, 0.1))]
    kept = apply_grid_edges(undecided, majority)
    assert kept.verdict == "undecided" and "verdict_if_bracketed" not in kept.numbers
    # beside its own reason (a fresh audit, 2026-11-28: "underpowered" alone suggested more seeds would decide it)
    assert kept.reason == ("out of regime: too short; and lr on grid edge: the selected value is at the edge of its "
                           "grid for most seeds of heads=1 (3 of 3 seeds, grid 0.001 0.01 0.1)")


def test_an_edge_outside_the_cells_the_verdict_rests_on_stays_a_warning(tmp_path):
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
    from expressivity.experiments.claims.wang_e_trained import CLAIM3_LIN_HEADS, _decides3

    def config(kernel, rpe, heads):
        return {"task": {"args": {"length": 64, "kernel": kernel}}, "model": {"rpe": rpe, "heads": heads}}

    assert _decides3(config("power", "log", 1)) and _decides3(config("power", "lin", CLAIM3_LIN_HEADS))
    assert not _decides3(config("power", "lin", 1))           # reported beside the comparison, not in it
    assert not _decides3(config("exp", "log", CLAIM3_LIN_HEADS))   # the [D] light-tail mirror


def test_claim_7_rests_on_the_scan_above_the_bound_and_the_depth_table():
    from expressivity.experiments.claims.wang_e_trained import SCAN_MODEL, capacity_bound, claim7_decides

    bound = capacity_bound(2, 2, 16, 8)
    decides = claim7_decides(SCAN_MODEL, bound)

    def scan(T):
        return {"task": {"args": {"max_lag": T, "depth": 1}}, "model": {**SCAN_MODEL, "mixer": "dpfree"}}

    assert bound == 18 and not decides(scan(4)) and not decides(scan(16)) and decides(scan(32)) and decides(scan(64))
    depth = {"task": {"args": {"max_lag": 8, "depth": 2}},
             "model": {"d_model": 32, "layers": 2, "heads": 2, "mixer": "attention"}}
    assert decides(depth) and decides({**depth, "model": {**depth["model"], "layers": 1}})
    width = {"task": {"args": {"max_lag": 32, "depth": 1}}, "model": {**SCAN_MODEL, "mixer": "dpfree", "d_model": 64}}
    assert not decides(width)   # the width scan is a diagnostic, outside the verdict


def test_ties_break_toward_the_interior_of_the_grid(tmp_path):
    """The defect: equal validation losses picked the first run recorded, the grid's lowest value,
    which then counted as an edge."""
    from expressivity.experiments.table import select_runs

    records = [_record(f"{lr}-{s}", 1, s, lr, 0.5) for lr in (0.001, 0.01, 0.1, 1.0) for s in (0, 1)]
    chosen = {r["config"]["train"]["lr"] for r, _, _ in select_runs(records, {"train.lr": ("min", "val_loss")})}
    assert chosen <= {0.01, 0.1}
    folder = tmp_path / "sweep"
    folder.mkdir()
    (folder / "sweep.json").write_text(json.dumps({"select": {"train.lr": "min val_loss"}}))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert grid_edges(tmp_path) == []
    better = [_record("edge", 1, 0, 0.001, 0.4)] + records[2:]   # a strictly better edge is still chosen
    assert [r["config"]["train"]["lr"] for r, _, _ in select_runs(better, {"train.lr": ("min", "val_loss")})
            if r["config"]["seed"] == 0] == [0.001]


def test_an_unreadable_sweep_file_fails_closed(tmp_path):
    """The defect: a sweep.json that could not be read was skipped, so its edges never counted."""
    _sweep(tmp_path / "sweep", {1: 0.01})
    (tmp_path / "sweep" / "sweep.json").write_text("{not json")
    edges = grid_edges(tmp_path)
    assert len(edges) == 1 and edges[0].unreadable and edges[0].most_seeds
    result = apply_grid_edges(_decided(), edges)
    assert result.verdict == "undecided" and "cannot be checked" in result.reason


def test_the_rule_extends_an_edge_most_seeds_chose_by_the_grid_factor(tmp_path):
    _sweep(tmp_path / "sweep", {1: 0.1, 2: 0.01, 4: 0.001})
    edges = grid_edges(tmp_path)
    steps = extension_steps(edges, _decided(), [])
    got = {(json.loads(e["group"])["model"]["heads"], e["direction"]): e["value"] for e in steps}
    assert got == {(1, "high"): 1.0, (4, "low"): 0.0001}
    inside_only = ClaimResult("reproduced", "x", [], None, decides=lambda c: c["model"]["heads"] == 4)
    assert [e["direction"] for e in extension_steps(edges, inside_only, [])] == ["low"]
    done = [dict(steps[0]) for _ in range(MAX_EXTENSIONS)]
    assert len(extension_steps(edges, _decided(), done)) == 1   # heads=1 upwards has had its extensions


class _FakeConfig:
    """A stand-in for RunConfig in :func:`extended` (an id, a dict, and with_changes)."""

    def __init__(self, d):
        self.d = d

    def to_dict(self):
        return self.d

    def id(self):
        return json.dumps(self.d, sort_keys=True)

    def with_changes(self, train):
        return _FakeConfig({**self.d, "train": {**self.d["train"], **train}})


def test_extended_adds_the_new_value_for_every_seed_of_the_group():
    configs = [_FakeConfig({"model": {"heads": h}, "train": {"lr": lr}, "seed": s})
               for h in (1, 2) for lr in (0.01, 0.1) for s in (0, 1)]
    group = json.dumps({"model": {"heads": 1}, "train": {}}, sort_keys=True)
    grown = extended(configs, "sweep", [{"sweep": "sweep", "group": group, "axis": "train.lr", "value": 1.0,
                                         "direction": "high"}])
    added = [c.d for c in grown[len(configs):]]
    assert sorted((c["model"]["heads"], c["train"]["lr"], c["seed"]) for c in added) == [(1, 1.0, 0), (1, 1.0, 1)]
    assert extended(configs, "other", [{"sweep": "sweep", "group": group, "axis": "train.lr", "value": 1.0,
                                        "direction": "high"}]) == tuple(configs)


def _bracketing_claim(best):
    """A claim whose 'training' writes a sweep folder in which validation loss is least at ``best``
    (its grid starts at {0.01, 0.03, 0.1} and grows as the rule extends it)."""
    def run(ctx):
        from expressivity.experiments.claims.grids import extended as grow

        configs = [_FakeConfig({"task": {"name": "copy", "args": {"length": 8}}, "model": {"heads": 1},
                                "train": {"lr": lr}, "seed": s}) for lr in (0.01, 0.03, 0.1) for s in (0, 1, 2)]
        folder = ctx.out / "sweep"
        folder.mkdir(exist_ok=True)
        (folder / "sweep.json").write_text(json.dumps({"select": {"train.lr": "min val_loss"}}))
        records = [{"id": c.id(), "config": c.d, "status": "done",
                    "lengths": {"8": {"val_loss": abs(c.d["train"]["lr"] - best) + c.d["seed"]}}}
                   for c in grow(configs, "sweep", ctx.extensions)]
        (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        return ClaimResult("reproduced", "the gap is decided", [], None, regime=Regime(ctx.scale, {"ok": True}))

    return run


@pytest.mark.parametrize("best,extensions,verdict", [(0.15, 1, "reproduced"), (100.0, MAX_EXTENSIONS, "undecided")])
def test_reproduce_extends_the_grid_until_it_brackets_or_the_rule_stops(tmp_path, best, extensions, verdict):
    CLAIMS["test-grid-claim"] = Claim("test-grid-claim", "t", "s", "c", _bracketing_claim(best), tag="[D]")
    try:
        result = reproduce("test-grid-claim", tmp_path / "out", "quick")
        recorded = json.loads((tmp_path / "out" / "grid_extensions.json").read_text())
        again = reproduce("test-grid-claim", tmp_path / "out", "quick")   # a resumed run keeps the grown grid
    finally:
        del CLAIMS["test-grid-claim"]
    assert [e["direction"] for e in recorded] == ["high"] * extensions
    assert recorded[0]["value"] == pytest.approx(0.333333) and recorded[0]["grid_before"] == [0.01, 0.03, 0.1]
    assert result.verdict == again.verdict == verdict and result.numbers["grid_extensions"] == recorded
    if verdict == "undecided":
        assert result.reason.startswith("lr on grid edge") and "after the extensions the grid rule allows" in result.reason
    verdict_json = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict_json["numbers"]["grid_extensions"] == recorded
