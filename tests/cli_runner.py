"""``cli_run(*args)``: the CLI in-process, as ``(exit code, stdout, stderr)`` (arguments made strings);
``one_line_error(code, err, needle)``: a refusal as the project promises it (exit 2, one ``error:`` line)."""

from click.testing import CliRunner

from expressivity.cli.main import cli


def cli_run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code, err, needle):
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1, err
    assert needle in err, err
