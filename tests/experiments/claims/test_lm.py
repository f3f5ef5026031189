"""The language-model claims at a tiny scale on a corpus slice: the sweeps they build, FLOPs and
parameter counts, and the table, figure and verdict plumbing (the verdicts themselves need the
real runs: ``expressivity reproduce yun-hybrids|wang-e-depth|wang-e-dp``)."""

import math

import pytest

from expressivity.experiments.claims import VERDICTS, ClaimContext, get_claim
from expressivity.experiments.claims import lm
from expressivity.training.budget import parameter_count

TINY = lm.Scale(steps=4, batch_size=4, length=12, d_model=16, lrs=(1e-2, 3e-2), seeds=(0, 1), eval_size=8,
                include="wsgiref/*")


def test_the_three_claims_are_registered_with_criteria():
    for name in ("yun-hybrids", "wang-e-depth", "wang-e-dp"):
        claim = get_claim(name)
        assert "disjoint" in claim.criterion and "validation" in claim.criterion and claim.full
        assert "Quick:" in claim.criterion and "Full:" in claim.criterion and "training FLOPs" in claim.criterion


def test_yun_sweep_replaces_the_first_layers_and_adds_bilinear():
    configs = lm.yun_configs(TINY, 3)
    stacks = list(dict.fromkeys(c.model.layer_mixers() for c in configs))
    assert stacks == [("attention",) * 3, ("sepconv", "attention", "attention"), ("sepconv", "sepconv", "attention"),
                      ("sepconv",) * 3, ("bilinear",) * 3]
    assert len(configs) == 5 * 2 * 2 and all(c.task.name == "lm-masked" and not c.model.causal for c in configs)
    assert {lm.yun_label(c.to_dict()) for c in configs} == {"k=0", "k=1", "k=2", "k=3", "bilinear"}
    # equal training compute: steps x FLOPs per token is the all-attention model's, to rounding
    budgets = {lm.yun_label(c.to_dict()): c.train.steps * lm.flops_per_token(c.model, 12) for c in configs}
    assert all(abs(b / budgets["k=0"] - 1) < 0.15 for b in budgets.values()), budgets  # 4 steps: coarse rounding
    steps = {lm.yun_label(c.to_dict()): c.train.steps for c in configs}
    assert steps["k=0"] == TINY.steps and steps["k=3"] >= steps["k=2"] >= steps["k=1"] >= steps["k=0"] and steps["k=3"] > steps["k=0"]
    assert len({(c.train.batch_size, c.task.args["length"]) for c in configs}) == 1


def test_equal_compute_at_the_quick_scale():
    """Each claim's configurations train with their reference model's FLOPs (within one step)."""
    yun_scale, L = lm.YUN_SCALES[True]
    dp_scale, depths = lm.DP_SCALES[True]
    depth_scale, budgets = lm.DEPTH_SCALES[True]
    for configs, scale, reference in (
            (lm.yun_configs(yun_scale, L), yun_scale, lambda c: "k=0"),
            (lm.dp_configs(dp_scale, depths), dp_scale, lambda c: f"attention,L={c.model.layers}")):
        label = lm.yun_label if scale is yun_scale else lm.dp_label
        flops = {label(c.to_dict()): (c.train.steps, lm.flops_per_token(c.model, scale.length)) for c in configs}
        for c in configs:
            steps, fpt = flops[label(c.to_dict())]
            ref_steps, ref_fpt = flops[reference(c)]
            assert ref_steps == scale.steps and abs(steps * fpt - ref_steps * ref_fpt) <= fpt, (label(c.to_dict()), steps)
            assert c.train.eval_every == c.train.steps  # evaluated at the end of its own budget
    pairs = lm.depth_pairs(depth_scale, budgets)
    by_shape = {(c.model.layers, c.model.heads): c for c in lm.depth_configs(depth_scale, budgets)}
    for members in pairs.values():
        ref = by_shape[members[0]]
        assert ref.train.steps == depth_scale.steps
        for shape in members:
            c = by_shape[shape]
            assert abs(c.train.steps * lm.flops_per_token(c.model, 64) - ref.train.steps * lm.flops_per_token(ref.model, 64)) \
                <= lm.flops_per_token(c.model, 64)


def test_depth_pairs_match_parameters_within_ten_percent():
    scale = lm.DEPTH_SCALES[True][0]
    pairs = lm.depth_pairs(scale, (2, 4))
    assert pairs[2][0] == (2, 2) and pairs[4][0] == (4, 2) and [L for L, _ in pairs[4]] == [4, 2, 1]
    for members in pairs.values():
        counts = [lm.non_embedding_params(lm.depth_config(scale, L, H).model)
                  for L, H in members]
        assert max(counts) / min(counts) < 1.1, (members, counts)
        heads = [H for _, H in members]
        assert heads == sorted(heads)  # fewer layers, more heads


def test_flops_and_parameters_by_hand():
    from expressivity.training import RunConfig

    cfg = RunConfig.for_task("lm-causal", {"length": 12, "include": "wsgiref/*"}, model={
        "layers": 1, "heads": 2, "d_model": 8, "ffn_width": 16, "rpe": "none", "norm": "none"}).model
    # attention: 2*8*(3*8) + 2*8*8 + 4*8*6.5 ; ffn 4*8*16 ; readout 2*8*256
    assert lm.flops_per_token(cfg, 12) == 384 + 128 + 208 + 512 + 4096
    assert lm.non_embedding_params(cfg) == parameter_count(cfg) - 256 * 8 - (8 * 256 + 256)
    conv = cfg.__class__(**{**cfg.to_dict(), "mixer": "sepconv", "conv_kernel": 3})
    assert lm.flops_per_token(conv, 12) == 2 * 3 * 8 + 2 * 64 + 512 + 4096


@pytest.mark.parametrize("name,extra", [("yun", {"layers": 2}), ("depth", {"budgets": (2,)}), ("dp", {"depths": (1,)})])
def test_each_claim_runs_tiny_and_writes_its_table_and_figure(name, extra, tmp_path):
    run = {"yun": lm.yun_hybrids, "depth": lm.wang_e_depth, "dp": lm.wang_e_dp}[name]
    result = run(ClaimContext(tmp_path, True, workers=1), TINY, **extra)
    assert result.verdict in VERDICTS and result.reason
    assert result.figure.stat().st_size > 1000
    for row in result.rows:
        assert row["seeds"] == 2 and row["failed"] == 0 and math.isfinite(row["test_bits_per_byte"])
        assert row["ci_low"] <= row["test_bits_per_byte"] <= row["ci_high"]
        assert row["params"] > row["non_embedding_params"] > 0 and row["fwd_flops_per_token"] > 0
        assert row["train_flops"] == 3 * row["fwd_flops_per_token"] * row["train_bytes"]
        assert row["train_bytes"] == row["steps"] * TINY.batch_size * TINY.length
        assert set(row["selected_lrs"].split()) <= {"0.01", "0.03"}
        # TINY's grid has two learning rates, so every selection is on an edge and warned about
        assert row["lr_at_grid_edge"] == row["seeds"] and row["lr_grid"] == "0.01 0.03"
        assert f"warning: {row['config']}: selected learning rate at the grid edge for 2 of 2 seeds" in result.notes
    assert result.numbers["lr_at_grid_edge"] == {row["config"]: [2, 2] for row in result.rows}
    corpus = result.numbers["corpus"]
    assert corpus["include"] == "wsgiref/*" and corpus["python"] and corpus["bytes"] > 0
    assert set(result.numbers["parts"].values()) <= set(VERDICTS)


def test_one_seed_is_never_decisive():
    low = lm._interval([1.0])
    assert low[1] == -math.inf and low[2] == math.inf
    assert lm._combine({"a": "reproduced", "b": "reproduced"}) == "reproduced"
    assert lm._combine({"a": "reproduced", "b": "refuted"}) == "refuted"
    assert lm._combine({"a": "reproduced", "b": "not reproduced"}) == "not reproduced"


def _ci(mean, half=0.01):
    return (mean, mean - half, mean + half)


def test_yun_verdict_follows_the_criterion():
    # the paper's shape: k = 1 or 2 best, more convolutions worse, conv only and bilinear only worse than attention
    paper = {0: _ci(2.0), 1: _ci(1.9), 2: _ci(1.95), 3: _ci(2.1)}
    verdict, parts, best = lm.yun_verdict(paper, _ci(2.3))
    assert verdict == "reproduced" and best == 1 and set(parts.values()) == {"reproduced"}
    # hybrids help but convolution only is best: not reproduced (more does not hurt)
    verdict, parts, best = lm.yun_verdict({0: _ci(2.0), 1: _ci(1.9), 2: _ci(1.8), 3: _ci(1.7)}, _ci(2.3))
    assert verdict == "not reproduced" and best == 2 and parts["more_hurts"] == "refuted"
    # all attention below both hybrids with disjoint intervals: refuted
    verdict, parts, _ = lm.yun_verdict({0: _ci(1.8), 1: _ci(1.9), 2: _ci(1.95), 3: _ci(2.1)}, _ci(2.3))
    assert verdict == "refuted" and parts["hybrid_improves"] == "refuted"
    # overlapping intervals decide nothing
    verdict, parts, _ = lm.yun_verdict({j: _ci(2.0 + 0.001 * j, 0.1) for j in range(4)}, _ci(2.0, 0.1))
    assert verdict == "not reproduced" and set(parts.values()) == {"not reproduced"}


def test_the_cli_lists_the_three_and_takes_threads():
    import json

    from click.testing import CliRunner

    from expressivity.cli.main import cli

    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["reproduce", "--list", "--json"]).stdout)
    names = {c["name"]: c["criterion"] for c in listed["claims"]}
    assert {"yun-hybrids", "wang-e-depth", "wang-e-dp"} <= set(names)
    res = runner.invoke(cli, ["reproduce", "wang-e-dp", "--quick", "--threads", "0"])
    assert res.exit_code == 2 and "--threads" in res.stderr


def _summary(lrs):
    from expressivity.training import RunConfig

    config = RunConfig.for_task("lm-causal", {"length": 12, "include": "wsgiref/*"}, model={
        "layers": 1, "heads": 2, "d_model": 8, "ffn_width": 16}, train={"steps": 3})
    return lm.Summary(lm._interval([2.0, 2.1, 2.2][:len(lrs)]), 2.0, 0.3, len(lrs), 0, sorted(lrs), config)


def test_a_selection_at_the_edge_of_the_grid_is_counted_and_warned_about():
    scale = lm.tiny(TINY, lrs=(3e-3, 1e-2, 3e-2, 1e-1), seeds=(0, 1, 2))
    interior = lm._row("interior", _summary([1e-2, 3e-2, 1e-2]), scale)
    low = lm._row("low edge", _summary([3e-3, 1e-2, 3e-2]), scale)
    both = lm._row("both edges", _summary([0.1, 0.003, 0.1]), scale)
    assert (interior["lr_at_grid_edge"], low["lr_at_grid_edge"], both["lr_at_grid_edge"]) == (0, 1, 3)
    assert interior["lr_grid"] == "0.003 0.01 0.03 0.1"
    assert lm.edge_warnings([interior]) == [] and lm._notes("base", [interior]) == "base"
    notes = lm._notes("base", [interior, low, both]).splitlines()
    assert notes == ["base",
                     "warning: low edge: selected learning rate at the grid edge for 1 of 3 seeds: the grid may not "
                     "bracket the optimum",
                     "warning: both edges: selected learning rate at the grid edge for 3 of 3 seeds: the grid may not "
                     "bracket the optimum"]


def test_the_quick_runs_share_one_grid_of_at_least_three_learning_rates_and_three_seeds():
    scales = [lm.YUN_SCALES[True][0], lm.DEPTH_SCALES[True][0], lm.DP_SCALES[True][0]]
    assert len({s.lrs for s in scales}) == 1 and len(scales[0].lrs) >= 3
    assert all(len(s.seeds) >= 3 for s in scales)
