"""The regime check, cell by cell: every compared cell must be settled to the precision of its
comparison; a pooled share cannot hide a compared arm that is still learning, and a relative 5%
cannot call an LM arm falling by 0.09 bits per byte flat when the effect is measured to 0.02."""

import json
import math

import pytest

from expressivity.experiments.claims.regime import cell_regime, tolerances


def _sweep(folder, arms: dict, steps=100, seeds=4):
    """A sweep folder whose arm ``name`` has ``seeds`` seeds with the validation curve ``arms[name](step)``."""
    folder.mkdir(parents=True)
    records = []
    for name, curve in arms.items():
        for seed in range(seeds):
            config = {"task": {"name": "copy", "args": {"length": 8}}, "model": {"arm": name},
                      "train": {"lr": 0.01, "steps": steps, "batch_size": 4}, "seed": seed}
            rid = f"{name}-{seed}"
            final = curve(steps)
            records.append({"id": rid, "config": config, "status": "done", "params": 100,
                            "lengths": {"8": {"val_loss": final, "test_loss": final, "test_metric": 0.5}}})
            run = folder / "runs" / rid
            run.mkdir(parents=True)
            run.joinpath("metrics.jsonl").write_text("".join(
                json.dumps({"step": s, "eval_loss": curve(s), "eval_metric": 0.5}) + "\n" for s in range(10, steps + 1, 10)))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _arm(config):
    return config["model"]["arm"]


def _loss(loss, metric):
    return loss


def test_an_arm_still_falling_fails_the_check_though_the_pool_is_three_quarters_flat(tmp_path):
    """The audit's case: three flat arms and one still falling pass a pooled 3/4 rule."""
    flat = lambda s: 1.0  # noqa: E731
    folder = _sweep(tmp_path / "sweep", {"a": flat, "b": flat, "c": flat, "d": lambda s: 2.0 - s / 100})
    regime = cell_regime(folder, "quick", _arm, {arm: 0.05 for arm in "abcd"}, _loss, "bits per byte")
    assert not regime.ok
    (failed,) = [name for name in regime.failed() if "settled" in name]
    assert "1 of 4 moved more" in failed and "d: moved -0.2 bits per byte, tolerance 0.05" in failed
    assert regime.still_falling.startswith("1 of 4")


@pytest.mark.parametrize("half_width,settled", [(0.02, False), (0.2, True)])
def test_an_lm_arm_falling_under_five_percent_is_judged_against_the_half_width(tmp_path, half_width, settled):
    """The audit's case: an LM arm falling 1.95 -> 1.86 bits per byte over its last 20% (under 5%)
    counted as flat while the compared effects were about 0.005; against an interval of +-0.02 it is
    still learning, against +-0.2 it is not."""
    curve = lambda s: 1.95 if s <= 80 else 1.86  # noqa: E731
    folder = _sweep(tmp_path / "sweep", {"dp": curve, "dpfree": lambda s: 1.9})
    tol = tolerances([("dp", half_width), ("dpfree", half_width), ("dp", 1.0)])  # the tightest comparison counts
    assert tol["dp"] == half_width
    regime = cell_regime(folder, "quick", _arm, tol, _loss, "bits per byte")
    assert regime.ok is settled


def test_a_floor_keeps_a_loss_near_zero_settled_and_a_plateau_is_flat(tmp_path):
    """4e-7 -> 4e-9 is no movement at a floor of 1e-4; a plateau at 2e-3 is flat; both pass."""
    floor = lambda loss, metric: math.log10(max(loss, 1e-4))  # noqa: E731
    folder = _sweep(tmp_path / "sweep", {"escaped": lambda s: 4e-7 if s <= 80 else 4e-9, "plateau": lambda s: 2e-3})
    regime = cell_regime(folder, "quick", _arm, {"escaped": 0.1, "plateau": 0.1}, floor, "log10 loss")
    assert regime.ok, regime.failed()
    unfloored = cell_regime(folder, "quick", _arm, {"escaped": 0.1, "plateau": 0.1},
                            lambda loss, metric: math.log10(loss), "log10 loss")
    assert not unfloored.ok


def test_cells_outside_the_verdict_are_not_checked_and_every_check_says_what_it_measured(tmp_path):
    folder = _sweep(tmp_path / "sweep", {"a": lambda s: 1.0, "reported": lambda s: 3.0 - s / 50}, seeds=2)
    regime = cell_regime(folder, "quick", lambda c: None if _arm(c) == "reported" else _arm(c), {"a": 0.01}, _loss,
                         "bits per byte", min_seeds=3)
    assert [n for n in regime.failed()] == [">= 3 valid seeds in every compared cell: fewest 2 (a)"]
    assert any(n.startswith("compared cells settled") and "0 of 1 moved more" in n for n in regime.checks)


def test_a_run_without_evaluations_either_side_of_80_percent_fails_closed(tmp_path):
    folder = _sweep(tmp_path / "sweep", {"a": lambda s: 1.0})
    for path in (folder / "runs").glob("*/metrics.jsonl"):
        path.write_text(json.dumps({"step": 100, "eval_loss": 1.0, "eval_metric": 0.5}) + "\n")
    regime = cell_regime(folder, "quick", _arm, {"a": 0.1}, _loss, "bits per byte")
    assert not regime.ok and any("4 of 4 not" in n for n in regime.failed())


def _seeded_sweep(folder, changes: list[float], steps=100):
    """One arm ``a`` whose seed ``k`` moves by ``changes[k]`` over its last 20% of training."""
    folder.mkdir(parents=True)
    records = []
    for seed, change in enumerate(changes):
        config = {"task": {"name": "copy", "args": {"length": 8}}, "model": {"arm": "a"},
                  "train": {"lr": 0.01, "steps": steps, "batch_size": 4}, "seed": seed}
        rid = f"a-{seed}"
        records.append({"id": rid, "config": config, "status": "done", "params": 100,
                        "lengths": {"8": {"val_loss": 1 + change, "test_loss": 1 + change, "test_metric": 0.5}}})
        run = folder / "runs" / rid
        run.mkdir(parents=True)
        run.joinpath("metrics.jsonl").write_text("".join(
            json.dumps({"step": s, "eval_loss": 1.0 if s <= 80 else 1.0 + change, "eval_metric": 0.5}) + "\n"
            for s in range(10, steps + 1, 10)))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_a_cell_is_settled_only_when_the_interval_of_its_change_is_inside_the_tolerance(tmp_path):
    """Five seeds moving -0.050, +0.030, -0.045, +0.032, -0.020 (mean -0.0106, 95% interval [-0.060, +0.039])
    passed a tolerance of 0.014 on their mean (an audit, 2026-11-29): a point mean, where every other decision reads
    an interval. The interval must now lie inside; seeds that agree on a small change still pass."""
    wide = _seeded_sweep(tmp_path / "wide", [-0.050, 0.030, -0.045, 0.032, -0.020])
    regime = cell_regime(wide, "quick", _arm, {"a": 0.014}, _loss, "bits per byte")
    assert not regime.ok
    (failed,) = [name for name in regime.failed() if "settled" in name]
    assert "a: moved -0.0106 [-0.0598, +0.0386] bits per byte, tolerance 0.014" in failed, failed
    tight = _seeded_sweep(tmp_path / "tight", [-0.010, -0.011, -0.009, -0.010, -0.012])
    assert cell_regime(tight, "quick", _arm, {"a": 0.014}, _loss, "bits per byte").ok


def test_a_pass_fail_claim_counts_its_diverged_seeds_as_seeds(tmp_path):
    """Claims 6 and 7 count a seed that diverged as a failing seed; their regime check counts it too, so the two
    agree on a cell's seeds (2 finished + 2 diverged: 4, not 2). Other claims leave it out, as their rules do."""
    folder = _sweep(tmp_path / "sweep", {"a": lambda s: 1.0}, seeds=4)
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    for record in records[2:]:
        record["lengths"]["8"]["test_loss"] = "nan"   # the test pass diverged
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    counted = cell_regime(folder, "quick", _arm, {"a": 0.1}, _loss, "bits per byte", min_seeds=4, diverged_counts=True)
    left_out = cell_regime(folder, "quick", _arm, {"a": 0.1}, _loss, "bits per byte", min_seeds=4)
    assert counted.seeds == 4 and counted.ok
    assert left_out.seeds == 2 and not left_out.ok


def test_a_cell_no_comparison_reads_is_not_counted_as_a_settled_compared_cell(tmp_path):
    """A fresh audit (2026-11-29): a named cell without a tolerance was judged against infinity, so it counted as
    settled whatever it moved ("0 of 5 moved more" with wang-e-depth's middle models in the 5)."""
    flat = lambda s: 1.0  # noqa: E731
    folder = _sweep(tmp_path / "sweep", {"a": flat, "b": flat, "middle": lambda s: 2.0 - s / 100})
    regime = cell_regime(folder, "quick", _arm, {"a": 0.05, "b": 0.05}, _loss, "bits per byte")
    (settled,) = [name for name in regime.checks if "settled" in name]
    assert regime.ok and "0 of 2 moved more" in settled, regime.checks
    regime = cell_regime(folder, "quick", _arm, {"a": 0.05, "middle": 0.05}, _loss, "bits per byte")
    assert not regime.ok and "middle: moved" in " ".join(regime.failed())
