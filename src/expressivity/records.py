"""What every result carries about itself: JSON-ready values, run records, content hashes.

Library code writes results through these helpers (the CLI only prints them), so a run made
from Python and one made from the command line record the same facts: command, configuration,
seed, package and Python versions, and time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import time
import uuid
from datetime import date, time as clock_time, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import expressivity


def jsonable(value: Any) -> Any:
    """Convert NumPy arrays/scalars, Fractions, Paths and dataclass-like objects into JSON-ready values.

    Exact numbers become ``int`` or the string ``"p/q"`` (a ``Decimal``: ``int`` or its float, a table's
    number); dates and times their ISO text, an interval its text (``1 day, 0:00:00``), bytes their hex and a
    UUID its text; floats stay floats (``inf``/``nan``
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
    if isinstance(value, Decimal):   # DuckDB's DECIMAL (x * 1.5, a ::DECIMAL cast): a JSON number, as it prints
        return int(value) if value.is_finite() and value == value.to_integral_value() else jsonable(float(value))
    if isinstance(value, Path):
        return str(value)
    # DuckDB reads a table's dates, times, intervals, blobs and UUIDs as these (a CSV's date column made
    # `results --json` and Parquet output end in "date is not JSON serializable": an audit, 2026-11-29)
    if isinstance(value, (date, clock_time)):   # datetime is a date
        return value.isoformat()
    if isinstance(value, timedelta):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
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


def installed_version(package: str) -> str | None:
    """The installed version of ``package`` without importing it: torch takes seconds to import, and
    commands that never run it (the exact evaluators, the RASP interpreter) still record which one
    is installed. The version the package itself reports (``torch.__version__``, with its local
    tag such as ``+cpu``) where it is imported already or keeps it in ``version.py``; else the
    distribution's metadata; ``None`` when it is not installed."""
    import importlib.util
    import sys

    module = sys.modules.get(package)
    if module is not None and isinstance(getattr(module, "__version__", None), str):
        return str(module.__version__)
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        try:
            text = (Path(folder) / "version.py").read_text()
        except OSError:
            continue
        found = re.search(r"^__version__\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        if found:
            return found.group(1)
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=None)
def source_revision(where: Path | None = None) -> dict | None:
    """The git commit of the source tree the package runs from (``where``: its folder by default), and
    whether its tracked files differ from it: ``{"commit": 40 hex digits, "dirty": bool}``. The package
    version alone does not say which code made a result; ``None`` where the package is not in a git
    checkout that tracks it (an installed wheel, a copied tree) or git is not available."""
    import shutil
    import subprocess

    folder = Path(where) if where is not None else Path(expressivity.__file__).resolve().parent
    git = shutil.which("git")
    if git is None:
        return None
    try:
        head = subprocess.run([git, "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        # a folder git does not track (an installed copy inside an ignored .venv of some repository)
        # is not that repository's code
        tracked = subprocess.run([git, "-C", str(folder), "ls-files", "--", "."], capture_output=True, text=True,
                                 timeout=10)
        if head.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}", head.stdout.strip()) or not tracked.stdout.strip():
            return None
        status = subprocess.run([git, "-C", str(folder), "status", "--porcelain", "--untracked-files=no", "--", "."],
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": status.returncode != 0 or bool(status.stdout.strip())}


def hardware(device: str | None = "cpu") -> dict:
    """Where a run computes, for the record beside its verdict and minutes: ``{"device": "cpu" or
    "cuda" (``"auto"`` resolved as training resolves it), "name": the GPU's name on CUDA, else the
    CPU's model (``None`` where the system does not say), "cpus": logical cores}``."""
    import os

    device = device or "cpu"
    name = None
    if device in ("auto", "cuda"):
        import torch

        if torch.cuda.is_available():
            device, name = "cuda", torch.cuda.get_device_name(0)
        else:
            device = "cpu" if device == "auto" else device
    if name is None and device == "cpu":
        try:
            name = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                         if line.startswith("model name")), None)
        except OSError:
            pass
        name = name or platform.processor() or None
    return {"device": device, "name": name, "cpus": os.cpu_count()}


# packages beyond numpy and torch whose version can move a recorded number
RECORDED_PACKAGES = ("scipy", "mpmath", "duckdb")


def run_record(command: str, config: dict, seed: int | None = None) -> dict:
    """What every run records about itself: command, config, seed, package versions and the source's
    git commit (:func:`source_revision`), platform, time."""
    return {
        "command": command,
        "config": jsonable(config),
        "seed": seed,
        "expressivity_version": expressivity.__version__,
        "source": source_revision(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": installed_version("torch"),
        # every verdict interval comes from scipy, the Wang & E coefficients from mpmath, the tables from DuckDB
        # (an extra: None when not installed); a newcomer audit, 2026-11-29, found them unrecorded
        **{name: installed_version(name) for name in RECORDED_PACKAGES},
        "created_unix": time.time(),
    }


def write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file beside it, renamed into place; removed if the
    write fails), so a crash or a full disk leaves the old file whole, never half a new one. The
    temporary file's name is this writer's own (:func:`private_sibling`): two processes writing one
    file each rename a whole file into place, never one the other is still writing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = private_sibling(path)
    try:
        with open(tmp, "x") as f:   # "x": a name nobody else holds
            f.write(text)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def private_sibling(path: Path, suffix: str = ".tmp") -> Path:
    """A hidden name beside ``path`` that no other writer uses at the same time (``.NAME.PID-RANDOM`` +
    ``suffix``, ``NAME`` cut to 200 characters so the whole stays within a file system's 255): a fixed
    ``NAME.tmp`` let two writers of one file rename each other's half-written file into place (a fresh
    audit, 2026-11-28: 8,851 truncated reads). Open it with mode ``"x"``: a name taken is an error, never
    another writer's file."""
    import os
    import secrets

    path = Path(path)
    return path.with_name(f".{path.name[:200]}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (:func:`write_text`)."""
    write_text(path, json.dumps(jsonable(obj), indent=2) + "\n")


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in blocks (a checkpoint may be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


OUTPUT_MARKER = "run.json"  # every output folder this package writes has a run record
# What a folder's writer wrote: its manifest (expressivity.manifest defines the format; here only
# its "files" listing is read, to tell the writer's files from a user's before replacing a folder).
MANIFEST = "manifest.json"


def check_output_dir(path: Path, command: str | None = None, *, replaces: bool = False) -> Path:
    """Refuse an output folder that would be unsafe to replace, before any work starts.

    Allowed: a path that does not exist, an empty folder, or a folder this package wrote before
    (it holds ``run.json``). With ``command``, only a folder written by that same command
    (``run.json``'s ``command``) is allowed: a training run, a sweep or another construction's
    folder is never overwritten, and the path may not lie inside another command's output folder.
    With ``replaces`` (the folder is replaced as a whole: :class:`staged_output`) a folder holding
    anything its ``manifest.json`` does not list is refused with their names
    (:func:`refuse_unlisted`): a user's file put there is never deleted.
    """
    from expressivity.errors import ExpressivityError

    path = Path(path)
    if not str(path).strip():
        raise ExpressivityError("--out is empty; name a new folder such as --out results")
    if path.resolve() == Path.cwd().resolve():
        raise ExpressivityError(f"--out {path} is the current folder, which would be replaced; name a new folder")
    if command is not None:  # a command's --out; library callers nest outputs in their own folders
        refuse_inside_other_output(path)   # first: the writability probe below touches the parent folder
    # The output is staged beside the folder and renamed into place: the parent must be writable.
    check_writable_parent(path)
    if path.is_symlink() and not path.is_dir():
        # A dangling link: renaming the finished folder onto it would fail after all the work.
        raise ExpressivityError(f"--out {path} is a symbolic link to nothing; choose a new folder name")
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
        if replaces and (path / OUTPUT_MARKER).exists():
            refuse_unlisted(path)
    return path


def unlisted_files(folder: Path) -> list[str] | None:
    """What lies in ``folder`` that its ``manifest.json`` does not list, as paths relative to it
    (``/``-separated; a symbolic link counts as a file, an empty folder as ``name/``; a listed
    ``x/`` covers everything under ``x``), sorted; ``None`` where there is no readable manifest."""
    import os

    folder = Path(folder)
    try:
        listed = json.loads((folder / MANIFEST).read_text()).get("files")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    if not isinstance(listed, dict):
        return None
    whole = tuple(k for k in listed if k.endswith("/"))

    def covered(rel: str) -> bool:
        return rel in listed or rel.startswith(whole)

    found = []
    for root, dirs, files in os.walk(folder):   # links to folders are listed in dirs, not followed
        here = Path(root).relative_to(folder)
        links = [d for d in dirs if (Path(root) / d).is_symlink()]
        found += [rel for rel in ((here / name).as_posix() for name in files + links) if not covered(rel)]
        if not dirs and not files and here != Path("."):
            found += [] if covered(here.as_posix() + "/") else [here.as_posix() + "/"]
        dirs[:] = [d for d in dirs if d not in links and not covered((here / d).as_posix() + "/")]
    return sorted(found)


def refuse_unlisted(folder: Path) -> None:
    """One-line :class:`~expressivity.errors.ExpressivityError` naming what lies in ``folder`` that
    the command which wrote it did not (:func:`unlisted_files`), before the folder is replaced; a
    folder without a manifest (written before manifests listed files) cannot be told apart from
    one a user added to, so it is refused too."""
    from expressivity.errors import ExpressivityError

    owner = written_by(folder) or "the command that wrote it"
    extra = unlisted_files(folder)
    if extra is None:
        raise ExpressivityError(f"--out {folder} was written by '{owner}' without a {MANIFEST} listing its files (an "
                                "older version), so files of yours in it cannot be told from its own; move it away or "
                                "choose a new folder")
    if extra:
        names = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ExpressivityError(f"--out {folder} holds {names}, which '{owner}' did not write; move "
                                f"{'it' if len(extra) == 1 else 'them'} out of the folder, or choose a new folder, so "
                                "nothing of yours is deleted when it is replaced")


def check_writable_parent(path: Path) -> None:
    """Refuse ``--out path`` when its nearest existing ancestor folder cannot be written (tried)."""
    from expressivity.errors import ExpressivityError

    parent = Path(path).absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise ExpressivityError(f"--out {path}: {parent} is a file, not a folder; choose a path under a folder")
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


def _process_tag() -> str:
    """A short tag of this host and PID namespace: where a pid names one process."""
    import hashlib
    import os

    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return hashlib.sha256(f"{os.uname().nodename}/{namespace}".encode()).hexdigest()[:8]


class staged_output:
    """Context manager: write a whole output folder, or nothing.

    Yields a fresh sibling folder ``<path>.partial-<tag>-<pid>`` (:func:`_process_tag`); on success
    it replaces ``path`` (after :func:`check_output_dir` allowed it, with ``replaces``: checked again just before the
    swap, so a file a user put into the old folder meanwhile is not deleted either), on any
    failure or interruption it is removed, with every parent folder made for it.
    """

    def __init__(self, path: Path, command: str | None = None):
        import os

        self.command = command
        path = Path(path)
        if path.is_symlink() and path.exists():
            # written through the link, as train and sweep write: the link itself was renamed aside and left
            # behind as "<name>.replaced-<pid>", the folder it named untouched (a fresh audit, 2026-11-28)
            check_output_dir(path, command, replaces=True)
            path = path.resolve()
        self.path = check_output_dir(path, command, replaces=True)
        self.stage = self.path.with_name(f"{self.path.name}.partial-{_process_tag()}-{os.getpid()}")

    def _remove_stale_stages(self) -> None:
        """Stages of this output left by processes that died (kill -9) before they could remove them:
        only stages named with this host's and PID namespace's tag (a pid is known dead only there; a
        writer in another container or on another host sharing the folder is left alone)."""
        import glob
        import os
        import shutil

        mine = f"{self.path.name}.partial-{_process_tag()}-"
        for stage in self.path.parent.glob(f"{glob.escape(mine)}*"):
            pid = stage.name[len(mine):]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:   # no such process here: nobody is writing it
                shutil.rmtree(stage, ignore_errors=True)
            except (PermissionError, OverflowError):
                pass

    def __enter__(self) -> Path:
        import shutil

        self._remove_stale_stages()
        shutil.rmtree(self.stage, ignore_errors=True)
        self.created = make_parents(self.stage)
        try:
            self.stage.mkdir()
        except BaseException:
            remove_empty(self.created)
            raise
        return self.stage

    def __exit__(self, exc_type, exc, tb):
        import shutil

        if exc_type is not None:
            shutil.rmtree(self.stage, ignore_errors=True)
            remove_empty(self.created)
            return False
        old = self.path.with_name(f"{self.path.name}.replaced-{self.stage.name.rsplit('-', 1)[-1]}")
        try:
            check_output_dir(self.path, self.command, replaces=True)   # what the user did while it ran
            if self.path.exists():
                self.path.rename(old)
            self.stage.rename(self.path)
        except BaseException:
            # Something appeared at the path meanwhile (or the rename failed): keep what was there.
            if old.exists() and not self.path.exists():
                old.rename(self.path)
            shutil.rmtree(self.stage, ignore_errors=True)
            remove_empty(self.created)
            raise
        shutil.rmtree(old, ignore_errors=True)
        return False


# ---- output folders owned by a command, and single output files ---------------------------------
def written_by(folder: Path) -> str | None:
    """The command recorded in ``folder/run.json`` when ``folder`` is an output folder of this
    package (its run record is a JSON object with a ``command``), else ``None``."""
    marker = Path(folder) / OUTPUT_MARKER
    if not marker.is_file():
        return None
    try:
        command = json.loads(marker.read_text()).get("command")
    except (OSError, ValueError, AttributeError):
        return None
    return command if isinstance(command, str) else None


def refuse_inside_other_output(path: Path) -> None:
    """Refuse a path inside an existing output folder (a sweep, a training run, a construction):
    that folder belongs to the command that wrote it, and a file added or replaced there would be
    read, resumed or replaced with it."""
    from expressivity.errors import ExpressivityError

    for folder in Path(path).absolute().parents:
        owner = written_by(folder)
        if owner is not None:
            raise ExpressivityError(f"--out {path} is inside {folder}, the output of '{owner}'; write outside "
                                    "that folder so none of its files is replaced")


class OutputFile:
    """What a command writes as one ``--out FILE``, and how to recognise a file it wrote before.

    ``recognise(path)`` says whether the existing file at ``path`` is one this same command wrote
    (a marker inside the file: a run record, PNG/Parquet metadata, an HTML generator tag, or the
    same CSV columns); only such a file is replaced. See :func:`check_output_file`.
    """

    def __init__(self, command: str, kind: str, recognise):
        self.command, self.kind, self.recognise = command, kind, recognise

    @classmethod
    def json(cls, command: str) -> "OutputFile":
        """A JSON object whose ``run`` is the run record of ``command``."""
        def recognise(path: Path) -> bool:
            try:
                run = json.loads(path.read_text()).get("run")
            except (OSError, ValueError, AttributeError):
                return False
            return isinstance(run, dict) and run.get("command") == command
        return cls(command, "a JSON result", recognise)

    @classmethod
    def csv(cls, command: str, header: str) -> "OutputFile":
        """A CSV table whose first line is ``header`` (the same columns this command writes now)."""
        def recognise(path: Path) -> bool:
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    first = f.readline(len(header) + 2)
            except (OSError, UnicodeDecodeError):
                return False
            return first.rstrip("\r\n") == header.rstrip("\r\n")
        return cls(command, "a CSV table with the same columns", recognise)

    @classmethod
    def png(cls, command: str) -> "OutputFile":
        """A PNG whose ``Software`` text chunk is :meth:`software` (see :func:`png_text`)."""
        return cls(command, "a PNG figure", lambda path: png_text(path).get("Software") == cls.software(command))

    @classmethod
    def tagged(cls, command: str, kind: str, tag: bytes, within: int = 4096) -> "OutputFile":
        """A file holding the bytes ``tag`` within its first ``within`` bytes (an HTML generator tag)."""
        def recognise(path: Path) -> bool:
            try:
                with open(path, "rb") as f:
                    return tag in f.read(within)
            except OSError:
                return False
        return cls(command, kind, recognise)

    @staticmethod
    def software(command: str) -> str:
        """The producer name written into figures and tables: ``expressivity <command>``."""
        return f"expressivity {command}"


def png_text(path: Path) -> dict:
    """The ``tEXt`` chunks of a PNG file (keyword -> text), read up to the image data; ``{}`` for
    anything that is not a readable PNG."""
    import struct

    found = {}
    try:
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                return {}
            for _ in range(64):  # text chunks come before the image data; a bound against corrupt files
                head = f.read(8)
                if len(head) < 8:
                    break
                length, kind = struct.unpack(">I4s", head)
                if kind == b"IDAT" or length > 1 << 20:
                    break
                data = f.read(length)
                f.read(4)  # CRC
                if kind == b"tEXt" and b"\x00" in data:
                    key, _, value = data.partition(b"\x00")
                    found[key.decode("latin-1")] = value.decode("latin-1")
    except OSError:
        return {}
    return found


def check_output_file(path, output: OutputFile) -> Path:
    """Refuse ``--out FILE`` unless writing it loses nothing, before any work starts.

    Allowed: a path where nothing exists, or an existing regular file that ``output`` recognises
    as written by the same command. Refused (one-line :class:`ExpressivityError`): an empty name,
    a folder, a symbolic link (dangling or not), a file of any other origin, a path inside another
    command's output folder, or one whose parent cannot be created or written.
    """
    from expressivity.errors import ExpressivityError

    if not str(path).strip():
        raise ExpressivityError("--out is empty; name a new file")
    path = Path(path)
    if path.is_dir():
        raise ExpressivityError(f"--out {path} is a folder; give a file name")
    refuse_inside_other_output(path)   # first: the writability probe below touches the parent folder
    check_writable_parent(path)
    if path.is_symlink():
        raise ExpressivityError(f"--out {path} is a symbolic link; give the name of a new file, not a link")
    if path.exists():
        if not path.is_file():
            raise ExpressivityError(f"--out {path} exists and is not a regular file; choose a new file name")
        if not output.recognise(path):
            raise ExpressivityError(f"--out {path} exists and is not {output.kind} written by '{output.command}'; "
                                    "choose a new file name so it is not replaced")
    return path


class staged_file:
    """Context manager: write one output file whole, or nothing.

    Checks the path with :func:`check_output_file`, yields a temporary path beside it (same folder,
    same suffix, so writers that pick a format from the suffix still work), and renames it onto
    ``path`` on success. On any failure or interruption the temporary file, and every folder
    created for it, is removed.
    """

    def __init__(self, path, output: OutputFile):
        import os

        self.path = check_output_file(path, output)
        self.temp = self.path.with_name(f".{self.path.name}.partial-{os.getpid()}{self.path.suffix}")
        self.created: list[Path] = []

    def __enter__(self) -> Path:
        self.created = make_parents(self.path)
        return self.temp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                if self.path.exists() and not self.path.is_file() or self.path.is_symlink():
                    raise FileExistsError(f"{self.path} appeared while it was written")
                self.temp.replace(self.path)
                return False
            except BaseException:
                self._clean()
                raise
        self._clean()
        return False

    def _clean(self) -> None:
        self.temp.unlink(missing_ok=True)
        remove_empty(self.created)


class folder_in_use:
    """Exclusive use of an existing folder by this process for a ``with`` block: ``flock`` on the
    folder itself (its inode stays whatever files are replaced inside), released when the block
    ends or the process dies, however it dies. A second process is refused in one line naming
    ``what`` (two ``train --resume`` of one run interleaved its metrics and one tracebacked, a fresh
    audit, 2026-11-28). On a filesystem that cannot lock a folder the block runs unguarded."""

    def __init__(self, folder: Path, what: str):
        self.folder, self.what, self.fd = Path(folder), what, None

    def __enter__(self) -> "folder_in_use":
        import errno
        import fcntl
        import os

        from expressivity.errors import ExpressivityError

        fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ExpressivityError(f"{self.folder} is in use by another {self.what}; wait for it to finish or "
                                        "stop it, then run again") from None
            # a filesystem that cannot lock a folder (NFS: EBADF; Lustre: ENOSYS): the command runs unguarded,
            # as it did before there was a lock, rather than being refused on such a filesystem
            return self
        self.fd = fd
        return self

    def __exit__(self, *exc) -> bool:
        import os

        if self.fd is not None:
            os.close(self.fd)   # closing the descriptor releases the flock
            self.fd = None
        return False


def make_parents(path: Path) -> list[Path]:
    """Make the missing parent folders of ``path``, outermost first; returns those made (for
    :func:`remove_empty`). On a failure part-way, the ones made so far are removed again."""
    made = []
    try:
        for folder in reversed([p for p in Path(path).absolute().parents if not p.exists()]):
            made.append(folder)  # first: an interruption right after mkdir must still find it
            folder.mkdir()
    except BaseException:
        remove_empty(made)
        raise
    return made


def remove_empty(folders: list[Path]) -> None:
    """Remove the folders :func:`make_parents` made, innermost first, where they are still empty."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            pass  # something else was put there meanwhile: not ours to remove
