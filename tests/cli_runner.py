"""``cli_run(*args)``: the CLI in-process, as ``(exit code, stdout, stderr)`` (arguments made strings)."""

from click.testing import CliRunner

from expressivity.cli.main import cli


def cli_run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr
