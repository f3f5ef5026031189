"""``expressivity.records``: output folders and files are written whole or not at all, and only
where nothing of anyone else's is replaced."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.records import (OutputFile, check_output_dir, check_output_file, png_text, run_record, staged_file,
                                  staged_output, write_json)


def test_a_file_is_written_whole_through_a_temporary_name(tmp_path):
    out = tmp_path / "a" / "b" / "t.json"
    with staged_file(out, OutputFile.json("results")) as temp:
        assert temp.parent == out.parent and temp.suffix == ".json" and temp != out
        temp.write_text(json.dumps({"run": run_record("results", {})}))
        assert not out.exists()  # nothing at the final name until the write is complete
    assert json.loads(out.read_text())["run"]["command"] == "results"
    assert sorted(p.name for p in out.parent.iterdir()) == ["t.json"]


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_write_leaves_nothing_not_even_folders(tmp_path, failure):
    out = tmp_path / "new" / "deep" / "t.csv"
    with pytest.raises(type(failure)):
        with staged_file(out, OutputFile.csv("results", "a,b")) as temp:
            temp.write_text("a,b\n1,")
            raise failure
    assert list(tmp_path.iterdir()) == []


def test_a_failed_replacement_keeps_the_old_file(tmp_path):
    out = tmp_path / "t.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(RuntimeError):
        with staged_file(out, OutputFile.csv("results", "a,b")) as temp:
            temp.write_text("a,b\n")
            raise RuntimeError
    assert out.read_text() == "a,b\n1,2\n" and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_recognisers_accept_only_what_the_same_command_wrote(tmp_path):
    path = tmp_path / "x"
    path.write_text(json.dumps({"run": {"command": "fit"}}))
    assert OutputFile.json("fit").recognise(path) and not OutputFile.json("results").recognise(path)
    path.write_text(json.dumps({"command": "fit"}))  # a run.json: not a result
    assert not OutputFile.json("fit").recognise(path)
    path.write_text("a,b\r\n1,2\r\n")
    assert OutputFile.csv("results", "a,b\n").recognise(path) and not OutputFile.csv("results", "a,c").recognise(path)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)  # a corrupt PNG: no text, not recognised, no error
    assert png_text(path) == {} and not OutputFile.png("plot").recognise(path)
    path.write_text("<html><head>" + "x" * 5000 + '<meta name="generator" content="expressivity show">')
    assert not OutputFile.tagged("show", "an HTML page", b'content="expressivity show"').recognise(path)


def test_a_figure_carries_its_command(tmp_path):
    pytest.importorskip("matplotlib")
    from expressivity.figures import pyplot, save

    fig, _ = pyplot().subplots()
    save(fig, tmp_path / "p.png", software=OutputFile.software("plot"))
    assert png_text(tmp_path / "p.png")["Software"] == "expressivity plot"
    assert OutputFile.png("plot").recognise(tmp_path / "p.png") and not OutputFile.png("show").recognise(tmp_path / "p.png")


@pytest.mark.parametrize("make, needle", [
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.symlink_to(p.parent / "nowhere"), "symbolic link"),
    (lambda p: p.write_text("mine"), "not a JSON result written by 'results'"),
])
def test_check_output_file_refuses(tmp_path, make, needle):
    path = tmp_path / "x.json"
    make(path)
    with pytest.raises(ExpressivityError, match=needle):
        check_output_file(path, OutputFile.json("results"))


def test_nothing_is_written_inside_another_commands_folder(tmp_path):
    write_json(tmp_path / "run" / "run.json", run_record("train", {}))
    for check in (lambda p: check_output_file(p, OutputFile.json("results")), lambda p: check_output_dir(p, "circuit")):
        with pytest.raises(ExpressivityError, match="the output of 'train'"):
            check(tmp_path / "run" / "sub" / "x.json")
    check_output_dir(tmp_path / "run", "train")  # the folder itself may be replaced by its own command


def test_a_staged_folder_leaves_no_parents_and_refuses_a_dangling_link(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with staged_output(tmp_path / "a" / "b" / "out", "circuit") as stage:
            (stage / "f").write_text("x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ExpressivityError, match="symbolic link to nothing"):
        staged_output(tmp_path / "link", "circuit")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


def test_the_rename_into_place_failing_removes_the_stage(tmp_path, monkeypatch):
    out = tmp_path / "out"
    staging = staged_output(out, "circuit")
    with pytest.raises(ExpressivityError, match="symbolic link to nothing"):   # checked again before the swap
        with staging as stage:
            (stage / "f").write_text("x")
            out.symlink_to(tmp_path / "nowhere")  # appears meanwhile: a folder cannot be renamed onto it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and out.is_symlink()


def test_library_callers_may_nest_outputs_in_their_own_folder(tmp_path):
    # a claim's sweeps live inside the claim's folder (reproduce NAME/sweep/): no command given
    write_json(tmp_path / "claim" / "run.json", run_record("reproduce wang-e-3", {}))
    assert check_output_dir(tmp_path / "claim" / "sweep") == tmp_path / "claim" / "sweep"


def test_the_torch_version_is_recorded_without_importing_torch():
    """A run record names the installed torch exactly as ``torch.__version__`` does (local tag
    included), read without the seconds its import takes."""
    import subprocess
    import sys

    import torch

    code = ("import sys\nfrom expressivity.records import installed_version, run_record\n"
            "print(run_record('x', {})['torch'], installed_version('no_such_package_here'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    assert out == [torch.__version__, "None", "False"]


def _written(folder, files, command="circuit"):
    """A folder as ``command`` leaves it: its files, run.json and a manifest listing them."""
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x")
    write_json(folder / "run.json", run_record(command, {}))
    write_json(folder / "manifest.json", {"files": {**{n: "x" for n in files}, "run.json": "", "manifest.json": "",
                                                    "ckpt/": "a folder listed whole"}})


def test_unlisted_files_are_what_the_manifest_does_not_list(tmp_path):
    from expressivity.records import unlisted_files

    _written(tmp_path, ["a.json", "net/network.json", "ckpt/model.safetensors"])
    assert unlisted_files(tmp_path) == []
    (tmp_path / "ckpt" / "deep").mkdir()
    (tmp_path / "net" / "mine.txt").write_text("mine")
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "net")
    assert unlisted_files(tmp_path) == ["empty/", "link", "net/mine.txt"]
    (tmp_path / "manifest.json").write_text("not json")
    assert unlisted_files(tmp_path) is None


def test_a_replaced_folder_keeps_the_users_files_by_refusing(tmp_path):
    # before: the folder was replaced and mine.txt deleted
    out = tmp_path / "out"
    _written(out, ["report.json"])
    (out / "sub").mkdir()
    (out / "sub" / "mine.txt").write_text("mine")
    with pytest.raises(ExpressivityError, match=r"holds sub/mine.txt, which 'circuit' did not write; move it out"):
        staged_output(out, "circuit")
    with pytest.raises(ExpressivityError, match="did not write"):
        check_output_dir(out, "circuit", replaces=True)
    assert check_output_dir(out, "circuit") == out   # a command that resumes into its folder keeps them anyway
    (out / "sub" / "mine.txt").unlink()
    with pytest.raises(ExpressivityError, match="holds sub/, which"):   # an empty folder of the user's too
        staged_output(out, "circuit")
    (out / "sub").rmdir()
    with staged_output(out, "circuit") as stage:
        (stage / "new.json").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and (out / "new.json").exists()


def test_a_file_put_in_while_the_command_ran_is_kept(tmp_path):
    out = tmp_path / "out"
    _written(out, ["report.json"])
    with pytest.raises(ExpressivityError, match="mine.txt, which 'circuit' did not write"):
        with staged_output(out, "circuit") as stage:
            (stage / "report.json").write_text("new")
            (out / "mine.txt").write_text("mine")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]    # the stage is gone
    assert (out / "mine.txt").read_text() == "mine" and (out / "report.json").read_text() == "x"


def test_a_folder_written_before_manifests_is_not_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write_json(out / "run.json", run_record("circuit", {}))
    (out / "report.json").write_text("x")
    with pytest.raises(ExpressivityError, match="without a manifest.json listing its files"):
        staged_output(out, "circuit")


def test_a_run_record_names_the_source_commit_and_whether_it_was_changed(tmp_path):
    """The package version does not say which code made a result; the git commit of the package's
    tree does, with ``dirty`` when its tracked files differ from it, and ``None`` outside git."""
    import shutil
    import subprocess

    from expressivity.records import source_revision

    git = shutil.which("git")
    if git is None:
        pytest.fail("git is needed by this test (CI clones the repository with it)")
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text("x = 1\n")

    def run(*args):
        return subprocess.run([git, "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()

    run("init", "-q")
    run("add", "pkg/a.py")
    run("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-q", "-m", "one")
    source_revision.cache_clear()
    assert source_revision(repo / "pkg") == {"commit": run("rev-parse", "HEAD"), "dirty": False}
    (repo / "pkg" / "a.py").write_text("x = 2\n")
    source_revision.cache_clear()
    assert source_revision(repo / "pkg")["dirty"] is True
    (tmp_path / "plain").mkdir()
    assert source_revision(tmp_path / "plain") is None
    (repo / "venv" / "pkg").mkdir(parents=True)     # an untracked copy inside the repository is not its code
    (repo / "venv" / "pkg" / "a.py").write_text("x = 3\n")
    assert source_revision(repo / "venv" / "pkg") is None
    source_revision.cache_clear()
    assert run_record("x", {})["source"] == source_revision()


def test_the_hardware_record_resolves_the_device_and_names_it(monkeypatch):
    """A verdict's record names the machine that computed it: ``auto`` resolved as training resolves
    it, the GPU's name on CUDA, the CPU's model otherwise, and the cores."""
    import os

    import torch

    from expressivity.records import hardware

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    on_cpu = hardware("auto")
    assert on_cpu["device"] == "cpu" and on_cpu["cpus"] == os.cpu_count()
    assert hardware("cpu") == on_cpu and hardware(None) == on_cpu
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Test GPU 80GB")
    assert hardware("auto") == {"device": "cuda", "name": "Test GPU 80GB", "cpus": os.cpu_count()}
    assert hardware("cuda")["name"] == "Test GPU 80GB" and hardware("cpu")["device"] == "cpu"


def test_a_folder_that_cannot_be_locked_is_used_unguarded_not_refused(tmp_path, monkeypatch):
    """A review (2026-11-28): on NFS an exclusive flock of a folder opened read-only fails with EBADF, and every
    `train --out` there was refused as "cannot use: Bad file descriptor"."""
    import errno
    import fcntl

    from expressivity.records import folder_in_use

    def no_locks(fd, op):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with folder_in_use(tmp_path, "train run") as held:
        assert held.fd is None


def _write_many(path, label, times):
    from expressivity.records import write_json

    for i in range(times):
        write_json(path, {"writer": label, "i": i, "pad": [label] * 20_000})


def test_two_processes_writing_one_file_never_leave_half_of_it(tmp_path):
    # a fixed temporary name ("NAME.tmp") let one writer rename the other's half-written file into place and the
    # other's rename then fail: a reader saw empty or cut files (a fresh audit, 2026-11-28)
    import multiprocessing

    path = tmp_path / "verdict.json"
    write_json(path, {"writer": "first", "i": -1})
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_many, args=(path, label, 150)) for label in ("a", "b")]
    for w in writers:
        w.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        seen.add(json.loads(path.read_text())["writer"])   # every read is one whole file
    for w in writers:
        w.join()
    assert [w.exitcode for w in writers] == [0, 0]   # neither writer's rename failed
    final = json.loads(path.read_text())
    assert final["i"] == 149 and final["pad"] == [final["writer"]] * 20_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verdict.json"]   # no temporary file left
    assert seen & {"a", "b"}


def test_a_file_with_a_long_name_is_written_through_a_temporary_name_that_fits():
    """A 204-character figure name failed "File name too long": the figure's temporary name stacked on the staged
    file's (a review, 2026-11-28); the private name cuts NAME to stay within 255 characters."""
    from expressivity.records import private_sibling, write_text

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("p" * 250 + ".json")
        write_text(path, "{}\n")
        assert path.read_text() == "{}\n" and [p.name for p in path.parent.iterdir()] == [path.name]
        assert len(private_sibling(path, ".partial").name) <= 255


def test_a_run_record_names_the_versions_of_the_packages_its_numbers_depend_on():
    """A newcomer audit (2026-11-29): verdict intervals come from scipy, the Wang & E coefficients from mpmath, the
    tables from DuckDB, and no record said which versions."""
    import importlib.metadata

    from expressivity.records import RECORDED_PACKAGES, run_record

    record = run_record("x", {})
    assert set(RECORDED_PACKAGES) == {"scipy", "mpmath", "duckdb"}
    for name in RECORDED_PACKAGES:
        assert record[name] == importlib.metadata.version(name), name
