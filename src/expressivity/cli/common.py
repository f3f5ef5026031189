"""Helpers shared by every CLI command: JSON output, run records, exact-number formatting."""

from __future__ import annotations

import json
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

import expressivity

# Human output goes to stderr when --json is given, so stdout stays one JSON object.
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def jsonable(value: Any) -> Any:
    """Convert NumPy arrays/scalars, Fractions and Paths into JSON-ready values.

    Exact numbers become ``int`` or the string ``"p/q"``; floats stay floats (``inf``/``nan``
    become the strings ``"inf"``/``"nan"`` so the output is strict JSON).
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
    return value


def emit_json(obj: dict) -> None:
    """Print one JSON object on stdout."""
    sys.stdout.write(json.dumps(jsonable(obj)) + "\n")
    sys.stdout.flush()


def run_record(command: str, config: dict, seed: int | None = None) -> dict:
    """What every run records about itself: command, config, seed, package version, platform, time."""
    return {
        "command": command,
        "config": jsonable(config),
        "seed": seed,
        "expressivity_version": expressivity.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "created_unix": time.time(),
    }


def write_json(path: Path, obj: dict) -> None:
    """Write JSON atomically (temp file then rename), so a crash leaves no half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(jsonable(obj), indent=2) + "\n")
    tmp.replace(path)


class human_output_to_stderr:
    """Context manager: while active, :data:`console` writes to stderr (keeps stdout pure JSON)."""

    def __init__(self, active: bool = True):
        self.active = active
        self._saved = None

    def __enter__(self):
        if self.active:
            # Save the explicit file (None = follow sys.stdout), not the resolved stream, so a
            # later redirection of sys.stdout (tests, pipes) is still honoured after we restore.
            self._saved = console._file
            console.file = sys.stderr
        return self

    def __exit__(self, *exc):
        if self.active:
            console._file = self._saved
        return False
