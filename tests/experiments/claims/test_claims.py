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
    assert {f"wang-e-{k}" for k in (1, 2, 3, 8)} <= {c["name"] for c in listed["claims"]}
    for args, needle in ((["reproduce", "nope"], "unknown claim"), (["reproduce"], "give a claim name"),
                         (["reproduce", "wang-e-2", "--ray-address", "auto"], "--backend ray"),
                         (["reproduce", "wang-e-2", "--out", ""], "current folder")):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2 and needle in res.stderr, res.stderr
