"""What a newcomer reads agrees with what runs, and fits an 80-column terminal (issue 16, item 6)."""

import io
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli

ENV = {**os.environ, "COLUMNS": "80"}


def _cli(*args) -> str:
    """stdout of ``expressivity ARGS`` in a fresh process on an 80-column terminal."""
    code = "from expressivity.cli.main import main; main()"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", [["circuits"], ["tasks"], ["circuit", "reverse", "--length", "6", "--scale", "50"]])
def test_tables_fit_80_columns_uncut(args):
    out = _cli(*args)
    assert max(map(len, out.splitlines())) <= 80 and "…" not in out, out


def test_the_yun_demo_table_fits_80_columns_and_explains_its_columns(tmp_path, monkeypatch):
    from rich.console import Console

    from expressivity.cli import yun as yun_cli

    buffer = io.StringIO()
    monkeypatch.setattr(yun_cli, "console", Console(file=buffer, width=80, highlight=False))
    yun_cli.demo_section(tmp_path)
    text = buffer.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 80, text
    assert "params/bound: parameters of the softened network over the paper's counting lower bound" in " ".join(
        text.split())


def test_circuits_names_the_option_that_sets_the_shift():
    out = _cli("circuits", "--json")
    shift = next(c for c in json.loads(out)["circuits"] if c["name"] == "shift")
    assert "--shift k" in shift["description"] and "shift=k" not in shift["description"]


def test_train_help_lists_every_position_bias_the_model_has():
    from expressivity.nn.positional import RPE_NAMES

    text = " ".join(CliRunner().invoke(cli, ["train", "--help"]).output.split())
    listed = text.split("relative position bias:")[1].split("--")[0]
    assert all(name in listed for name in RPE_NAMES), listed


def test_tasks_shows_the_defaults_a_task_really_uses():
    from expressivity.tasks import make_task

    rows = json.loads(CliRunner().invoke(cli, ["tasks", "--json"]).output)["tasks"]
    for row in rows:
        if row["name"].startswith("lm-"):      # these read the corpus on construction; their '' means "found at run time"
            continue
        assert make_task(row["name"]).kwargs() == row["args"], row["name"]


def test_sweep_show_json_carries_a_run_record(tmp_path):
    spec = {"base": {"task": {"name": "reverse", "args": {"length": 4}}, "train": {"steps": 2}}, "grid": {"seed": [0, 1]}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    result = CliRunner().invoke(cli, ["sweep", "show", str(tmp_path / "s.json"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run"]["command"] == "sweep show"


def test_a_trained_networks_summary_names_its_thousands_of_dimensions_in_one_range():
    from expressivity.nn import Model, ModelConfig, to_network

    net = to_network(Model(ModelConfig(vocab_size=300, d_in=300, d_out=300, max_len=8, d_model=64, layers=1)))
    summary = net.summary()
    assert "1-64:" not in summary and "0-63:h[0..63]" in summary and "token 0..299" in summary
    assert "y[0..299]" in summary and len(summary) < 2000


def test_the_clis_copies_of_library_constants_agree_with_the_library():
    """The CLI repeats a few constants so that --help need not import the library; they must not drift."""
    from expressivity.cli import circuits as circuits_cli
    from expressivity.cli import run as run_cli
    from expressivity.cli import yun as yun_cli
    from expressivity.constructions.circuits import DEFAULT_TOLERANCE, MAX_LENGTH
    from expressivity.constructions.circuits.check import DTYPES
    from expressivity.constructions.yun.build import MAX_SAMPLES
    from expressivity.network.evaluate import DTYPES as EVALUATOR_DTYPES

    assert (circuits_cli.MAX_LENGTH, circuits_cli.DEFAULT_TOLERANCE, circuits_cli.DTYPES) == (MAX_LENGTH,
                                                                                              DEFAULT_TOLERANCE, DTYPES)
    assert run_cli.DTYPES == EVALUATOR_DTYPES and yun_cli.MAX_SAMPLES == MAX_SAMPLES


@pytest.mark.parametrize("command, unwanted", [("--help", ("expressivity.network", "expressivity.constructions", "torch")),
                                                 ("circuits", ("torch", "expressivity.training"))])
def test_help_and_circuits_import_only_what_they_need(command, unwanted):
    """Start-up time: ``--help`` loads no library module, ``circuits`` no torch (benchmarks/bench_startup.py times it)."""
    code = (f"import sys\nfrom expressivity.cli.main import cli\nsys.argv = ['expressivity', {command!r}]\n"
            "try:\n    cli()\nexcept SystemExit:\n    pass\n"
            f"print([m for m in {unwanted!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "[]", out
