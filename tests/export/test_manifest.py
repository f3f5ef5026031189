"""Every command that saves a network writes manifest.json listing exactly what it wrote, and
load_saved reads the folder through it (old folders still load, with a warning)."""

import json
import shutil

import pytest

from expressivity.errors import ExpressivityError
from expressivity.export.folders import load_saved
from expressivity.manifest import MANIFEST, read_manifest
from tests.cli_runner import cli_run

TRAIN = ["train", "--task", "reverse", "--length", "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8",
         "--batch-size", "8", "--steps", "2"]
# name -> (command line without --out, the manifest's kind, the networks it names)
COMMANDS = {
    "circuit": (["circuit", "shift", "--length", "5"], "construction", ["network"]),
    "wang-e": (["wang-e", "build", "--memory", "fixed", "--readout", "linear"], "construction", ["network"]),
    "rasp": (["rasp", "compile", "reverse", "--max-len", "3"], "construction", ["network"]),
    "yun": (["yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,1/4", "--samples", "100"],
            "yun build", ["delta_1_2/modified", "delta_1_2/softened", "delta_1_4/modified", "delta_1_4/softened"]),
    "train": (TRAIN, "trained runs", ["seed_0"]),
    "ensemble": (TRAIN + ["--seeds", "0,1", "--ensemble"], "trained runs", ["seed_0", "seed_1"]),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One folder per command that saves a network, plus both exports of the circuit's."""
    root = tmp_path_factory.mktemp("manifests")
    for name, (args, _, _) in COMMANDS.items():
        code, _, err = cli_run(*args, "--out", root / name)
        assert code == 0, (name, err)
    for to in ("network", "transformer-lens"):
        code, _, err = cli_run("export", root / ("circuit" if to == "transformer-lens" else "train"), "--to", to,
                               "--out", root / f"export-{to}", "--no-verify" if to == "transformer-lens" else "--json")
        assert code == 0, (to, err)
    return root


def listed_and_present(folder):
    """``(listed, present)``: the manifest's files and the folder's, where a listed ``x/`` covers the folder ``x``."""
    files = read_manifest(folder).files
    folders = [f for f in files if f.endswith("/")]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    present = {p for p in present if not any(p.startswith(f) for f in folders)}
    present |= {f for f in folders if (folder / f).is_dir()}
    return set(files), present


@pytest.mark.parametrize("name", [*COMMANDS, "export-network", "export-transformer-lens"])
def test_the_manifest_lists_exactly_what_the_command_wrote(saved, name):
    listed, present = listed_and_present(saved / name)
    assert listed == present and MANIFEST in listed and "run.json" in listed
    manifest = read_manifest(saved / name)
    assert manifest.versions["expressivity"] and manifest.versions["torch"] and manifest.created_unix > 0
    assert all(what.strip() for what in manifest.files.values())


@pytest.mark.parametrize("name", COMMANDS)
def test_the_manifest_names_the_kind_command_and_networks(saved, name):
    args, kind, networks = COMMANDS[name]
    manifest = read_manifest(saved / name)
    command = "train" if args[0] == "train" else " ".join(args[:2]) if args[0] in ("wang-e", "rasp", "yun") else args[0]
    assert (manifest.kind, manifest.command) == (kind, command)
    assert [n.path for n in manifest.networks] == networks and all(n.label for n in manifest.networks)


def test_exports_record_what_they_hold(saved):
    assert read_manifest(saved / "export-network").kind == "network"
    tl = load_saved(saved / "export-transformer-lens")
    assert read_manifest(saved / "export-transformer-lens").kind == "transformer-lens"
    assert tl.kind == "transformer-lens" and tl.warnings == ()


def test_folders_with_a_manifest_load_without_warnings(saved):
    for name in ("circuit", "wang-e", "rasp", "train", "export-network"):
        assert load_saved(saved / name).warnings == (), name
    yun = load_saved(saved / "yun" / "delta_1_4" / "softened")
    assert yun.warnings == () and yun.report["constants"]["delta"] == "1/4" and "run" not in yun.report
    with pytest.raises(ExpressivityError, match="holds 4 saved networks; name one: .*delta_1_2/modified"):
        load_saved(saved / "yun")
    with pytest.raises(ExpressivityError, match="holds 2 trained runs; name one"):
        load_saved(saved / "ensemble")
    assert load_saved(saved / "ensemble" / "seed_1").info["seed"] == 1


def test_the_manifest_decides_where_the_network_is(saved, tmp_path):
    """Moved network, manifest updated: read where the manifest says (the layout rules would refuse it)."""
    folder = tmp_path / "moved"
    shutil.copytree(saved / "circuit", folder)
    (folder / "network").rename(folder / "weights_here")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["networks"][0]["path"] = "weights_here"
    (folder / MANIFEST).write_text(json.dumps(manifest))
    loaded = load_saved(folder)
    assert loaded.kind == "construction" and loaded.folder == folder / "weights_here" and loaded.report["ok"]


def test_a_folder_saved_before_manifests_loads_with_a_warning(saved, tmp_path):
    for name in ("circuit", "yun", "train"):
        shutil.copytree(saved / name, tmp_path / name)
        (tmp_path / name / MANIFEST).unlink()
    old = load_saved(tmp_path / "circuit")
    assert old.kind == "construction" and old.report["ok"]
    assert any("saved before manifests" in w for w in old.warnings)
    soft = load_saved(tmp_path / "yun" / "delta_1_2" / "softened")
    assert soft.report["constants"]["delta"] == "1/2" and any("saved before manifests" in w for w in soft.warnings)
    assert any("saved before manifests" in w for w in load_saved(tmp_path / "train").warnings)
    code, _, err = cli_run("show", tmp_path / "circuit", "--out", tmp_path / "page.html")
    assert code == 0 and "warning:" in err and "saved before manifests" in err


@pytest.mark.parametrize("damage", ["{torn", '{"checks": "no"}'])
def test_a_damaged_report_in_a_folder_without_manifest_is_said_not_skipped(saved, tmp_path, damage):
    folder = tmp_path / "circuit"
    shutil.copytree(saved / "circuit", folder)
    (folder / MANIFEST).unlink()
    (folder / "report.json").write_text(damage)
    old = load_saved(folder)
    assert old.report is None
    assert any(f"{folder / 'report.json'} is not a readable construction report" in w for w in old.warnings)
    code, _, err = cli_run("run", folder, "--input", "1,2,3,4,5")
    # its claim rests on building it again from the constants its network carries, not on the report
    assert code == 0 and "is not a readable construction report" in err and old.network.no_claim is None
    # without those constants (a folder written before them) and without its report, it carries no claim
    from tests.export.test_saved_networks import _forged
    bare = _forged(folder, tmp_path / "bare", edit_description=lambda d: d["metadata"].pop("circuit_constants"))
    assert "has no readable report" in load_saved(bare).network.no_claim
    code, _, err = cli_run("run", bare, "--input", "1,2,3,4,5")
    assert code == 2 and "has no readable report" in err


@pytest.mark.parametrize("text, needle", [
    ("{not json", "not valid JSON"), ("[]", "not a manifest"), ('{"format": 99}', "format 99"),
    ('{"format": 1, "kind": "mystery", "command": "x", "files": {}, "networks": []}', "unknown kind"),
    ('{"format": 1, "kind": "network", "command": "x", "files": {}, "networks": [{"path": "../up", "label": "x"}]}',
     "not a relative path"),
])
def test_a_corrupt_or_unknown_manifest_is_one_clear_error(saved, tmp_path, text, needle):
    folder = tmp_path / "bad"
    shutil.copytree(saved / "circuit", folder)
    (folder / MANIFEST).write_text(text)
    with pytest.raises(ExpressivityError, match=needle) as info:
        load_saved(folder)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# the Python API's savers
# ---------------------------------------------------------------------------------------------

def _tiny_run(seed=0):
    from expressivity.training import RunConfig

    return RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, dict(layers=1, heads=2, d_model=8, ffn_width=8),
                              dict(steps=2, batch_size=4, eval_every=2, eval_size=8), seed=seed)


def test_save_network_writes_a_manifest_and_refuses_a_folder_another_manifest_describes(saved, tmp_path):
    from expressivity import save_network

    net = load_saved(saved / "circuit").network
    save_network(net, tmp_path / "net")
    manifest = read_manifest(tmp_path / "net")
    assert (manifest.kind, manifest.command, [n.path for n in manifest.networks]) == ("network", "save_network", ["."])
    listed, present = listed_and_present(tmp_path / "net")
    assert listed == present == {"network.json", "weights.safetensors", MANIFEST}
    assert load_saved(tmp_path / "net").warnings == ()
    save_network(net, tmp_path / "net")   # saving again over its own folder is fine
    save_network(net, tmp_path / "bare", manifest=False)
    assert not (tmp_path / "bare" / MANIFEST).exists()
    folder = tmp_path / "construction"
    shutil.copytree(saved / "circuit", folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    with pytest.raises(ExpressivityError, match="is a saved construction folder .*write into another folder"):
        save_network(net, folder)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / MANIFEST).write_text("my own notes\n")
    with pytest.raises(ExpressivityError, match="was not written by expressivity"):
        save_network(net, tmp_path / "mine")
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == [MANIFEST]
    assert (tmp_path / "mine" / MANIFEST).read_text() == "my own notes\n"


def test_a_python_run_folder_has_a_manifest_and_loads_through_it(saved, tmp_path):
    from expressivity.training import run

    result = run(_tiny_run(), tmp_path / "run")
    manifest = read_manifest(tmp_path / "run")
    assert (manifest.kind, manifest.command, [n.form for n in manifest.networks]) == ("trained runs", "run", ["trained run"])
    listed, present = listed_and_present(tmp_path / "run")
    assert listed == present
    loaded = load_saved(tmp_path / "run")
    assert loaded.kind == "trained run" and loaded.warnings == () and loaded.info["run_id"] == result.id
    with pytest.raises(ExpressivityError, match="is a saved construction folder"):
        run(_tiny_run(), saved / "circuit")
    assert not (saved / "circuit" / "checkpoint").exists() and not (saved / "circuit" / "metrics.jsonl").exists()


def test_a_python_ensemble_lists_its_members_and_each_member_has_its_own(tmp_path):
    from expressivity.training.ensemble import run_ensemble

    results, _ = run_ensemble([_tiny_run(0), _tiny_run(1)], tmp_path / "group")
    group = read_manifest(tmp_path / "group")
    assert (group.kind, group.command, [n.path for n in group.networks]) == ("trained runs", "run_ensemble",
                                                                             ["seed_0", "seed_1"])
    listed, present = listed_and_present(tmp_path / "group")
    assert present <= listed   # the ensemble checkpoint is listed for a resume, and removed by no one here
    for r in results:
        member = read_manifest(tmp_path / "group" / f"seed_{r.seed}")
        assert (member.command, [n.path for n in member.networks]) == ("run_ensemble", ["."])
        assert load_saved(tmp_path / "group" / f"seed_{r.seed}").info["run_id"] == r.id
    with pytest.raises(ExpressivityError, match="holds 2 trained runs; name one"):
        load_saved(tmp_path / "group")


def test_savers_refuse_other_savers_folders_and_a_commands_network(saved, tmp_path):
    """A manifest of the same kind written by another command (an export) is not the saver's to
    replace, nor is a network a construction folder lists (its report would be cut off from it)."""
    from expressivity import save_network

    net = load_saved(saved / "circuit").network
    for name, message in (("export-network", "is a saved network folder .*written by 'export'"),
                          ("circuit", "is part of the saved construction folder")):
        folder = tmp_path / name
        shutil.copytree(saved / name, folder)
        target = folder if name == "export-network" else folder / "network"
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        with pytest.raises(ExpressivityError, match=message):
            save_network(net, target)
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert load_saved(tmp_path / "circuit" / "network").kind == "construction"


def test_an_ensemble_group_lists_every_call_and_refuses_before_writing(saved, tmp_path):
    from expressivity.training import run
    from expressivity.training.ensemble import run_ensemble

    group = tmp_path / "group"
    run_ensemble([_tiny_run(0), _tiny_run(1)], group)
    run_ensemble([_tiny_run(2), _tiny_run(3)], group)
    assert [n.path for n in read_manifest(group).networks] == ["seed_0", "seed_1", "seed_2", "seed_3"]
    finished = run(_tiny_run(1), group / "seed_1", resume=True)   # reading a finished member back changes nothing
    assert finished.status == "done" and read_manifest(group / "seed_1").command == "run_ensemble"
    with pytest.raises(ExpressivityError, match="is a saved construction folder"):
        run_ensemble([_tiny_run(0), _tiny_run(1)], saved / "circuit")
    mine = tmp_path / "mine"
    (mine / "seed_1").mkdir(parents=True)
    (mine / "seed_1" / MANIFEST).write_text("my notes\n")
    with pytest.raises(ExpressivityError, match="was not written by expressivity"):
        run_ensemble([_tiny_run(0), _tiny_run(1)], mine)
    assert sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*")) == ["seed_1", f"seed_1/{MANIFEST}"]


def test_a_resumed_run_does_not_judge_its_own_manifest(tmp_path):
    """Resuming reads the checkpoint only: a manifest this version cannot read (a newer format)
    neither stops it nor is rewritten."""
    from expressivity.training import run

    first = run(_tiny_run(), tmp_path / "run")
    newer = '{"format": 2}\n'
    (tmp_path / "run" / MANIFEST).write_text(newer)
    again = run(_tiny_run(), tmp_path / "run", resume=True)
    assert again.id == first.id and (tmp_path / "run" / MANIFEST).read_text() == newer


# ---------------------------------------------------------------------------------------------
# a user's file is never replaced (issue 32, item 2)
# ---------------------------------------------------------------------------------------------

def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_save_network_refuses_a_users_file_of_its_names_and_keeps_other_files(saved, tmp_path):
    # before: save_network(net, "userdir") replaced the user's network.json
    from expressivity import save_network

    net = load_saved(saved / "circuit").network
    for name in ("network.json", "weights.safetensors"):
        folder = tmp_path / f"user-{name}"
        folder.mkdir()
        (folder / name).write_text("mine\n")
        for manifest in (True, False):
            with pytest.raises(ExpressivityError, match=f"holds {name}, which save_network did not write"):
                save_network(net, folder, manifest=manifest)
            assert _snapshot(folder) == {name: b"mine\n"}
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes\n")
    save_network(net, folder)
    save_network(net, folder)   # its own files again: replaced
    assert (folder / "notes.txt").read_text() == "my notes\n" and "notes.txt" not in read_manifest(folder).files
    assert load_saved(folder).warnings == ()


def test_save_transformer_lens_refuses_a_users_file_of_its_names(saved, tmp_path):
    from expressivity.export.transformer_lens import save_transformer_lens, to_transformer_lens

    export = to_transformer_lens(load_saved(saved / "circuit").network)
    folder = tmp_path / "tl"
    folder.mkdir()
    (folder / "README.md").write_text("my readme\n")
    for manifest in (True, False):
        with pytest.raises(ExpressivityError, match="holds README.md, which save_transformer_lens did not write"):
            save_transformer_lens(export, folder, manifest=manifest)
    assert _snapshot(folder) == {"README.md": b"my readme\n"}


def test_a_python_run_refuses_a_users_metrics_or_checkpoint(tmp_path):
    from expressivity.training import run
    from expressivity.training.ensemble import run_ensemble

    for name in ("metrics.jsonl", "checkpoint/model.safetensors"):
        folder = tmp_path / name.replace("/", "-")
        (folder / name).parent.mkdir(parents=True)
        (folder / name).write_text("mine\n")
        with pytest.raises(ExpressivityError, match=f"holds {name.split('/')[0]}"):
            run(_tiny_run(), folder)
        assert _snapshot(folder) == {name: b"mine\n"}
    group = tmp_path / "group"
    (group / "ensemble").mkdir(parents=True)
    (group / "ensemble" / "mine.txt").write_text("mine\n")
    with pytest.raises(ExpressivityError, match="holds ensemble/, which run_ensemble did not write"):
        run_ensemble([_tiny_run(0), _tiny_run(1)], group)
    assert _snapshot(group) == {"ensemble/mine.txt": b"mine\n"}


def test_a_writer_clearing_its_files_keeps_everything_else(tmp_path):
    """What the sweep's worker does to a run folder with an unreadable checkpoint, and to an
    ensemble's group folder once its members are written (before: the whole folder was removed)."""
    from expressivity.manifest import remove_written
    from expressivity.training.trainer import clear_run_folder

    folder = tmp_path / "run"
    for name in ("checkpoint/config.json", "checkpoint.old/config.json", "metrics.jsonl", MANIFEST, "mine.txt",
                 "notes/more.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x\n")
    clear_run_folder(folder)
    assert sorted(_snapshot(folder)) == ["mine.txt", "notes/more.txt"]
    remove_written(folder, ["mine.txt", "notes/"])
    assert not folder.exists()   # nothing else left: the folder goes too


@pytest.mark.parametrize("report", ["../other/report.json", "/tmp/report.json", "sub/../../report.json#/checks", ""])
def test_a_report_pointer_outside_the_folder_is_refused(tmp_path, report):
    """A manifest whose network entry named "../other/report.json" made `show` print the other folder's checks as
    this one's, "all checks passed" (an audit, 2026-11-28); the network paths were refused already."""
    folder = tmp_path / "c"
    assert cli_run("circuit", "shift", "--length", "5", "--out", folder)[0] == 0
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["networks"][0]["report"] == "report.json"
    manifest["networks"][0]["report"] = report
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ExpressivityError, match="not a path inside the folder"):
        read_manifest(folder)
    code, _, err = cli_run("show", folder, "--out", tmp_path / "page.html")
    assert code == 2 and "not a path inside the folder" in err and not (tmp_path / "page.html").exists()


def test_a_runs_folder_whose_seeds_are_not_written_yet_says_so(saved, tmp_path):
    """An interrupted ensemble lists its seeds in manifest.json before it writes their folders; `run` on it named
    folders that did not exist as the ones to choose from (a review, 2026-11-28)."""
    folder = tmp_path / "ens"
    shutil.copytree(saved / "ensemble", folder)
    for seed in folder.glob("seed_*"):
        shutil.rmtree(seed)
    code, _, err = cli_run("run", folder, "--input", "1,2,3")
    assert code == 2 and "lists 2 trained runs but holds none of them yet" in err and "--resume" in err
    shutil.copytree(saved / "ensemble" / "seed_1", folder / "seed_1")   # one written: it is the one read
    assert load_saved(folder).folder == folder / "seed_1"
