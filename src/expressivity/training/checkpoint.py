"""Checkpoints: a directory with ``model.safetensors`` (weights), ``config.json`` (the run
configuration, step and status) and ``state.pt`` (optimizer and RNG state, for resuming).

Writes go to ``<dir>.tmp`` and are swapped in by rename, so an interruption at any moment leaves
the previous checkpoint (or the new one) intact. A checkpoint written during training has status
``"running"``; the final one says how the run ended (``"done"``, ``"target-reached"``, ``"nan"``).
Missing, truncated or corrupt files are reported as one-line errors, never as tracebacks.
``config.json``, written last, records the SHA-256 of the other two files (``files_sha256``), and
every read checks them: a changed byte (a flipped bit of a weight changed the answers of ``run`` and
the records of a resumed sweep, silently, a fresh audit, 2026-11-28) is refused by name.
Checkpoints written before the digest was recorded are read as they are. A write that fails (a
full disk: ``torch.save`` raises ``RuntimeError``) is one line too, the previous checkpoint kept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from expressivity.errors import ExpressivityError
from expressivity.records import file_sha256, jsonable


class CheckpointUnreadable(ExpressivityError):
    """A checkpoint missing, damaged or changed after it was written (what a sweep worker may start
    afresh from); a checkpoint that could not be *written* is a plain :class:`ExpressivityError`."""


RUNNING = "running"
FINISHED = ("done", "target-reached", "nan")


DIGESTED = ("model.safetensors", "state.pt")   # config.json records their SHA-256


def save_checkpoint(path: Path, tensors: dict[str, torch.Tensor], config: dict, state: dict) -> None:
    """Write ``tensors`` (safetensors), ``state`` (torch pickle) and ``config`` (JSON, with the other
    two files' SHA-256) atomically; a write that fails is a one-line error, the previous checkpoint kept."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    old = path.with_name(path.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items()}   # (a device's errors are its own)
    try:
        tmp.mkdir(parents=True)
        save_file(tensors, str(tmp / "model.safetensors"))
        torch.save(state, tmp / "state.pt")
        digests = {name: file_sha256(tmp / name) for name in DIGESTED}
        (tmp / "config.json").write_text(json.dumps(jsonable({**config, "files_sha256": digests}), indent=2) + "\n")
    except (OSError, RuntimeError, SafetensorError) as exc:   # torch.save's full disk is a RuntimeError
        shutil.rmtree(tmp, ignore_errors=True)
        text = (getattr(exc, "strerror", None) or str(exc)).strip().splitlines()
        raise ExpressivityError(f"cannot write the checkpoint {path} ({text[0] if text else type(exc).__name__}); "
                                "free some space, or give an --out where the run can be written") from None
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        path.rename(old)
    tmp.rename(path)
    shutil.rmtree(old, ignore_errors=True)


def checkpoint_exists(path: Path) -> bool:
    path = Path(path)
    return (path / "config.json").exists() or (path.with_name(path.name + ".old") / "config.json").exists()


# What a damaged checkpoint's error tells to do, by default (the advice for resuming training; a
# reader of a finished run passes its own ``fix``: trainer.load_trained).
RESUME_FIX = "delete the folder to start over"


def _resolve(path: Path, fix: str | None = None) -> Path:
    path = Path(path)
    if not (path / "config.json").exists():
        old = path.with_name(path.name + ".old")  # interrupted between the two renames
        if (old / "config.json").exists():
            return old
        raise CheckpointUnreadable(f"no checkpoint in {path} (config.json is missing); {fix or 'start a fresh run instead'}")
    return path


def read_checkpoint_config(path: Path, fix: str | None = None) -> dict:
    """The ``config.json`` of a checkpoint, or a one-line error if it is missing or corrupt, ending in
    ``fix`` (default: the advice for resuming training)."""
    path = _resolve(path, fix)
    fix = fix or RESUME_FIX
    try:
        config = json.loads((path / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CheckpointUnreadable(f"checkpoint {path} has a corrupt config.json ({exc}); {fix}") from None
    if not isinstance(config, dict) or "status" not in config or "step" not in config:
        raise CheckpointUnreadable(f"checkpoint {path}/config.json is not a checkpoint configuration; {fix}")
    step, status = config["step"], config["status"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0 or status not in (RUNNING, *FINISHED):
        raise CheckpointUnreadable(f"checkpoint {path}/config.json has step {step!r} and status {status!r} (a step >= 0 "
                                   f"and one of {RUNNING}, {', '.join(FINISHED)} expected); {fix}")
    return config


def load_checkpoint(path: Path, with_state: bool = True,
                    fix: str | None = None) -> tuple[dict, dict[str, torch.Tensor], dict | None]:
    """Return ``(config, tensors, state)`` (``state`` is ``None`` unless ``with_state``); a missing or
    damaged file is a one-line error ending in ``fix`` (default: the advice for resuming training)."""
    config = read_checkpoint_config(path, fix)
    path, fix = _resolve(path, fix), fix or RESUME_FIX
    recorded = config.get("files_sha256")
    if recorded is not None:
        for name in DIGESTED[:2 if with_state else 1]:
            try:
                same = isinstance(recorded, dict) and file_sha256(path / name) == recorded.get(name)
            except OSError as exc:
                what = "weights" if name == "model.safetensors" else name
                raise CheckpointUnreadable(f"checkpoint {path} has unreadable {what} ({exc.strerror or exc}); "
                                           f"{fix}") from None
            if not same:
                raise CheckpointUnreadable(f"checkpoint {path}: {name} does not match the SHA-256 its config.json "
                                           f"records (it was changed after it was written); {fix}")
    try:
        tensors = load_file(str(path / "model.safetensors"))
    except (OSError, SafetensorError, ValueError) as exc:
        raise CheckpointUnreadable(f"checkpoint {path} has unreadable weights ({exc}); {fix}") from None
    state = None
    if with_state:
        try:
            # weights_only: a state of tensors, numbers, strings, lists and dicts loads without unpickling
            # arbitrary objects, so a shared run folder's state.pt cannot run code on `train --resume`
            state = torch.load(path / "state.pt", weights_only=True)
        except Exception as exc:  # a truncated pickle can fail in many ways; all mean "corrupt"
            raise CheckpointUnreadable(f"checkpoint {path} has an unreadable state.pt ({type(exc).__name__}); {fix}") \
                from None
        if not isinstance(state, dict):
            raise CheckpointUnreadable(f"checkpoint {path}/state.pt is not a training state; {fix}")
    return config, tensors, state
