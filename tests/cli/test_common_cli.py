"""The shared CLI helpers: which options the user typed, and refusing those a command does not take."""

import click
import pytest
from click.testing import CliRunner

from expressivity.cli.common import refuse_untaken, typed_options


@click.command(context_settings={"default_map": {"mapped": 3}})
@click.option("--plain", type=int, default=1)
@click.option("--mapped", type=int, default=2)
@click.option("--flag-name", "flag_name", is_flag=True)
@click.option("--env", type=int, default=4, envvar="TYPED_OPTIONS_ENV")
@click.pass_context
def probe(ctx, plain, mapped, flag_name, env):
    click.echo(",".join(typed_options(ctx)) + "|" + ",".join(typed_options(ctx, ["env", "plain"])))
    refuse_untaken("this probe", [n for n in typed_options(ctx) if n == "flag_name"], " (a test)")


def test_defaults_and_default_maps_are_not_typed_and_the_environment_is():
    runner = CliRunner()
    assert runner.invoke(probe, []).output == "|\n"
    result = runner.invoke(probe, ["--plain", "1", "--mapped", "3"], env={"TYPED_OPTIONS_ENV": "5"})
    assert result.output.splitlines()[0].split("|") == ["plain,mapped,env", "env,plain"]


def test_options_a_command_does_not_take_are_refused_by_their_spelling():
    result = CliRunner().invoke(probe, ["--flag-name"])
    assert result.exit_code == 2 and "this probe does not take --flag-name (a test)" in result.output


def _defaults(command) -> dict:
    return {p.name: p.default for p in command.params}


def test_the_construction_commands_defaults_are_their_builders():
    """Where --help must show a default without importing the library (start-up time), the CLI's copy
    must equal the builder's; elsewhere the CLI passes nothing and the builder's default applies."""
    import inspect

    from expressivity.cli.circuits import circuit
    from expressivity.cli.rasp import rasp_compile
    from expressivity.constructions.circuits.check import run_circuit
    from expressivity.cli.yun import build as yun_build
    from expressivity.constructions.yun.build import BuildConfig
    from expressivity.rasp.compiler import compile as rasp_compile_fn

    config = BuildConfig()
    assert {k: _defaults(yun_build)[k] for k in ("p_norm", "samples", "seed", "budget")} == {
        "p_norm": config.p, "samples": config.samples, "seed": config.seed, "budget": config.budget}
    signature = inspect.signature(rasp_compile_fn).parameters
    assert {k: _defaults(rasp_compile)[k] for k in ("attention", "bos", "samples", "seed")} == {
        k: signature[k].default for k in ("attention", "bos", "samples", "seed")}
    signature = inspect.signature(run_circuit).parameters
    assert {k: _defaults(circuit)[k] for k in ("scale", "dtype", "shift", "tolerance")} == {
        k: signature[k].default for k in ("scale", "dtype", "shift", "tolerance")}


@click.command()
@click.option("--task", "task_name")
@click.option("--json", "as_json", is_flag=True)
@click.option("--rotary/--no-rotary", default=None)
@click.pass_context
def spelled(ctx, task_name, as_json, rotary):
    refuse_untaken("this probe", typed_options(ctx))


def test_refused_options_are_spelled_as_typed_not_as_parameter_names():
    result = CliRunner().invoke(spelled, ["--task", "x", "--json", "--no-rotary"])
    assert result.exit_code == 2 and "this probe does not take --task, --json, --rotary/--no-rotary" in result.output


@pytest.mark.parametrize("args, option", [
    (["wang-e", "build", "--memory", "adaptive", "--memory", "fixed"], "--memory"),
    (["circuit", "sum", "--length", "3", "--length", "4"], "--length"),
    (["train", "--task", "reverse", "--task", "sort", "--steps", "2"], "--task"),
    (["results", "x", "--format", "csv", "--format", "json"], "--format"),
])
def test_an_option_given_twice_is_refused_not_silently_the_last(args, option):
    """A fresh fuzz (2026-11-28): click kept the last of a repeated option; wang-e built `fixed`."""
    from click.testing import CliRunner

    from expressivity.cli.main import cli

    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and f"error: {option} was given more than once" in res.stderr


def test_ctrl_c_is_one_line_with_no_blank_line_before_it(monkeypatch):
    """click printed a blank line before its abort (a fuzz, 2026-11-28): a log got an empty stderr line."""
    import expressivity.constructions.circuits.check as check
    from tests.cli_runner import cli_run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(check, "run_circuit", interrupted)
    code, out, err = cli_run("circuit", "reverse")
    assert (code, out, err) == (130, "", "error: aborted\n")


def test_a_ctrl_c_that_compiled_code_turned_into_another_error_is_an_abort(monkeypatch):
    """A fuzz run of the demo: Ctrl-C landed while matplotlib's compiled code converted a bounding box, which
    raised ValueError('Invalid bounding box') instead of KeyboardInterrupt: a traceback, not 'error: aborted'.
    The same error without a Ctrl-C stays what it is."""
    import signal

    from expressivity.cli.main import cli
    from expressivity.constructions.circuits import check

    def interrupted_inside(*args, **kwargs):
        try:
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)   # Ctrl-C, through the handler in place
        except KeyboardInterrupt:
            pass   # swallowed by the compiled code, which raises its own error
        raise ValueError("Invalid bounding box")

    monkeypatch.setattr(check, "run_circuit", interrupted_inside)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)   # a process's own (an earlier test may differ)
    try:
        result = CliRunner().invoke(cli, ["circuit", "sum", "--input", "1,2,3"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back
    finally:
        signal.signal(signal.SIGINT, before)
    assert result.exit_code == 130 and result.stderr == "error: aborted\n", result.output

    def failing(*args, **kwargs):
        raise ValueError("Invalid bounding box")

    monkeypatch.setattr(check, "run_circuit", failing)
    result = CliRunner().invoke(cli, ["circuit", "sum", "--input", "1,2,3"])
    assert isinstance(result.exception, ValueError)


@pytest.mark.parametrize("args", [
    ("train", "--task", "reverse", "--length", "4", "--steps", "2", "--out", "{loop}"),
    ("rasp", "compile", "length", "--max-len", "3", "--out", "{loop}"),
    ("export", "{loop}", "--to", "network", "--out", "{fresh}"),
])
def test_a_path_that_is_a_symbolic_link_loop_is_one_line(tmp_path, args):
    """Path.resolve() raises RuntimeError on a link loop before Python 3.13: a traceback and exit 1 (a fresh
    audit, 2026-11-28)."""
    from tests.cli_runner import cli_run, one_line_error

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, _, err = cli_run(*(a.format(loop=tmp_path / "a", fresh=tmp_path / "new") for a in args))
    one_line_error(code, err, "is a symbolic link that leads back to itself")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_full_disk_is_one_line_that_says_so_even_where_no_file_is_named(monkeypatch):
    """A full disk raised OSError with no file name: "cannot use: No space left on device; choose a folder you can
    write to" (a fresh audit, 2026-11-28)."""
    import errno
    import os

    import expressivity.constructions.circuits.check as check
    from tests.cli_runner import cli_run, one_line_error

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(check, "run_circuit", full)
    code, _, err = cli_run("circuit", "reverse")
    one_line_error(code, err, "no space left on the device; free some space, or write the output to another disk")


def test_sweep_progress_in_a_log_starts_again_with_a_new_round(monkeypatch):
    """A claim whose grid is extended runs a second sweep whose counts start at 0: the log said nothing until it had
    finished more runs than the first round (a review, 2026-11-28)."""
    import expressivity.cli.common as common
    from expressivity.experiments.launch import Progress

    said = []
    monkeypatch.setattr(common.err_console, "print", lambda text, **kwargs: said.append(text))
    show = common.SweepProgress("claim", None, log=True, every_s=0.0)
    for done in (1, 2, 3):
        show(Progress(total=3, done=done))
    for done in (1, 2):
        show(Progress(total=2, done=done))
    assert [line.split(",")[0] for line in said] == ["claim: done 1", "claim: done 2", "claim: done 3",
                                                     "claim: done 1", "claim: done 2"]
    quiet = common.SweepProgress("claim", None, log=False, every_s=0.0)
    quiet(Progress(total=3, done=1))
    assert len(said) == 5


def test_sigterm_is_an_interrupt_that_exits_143_and_the_next_command_s_ctrl_c_exits_130(monkeypatch):
    """`timeout`, a batch scheduler's preemption and `kill` send SIGTERM; with its default action a command died
    silently mid-write (exit 143, nothing said, nothing cleaned up). It is now an interrupt like Ctrl-C, named,
    exit 143; the default action is put back after the command, and the next command's Ctrl-C is its own (130)."""
    import signal

    from expressivity.cli.main import cli
    from expressivity.constructions.circuits import check

    def terminated_inside(*args, **kwargs):
        signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)   # SIGTERM, through the handler in place

    def interrupted_inside(*args, **kwargs):
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        monkeypatch.setattr(check, "run_circuit", terminated_inside)
        result = CliRunner().invoke(cli, ["circuit", "sum", "--input", "1,2,3"])
        assert (result.exit_code, result.stderr) == (143, "error: aborted (SIGTERM)\n"), result.output
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL   # put back
        monkeypatch.setattr(check, "run_circuit", interrupted_inside)
        result = CliRunner().invoke(cli, ["circuit", "sum", "--input", "1,2,3"])
        assert (result.exit_code, result.stderr) == (130, "error: aborted\n"), result.output
    finally:
        signal.signal(signal.SIGINT, before)
