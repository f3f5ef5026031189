"""What a newcomer reads agrees with what runs, and fits an 80-column terminal (issue 16, item 6)."""

import io
import re
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
        listed = dict(row["args"])
        if row["name"] == "yun-target":   # a user target's file hash: listed (it may be given), '' and left out of a
            assert listed.pop("target_sha256") == ""   # built-in target's configuration (its run ids as before)
        assert make_task(row["name"]).kwargs() == listed, row["name"]


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


def _every_command(command=cli, path=()):
    import click

    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += _every_command(sub, (*path, name))
    return found


@pytest.mark.parametrize("path", [p for p, _ in _every_command()], ids=lambda p: " ".join(p) or "expressivity")
def test_every_help_page_fits_80_columns(path):
    # before: 'reproduce --help' had two lines of 97 and 101 characters
    result = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
    assert result.exit_code == 0 and max(map(len, result.output.splitlines())) <= 80, result.output


def _listed_summaries(text: str) -> dict[str, str]:
    """``{command: its summary, wrapped lines joined}`` from the Commands section of a help page."""
    listed, name = {}, None
    for line in text.split("Commands:", 1)[1].splitlines():
        head = re.match(r"^  (\S+)\s+(.*)$", line)
        if head:
            name, listed[head.group(1)] = head.group(1), head.group(2).strip()
        elif name and line.strip():
            listed[name] += " " + line.strip()
    return listed


@pytest.mark.parametrize("path", [p for p, c in _every_command() if hasattr(c, "commands")],
                         ids=lambda p: " ".join(p) or "expressivity")
def test_command_summaries_are_whole_sentences(path):
    # before: the list cut at the first full stop and at 45 characters ("yun  Yun et al.")
    group = cli
    for name in path:
        group = group.commands[name]
    listed = _listed_summaries(CliRunner().invoke(cli, [*path, "--help"], terminal_width=80).output)
    assert set(listed) == set(group.commands)
    for name, summary in listed.items():
        first = " ".join(group.commands[name].help.split("\n\n")[0].replace("\b", "").split())
        assert summary.endswith((".", ")")) and not summary.endswith("..."), (name, summary)
        assert first.startswith(summary), (name, summary)
    if not path:
        assert listed["yun"].startswith("Yun et al. (2020): compile targets") and "Claim 1) for circuit" in \
            listed["equivariance"]
