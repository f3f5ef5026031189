"""Checkpoints: a directory with ``model.safetensors`` (weights), ``config.json`` (model, train
and task configuration, step, status) and ``state.pt`` (optimizer and RNG state, for resuming).

Writes go to ``<dir>.tmp`` and are swapped in by rename, so an interruption leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from expressivity.records import jsonable


def save_checkpoint(path: Path, model: torch.nn.Module, config: dict, state: dict) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    weights = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    save_file(weights, str(tmp / "model.safetensors"))
    (tmp / "config.json").write_text(json.dumps(jsonable(config), indent=2) + "\n")
    torch.save(state, tmp / "state.pt")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(path: Path, model: torch.nn.Module | None = None) -> tuple[dict, dict]:
    """Return ``(config, state)``; load weights into ``model`` if given."""
    path = Path(path)
    if not (path / "config.json").exists():
        old = path.with_name(path.name + ".old")  # interrupted between the two renames
        if (old / "config.json").exists():
            path = old
    config = json.loads((path / "config.json").read_text())
    if model is not None:
        model.load_state_dict(load_file(str(path / "model.safetensors")))
    state = torch.load(path / "state.pt", weights_only=False)
    return config, state
