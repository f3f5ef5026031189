"""``criterion.md`` is written once per output folder: a resumed run keeps it byte for byte, a
changed criterion is refused unless ``--amend REASON`` appends a dated amendment with the diff,
and ``run.json``, ``verdict.json`` and ``reproduce --summary`` say which criterion a verdict was
reached under."""

import hashlib
import json
import os

import pytest
from click.testing import CliRunner

from expressivity.errors import ExpressivityError
from expressivity.experiments.claims import CLAIMS, Claim, ClaimResult, Regime, reproduce, summary
from expressivity.experiments.claims import criterion as criterion_file

NAME = "test-criterion-claim"


def _run(ctx):
    return ClaimResult("not reproduced", "because", [{"x": 1.0}], None, regime=Regime(ctx.scale, {"ok": True}))


@pytest.fixture
def claim():
    """Registers a claim whose criterion a test may change (``set(text)``), and removes it after."""
    def set_criterion(text):
        CLAIMS[NAME] = Claim(NAME, "a test", "nowhere", text, _run, paper_claim="x is 2", tag="[D]",
                             trains=False)  # nothing to plan: the CLI plans every claim that trains

    set_criterion("x must be 2 within 0.1, on 5 seeds")
    yield set_criterion
    CLAIMS.pop(NAME, None)


def test_a_resumed_run_keeps_the_criterion_byte_for_byte(claim, tmp_path):
    """The defect: criterion.md was rewritten on every call with a new 'stated before the run' time."""
    out = tmp_path / "out"
    reproduce(NAME, out, "quick")
    first = (out / "criterion.md").read_bytes()
    os.utime(out / "criterion.md", (1e9, 1e9))
    reproduce(NAME, out, "quick")
    assert (out / "criterion.md").read_bytes() == first and (out / "criterion.md").stat().st_mtime == 1e9
    sha = hashlib.sha256(first).hexdigest()
    assert json.loads((out / "run.json").read_text())["criterion_sha256"] == sha
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["criterion_sha256"] == sha and verdict["amendments"] == []


def test_the_statement_hash_is_the_same_in_every_folder_stated_under_one_criterion(claim, tmp_path, monkeypatch):
    """The file's hash changes with its date line; the statement's hash names the criterion itself."""
    reproduce(NAME, tmp_path / "a", "quick")
    monkeypatch.setattr(criterion_file, "_now", lambda: "2031-01-01 00:00:00 UTC")
    reproduce(NAME, tmp_path / "b", "quick")
    a, b = (json.loads((tmp_path / f / "verdict.json").read_text()) for f in "ab")
    assert a["criterion_sha256"] != b["criterion_sha256"]
    assert a["statement_sha256"] == b["statement_sha256"] == json.loads((tmp_path / "a/run.json").read_text())[
        "statement_sha256"]
    claim("x must be 2 within 0.3, on 5 seeds")
    reproduce(NAME, tmp_path / "c", "quick")
    assert json.loads((tmp_path / "c/verdict.json").read_text())["statement_sha256"] != a["statement_sha256"]


def test_a_changed_criterion_is_refused_without_amend_and_appended_with_it(claim, tmp_path):
    out = tmp_path / "out"
    reproduce(NAME, out, "quick")
    first = (out / "criterion.md").read_text()
    claim("x must be 2 within 0.2, on 5 seeds")   # the criterion edited after a run
    with pytest.raises(ExpressivityError, match=r"another criterion.*was '0.1, on 5 seeds[^']*', now '0.2, on 5 seeds.*--amend"):
        reproduce(NAME, out, "quick")
    assert (out / "criterion.md").read_text() == first   # nothing written
    reproduce(NAME, out, "quick", amend="the tolerance was too tight for 5 seeds")
    text = (out / "criterion.md").read_text()
    assert text.startswith(first.rstrip("\n"))        # the original statement is kept, above the amendment
    assert "## Amendment 1, " in text and "Reason: the tolerance was too tight for 5 seeds" in text
    assert "-Criterion: x must be 2 within 0.1, on 5 seeds" in text and "+Criterion: x must be 2 within 0.2" in text
    assert criterion_file.in_force(text) == criterion_file.statement(CLAIMS[NAME], "quick")
    verdict = json.loads((out / "verdict.json").read_text())
    assert [a["reason"] for a in verdict["amendments"]] == ["the tolerance was too tight for 5 seeds"]
    assert verdict["criterion_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    reproduce(NAME, out, "quick")                       # resuming under the amended criterion keeps it
    assert (out / "criterion.md").read_text() == text
    (row,) = summary([out])
    assert [a["number"] for a in row["amendments"]] == [1]


def test_amend_is_refused_where_it_does_not_apply(claim, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ExpressivityError, match="does not exist yet"):
        reproduce(NAME, out, "quick", amend="why")
    assert not out.exists()
    reproduce(NAME, out, "quick")
    with pytest.raises(ExpressivityError, match="nothing to amend"):
        reproduce(NAME, out, "quick", amend="why")
    claim("x must be 3")
    with pytest.raises(ExpressivityError, match="needs a reason"):
        reproduce(NAME, out, "quick", amend="  ")


def test_a_file_written_by_someone_else_is_refused(claim, tmp_path):
    out = tmp_path / "out"
    reproduce(NAME, out, "quick")
    (out / "criterion.md").write_text("my notes on the criterion\n")
    with pytest.raises(ExpressivityError, match="not a criterion file"):
        reproduce(NAME, out, "quick")
    assert (out / "criterion.md").read_text() == "my notes on the criterion\n"


def test_a_criterion_file_of_the_older_format_is_read():
    old = ("# a test\n\nSource: nowhere\n\nThe paper's claim [D]: x is 2\n\nCriterion (stated before the run, "
           "2026-11-23 10:00:00 UTC):\n\nx must be 2 within 0.1, on 5 seeds\n\nScale: quick\n")
    assert criterion_file.in_force(old) == ("The paper's claim [D]: x is 2\n\nCriterion: x must be 2 within 0.1, on "
                                            "5 seeds\n\nScale: quick")


def test_the_cli_refuses_a_changed_criterion_before_printing_and_amends_with_a_reason(claim, tmp_path):
    from expressivity.cli.main import cli

    out = tmp_path / "out"
    runner = CliRunner()
    assert runner.invoke(cli, ["reproduce", NAME, "--quick", "--out", str(out)]).exit_code == 0
    claim("x must be 2 within 0.5")
    res = runner.invoke(cli, ["reproduce", NAME, "--quick", "--out", str(out)])
    assert res.exit_code == 2 and res.stdout == "" and "--amend" in res.stderr and res.stderr.count("\n") == 1
    res = runner.invoke(cli, ["reproduce", NAME, "--quick", "--out", str(out), "--amend", "loosened", "--json"])
    assert res.exit_code == 0, res.stderr
    listed = runner.invoke(cli, ["reproduce", "--summary", str(out)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and "loosened" in listed.stdout
    res = runner.invoke(cli, ["reproduce", "--list", "--amend", "x"])
    assert res.exit_code == 2 and "--amend" in res.stderr


def test_summary_markdown_prints_the_tables_from_the_folders(claim, tmp_path):
    """The README's verdict tables come from finished folders: verdicts, amendments and each run's table."""
    from expressivity.cli.main import cli

    out = tmp_path / "out"
    reproduce(NAME, out, "quick")
    runner = CliRunner()
    res = runner.invoke(cli, ["reproduce", "--summary", str(tmp_path), "--markdown"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "| claim | tag | scale | verdict |" in res.stdout and f"| {NAME} | [D] | quick | **not reproduced** |" in res.stdout
    assert "| x |" in lines and "| 1 |" in lines and "Reason: because" in res.stdout   # the run's results table
    for args, needle in ((["reproduce", "--markdown", NAME], "--markdown applies with --summary"),
                         (["reproduce", "--summary", str(tmp_path), "--markdown", "--json"], "two formats")):
        res = runner.invoke(cli, args)
        assert res.exit_code == 2 and needle in res.stderr


def test_a_run_that_fails_midway_leaves_no_verdict_over_its_half_written_files(claim, tmp_path, monkeypatch):
    """A fresh audit (2026-11-28): a rerun cut off by a full disk left the old verdict.json beside a figure cut to
    1 kB and a run.json without its verdict, and --summary still said the old word."""
    import expressivity.experiments.claims as claims

    out = tmp_path / "out"
    reproduce(NAME, out, "quick")
    assert (out / "verdict.json").exists()

    def full_disk(rows, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(claims, "write_table", full_disk)
    with pytest.raises(OSError):
        reproduce(NAME, out, "quick")
    assert not (out / "verdict.json").exists()
    monkeypatch.undo()
    reproduce(NAME, out, "quick")   # running again judges it again
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "not reproduced"
