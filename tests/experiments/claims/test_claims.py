"""The reproduce harness (criterion first, the verdict contract with its regime check, table, figure,
verdict) and the Wang & E claims' verdict logic."""

import json
import math

import pytest
from click.testing import CliRunner

from expressivity.errors import ExpressivityError
from expressivity.experiments.claims import (CLAIMS, Claim, ClaimResult, Regime, Verdict, apply_regime, get_claim,
                                             register, reproduce, summary)
from expressivity.experiments.claims.kit import combine, compare, compare_paired, still_falling
from expressivity.experiments.claims.wang_e import (_threshold, capacity_bound, depth_verdict, growth_bic,
                                                    growth_verdict, role_verdict, scan_verdict, separation_verdict,
                                                    trainability_verdict)
from expressivity.statistics import Interval, interval


def _register(run, name="test-claim", **kw):
    register(Claim(name, "a test", "nowhere", "x must be 2", run, paper_claim="x is 2", tag="[D]", **kw))


def test_the_criterion_is_written_before_the_claim_runs_and_the_contract_is_recorded(tmp_path):
    seen = {}

    def run(ctx):
        seen["criterion"] = (ctx.out / "criterion.md").read_text()
        return ClaimResult("not reproduced", "because", [{"x": 1.0}], None, {"n": 1}, regime=Regime(ctx.scale, {"ok": True}))

    _register(run)
    try:
        result = reproduce("test-claim", tmp_path / "out", "medium")
    finally:
        del CLAIMS["test-claim"]
    assert "x must be 2" in seen["criterion"] and "Scale: medium" in seen["criterion"] and "[D]: x is 2" in seen["criterion"]
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["verdict"] == result.verdict == "not reproduced" and verdict["criterion"] == "x must be 2"
    assert verdict["tag"] == "[D]" and verdict["scale"] == "medium" and verdict["regime"]["ok"] is True
    assert (tmp_path / "out" / "results.csv").read_text().splitlines() == ["x", "1.0"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["verdict"] == "not reproduced"
    rows = summary([tmp_path])
    assert [(r["claim"], r["scale"], r["verdict"]) for r in rows] == [("test-claim", "medium", "not reproduced")]


def test_a_run_out_of_regime_can_only_be_undecided(tmp_path):
    def run(ctx):
        return ClaimResult("refuted", "B beat A", [], None, regime=Regime(ctx.scale, {">= 1 epoch": False, "flat": True}))

    _register(run)
    try:
        result = reproduce("test-claim", tmp_path / "out", "quick")
        with pytest.raises(ExpressivityError, match="holds a quick run"):
            reproduce("test-claim", tmp_path / "out", "full")  # resuming would mix scales
    finally:
        del CLAIMS["test-claim"]
    assert result.verdict == "undecided" and result.reason.startswith("out of regime: >= 1 epoch")
    assert result.numbers["verdict_if_in_regime"] == {"verdict": "refuted", "reason": "B beat A"}
    # a result that records no regime at all is out of regime too
    bare = apply_regime(ClaimResult("reproduced", "x", [], None), "quick")
    assert bare.verdict == "undecided" and not bare.regime.ok
    both = apply_regime(ClaimResult("undecided", "underpowered: 1 seed", [], None, regime=Regime("quick", {"flat": False})), "quick")
    assert both.reason.startswith("out of regime: flat; and underpowered")


def test_the_verdict_vocabulary_is_fixed():
    with pytest.raises(ValueError):
        ClaimResult("probably", "", [], None)
    with pytest.raises(ValueError):
        Verdict("undecided", "no reason given")  # an undecided verdict names its reason first
    assert Verdict("undecided", "underpowered: 1 seed").word == "undecided"
    with pytest.raises(ExpressivityError, match="unknown claim"):
        get_claim("wang-e-99")
    with pytest.raises(ValueError):
        register(Claim("bad-tag", "t", "s", "c", lambda ctx: None, tag="[X]"))


def test_comparisons_need_intervals_and_pair_over_seeds():
    one, a, b = interval([1.0]), Interval(1, 0.5, 2, 5), Interval(5, 3, 8, 5)
    assert compare(a, b, "x").word == "reproduced" and compare(b, a, "x").word == "refuted"
    assert compare(one, b, "x").word == "undecided" and compare(Interval(1, 0.5, 4, 5), b, "x").word == "undecided"
    assert compare(interval([]), b, "x").reason.startswith("underpowered")  # a zero-seed group does not crash
    assert compare_paired(Interval(-0.2, -0.3, -0.1, 5), "d").word == "reproduced"
    assert compare_paired(Interval(0.2, 0.1, 0.3, 5), "d").word == "refuted"
    assert compare_paired(Interval(0.0, -0.1, 0.1, 5), "d").word == "undecided"
    words = lambda *w: {str(k): Verdict(v, "underpowered: x" if v == "undecided" else "x") for k, v in enumerate(w)}  # noqa: E731
    assert combine(words("reproduced", "reproduced")).word == "reproduced"
    assert combine(words("reproduced", "refuted", "undecided")).word == "refuted"
    assert combine(words("reproduced", "not reproduced", "undecided")).word == "not reproduced"
    assert combine(words("reproduced", "undecided")).word == "undecided"


def test_still_falling_reads_the_last_fifth():
    flat = [(10 * k, 1.0 - 0.1 * min(k, 5)) for k in range(1, 11)]
    falling = [(10 * k, 1.0 / k) for k in range(1, 11)]
    assert still_falling(flat, 100) is False and still_falling(falling, 100) is True
    assert still_falling([(100, 1.0)], 100) is None  # nothing before 80%: cannot tell


def test_thresholds_and_the_growth_models():
    assert _threshold([1.0, 0.1, 0.001], [10, 100, 1000], 0.01) == pytest.approx(316.2, rel=1e-3)
    assert _threshold([1.0, 0.5], [10, 100], 0.01) is None
    lags = (4, 8, 12, 16, 24, 32)
    exponential = [50 * math.exp(0.2 * T) for T in lags]
    power = [30 * T ** 1.2 for T in lags]
    assert growth_bic(lags, exponential)["delta_bic"] < -2 and growth_bic(lags, power)["delta_bic"] > 2
    assert growth_verdict("lin", growth_bic(lags, exponential)).word == "reproduced"
    assert growth_verdict("log", growth_bic(lags, power)).word == "reproduced"
    # the lin and log formulas swapped: the criterion must fail (the old slope test passed this)
    assert growth_verdict("lin", growth_bic(lags, power)).word == "refuted"
    assert growth_verdict("log", growth_bic(lags, exponential)).word == "refuted"
    assert growth_verdict("lin", growth_bic(lags[:2], exponential[:2])).word == "undecided"
    assert separation_verdict(lags, exponential, power, 8192).word == "reproduced"
    assert separation_verdict(lags, power, exponential, 8192).word == "refuted"
    assert separation_verdict(lags, exponential[:-1] + [None], power, 8192).word == "reproduced"  # lin beyond H_max
    assert separation_verdict(lags, [1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7], 8192).word == "not reproduced"


@pytest.mark.parametrize("name", ["wang-e-2", "wang-e-8"])
def test_numeric_claims_reproduce_quickly(name, tmp_path):
    from expressivity.cli.main import cli

    result = CliRunner().invoke(cli, ["reproduce", name, "--quick", "--out", str(tmp_path / name), "--json"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["verdict"] == "reproduced", obj["reason"]
    assert obj["scale"] == "quick" and obj["regime"]["ok"] and obj["tag"] == "[V]"
    assert (tmp_path / name / "figure.png").stat().st_size > 1000 and obj["rows"]
    listed = CliRunner().invoke(cli, ["reproduce", "--summary", str(tmp_path), "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout)["verdicts"][0]["verdict"] == "reproduced"


def test_reproduce_cli_lists_and_refuses(tmp_path):
    from expressivity.cli.main import cli

    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["reproduce", "--list", "--json"]).stdout)
    assert {f"wang-e-{k}" for k in range(1, 9)} <= {c["name"] for c in listed["claims"]}
    assert all(c["tag"] in ("[V]", "[R]", "[D]") and c["paper_claim"] and c["medium"] for c in listed["claims"])
    (tmp_path / "empty").mkdir()
    for args, needle in ((["reproduce", "nope"], "unknown claim"), (["reproduce"], "give a claim name"),
                         (["reproduce", "wang-e-4", "--ray-address", "auto"], "--backend ray"),
                         (["reproduce", "wang-e-2", "--workers", "2"], "numerics, not training"),
                         (["reproduce", "wang-e-2", "--out", ""], "current folder"),
                         (["reproduce", "wang-e-2", "--quick", "--scale", "medium"], "contradicts --scale medium"),
                         (["reproduce", "wang-e-2", "--scale", "huge"], "huge"),
                         (["reproduce", "wang-e-2", "wang-e-8"], "give one claim name"),
                         (["reproduce", "--summary"], "--summary needs folders"),
                         (["reproduce", "--summary", str(tmp_path / "nope")], "is not one"),
                         (["reproduce", "--summary", str(tmp_path / "empty")], "no verdict.json"),
                         (["reproduce", "--summary", str(tmp_path), "--quick"], "takes no other option")):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2 and needle in res.stderr, (args, res.stderr)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "verdict.json").write_text("{not json")
    res = runner.invoke(cli, ["reproduce", "--summary", str(tmp_path / "bad")])
    assert res.exit_code == 2 and res.stderr.startswith("error:") and "not a readable verdict" in res.stderr


# ---- the trained claims: verdict logic on synthetic tables, and each run end to end at toy size ------


def _cell(value, spread=0.1):
    return Interval(value, value * (1 - spread), value * (1 + spread), 5)


def test_role_verdict_reads_which_axis_matters():
    widths, heads = [4, 64], [2, 8]
    key = lambda m, h: (m, h)  # noqa: E731
    falls_with_m = {(4, 2): _cell(0.5), (4, 8): _cell(0.48), (64, 2): _cell(0.1), (64, 8): _cell(0.1)}
    assert role_verdict(falls_with_m, widths, heads, key)[0] == "reproduced"
    falls_with_h = {(4, 2): _cell(0.5), (4, 8): _cell(0.1), (64, 2): _cell(0.48), (64, 8): _cell(0.1)}
    assert role_verdict(falls_with_h, widths, heads, key)[0] == "refuted"
    both = {(4, 2): _cell(0.5), (4, 8): _cell(0.2), (64, 2): _cell(0.2), (64, 8): _cell(0.08)}
    assert role_verdict(both, widths, heads, key)[0] == "not reproduced"
    wide = {k: Interval(v.value, 0.01, 0.9, 5) for k, v in falls_with_m.items()}
    verdict, numbers = role_verdict(wide, widths, heads, key)
    assert verdict == "undecided" and not numbers["falls_along_matters"]
    one_seed = {k: Interval(v.value, -math.inf, math.inf, 1) for k, v in falls_with_m.items()}
    assert role_verdict(one_seed, widths, heads, key)[0] == "undecided"  # one seed never decides


def test_pointer_scan_and_depth_verdicts():
    assert capacity_bound(layers=2, heads=2, d_model=16, d_head=8) == 18
    ok, bad, mid = Interval(0.99, 0.98, 1.0, 5), Interval(0.4, 0.35, 0.45, 5), Interval(0.8, 0.6, 1.0, 5)
    gap = Interval(0.5, 0.4, 0.6, 5)
    assert scan_verdict({8: (ok, ok, Interval(0, -0.1, 0.1, 5)), 32: (ok, bad, gap)}, 18).word == "reproduced"
    assert scan_verdict({8: (ok, ok, gap), 32: (ok, ok, gap)}, 18).word == "refuted"
    assert scan_verdict({32: (bad, bad, Interval(0, -0.1, 0.1, 5))}, 18).word == "undecided"  # DP did not learn it
    assert scan_verdict({8: (ok, ok, gap)}, 18).word == "undecided"  # nothing scanned above the bound
    assert scan_verdict({32: (ok, mid, gap)}, 18).word == "not reproduced"
    claimed = {(1, 1): bad, (1, 2): ok, (1, 3): ok, (2, 1): bad, (2, 2): bad, (2, 3): ok}
    assert depth_verdict(claimed).word == "reproduced"
    assert depth_verdict({**claimed, (2, 2): ok}).word == "refuted"
    assert depth_verdict({**claimed, (2, 3): bad}).word == "not reproduced"
    assert depth_verdict({**claimed, (2, 3): mid}).word == "undecided"
    assert depth_verdict({**claimed, (2, 3): interval([0.99])}).word == "undecided"


def test_trainability_is_a_success_rate_with_an_exact_test():
    verdict, stats = trainability_verdict((24, 24), (4, 24))
    assert verdict.word == "refuted" and stats["fisher_p"] < 1e-6
    assert trainability_verdict((24, 24), (23, 24))[0].word == "reproduced"
    # the old defect: 4 of 5 seeds gave a t interval [0.245, 1.355] on a pass/fail outcome
    verdict, stats = trainability_verdict((5, 5), (4, 5))
    assert verdict.word == "undecided" and 0 < stats["rate_b"].low < 0.3 and stats["rate_b"].high <= 1


TOY = {"steps": 20, "seeds": (0, 1), "lrs": (1e-2,)}


@pytest.mark.parametrize("name,sizes", [
    ("wang-e-3", {"horizons": (8, 16)}),
    ("wang-e-4", {"widths": (4, 8), "heads": (2,)}),
    ("wang-e-5", {"widths": (4, 8), "heads": (1, 2), "rpes": ("lin",)}),
    ("wang-e-6", {"heads": 2, "widths": 8}),
    ("wang-e-7", {"layers": (1,), "ranges": (4,), "scan_model": {"d_model": 8, "ffn_width": 8}}),
])
def test_trained_claims_run_end_to_end_at_toy_size(name, sizes, tmp_path):
    """Toy sizes (20 steps, 2 seeds) check the plumbing, not the claim: files and a valid verdict."""
    from expressivity.experiments.claims import VERDICTS

    out = tmp_path / name
    result = reproduce(name, out, "quick", overrides={**TOY, **sizes}, workers=1)
    assert result.verdict in VERDICTS and result.rows
    for f in ("criterion.md", "results.csv", "results.json", "figure.png", "verdict.json", "run.json"):
        assert (out / f).exists(), f
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == result.verdict and verdict["criterion"] == get_claim(name).criterion
    assert json.loads((out / "run.json").read_text())["config"]["overrides"]["steps"] == 20
    assert verdict["regime"]["checks"] and verdict["scale"] == "quick"
    assert all(row["seeds"] == 2 for row in result.rows if "seeds" in row)


def test_seed_values_select_the_learning_rate_on_validation_never_on_test(tmp_path):
    """For every seed, lr 0.1 has the lower test loss but lr 0.01 the lower validation loss: the
    value reported must be lr 0.01's test number."""
    from expressivity.experiments.claims.kit import seed_values, selected_lrs

    folder = tmp_path / "sweep"
    folder.mkdir()
    records = []
    for seed in (0, 1):
        for lr, val, test in ((0.01, 1.0, 3.0), (0.1, 2.0, 0.5)):
            config = {"task": {"name": "copy", "args": {"length": 8}}, "model": {"heads": 2}, "train": {"lr": lr},
                      "seed": seed}
            records.append({"id": f"{seed}-{lr}", "config": config, "status": "done",
                            "lengths": {"8": {"val_loss": val, "test_loss": test, "test_metric": 0.0}}})
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    values, failed = seed_values(folder, lambda c: "cell", lambda row: row["test_loss"])
    assert values == {"cell": {0: 3.0, 1: 3.0}} and failed == {"cell": 0}
    assert selected_lrs(folder, lambda c: "cell") == {"cell": {0: 0.01, 1: 0.01}}


def test_a_run_recorded_as_failed_by_an_error_is_trained_again_only_with_retry_failed(tmp_path):
    """A worker that died (here: a record rewritten as failed) leaves its runs failed on a plain
    resume; ``retry_failed=True`` (``reproduce --retry-failed``) trains them again."""
    from expressivity.experiments.store import read_records

    out = tmp_path / "wang-e-4"
    sizes = {**TOY, "widths": (4,), "heads": (2,)}
    reproduce("wang-e-4", out, "quick", overrides=sizes, workers=1)
    records_path = out / "sweep" / "records.jsonl"
    lines = records_path.read_text().splitlines()
    victim = json.loads(lines[0])
    lines[0] = json.dumps({**victim, "status": "failed", "reason": "worker: the worker process died (exit code 1)"})
    records_path.write_text("\n".join(lines) + "\n")

    plain = reproduce("wang-e-4", out, "quick", overrides=sizes, workers=1)
    assert sum(row.get("failed", 0) for row in plain.rows) == 1
    assert {r["id"]: r["status"] for r in read_records(out / "sweep")}[victim["id"]] == "failed"

    retried = reproduce("wang-e-4", out, "quick", overrides=sizes, workers=1, retry_failed=True)
    assert sum(row.get("failed", 0) for row in retried.rows) == 0
    assert {r["id"]: r["status"] for r in read_records(out / "sweep")}[victim["id"]] == "done"
    assert json.loads((out / "run.json").read_text())["config"]["retry_failed"] is True
