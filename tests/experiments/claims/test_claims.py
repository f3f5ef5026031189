"""The reproduce harness (criterion first, table, figure, verdict) and the numeric Wang & E claims."""

import json

import pytest
from click.testing import CliRunner

from expressivity.errors import ExpressivityError
from expressivity.experiments.claims import CLAIMS, Claim, ClaimResult, compare, get_claim, register, reproduce
from expressivity.experiments.claims.wang_e import _threshold


def test_the_criterion_is_written_before_the_claim_runs(tmp_path):
    seen = {}

    def run(ctx):
        seen["criterion"] = (ctx.out / "criterion.md").read_text()
        return ClaimResult("not reproduced", "because", [{"x": 1.0}], None, {"n": 1})

    register(Claim("test-claim", "a test", "nowhere", "x must be 2", run))
    try:
        result = reproduce("test-claim", tmp_path / "out", quick=True)
    finally:
        del CLAIMS["test-claim"]
    assert "x must be 2" in seen["criterion"] and "Mode: quick" in seen["criterion"]
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["verdict"] == result.verdict == "not reproduced" and verdict["criterion"] == "x must be 2"
    assert (tmp_path / "out" / "results.csv").read_text().splitlines() == ["x", "1.0"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["verdict"] == "not reproduced"


def test_compare_and_thresholds():
    assert compare((1, 0.5, 2), (5, 3, 8)) == "reproduced"
    assert compare((5, 3, 8), (1, 0.5, 2)) == "refuted"
    assert compare((1, 0.5, 4), (5, 3, 8)) == "not reproduced"
    assert _threshold([1.0, 0.1, 0.001], [10, 100, 1000], 0.01) == pytest.approx(316.2, rel=1e-3)
    assert _threshold([1.0, 0.5], [10, 100], 0.01) is None
    with pytest.raises(ExpressivityError, match="unknown claim"):
        get_claim("wang-e-99")
    with pytest.raises(ValueError):
        ClaimResult("probably", "", [], None)


@pytest.mark.parametrize("name", ["wang-e-2", "wang-e-8"])
def test_numeric_claims_reproduce_quickly(name, tmp_path):
    from expressivity.cli.main import cli

    result = CliRunner().invoke(cli, ["reproduce", name, "--quick", "--out", str(tmp_path / name), "--json"])
    assert result.exit_code == 0, result.stderr
    obj = json.loads(result.stdout)
    assert obj["verdict"] == "reproduced", obj["reason"]
    assert (tmp_path / name / "figure.png").stat().st_size > 1000 and obj["rows"]


def test_reproduce_cli_lists_and_refuses():
    from expressivity.cli.main import cli

    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, ["reproduce", "--list", "--json"]).stdout)
    assert {f"wang-e-{k}" for k in range(1, 9)} <= {c["name"] for c in listed["claims"]}
    for args, needle in ((["reproduce", "nope"], "unknown claim"), (["reproduce"], "give a claim name"),
                         (["reproduce", "wang-e-4", "--ray-address", "auto"], "--backend ray"),
                         (["reproduce", "wang-e-2", "--workers", "2"], "numerics, not training"),
                         (["reproduce", "wang-e-2", "--out", ""], "current folder")):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2 and needle in res.stderr, res.stderr


# ---- the trained claims 4-7: verdict logic on synthetic tables, and each run end to end at toy size ------


def _cell(value, spread=0.1):
    return (value, value * (1 - spread), value * (1 + spread), 5)


def test_role_verdict_reads_which_axis_matters():
    from expressivity.experiments.claims.wang_e import role_verdict

    widths, heads = [4, 64], [2, 8]
    key = lambda m, h: (m, h)  # noqa: E731
    falls_with_m = {(4, 2): _cell(0.5), (4, 8): _cell(0.48), (64, 2): _cell(0.1), (64, 8): _cell(0.1)}
    assert role_verdict(falls_with_m, widths, heads, key)[0] == "reproduced"
    # the mirror image: heads matter, width does not
    falls_with_h = {(4, 2): _cell(0.5), (4, 8): _cell(0.1), (64, 2): _cell(0.48), (64, 8): _cell(0.1)}
    assert role_verdict(falls_with_h, widths, heads, key)[0] == "refuted"
    # both matter as much: neither pattern
    both = {(4, 2): _cell(0.5), (4, 8): _cell(0.2), (64, 2): _cell(0.2), (64, 8): _cell(0.08)}
    assert role_verdict(both, widths, heads, key)[0] == "not reproduced"
    # falls with m but the intervals overlap at one H
    wide = dict(falls_with_m)
    wide[4, 8] = (0.48, 0.05, 0.9, 5)
    verdict, numbers = role_verdict(wide, widths, heads, key)
    assert verdict == "not reproduced" and not numbers["falls_along_matters"]


def test_dp_and_depth_verdicts():
    from expressivity.experiments.claims.wang_e import depth_verdict, dp_needed_verdict, dp_unneeded_verdict

    ok, bad, mid = (0.99, 0.98, 1.0), (0.4, 0.35, 0.45), (0.8, 0.6, 1.0)
    assert dp_unneeded_verdict(dp=ok, free=(0.97, 0.95, 0.99)) == "reproduced"
    assert dp_unneeded_verdict(dp=ok, free=bad) == "refuted"
    assert dp_unneeded_verdict(dp=ok, free=mid) == "not reproduced"
    assert dp_unneeded_verdict(dp=mid, free=ok) == "reproduced"
    assert dp_needed_verdict(ok, [bad, bad]) == "reproduced"
    assert dp_needed_verdict(ok, [bad, ok]) == "refuted"
    assert dp_needed_verdict(ok, [bad, mid]) == "not reproduced"
    assert dp_needed_verdict(bad, [bad]) == "not reproduced"
    claimed = {(1, 1): bad, (1, 2): ok, (1, 3): ok, (2, 1): bad, (2, 2): bad, (2, 3): ok}
    assert depth_verdict(claimed) == "reproduced"
    assert depth_verdict({**claimed, (2, 2): ok}) == "refuted"          # depth = nesting suffices
    assert depth_verdict({**claimed, (2, 3): bad}) == "not reproduced"  # the deepest model fails too
    assert depth_verdict({**claimed, (2, 3): mid}) == "not reproduced"


TOY = {"steps": 20, "seeds": (0, 1), "lrs": (1e-2,)}


@pytest.mark.parametrize("name,sizes", [
    ("wang-e-4", {"widths": (4, 8), "heads": (2,)}),
    ("wang-e-5", {"widths": (4, 8), "heads": (1, 2)}),
    ("wang-e-6", {"heads": (2,), "widths": (8,)}),
    ("wang-e-7", {"layers": (1,), "dpfree_layers": (1,)}),
])
def test_trained_claims_run_end_to_end_at_toy_size(name, sizes, tmp_path):
    """Toy sizes (20 steps, 2 seeds) check the plumbing, not the claim: files and a valid verdict."""
    from expressivity.experiments.claims import VERDICTS

    out = tmp_path / name
    result = reproduce(name, out, quick=True, overrides={**TOY, **sizes}, workers=1)
    assert result.verdict in VERDICTS and result.rows
    for f in ("criterion.md", "results.csv", "results.json", "figure.png", "verdict.json", "run.json"):
        assert (out / f).exists(), f
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == result.verdict and verdict["criterion"] == get_claim(name).criterion
    assert json.loads((out / "run.json").read_text())["config"]["overrides"]["steps"] == 20
    assert all(row["seeds"] == 2 for row in result.rows)
