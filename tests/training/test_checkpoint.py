"""Checkpoints are verified when read (a fresh audit, 2026-11-28: one flipped bit of a weight changed what
`run` answered and what a resumed sweep recorded, with exit 0), and a failed write is one line."""

import json

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.training import checkpoint
from expressivity.training.checkpoint import load_checkpoint, save_checkpoint
from tests.cli_runner import cli_run


def _write(path):
    save_checkpoint(path, {"w": torch.arange(6.0).view(2, 3)}, {"step": 3, "status": "running"},
                    {"generator": torch.Generator().manual_seed(0).get_state(), "step": 3})


def _flip(file, at=-5):
    data = bytearray(file.read_bytes())
    data[at] ^= 1
    file.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["model.safetensors", "state.pt"])
def test_a_changed_byte_is_refused_by_name(tmp_path, name):
    _write(tmp_path / "ck")
    config, tensors, state = load_checkpoint(tmp_path / "ck")
    assert set(config["files_sha256"]) == {"model.safetensors", "state.pt"} and state["step"] == 3
    _flip(tmp_path / "ck" / name)
    with pytest.raises(ExpressivityError, match=f"checkpoint .*ck: {name} does not match the SHA-256 its config.json "
                                                "records .*; delete the folder to start over"):
        load_checkpoint(tmp_path / "ck")
    if name == "state.pt":   # a reader of the weights alone does not read the state
        assert load_checkpoint(tmp_path / "ck", with_state=False)[1]["w"].sum() == 15


def test_a_checkpoint_from_before_the_digest_is_read_as_it_is(tmp_path):
    _write(tmp_path / "ck")
    config = json.loads((tmp_path / "ck" / "config.json").read_text())
    del config["files_sha256"]
    (tmp_path / "ck" / "config.json").write_text(json.dumps(config))
    assert load_checkpoint(tmp_path / "ck")[0]["step"] == 3


def test_a_failed_write_is_one_error_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    _write(tmp_path / "ck")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ck").iterdir()}

    def full_disk(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] unexpected pos 64 vs 0")

    monkeypatch.setattr(checkpoint.torch, "save", full_disk)
    with pytest.raises(ExpressivityError, match=r"cannot write the checkpoint .*ck \(\[enforce fail.*free some space"):
        _write(tmp_path / "ck")
    assert {p.name: p.read_bytes() for p in (tmp_path / "ck").iterdir()} == before
    assert not (tmp_path / "ck.tmp").exists()


def test_run_refuses_a_trained_folder_whose_weights_changed(tmp_path):
    code, _, err = cli_run("train", "--task", "sort", "--length", "4", "--d-model", "16", "--steps", "4",
                           "--out", tmp_path / "t")
    assert code == 0, err
    assert cli_run("run", tmp_path / "t", "--input", "1,2,3,0")[0] == 0
    _flip(tmp_path / "t" / "seed_0" / "checkpoint" / "model.safetensors")
    code, _, err = cli_run("run", tmp_path / "t", "--input", "1,2,3,0")
    assert code == 2 and "model.safetensors does not match the SHA-256" in err and err.count("\n") == 1


class _RunsCode:
    """A pickle that calls ``open(marker, "w")`` when unpickled by a loader that allows any global."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_state_that_would_run_code_is_refused_without_running_it(tmp_path):
    # a shared run folder whose state.pt (and, to pass the digest, config.json) was rewritten by someone else
    _write(tmp_path / "ck")
    marker = tmp_path / "ran"
    torch.save({"step": 3, "payload": _RunsCode(marker)}, tmp_path / "ck" / "state.pt")
    config = json.loads((tmp_path / "ck" / "config.json").read_text())
    config["files_sha256"]["state.pt"] = checkpoint.file_sha256(tmp_path / "ck" / "state.pt")
    (tmp_path / "ck" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ExpressivityError, match="unreadable state.pt"):
        load_checkpoint(tmp_path / "ck")
    assert not marker.exists()


def test_a_config_widened_past_its_weights_is_refused_before_the_model_is_built(tmp_path):
    """A shared run's config.json with d_model 12,000 (digest removed) took 2.5 GB before "does not fit this model"
    (an audit, 2026-11-28); at d_model 10^6 the model alone would be terabytes: the shapes are compared on the meta
    device first."""
    code, _, err = cli_run("train", "--task", "sort", "--length", "4", "--d-model", "16", "--steps", "2",
                           "--out", tmp_path / "t")
    assert code == 0, err
    path = tmp_path / "t" / "seed_0" / "checkpoint" / "config.json"
    config = json.loads(path.read_text())
    del config["files_sha256"]
    config["run"]["model"]["d_model"] = 10 ** 6
    path.write_text(json.dumps(config))
    code, _, err = cli_run("run", tmp_path / "t", "--input", "1,2,3,0")
    assert code == 2 and err.count("\n") == 1, err
    assert "does not fit this model (tensor" in err and "its configuration makes it" in err and "1000000" in err


def test_a_trained_run_without_digests_is_run_with_a_warning(tmp_path):
    """Read as it is (checkpoints before the digests), but no longer silently (an audit, 2026-11-28: a run whose
    files_sha256 was removed and weights changed to bfloat16 ran with exit 0 and no word)."""
    code, _, err = cli_run("train", "--task", "sort", "--length", "4", "--d-model", "16", "--steps", "2",
                           "--out", tmp_path / "t")
    assert code == 0, err
    code, _, err = cli_run("run", tmp_path / "t", "--input", "1,2,3,0")
    assert code == 0 and "records no SHA-256" not in err
    path = tmp_path / "t" / "seed_0" / "checkpoint" / "config.json"
    config = json.loads(path.read_text())
    del config["files_sha256"]
    path.write_text(json.dumps(config))
    code, _, err = cli_run("run", tmp_path / "t", "--input", "1,2,3,0")
    assert code == 0 and err.startswith("warning:") and "checkpoint records no SHA-256 of its files" in err
