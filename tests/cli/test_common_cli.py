"""The shared CLI helpers: which options the user typed, and refusing those a command does not take."""

import click
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
