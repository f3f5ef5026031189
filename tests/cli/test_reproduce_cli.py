"""`expressivity reproduce`: refusals before any claim starts."""

from click.testing import CliRunner

from expressivity.cli.main import cli


def test_list_refuses_options_it_would_ignore():
    res = CliRunner().invoke(cli, ["reproduce", "--list", "--quick"])
    assert res.exit_code == 2 and "--quick" in res.stderr and res.stdout == ""


def test_an_unwritable_out_is_refused_before_the_criterion_is_printed():
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-2", "--out", "/proc/expressivity-claim"])
    assert res.exit_code == 2 and res.stdout == "" and "cannot write" in res.stderr
