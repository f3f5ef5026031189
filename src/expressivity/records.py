"""What every result carries about itself: JSON-ready values, run records, content hashes.

Library code writes results through these helpers (the CLI only prints them), so a run made
from Python and one made from the command line record the same facts: command, configuration,
seed, package and Python versions, and time.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import expressivity


def jsonable(value: Any) -> Any:
    """Convert NumPy arrays/scalars, Fractions, Paths and dataclass-like objects into JSON-ready values.

    Exact numbers become ``int`` or the string ``"p/q"``; floats stay floats (``inf``/``nan``
    become the strings ``"inf"``/``"-inf"``/``"nan"`` so the output is strict JSON). Objects with
    an ``as_dict()`` method are converted through it.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return jsonable(value.as_dict())
    return value


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: the same value always gives the same text."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_hash(value: Any, length: int = 16) -> str:
    """First ``length`` hex digits of the SHA-256 of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


def run_record(command: str, config: dict, seed: int | None = None) -> dict:
    """What every run records about itself: command, config, seed, package versions, platform, time."""
    import torch

    return {
        "command": command,
        "config": jsonable(config),
        "seed": seed,
        "expressivity_version": expressivity.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "created_unix": time.time(),
    }


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (temp file then rename), so a crash leaves no half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(jsonable(obj), indent=2) + "\n")
    tmp.replace(path)


OUTPUT_MARKER = "run.json"  # every output folder this package writes has a run record


def check_output_dir(path: Path, command: str | None = None) -> Path:
    """Refuse an output folder that would be unsafe to replace, before any work starts.

    Allowed: a path that does not exist, an empty folder, or a folder this package wrote before
    (it holds ``run.json``), which is replaced as a whole when the new output is complete. With
    ``command``, only a folder written by that same command (``run.json``'s ``command``) may be
    replaced: a training run, a sweep or another construction's folder is never overwritten.
    """
    from expressivity.errors import ExpressivityError

    path = Path(path)
    if not str(path).strip():
        raise ExpressivityError("--out is empty; name a new folder such as --out results")
    if path.resolve() == Path.cwd().resolve():
        raise ExpressivityError(f"--out {path} is the current folder, which would be replaced; name a new folder")
    # The output is staged beside the folder and renamed into place: the parent must be writable.
    check_writable_parent(path)
    if path.exists():
        if not path.is_dir():
            raise ExpressivityError(f"--out {path} exists and is a file; choose a folder name")
        if any(path.iterdir()) and not (path / OUTPUT_MARKER).exists():
            raise ExpressivityError(f"--out {path} is a non-empty folder this program did not write; "
                                    "choose a new folder so nothing of yours is replaced")
        if command is not None and (path / OUTPUT_MARKER).exists():
            try:
                previous = json.loads((path / OUTPUT_MARKER).read_text()).get("command")
            except (OSError, ValueError, AttributeError):
                previous = None
            if previous != command:
                raise ExpressivityError(f"--out {path} holds the output of '{previous or 'an unknown command'}', not of "
                                        f"'{command}'; choose a new folder so it is not replaced")
    return path


def check_writable_parent(path: Path) -> None:
    """Refuse ``--out path`` when its nearest existing ancestor folder cannot be written (tried)."""
    from expressivity.errors import ExpressivityError

    parent = Path(path).absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not can_create_in(parent):
        raise ExpressivityError(f"--out {path}: cannot write in {parent}; choose a folder you can write to")


def can_create_in(folder: Path) -> bool:
    """Whether a folder can be made (and removed) in ``folder``: tried, since permission bits do
    not tell for root or for special file systems such as /proc."""
    import tempfile

    try:
        probe = tempfile.mkdtemp(prefix=".expressivity-probe-", dir=folder)
    except OSError:
        return False
    Path(probe).rmdir()
    return True


class staged_output:
    """Context manager: write a whole output folder, or nothing.

    Yields a fresh sibling folder ``<path>.partial-<pid>``; on success it replaces ``path``
    (after :func:`check_output_dir` allowed it), on any failure or interruption it is removed.
    """

    def __init__(self, path: Path, command: str | None = None):
        import os

        self.path = check_output_dir(Path(path), command)
        self.stage = self.path.with_name(f"{self.path.name}.partial-{os.getpid()}")

    def __enter__(self) -> Path:
        import shutil

        shutil.rmtree(self.stage, ignore_errors=True)
        self.stage.mkdir(parents=True)
        return self.stage

    def __exit__(self, exc_type, exc, tb):
        import shutil

        if exc_type is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            return False
        old = self.path.with_name(f"{self.path.name}.replaced-{self.stage.name.rsplit('-', 1)[-1]}")
        if self.path.exists():
            self.path.rename(old)
        self.stage.rename(self.path)
        shutil.rmtree(old, ignore_errors=True)
        return False
