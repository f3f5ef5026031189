"""A sweep folder carries manifest.json like every folder that saves networks: its runs are the
trained runs under runs/<id>, and run/show/export load one of them through it."""

import json

from expressivity.export.folders import load_saved
from expressivity.manifest import read_manifest
from tests.cli_runner import cli_run
from tests.experiments.helpers import grid_spec, write_spec


def test_a_sweep_folder_lists_its_runs_and_loads_one_by_name(tmp_path):
    spec = tmp_path / "s.json"
    write_spec(spec, grid_spec({"seed": [0, 1]}))
    out = tmp_path / "sweep"
    code, _, err = cli_run("sweep", "run", spec, "--out", out, "--workers", "1")
    assert code == 0, err
    manifest = read_manifest(out)
    ids = sorted(json.loads(line)["id"] for line in (out / "records.jsonl").read_text().splitlines())
    assert (manifest.kind, manifest.command) == ("trained runs", "sweep run")
    assert sorted(n.path for n in manifest.networks) == [f"runs/{i}" for i in ids]
    assert all(n.form == "trained run" and n.label for n in manifest.networks)
    # every file in the folder is one the manifest describes (packs/ only exists while ensembles train)
    folders = [f for f in manifest.files if f.endswith("/")]
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert all(p in manifest.files or any(p.startswith(f) for f in folders) for p in present), present
    saved = load_saved(out / "runs" / ids[0])
    assert saved.kind == "trained run" and saved.warnings == () and saved.info["run_id"] == ids[0]
    code, _, err = cli_run("run", out, "--input", "1,2,3,4")
    assert code == 2 and "holds 2 trained runs; name one" in err
    assert all((out / "runs" / i / "manifest.json").is_file() for i in ids)   # each run folder has its own
    for manifest_file in out.rglob("manifest.json"):   # a sweep folder from before manifests: read by its layout, with a warning
        manifest_file.unlink()
    old = load_saved(out / "runs" / ids[0])
    assert old.info["run_id"] == ids[0] and any("saved before manifests" in w for w in old.warnings)
