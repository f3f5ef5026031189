"""The contract of a saved folder: ``manifest.json`` at the top of every folder a command saves
networks into (``circuit``, ``wang-e build``, ``rasp compile``, ``yun build``, ``export``, ``train``,
``sweep run``), and of every folder the Python API saves one into (:func:`~expressivity.save_network`,
and a run folder of :func:`~expressivity.training.run` or ``run_ensemble``: their ``command`` is
the function's name).

It says what the folder is (``kind``), which command wrote it, what each file is, which networks it
holds (relative paths, a label each, and how to read them) and the package versions that wrote it,
so :func:`~expressivity.export.folders.load_saved` reads a folder instead of guessing its layout.

``files`` maps a path relative to the folder to what it is; a path ending in ``/`` stands for a
whole folder whose files the command does not list one by one (a training checkpoint, rewritten
as training goes). ``manifest.json`` lists itself.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from expressivity.errors import ExpressivityError
from expressivity.records import MANIFEST, file_sha256

FORMAT = 1
# What a folder is, as a whole (``Manifest.kind``); "results": figures and tables, no network (demo).
FOLDER_KINDS = ("construction", "yun build", "network", "transformer-lens", "trained runs", "results")
# How one network in it is read (``NetworkEntry.form``).
NETWORK_FORMS = ("network", "trained run", "transformer-lens")

# What the files of a Network folder are (see expressivity.export.safetensors_io.save_network).
NETWORK_FILES = {"network.json": "network structure, residual labels and metadata (JSON)",
                 "weights.safetensors": "network weights (safetensors)"}
RUN_RECORD = "run record: command, configuration and versions"
THIS_FILE = "this manifest: what the folder holds"
# What the files of one trained run's folder are (expressivity.training).
TRAINED_RUN_FILES = {"metrics.jsonl": "training and held-out metrics, one JSON object per line",
                     "checkpoint/": "checkpoint: model weights, configuration and training state"}


@dataclass(frozen=True)
class NetworkEntry:
    """One loadable network of a folder: ``path`` relative to the folder (``"."`` for the folder
    itself), a human ``label``, its ``form`` (one of :data:`NETWORK_FORMS`) and where its construction
    report is: a relative JSON file, optionally with a JSON pointer (``"run.json#/results/0"``)."""

    path: str
    label: str
    form: str = "network"
    report: str | None = None

    def as_dict(self) -> dict:
        return {"path": self.path, "label": self.label, "form": self.form, "report": self.report}


@dataclass(frozen=True)
class Manifest:
    """What ``manifest.json`` holds (see the module notes); ``created_unix`` in seconds since 1970."""

    kind: str
    command: str
    files: dict[str, str]
    networks: tuple[NetworkEntry, ...]
    versions: dict[str, str] = field(default_factory=dict)
    created_unix: float = 0.0
    format: int = FORMAT

    def as_dict(self) -> dict:
        return {"format": self.format, "kind": self.kind, "command": self.command, "files": dict(self.files),
                "networks": [n.as_dict() for n in self.networks], "versions": dict(self.versions),
                "created_unix": self.created_unix}


def versions() -> dict[str, str]:
    """The versions a manifest records: expressivity, Python, NumPy and PyTorch."""
    import numpy as np

    import expressivity
    from expressivity.records import installed_version

    return {"expressivity": expressivity.__version__, "python": platform.python_version(), "numpy": np.__version__,
            "torch": installed_version("torch")}


def network_files(prefix: str = "") -> dict[str, str]:
    """The ``files`` entries of a Network folder saved at ``prefix`` (``"network/"``, or ``""`` for the folder itself)."""
    return {prefix + name: what for name, what in NETWORK_FILES.items()}


def trained_run_files(prefix: str = "") -> dict[str, str]:
    """The ``files`` entries of a trained run's folder at ``prefix`` (``"seed_0/"``, or ``""`` for
    the folder itself); a folder below has its own manifest too."""
    own = {prefix + MANIFEST: "the run's own manifest"} if prefix else {}
    return {prefix + name: what for name, what in TRAINED_RUN_FILES.items()} | own


def replaceable_manifest(folder: Path, kind: str, commands: tuple[str, ...], whole: bool = True) -> Manifest | None:
    """The ``manifest.json`` a writer may replace in ``folder`` (``None`` where there is none), or a
    one-line :class:`ExpressivityError` unless one of ``commands`` wrote it for a folder of ``kind``
    (holding just the folder itself, where ``whole``): replacing any other would lose what it says
    (another command's listing, or a file of the user's that happens to have the name)."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        manifest = read_manifest(folder) if path.is_file() else None
    except ExpressivityError:
        manifest = None
    if manifest is None:
        raise ExpressivityError(f"{path} was not written by expressivity; write into another folder, or move the file")
    if (manifest.kind != kind or manifest.command not in commands
            or (whole and [n.path for n in manifest.networks] != ["."])):
        raise ExpressivityError(f"{folder} is a saved {manifest.kind} folder (written by '{manifest.command}'); "
                                "write into another folder")
    return manifest


def check_replaceable(folder: Path, kind: str, commands: tuple[str, ...], listed_as: str | None = None,
                      writes=()) -> None:
    """One-line :class:`ExpressivityError` unless a saver may write ``folder/manifest.json``
    (:func:`replaceable_manifest`) and no manifest up to two folders above lists ``folder`` as one
    of its networks, unless as a ``listed_as`` entry (a trained run of a ``train --out`` or ``sweep
    run`` folder is the trainer's to write; a construction's network is not a saver's).

    ``writes``: the names the saver writes in ``folder`` (``x/`` for a folder). In a folder without
    a manifest, any of them already there is a user's file of that name, and refused by name; in
    one whose manifest a saver of ``commands`` wrote, they are that saver's. The saver writes only
    those names: other files in the folder are kept (and not listed in its manifest)."""
    folder = Path(folder)
    own = replaceable_manifest(folder, kind, commands)
    here = folder.resolve()
    for root in (here.parent, here.parent.parent):
        try:
            above = read_manifest(root)
        except ExpressivityError:
            continue   # not this saver's to judge; loading that folder reports it
        rel = here.relative_to(root).as_posix()
        for entry in above.networks if above is not None else ():
            if Path(entry.path).as_posix() == rel and entry.form != listed_as:
                raise ExpressivityError(f"{folder} is part of the saved {above.kind} folder {root} (written by "
                                        f"'{above.command}'); write into another folder")
    if own is None:
        refuse_present(folder, writes, commands[0])


def refuse_present(folder: Path, names, writer: str) -> None:
    """One-line :class:`ExpressivityError` naming those of ``names`` (relative; ``x/`` for a folder)
    that exist in ``folder``: files ``writer`` would replace but did not write."""
    present = [name for name in names if (Path(folder) / name.rstrip("/")).exists()
               or (Path(folder) / name.rstrip("/")).is_symlink()]
    if present:
        raise ExpressivityError(f"{folder} holds {', '.join(present)}, which {writer} did not write (no {MANIFEST} "
                                "there lists it); write into another folder, or move the file")


def remove_written(folder: Path, names) -> None:
    """Remove ``names`` (relative; ``x/`` for a folder) from ``folder``, then ``folder`` itself if
    nothing else is left in it: a writer clearing what it wrote keeps what someone else put there."""
    import shutil

    folder = Path(folder)
    for name in names:
        path = folder / name.rstrip("/")
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink()
    try:
        folder.rmdir()
    except OSError:
        pass   # not empty (something else is kept) or already gone


def write_manifest(folder: Path, kind: str, command: str, files: dict[str, str],
                   networks: list[NetworkEntry]) -> Manifest:
    """Write ``folder/manifest.json`` (adding itself to ``files``); returns what was written."""
    from expressivity.records import write_json

    if kind not in FOLDER_KINDS or any(n.form not in NETWORK_FORMS for n in networks):
        raise ValueError(f"unknown folder kind {kind!r} or network form")   # a programming error, not a user's
    manifest = Manifest(kind, command, dict(sorted({**files, MANIFEST: THIS_FILE}.items())), tuple(networks),
                        versions(), time.time())
    write_json(Path(folder) / MANIFEST, manifest.as_dict())
    return manifest


def read_manifest(folder: Path) -> Manifest | None:
    """``folder/manifest.json``, or ``None`` where there is none (a folder saved before manifests).
    A corrupt manifest, or one of an unknown format, is a one-line :class:`ExpressivityError`."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ExpressivityError(f"{path} is not valid JSON ({type(exc).__name__}); save the folder again") from None
    if not isinstance(obj, dict):
        raise ExpressivityError(f"{path} is not a manifest (a JSON object); save the folder again")
    if obj.get("format") != FORMAT:
        raise ExpressivityError(f"{path} has format {obj.get('format')!r}; this version of expressivity reads format "
                                f"{FORMAT} (install the version that wrote it, or save the folder again)")
    try:
        return _parse(obj)
    except (KeyError, TypeError, ValueError) as exc:
        raise ExpressivityError(f"{path} is not a manifest this version can read ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:120]}); save the folder again") from None


def _parse(obj: dict) -> Manifest:
    kind, command, files = obj["kind"], obj["command"], obj["files"]
    if kind not in FOLDER_KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    if not isinstance(command, str) or not isinstance(files, dict):
        raise TypeError("command must be text and files an object")
    networks = []
    for entry in obj["networks"]:
        net = NetworkEntry(str(entry["path"]), str(entry["label"]), entry.get("form", "network"), entry.get("report"))
        if net.form not in NETWORK_FORMS or not _inside(net.path):
            raise ValueError(f"network entry {net.path!r} ({net.form!r}) is not a relative path of a known form")
        # the report pointer too: "../other/report.json" showed another folder's checks as this one's (an audit,
        # 2026-11-28)
        if net.report is not None and not (isinstance(net.report, str) and _inside(net.report.partition("#")[0])):
            raise ValueError(f"network entry {net.path!r} names its report {net.report!r}, not a path inside the folder")
        networks.append(net)
    return Manifest(kind, command, {str(k): str(v) for k, v in files.items()}, tuple(networks),
                    dict(obj.get("versions") or {}), float(obj.get("created_unix") or 0.0))


def _inside(path: str) -> bool:
    """``path`` is relative and stays inside its folder (no ``..``)."""
    return bool(path) and not Path(path).is_absolute() and ".." not in Path(path).parts


def read_pointer(folder: Path, where: str):
    """The JSON value at ``where`` (``"file.json"`` or ``"file.json#/a/0"``, relative to ``folder``),
    or ``None`` when the file or the pointed-to value is missing or unreadable."""
    name, _, pointer = where.partition("#")
    try:
        value = json.loads((Path(folder) / name).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    for part in [p for p in pointer.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")   # RFC 6901 escapes
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


def file_digests(contents: dict[str, bytes]) -> dict[str, str]:
    """SHA-256 of each file's bytes as written, by file name: recorded beside a network, so a folder
    whose files are edited afterwards is read back carrying no claim (:func:`changed_files`)."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}


def description_digest(desc: dict) -> str:
    """SHA-256 of a description (``network.json``, ``expressivity.json``) as JSON without its own
    ``sha256`` field, keys sorted: recorded under the description's own file name, so an edit to the
    description (a position bias, the valid lengths, the claim) is noticed as an edit to the weights
    is. ``desc`` as it reads back from JSON."""
    body = {k: v for k, v in desc.items() if k != "sha256"}
    # allow_nan: a description read back with NaN or Infinity typed into it (never written so) gets a digest
    # that differs from the recorded one, an edit, rather than a ValueError
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()).hexdigest()


def with_own_digest(desc: dict, name: str) -> dict:
    """``desc`` (JSON-ready) with :func:`description_digest` recorded under ``sha256[name]`` (other digests
    kept): call it last, after every field of the description is in place."""
    plain = json.loads(json.dumps(desc, allow_nan=False))
    return {**plain, "sha256": {**(plain.get("sha256") or {}), name: description_digest(plain)}}


def edits(folder: Path, desc: dict, files, own: str, required: bool) -> list[str] | None:
    """What of a saved folder differs from the digests its description ``desc`` (read from the file ``own``)
    records: those of ``files`` whose bytes changed (:func:`changed_files`), then ``own`` if the description
    itself did (:func:`description_digest`). ``None`` when ``required`` (the description's format always
    records them) and a digest is missing: it was removed, which is an edit too. Older formats may have
    none: nothing is then known to differ."""
    recorded = desc.get("sha256")
    if required and not (isinstance(recorded, dict) and {*files, own} <= set(recorded)):
        return None
    changed = changed_files(folder, recorded, files)
    if isinstance(recorded, dict) and own in recorded and description_digest(desc) != recorded[own]:
        changed.append(own)
    return changed


def changed_files(folder: Path, recorded, names) -> list[str]:
    """Those of the files ``names`` of ``folder`` whose bytes differ from the digests ``recorded``
    (:func:`file_digests`; a missing file counts as changed); none when nothing was recorded (folders
    older than the digests). Only ``names`` are read: a recorded name cannot point outside the folder."""
    if not isinstance(recorded, dict):
        return []
    return [name for name, digest in recorded.items() if name in names and (
        not (Path(folder) / name).is_file() or file_sha256(Path(folder) / name) != digest)]
