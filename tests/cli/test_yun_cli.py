import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli


def run(*args):
    res = CliRunner().invoke(cli, ["yun", *args])
    return res


def test_contextual_json_spec_vector():
    res = run("contextual", "--n", "3", "--d", "1", "--delta", "1/3", "--input", "0;1/3;2/3", "--json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["values"] == [1190, "3580/3", "3608/3"]


def test_contextual_d2_positional():
    res = run("contextual", "--n", "2", "--d", "2", "--delta", "1/2", "--positional", "--input", "0,1/2;1/2,0.25", "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and len(out["values"]) == 2 and all(out["in_range"])


def test_verify_json_keys():
    res = run("verify", "--n", "3", "--d", "2", "--delta", "1/2", "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0
    assert {"failures", "grid_points", "classes", "min_gap", "t_l", "t_r", "seconds", "arithmetic"} <= set(out)
    assert out["failures"] == 0 and out["grid_points"] == 729


def test_verify_set_a_exit_1():
    res = run("verify", "--n", "2", "--d", "1", "--delta", "1/2", "--constants", "A", "--json")
    assert res.exit_code == 1 and json.loads(res.stdout)["failures_by_property"]["P4"] > 0


def test_build_json_and_outputs(tmp_path):
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,1/4", "--samples", "300",
              "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert isinstance(out, list) and len(out) == 2
    for r in out:
        assert {"dp_error", "dp_ci", "params", "lower_bound", "layers", "lambda", "epsilon"} <= set(r)
        assert r["contextual"]["failures"] == 0 and r["value_check"]["failures"] == 0
    for name in ("run.json", "dp_vs_delta.png", "delta_1_2/contextual_values.png",
                 "delta_1_4/modified/network.json", "delta_1_4/softened/weights.safetensors"):
        assert (tmp_path / name).exists(), name
    assert json.loads((tmp_path / "run.json").read_text())["command"] == "yun build"


@pytest.mark.parametrize("args,msg", [
    (["verify", "--n", "2", "--d", "1", "--delta", "0.5"], "1/K"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;1;2"], "tokens"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;x"], "not a number"),
    (["verify", "--n", "1", "--d", "1", "--delta", "1/2"], "n >= 2"),
    (["build", "--target", "prefix-mean", "--n", "2", "--d", "1", "--delta", "1/2"], "--positional"),
    (["build", "--target", "nope", "--n", "2", "--d", "1", "--delta", "1/2"], "unknown target"),
    (["build", "--target", "mean-shift", "--n", "3", "--d", "3", "--delta", "1/8"], "parameters"),
    (["build", "--target", "mean-shift", "--n", "2", "--d", "2", "--delta", "1/8", "--budget", "100000000"], "float64"),
])
def test_bad_input_exit_2_one_line(args, msg):
    res = run(*args)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and msg in lines[0]


def test_bad_input_subprocess_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "yun", "verify", "--n", "2", "--d", "1",
                           "--delta", "1/2x"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.startswith("error:")
