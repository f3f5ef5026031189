"""A folder holding one output of every kind our commands write, and a fingerprint of it.

Used by the tests that check a command never changes another command's output: build the tree
once (about half a minute on two cores, in-process), fingerprint it, run the command, fingerprint
again, and compare.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from click.testing import CliRunner

from expressivity.cli.main import cli

from tests.experiments.helpers import BASE

# name in the tree -> the command line that writes it (relative to the tree's root)
FOLDERS = {
    "net": ["circuit", "reverse", "--out", "net"],
    "we": ["wang-e", "build", "--memory", "fixed", "--out", "we"],
    "yb": ["yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
           "--out", "yb"],
    "tr": ["train", "--task", "reverse", "--length", "4", "--layers", "1", "--heads", "1", "--d-model", "8",
           "--ffn-width", "8", "--steps", "2", "--eval-every", "1", "--batch-size", "4", "--seeds", "0", "--out", "tr"],
    "sw": ["sweep", "run", "sw.json", "--out", "sw", "--workers", "1"],
    "ex": ["export", "net", "--to", "transformer-lens", "--out", "ex"],
    "rp": ["reproduce", "wang-e-8", "--quick", "--out", "rp"],
}
FILES = {
    "t.csv": ["results", "sw", "--format", "csv", "--out", "t.csv"],
    "t.json": ["results", "sw", "--format", "json", "--out", "t.json"],
    "t.parquet": ["results", "sw", "--runs", "--format", "parquet", "--out", "t.parquet"],
    "f.json": ["fit", "sw", "--x", "train.lr", "--y", "test_metric", "--format", "json", "--out", "f.json"],
    "p.png": ["plot", "sw", "--x", "train.lr", "--out", "p.png"],
    "page.html": ["show", "net", "--out", "page.html"],
}
# Files of the user's that no command wrote: never to be replaced.
USER_FILES = {"mine.txt": "my notes\n", "notes/mine.csv": "a,b\n1,2\n", "afile": "a file where a folder could be\n"}
DANGLING = "dangling.json"  # a symbolic link to nothing
# A file of the user's planted in every folder of every output in FOLDERS (issue 32, item 2): no
# command may change or delete one, not even in its own output folder. Not planted inside a
# checkpoint: the trainer rewrites that folder whole, and its manifest lists it as one entry.
PLANTED_NAME = "my_analysis.txt"
UNPLANTED = ("checkpoint", "checkpoint.old", "checkpoint.tmp", "ensemble")


def run_in(root: Path, args: list[str]):
    """Run the CLI in-process with ``root`` as the working folder; returns click's Result."""
    here = os.getcwd()
    os.chdir(root)
    try:
        return CliRunner().invoke(cli, args)
    finally:
        os.chdir(here)


def build_tree(root: Path, only: set[str] | None = None, plant: bool = False) -> Path:
    """Write every kind of output under ``root`` (see :data:`FOLDERS`, :data:`FILES`; ``only``:
    just these names) and the user's files, and with ``plant`` a user's file in every folder of
    every output folder (:func:`planted`); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    base = {**BASE, "train": {**BASE["train"], "steps": 2, "eval_every": 1, "checkpoint_every": 1}}
    spec = {"base": base, "grid": {"train.lr": [1e-3, 1e-2], "seed": [0]}, "select": {"train.lr": "min val_loss"}}
    (root / "sw.json").write_text(json.dumps(spec))
    for name, text in USER_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / DANGLING).symlink_to(root / "nowhere")
    for name, args in {**FOLDERS, **FILES}.items():
        if only is not None and name not in only:
            continue
        res = run_in(root, args)
        assert res.exit_code == 0 and (root / name).exists(), (args, res.output, res.stderr)
    for path in planted(root) if plant else ():
        path.write_text("my notes: not the command's\n")
    return root


def planted(root: Path) -> list[Path]:
    """Where :func:`build_tree` plants a user's file: :data:`PLANTED_NAME` in every folder of every
    output folder of :data:`FOLDERS` under ``root`` (checkpoints excepted)."""
    places = []
    for name in FOLDERS:
        for folder, dirs, _ in os.walk(root / name):
            dirs[:] = [d for d in dirs if d not in UNPLANTED]
            places.append(Path(folder) / PLANTED_NAME)
    return sorted(places)


def fingerprint(root: Path) -> dict[str, str]:
    """``{relative path: content hash}`` of every file, link (its target) and folder under ``root``."""
    prints = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                prints[key] = "link:" + os.readlink(path)
            elif path.is_dir():
                prints[key] = "folder"
            else:
                prints[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return prints


def changes(before: dict, after: dict) -> set[str]:
    """Paths added, removed or changed between two fingerprints."""
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
