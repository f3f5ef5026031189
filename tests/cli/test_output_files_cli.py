"""``--out FILE`` is as safe as ``--out FOLDER`` (issue 16, item 1): a command replaces only a file
it wrote itself, never writes inside another command's folder, and leaves nothing half-written.

Each case of the issue's "Data loss" list ran with exit 0 and destroyed the named file before."""

import pytest

from tests.output_tree import build_tree, changes, fingerprint, run_in


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return build_tree(tmp_path_factory.mktemp("outputs") / "tree",
                      only={"net", "we", "yb", "ex", "sw", "tr", "t.csv", "t.json", "t.parquet", "f.json", "p.png",
                            "page.html"})


def folder_times(root) -> dict:
    """Every folder's modification time: a probe file made and removed inside one changes it."""
    return {str(p): p.stat().st_mtime_ns for p in [root, *root.rglob("*")] if p.is_dir() and not p.is_symlink()}


def refused(tree, args, needle):
    before, times = fingerprint(tree), folder_times(tree)
    res = run_in(tree, args)
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert res.exit_code == 2 and len(errors) == 1 and needle in errors[0], (args, res.stderr)
    assert not changes(before, fingerprint(tree)), args
    # a fresh fuzz (2026-11-28): the writability probe ran inside the other command's folder before the refusal
    # inside another command's folder (the user's own folders may be probed for writability)
    touched = {k for k, t in folder_times(tree).items() if times.get(k) != t}
    assert needle != "the output of" or not touched, (args, touched)
    return errors[0]


@pytest.mark.parametrize("args", [
    ["results", "sw", "--out", "sw/records.jsonl", "--format", "csv"],
    ["show", "net", "--input", "1,2,3", "--out", "sw/records.jsonl"],
    ["results", "sw", "--runs", "--format", "parquet", "--out", "sw/records.jsonl"],
    ["results", "sw", "--out", "sw/sweep.json", "--format", "json"],
    ["results", "sw", "--out", "sw/run.json", "--format", "json"],
    ["fit", "sw", "--x", "train.lr", "--y", "test_metric", "--format", "json", "--out", "net/report.json"],
    ["show", "net", "--out", "net/report.json"],
    ["plot", "sw", "--x", "train.lr", "--out", "tr/loss_curve.png"],
    # a new file inside another command's folder is refused as well: that folder is not ours
    ["results", "sw", "--format", "csv", "--out", "sw/table.csv"],
    ["show", "net", "--out", "tr/seed_0/page.html"],
    ["sweep", "run", "sw.json", "--out", "net/sweep"],  # and no output folder either
    ["circuit", "reverse", "--out", "tr/circuit"],
])
def test_another_commands_file_or_folder_is_never_written(tree, args):
    refused(tree, args, "the output of")


@pytest.mark.parametrize("args, kind", [
    (["results", "sw", "--format", "json", "--out", "f.json"], "JSON result written by 'results'"),  # fit's
    (["fit", "sw", "--x", "train.lr", "--y", "test_metric", "--format", "json", "--out", "t.json"], "written by 'fit'"),
    (["results", "sw", "--format", "csv", "--out", "t.json"], "but the table is written as csv"),   # a JSON name
    (["fit", "sw", "--x", "train.lr", "--y", "test_metric", "--format", "parquet", "--out", "t.parquet"], "Parquet"),
    (["results", "sw", "--format", "csv", "--out", "page.html"], "CSV table"),
    (["show", "net", "--out", "p.png"], "HTML page"),
    (["plot", "sw", "--x", "train.lr", "--out", "mine.png"], "PNG figure"),
    (["results", "sw", "--format", "json", "--out", "mine.txt"], "JSON result"),
    (["results", "sw", "--format", "csv", "--out", "notes/mine.csv"], "CSV table"),
])
def test_a_file_of_other_origin_is_not_replaced(tree, args, kind):
    (tree / "mine.png").write_bytes((tree / "tr" / "loss_curve.png").read_bytes())  # a PNG, not plot's
    refused(tree, args, kind)


@pytest.mark.parametrize("args, name", [
    (["results", "sw", "--format", "csv", "--out", "t.csv"], "t.csv"),
    (["results", "sw", "--format", "json", "--out", "t.json"], "t.json"),
    (["results", "sw", "--runs", "--format", "parquet", "--out", "t.parquet"], "t.parquet"),
    (["fit", "sw", "--x", "train.lr", "--y", "test_metric", "--format", "json", "--out", "f.json"], "f.json"),
    (["plot", "sw", "--x", "train.lr", "--out", "p.png"], "p.png"),
    (["show", "net", "--out", "page.html"], "page.html"),
])
def test_a_file_the_same_command_wrote_is_replaced_atomically(tree, args, name):
    before = fingerprint(tree)
    res = run_in(tree, args)
    assert res.exit_code == 0, res.stderr
    changed = changes(before, fingerprint(tree))
    assert changed <= {name}  # nothing else, no temporary file left beside it
    assert not [p.name for p in tree.iterdir() if ".partial" in p.name]


def test_a_dangling_link_leaves_no_partial_folder_or_file(tree):
    # before: a complete 'dangling.json.partial-<pid>/' folder stayed behind
    refused(tree, ["circuit", "reverse", "--out", "dangling.json"], "symbolic link")
    refused(tree, ["results", "sw", "--format", "json", "--out", "dangling.json"], "symbolic link")
    refused(tree, ["show", "net", "--out", "dangling.json"], "symbolic link")


@pytest.mark.parametrize("args", [
    ["circuit", "reverse", "--out", "afile/sub"],
    ["results", "sw", "--format", "csv", "--out", "afile/x.csv"],
    ["plot", "sw", "--x", "train.lr", "--out", "afile/deeper/x.png"],
])
def test_a_file_where_a_folder_is_expected_is_refused(tree, args):
    refused(tree, args, "is a file, not a folder")


def test_a_failure_after_the_check_leaves_no_new_folders(tree):
    # the check passes (a new path), then the query fails: the folders made for the output go too
    refused(tree, ["results", "sw", "--metric", "no_such_column", "--format", "csv", "--out", "new/deep/x.csv"],
            "no_such_column")
    assert not (tree / "new").exists()


# ---- a user's file inside an output folder (issue 32, item 2) ------------------------------------------

@pytest.mark.parametrize("name, planted", [
    ("net", "my_analysis.txt"), ("net", "network/notes.md"), ("we", "my_analysis.txt"),
    ("yb", "delta_1_2/softened/mine.txt"), ("ex", "mine.txt"),
])
def test_replacing_an_output_folder_refuses_while_it_holds_a_file_the_command_did_not_write(tree, name, planted):
    # before: exit 0, the folder replaced and the user's file deleted
    from tests.output_tree import FOLDERS

    (tree / name / planted).write_text("my notes\n")
    try:
        error = refused(tree, FOLDERS[name], planted)
        assert "did not write" in error
    finally:
        (tree / name / planted).unlink()
    before = fingerprint(tree)
    assert run_in(tree, FOLDERS[name]).exit_code == 0   # its own files alone: replaced as before
    assert {c.split("/")[0] for c in changes(before, fingerprint(tree))} == {name}


def test_the_issues_rasp_case_keeps_my_analysis(tmp_path):
    args = ["rasp", "compile", "sort", "--max-len", "3", "--out", "sort10"]
    assert run_in(tmp_path, args).exit_code == 0
    (tmp_path / "sort10" / "my_analysis.txt").write_text("notes\n")
    res = run_in(tmp_path, ["rasp", "compile", "sort", "--max-len", "2", "--out", "sort10"])
    assert res.exit_code == 2 and res.stderr.count("error:") == 1 and "my_analysis.txt" in res.stderr, res.stderr
    assert (tmp_path / "sort10" / "my_analysis.txt").read_text() == "notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sort10"]   # no stage left beside it


@pytest.mark.parametrize("name", ["net", "we", "yb", "ex"])
def test_a_run_record_lists_its_files_relative_to_its_folder(tree, name):
    """A run record's ``files`` carried the ``--out`` prefix ("net/network"): wrong once the folder moved."""
    import json

    listed = json.loads((tree / name / "run.json").read_text())["files"]
    assert listed and all(not f.startswith(("/", name + "/")) and (tree / name / f).exists() for f in listed), listed


def test_a_linked_out_is_written_through_and_a_killed_writer_s_stage_is_removed(tmp_path):
    """A fresh audit (2026-11-28): a staged writer renamed a symbolic --out aside (left as "lnk.replaced-<pid>")
    and wrote a folder in its place; stages of writers killed with -9 ("out.partial-<pid>") stayed for ever."""
    import subprocess

    (tmp_path / "target").mkdir()
    (tmp_path / "lnk").symlink_to("target")
    code = run_in(tmp_path, ["circuit", "reverse", "--out", "lnk"]).exit_code
    assert code == 0 and (tmp_path / "lnk").is_symlink() and (tmp_path / "target" / "run.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lnk", "target"]
    dead = subprocess.Popen(["true"])
    dead.wait()
    from expressivity.records import _process_tag

    stale = tmp_path / f"net.partial-{_process_tag()}-{dead.pid}"
    foreign = tmp_path / f"net.partial-{dead.pid}"   # no tag: a writer elsewhere (another host or container)
    foreign.mkdir()
    stale.mkdir()
    (stale / "half.json").write_text("{")
    assert run_in(tmp_path, ["circuit", "reverse", "--out", "net"]).exit_code == 0
    assert not stale.exists() and foreign.is_dir() and (tmp_path / "net" / "run.json").is_file()


def test_show_refuses_a_page_name_that_is_not_html(tree):
    """`show --out s.txt` wrote the HTML page to s.txt, exit 0, where `plot` refuses a name not ending in .png (a
    fresh audit, 2026-11-29)."""
    refused(tree, ["show", "net", "--out", "s.txt"], "must be a file name ending in .html")
    refused(tree, ["show", "net", "--out", "page"], "must be a file name ending in .html")
