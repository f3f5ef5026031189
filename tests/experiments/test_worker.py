"""A sweep worker starts a run afresh only from a checkpoint it cannot read, never because one could not be
written (a review, 2026-11-28: a resumed run on a full disk cleared its own last good checkpoint)."""

import json

from expressivity.experiments.worker import execute_pack, run_dir
from expressivity.training import RunConfig, run
from expressivity.training import checkpoint as checkpoint_module
from tests.experiments.helpers import BASE


class _Crash(Exception):
    pass


def _half_trained(tmp_path):
    config = RunConfig.for_task(BASE["task"]["name"], BASE["task"]["args"], BASE["model"],
                                {**BASE["train"], "steps": 20, "lr": 1e-2}, seed=3)
    folder = run_dir(tmp_path, config.id())

    def crash(step, model):
        if step == 15:
            raise _Crash

    try:
        run(config, folder, on_step=crash)
    except _Crash:
        pass
    assert json.loads((folder / "checkpoint" / "config.json").read_text())["step"] == 10
    return config, folder


def test_a_checkpoint_that_cannot_be_written_fails_the_run_and_keeps_the_last_one(tmp_path, monkeypatch):
    config, folder = _half_trained(tmp_path)
    kept = (folder / "checkpoint" / "model.safetensors").read_bytes()

    def full_disk(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:659] unexpected pos 64 vs 0")

    monkeypatch.setattr(checkpoint_module.torch, "save", full_disk)
    (record,) = execute_pack({"pack": "p", "configs": [config.to_dict()], "out": str(tmp_path), "device": "cpu"})
    assert record["status"] == "failed" and "cannot write the checkpoint" in record["reason"]
    assert (folder / "checkpoint" / "model.safetensors").read_bytes() == kept   # resumable from step 10


def test_a_checkpoint_that_cannot_be_read_is_trained_again(tmp_path):
    config, folder = _half_trained(tmp_path)
    weights = folder / "checkpoint" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 1
    weights.write_bytes(bytes(data))
    (record,) = execute_pack({"pack": "p", "configs": [config.to_dict()], "out": str(tmp_path), "device": "cpu"})
    assert record["status"] != "failed" and record["steps"] == 20


def test_a_finished_pack_member_that_cannot_be_read_is_trained_again_alone(tmp_path):
    """A review (2026-11-28): a finished ensemble member whose checkpoint no longer matched its digest failed the
    whole pack on every --retry-failed, while a single run in that state was trained again."""
    configs = [RunConfig.for_task(BASE["task"]["name"], BASE["task"]["args"], BASE["model"],
                                  {**BASE["train"], "steps": 20, "lr": 1e-2}, seed=s) for s in (3, 4)]
    job = {"pack": "p", "configs": [c.to_dict() for c in configs], "out": str(tmp_path), "device": "cpu"}
    first = execute_pack(job)
    assert [r["status"] for r in first] == ["done", "done"]
    weights = run_dir(tmp_path, configs[1].id()) / "checkpoint" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 1
    weights.write_bytes(bytes(data))
    again = execute_pack(job)
    assert [r["status"] for r in again] == ["done", "done"]
    assert again[0]["lengths"] == first[0]["lengths"]   # the readable member read back as it was
    assert again[1]["lengths"] == first[1]["lengths"]   # the other trained again alone: the same numbers


def test_a_record_says_from_which_step_its_run_resumed(tmp_path):
    """A run that straddled a resume was stamped with only the last session's source (dirty: false over steps
    that ran on a dirty tree): its record now says the step this session resumed from (an audit, 2026-11-28)."""
    config, _ = _half_trained(tmp_path)
    [record] = execute_pack({"pack": "p", "configs": [config.to_dict()], "out": str(tmp_path)})
    assert record["status"] == "done" and record["pack"]["resumed_at_step"] == 10
    fresh = config.with_changes(seed=4)
    [record] = execute_pack({"pack": "q", "configs": [fresh.to_dict()], "out": str(tmp_path)})
    assert "resumed_at_step" not in record["pack"]


def test_a_run_restarted_from_an_unreadable_checkpoint_records_no_resume(tmp_path):
    """A checkpoint whose state cannot be read is cleared and its run trained from step 0; the record said
    resumed_at_step all the same (a review, 2026-11-28)."""
    config, folder = _half_trained(tmp_path)
    (folder / "checkpoint" / "state.pt").write_bytes(b"not a checkpoint")
    [record] = execute_pack({"pack": "p", "configs": [config.to_dict()], "out": str(tmp_path)})
    assert record["status"] == "done" and "resumed_at_step" not in record["pack"]
