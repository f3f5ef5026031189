"""Valid lengths on the command line: ``run``, ``show`` and ``export --n-ctx`` refuse lengths outside a network's
claim unless ``--allow-length``, then mark the output; the issue's shift-circuit cases, each failing before."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def _one_line(code, err, needle):
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    assert needle in err, err


@pytest.fixture(scope="module")
def shift(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lengths")
    for name, extra in (("shift", []), ("hard", ["--scale", "inf"])):
        code, _, err = run("circuit", "shift", "--length", "8", *extra, "--out", root / name)
        assert code == 0, err
    return root / "shift"


NINE = "1,2,3,4,5,6,7,8,9"


@pytest.mark.parametrize("folder, extra", [("shift", []), ("hard", ["--dtype", "exact"]), ("shift", ["--dtype", "float32"]),
                                           ("shift", ["--residuals"]), ("hard", ["--dtype", "exact", "--residuals"])])
def test_run_refuses_nine_tokens_on_a_circuit_built_for_eight(shift, folder, extra):
    code, out, err = run("run", shift.parent / folder, "--input", NINE, *extra)
    _one_line(code, err, "built and verified for lengths 1..8, got 9 tokens")
    assert "--allow-length" in err and out == ""


def test_run_refuses_twenty_tokens_and_accepts_every_valid_length(shift):
    _one_line(*run("run", shift, "--input", ",".join(map(str, range(20))))[::2], "got 20 tokens")
    for n in range(1, 9):
        code, out, err = run("run", shift, "--input", ",".join(map(str, range(1, n + 1))), "--json")
        assert code == 0, err
        result = json.loads(out)
        assert result["within_claim"] is True and "outside_claim" not in result
        assert [y for (y,) in result["output"]] == pytest.approx([max(i - 1, 0) + 1 for i in range(n)], abs=1e-9)


def test_allow_length_runs_and_marks_the_output_outside_the_claim(shift):
    code, out, err = run("run", shift.parent / "hard", "--input", NINE, "--dtype", "exact", "--allow-length", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["within_claim"] is False and "outside the construction's claim" in result["outside_claim"]
    assert result["output"][-1] == ["9/2"]          # the wrong answer the issue saw, now labelled
    # the softmax circuit was built for values 1..8 (max - min 7): nine of them need both flags
    _one_line(*run("run", shift, "--input", NINE, "--allow-length")[::2], "max - min of x over the tokens")
    code, out, err = run("run", shift, "--input", NINE, "--allow-length", "--allow-outside")
    assert code == 0 and "WARNING: outside the construction's claim" in out


def test_show_refuses_then_marks_its_page(shift, tmp_path):
    page = tmp_path / "p.html"
    _one_line(*run("show", shift, "--input", NINE, "--out", page)[::2], "got 9 tokens")
    assert not page.exists()
    code, out, err = run("show", shift, "--input", NINE, "--out", page, "--allow-length", "--allow-outside", "--json")
    assert code == 0, err and json.loads(out)["within_claim"] is False
    assert 'id="outside-claim"' in page.read_text()
    code, _, err = run("show", shift, "--input", "1,2,3", "--out", tmp_path / "ok.html")
    assert code == 0 and 'id="outside-claim"' not in (tmp_path / "ok.html").read_text()


@pytest.fixture(scope="module")
def tl():
    return pytest.importorskip("transformer_lens")


def test_export_at_n_ctx_16_is_refused_then_checked_against_the_target(shift, tmp_path, tl):
    _one_line(*run("export", shift, "--to", "transformer-lens", "--n-ctx", "16", "--out", tmp_path / "a")[::2],
              "--n-ctx 16 is outside the lengths")
    assert not (tmp_path / "a").exists()
    code, out, err = run("export", shift, "--to", "transformer-lens", "--n-ctx", "16", "--out", tmp_path / "b",
                         "--allow-length", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["within_claim"] is False
    # TransformerLens agrees with our evaluation (both equally wrong) but not with the construction's target
    assert result["verified"]["float64"]["status"] == "ok"
    assert result["verified"]["target"]["max_abs_error"] > 0.5 and "outside" in result["verified"]["target"]["status"]
    desc = json.loads((tmp_path / "b" / "expressivity.json").read_text())
    assert desc["within_claim"] is False and desc["valid_lengths"] == {"kind": "range", "lo": 1, "hi": 8}
    code, out, err = run("export", shift, "--to", "transformer-lens", "--out", tmp_path / "c", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["config"]["n_ctx"] == 8 and result["within_claim"] is True
    assert result["verified"]["target"]["status"] == "ok" and result["verified"]["target"]["max_abs_error"] < 1e-9


def test_allow_length_does_not_apply_to_export_to_network(shift, tmp_path):
    code, _, err = run("export", shift, "--to", "network", "--out", tmp_path / "n", "--allow-length")
    _one_line(code, err, "--allow-length")


def test_an_old_folder_without_valid_lengths_gets_its_reports_length_with_a_warning(shift, tmp_path):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(shift, old)
    path = old / "network" / "network.json"
    desc = json.loads(path.read_text())
    desc.pop("valid_lengths")
    path.write_text(json.dumps(desc))
    code, out, err = run("run", old, "--input", "1,2,3,4,5,6,7,8")
    assert code == 0 and "warning:" in err and "assuming length 8" in err
    code, _, err = run("run", old, "--input", NINE)
    assert code == 2 and "built and verified for length 8" in err
