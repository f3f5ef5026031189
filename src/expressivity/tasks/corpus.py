"""A real text corpus with no download: the CPython standard library's ``.py`` files.

Every machine that runs the project has them (``sysconfig.get_paths()["stdlib"]``), and no one
here wrote them. The corpus is read as bytes (a token is a byte, so a loss in bits per token is
bits per byte) and is deterministic:

* **files**: every ``*.py`` under the root, found by ``os.walk`` (symbolic links to folders not
  followed), minus any path with a component in :data:`EXCLUDED_PARTS` (third-party
  ``site-packages``, and the test suites, which some distributions ship apart). Relative POSIX
  paths, sorted; ``include`` narrows them to those matching one of its ``fnmatch`` patterns.
* **split by file**, fixed: a file belongs to ``"train"``, ``"val"`` or ``"test"`` by the SHA-256
  of its relative path (buckets 0-89, 90-94, 95-99 of 100), so a file keeps its split when other
  files come or go between Python versions. A split's text is its files concatenated in order.
* **identity**: ``file_list_hash`` (SHA-256 of the sorted relative paths, one per line),
  ``content_hash`` (SHA-256 over every file's path, length and bytes, in order), ``bytes`` and
  ``python`` (the interpreter's implementation and version). They differ between Python versions,
  which is why results carry them (see :mod:`expressivity.tasks.language`).

On CPython 3.11.7 here: 734 files, 12.1 MB (train 11.05 MB, validation 0.71 MB, test 0.36 MB),
read in about 0.4 s; loads are cached per process.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import platform
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from expressivity.errors import ExpressivityError

SPLITS = ("train", "val", "test")
# Bucket of SHA-256(path) mod 100 at which each split starts (train 90%, val 5%, test 5% of files).
SPLIT_BUCKETS = {"train": 0, "val": 90, "test": 95}
EXCLUDED_PARTS = frozenset({"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"})


def stdlib_root() -> Path:
    """The standard library folder of the running interpreter."""
    return Path(sysconfig.get_paths()["stdlib"])


def python_version() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def split_of(path: str) -> str:
    """The split of the file at relative POSIX ``path`` (fixed by the SHA-256 of the path)."""
    bucket = int(hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:8], 16) % 100
    return "test" if bucket >= SPLIT_BUCKETS["test"] else "val" if bucket >= SPLIT_BUCKETS["val"] else "train"


def parse_include(include: str) -> tuple[str, ...]:
    """``"json/*,email/*"`` -> ``("json/*", "email/*")``; ``""`` -> every file."""
    if not isinstance(include, str):
        raise ExpressivityError(f"include must be a string of comma-separated file patterns, got {include!r}")
    return tuple(p.strip() for p in include.split(",") if p.strip())


@dataclass(frozen=True)
class Corpus:
    """The files of one corpus and the byte text of each split (``torch.uint8``, 1-D)."""

    root: str
    include: tuple[str, ...]
    files: tuple[str, ...]
    sizes: tuple[int, ...]
    splits: dict = field(repr=False)  # split name -> uint8 tensor of its files' bytes, concatenated
    split_files: dict = field(repr=False)  # split name -> number of files
    file_list_hash: str
    content_hash: str
    python: str

    @property
    def bytes(self) -> int:
        return sum(self.sizes)

    def text(self, split: str) -> torch.Tensor:
        if split not in SPLITS:
            raise ExpressivityError(f"unknown corpus split {split!r}; use one of {', '.join(SPLITS)}")
        return self.splits[split]

    def facts(self) -> dict:
        """What every result should carry: identity, size and split sizes."""
        return {"root": self.root, "include": ",".join(self.include), "python": self.python,
                "files": len(self.files), "bytes": self.bytes, "file_list_hash": self.file_list_hash,
                "content_hash": self.content_hash,
                "split_bytes": {s: int(self.splits[s].numel()) for s in SPLITS},
                "split_files": dict(self.split_files)}


def list_files(root: Path, include: tuple[str, ...] = ()) -> list[str]:
    """Sorted relative POSIX paths of the corpus files under ``root``."""
    out = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        rel = Path(folder).relative_to(root)
        if EXCLUDED_PARTS & set(rel.parts):
            dirs[:] = []
            continue
        dirs.sort()
        for name in names:
            if name.endswith(".py"):
                path = (rel / name).as_posix()
                if not include or any(fnmatch.fnmatchcase(path, p) for p in include):
                    out.append(path)
    return sorted(out)


def load_corpus(root: str | Path | None = None, include: str | tuple[str, ...] = "") -> Corpus:
    """The corpus under ``root`` (default: this interpreter's standard library), cached per process.

    Raises :class:`ExpressivityError` when the folder is missing, no file matches, a file cannot be
    read, or a split ends up with no text (a slice too small to hold validation and test files).
    """
    root = stdlib_root() if root in (None, "") else Path(root)
    if isinstance(include, (tuple, list)) and all(isinstance(p, str) for p in include):
        include = ",".join(include)
    patterns = parse_include(include)
    return _load(str(Path(root).resolve()), patterns)


@lru_cache(maxsize=8)
def _load(root: str, include: tuple[str, ...]) -> Corpus:
    base = Path(root)
    if not base.is_dir():
        raise ExpressivityError(f"corpus folder {root} does not exist or is not a folder")
    files = list_files(base, include)
    what = f"{root}" + (f" matching {','.join(include)!r}" if include else "")
    if not files:
        raise ExpressivityError(f"the corpus is empty: no .py files under {what}; widen the include patterns")
    parts = {s: [] for s in SPLITS}
    counts = {s: 0 for s in SPLITS}
    content = hashlib.sha256()
    sizes = []
    for path in files:
        try:
            data = (base / path).read_bytes()
        except OSError as exc:
            raise ExpressivityError(f"corpus file {base / path} cannot be read ({exc.strerror or exc})") from None
        sizes.append(len(data))
        content.update(f"{path}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        content.update(data)
        split = split_of(path)
        parts[split].append(data)
        counts[split] += 1
    splits = {}
    for s in SPLITS:
        joined = b"".join(parts[s])
        if not joined:
            raise ExpressivityError(f"the corpus slice {what} has no {s} text ({len(files)} files: "
                                    f"{counts['train']} train, {counts['val']} val, {counts['test']} test); "
                                    "widen the include patterns")
        splits[s] = torch.frombuffer(bytearray(joined), dtype=torch.uint8)
    listing = hashlib.sha256("".join(p + "\n" for p in files).encode("utf-8", "surrogateescape")).hexdigest()
    return Corpus(root, include, tuple(files), tuple(sizes), splits, counts, listing, content.hexdigest(),
                  python_version())
