"""Checkpoints: a directory with ``model.safetensors`` (weights), ``config.json`` (the run
configuration, step and status) and ``state.pt`` (optimizer and RNG state, for resuming).

Writes go to ``<dir>.tmp`` and are swapped in by rename, so an interruption at any moment leaves
the previous checkpoint (or the new one) intact. A checkpoint written during training has status
``"running"``; the final one says how the run ended (``"done"``, ``"target-reached"``, ``"nan"``).
Missing, truncated or corrupt files are reported as one-line errors, never as tracebacks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from expressivity.errors import ExpressivityError
from expressivity.records import jsonable

RUNNING = "running"
FINISHED = ("done", "target-reached", "nan")


def save_checkpoint(path: Path, tensors: dict[str, torch.Tensor], config: dict, state: dict) -> None:
    """Write ``tensors`` (safetensors), ``config`` (JSON) and ``state`` (torch pickle) atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_file({k: v.detach().contiguous().clone() for k, v in tensors.items()}, str(tmp / "model.safetensors"))
    (tmp / "config.json").write_text(json.dumps(jsonable(config), indent=2) + "\n")
    torch.save(state, tmp / "state.pt")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def checkpoint_exists(path: Path) -> bool:
    path = Path(path)
    return (path / "config.json").exists() or (path.with_name(path.name + ".old") / "config.json").exists()


def _resolve(path: Path) -> Path:
    path = Path(path)
    if not (path / "config.json").exists():
        old = path.with_name(path.name + ".old")  # interrupted between the two renames
        if (old / "config.json").exists():
            return old
        raise ExpressivityError(f"no checkpoint in {path} (config.json is missing); start a fresh run instead")
    return path


def read_checkpoint_config(path: Path) -> dict:
    """The ``config.json`` of a checkpoint, or a one-line error if it is missing or corrupt."""
    path = _resolve(path)
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ExpressivityError(f"checkpoint {path} has a corrupt config.json ({exc}); "
                                "delete the folder to start over") from None
    if not isinstance(config, dict) or "status" not in config or "step" not in config:
        raise ExpressivityError(f"checkpoint {path}/config.json is not a checkpoint configuration; "
                                "delete the folder to start over")
    step, status = config["step"], config["status"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0 or status not in (RUNNING, *FINISHED):
        raise ExpressivityError(f"checkpoint {path}/config.json has step {step!r} and status {status!r} (a step >= 0 "
                                f"and one of {RUNNING}, {', '.join(FINISHED)} expected); delete the folder to start over")
    return config


def load_checkpoint(path: Path, with_state: bool = True) -> tuple[dict, dict[str, torch.Tensor], dict | None]:
    """Return ``(config, tensors, state)`` (``state`` is ``None`` unless ``with_state``)."""
    config = read_checkpoint_config(path)
    path = _resolve(path)
    try:
        tensors = load_file(str(path / "model.safetensors"))
    except (OSError, SafetensorError, ValueError) as exc:
        raise ExpressivityError(f"checkpoint {path} has unreadable weights ({exc}); "
                                "delete the folder to start over") from None
    state = None
    if with_state:
        try:
            state = torch.load(path / "state.pt", weights_only=False)
        except Exception as exc:  # a truncated pickle can fail in many ways; all mean "corrupt"
            raise ExpressivityError(f"checkpoint {path} has an unreadable state.pt ({type(exc).__name__}); "
                                    "delete the folder to start over") from None
        if not isinstance(state, dict):
            raise ExpressivityError(f"checkpoint {path}/state.pt is not a training state; delete the folder to start over")
    return config, tensors, state
