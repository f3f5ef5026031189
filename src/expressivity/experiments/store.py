"""The results store: an append-only JSON Lines file, one record per finished run.

``DIR/records.jsonl`` is written by one process only (the sweep driver, holding ``DIR/.lock``);
every record is one ``write`` of one line, flushed and synced before the next run is counted as
recorded, so a SIGKILL at any moment loses nothing that was recorded and can at worst leave a
*torn last line* (a record cut short). Readers skip a torn last line with a warning; the next
writer cuts it off before appending (its run has no record, so it is run, or resumed, again).

Records are keyed by the run id (the configuration's content hash). The driver never appends a
second record for an id it has recorded, except to replace a failure on ``--retry-failed``;
readers keep the last record of each id.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import time
import warnings
from pathlib import Path

from expressivity.errors import ExpressivityError
from expressivity.records import jsonable

RECORDS = "records.jsonl"
LOCK = ".lock"
WORKERS_LOCK = ".workers.lock"  # held shared by local worker processes while they run


class RecordWarning(UserWarning):
    """Something in a results file was skipped (a torn or malformed line, a repeated id)."""


def records_path(path) -> Path:
    """``DIR/records.jsonl`` for a sweep folder, or ``path`` itself for a file."""
    path = Path(path)
    return path / RECORDS if path.is_dir() else path


# the ids this package writes: content_hash of the configuration (records made by hand may name runs otherwise)
_HASH_ID = re.compile(r"[0-9a-f]{16}")


RECORD_STATUSES = ("done", "target-reached", "failed")   # = worker.OK_STATUSES + ("failed",), torch-free here


def _well_formed(record: dict) -> bool:
    """Whether a record has the shape every reader assumes: a ``status`` of :data:`RECORD_STATUSES`, a ``config``
    dict whose ``task`` (if any) is a dict with dict ``args``, and ``lengths`` (if any) a dict from integer
    lengths to dicts of numbers. An edited
    record with ``"lengths": [1]`` or ``"task": "reverse"`` kept its id's hash and made ``results`` end in a
    traceback (an audit, 2026-11-29); it is skipped as a line that is not a run record."""
    config = record.get("config")
    if not isinstance(config, dict):
        return False
    # what worker.record writes (OK_STATUSES, else "failed"): a status of 5 ended in "bad query (Conversion
    # Error ...)", blaming the user's query, and "weird" was averaged as a finished run (a fresh audit, 2026-11-29)
    if record.get("status") not in RECORD_STATUSES:
        return False
    task = config.get("task", {})
    if not isinstance(task, dict) or not isinstance(task.get("args", {}), dict):
        return False
    for part in ("model", "train"):
        if not isinstance(config.get(part, {}), dict):
            return False
    lengths = record.get("lengths")
    if lengths is None:
        return True
    return isinstance(lengths, dict) and all(
        isinstance(key, str) and key.strip().lstrip("-").isdigit() and isinstance(row, dict)
        for key, row in lengths.items())


def read_records(path, warn: bool = True) -> list[dict]:
    """Every record of a sweep folder (or a ``.jsonl`` file), the last one per run id, in file order.

    A torn last line (no newline: the writer was killed mid-line), malformed lines and records
    whose configuration does not hash to their id (edited after they were written) are skipped
    with a :class:`RecordWarning` (not with ``warn=False``: a second read of a file whose faults
    were said already); a missing file gives a one-line error.
    """
    def say(message: str) -> None:
        if warn:
            warnings.warn(message, RecordWarning, stacklevel=3)

    path = records_path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ExpressivityError(f"{path} not found; give a folder written by 'expressivity sweep run'") from None
    except IsADirectoryError:
        raise ExpressivityError(f"{path} is a folder, not a records file") from None
    lines = data.split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a record cut short
    if torn.strip():
        say(f"{path}: ignored a torn last line ({len(torn)} bytes; a writer was killed mid-record); "
            "its run is recorded again when the sweep is run again")
    from expressivity.records import content_hash

    by_id: dict[str, dict] = {}
    bad, repeated, mismatched = [], 0, []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, ValueError):
            bad.append(number)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not _well_formed(record):
            bad.append(number)
            continue
        if _HASH_ID.fullmatch(record["id"]) and content_hash(record["config"]) != record["id"]:
            # the id is the configuration's hash: a record whose configuration changed after it was written
            # would be counted as another configuration's run (a fresh audit, 2026-11-28: one edited record
            # made a cell n = 3 with a seed twice, its own n = 1)
            mismatched.append(number)
            continue
        if record["id"] in by_id:
            # a failed run trained again (--retry-failed) is expected to have a second record
            repeated += by_id[record["id"]].get("status") != "failed"
            del by_id[record["id"]]  # keep file order of the latest
        by_id[record["id"]] = record
    if bad:
        say(f"{path}: skipped {len(bad)} line(s) that are not run records (line {', '.join(map(str, bad[:5]))}"
            f"{', ...' if len(bad) > 5 else ''})")
    if mismatched:
        say(f"{path}: skipped {len(mismatched)} record(s) whose configuration does not match their id (line "
            f"{', '.join(map(str, mismatched[:5]))}{', ...' if len(mismatched) > 5 else ''}: changed after "
            "they were written); their runs count as not recorded, and are trained again when the sweep "
            "is run again")
    if repeated:
        say(f"{path}: {repeated} run(s) have more than one record; the last of each is used")
    return list(by_id.values())


class RecordWriter:
    """Appends records to ``records.jsonl`` (the caller holds the folder lock)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cut_torn_tail()
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _cut_torn_tail(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb+") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                warnings.warn(f"{self.path}: cut off a torn last line ({len(data) - end} bytes; the previous writer "
                              "was killed mid-record); that run is recorded again", RecordWarning, stacklevel=3)
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())

    def append(self, record: dict) -> None:
        """Write one record as one line, then flush it to disk."""
        line = (json.dumps(jsonable(record), separators=(",", ":"), allow_nan=False) + "\n").encode()
        view = memoryview(line)
        while view:
            view = view[os.write(self.fd, view):]
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class FolderBusy(ExpressivityError):
    """Another process holds the sweep folder (:class:`FolderLock`): the one refused must not touch it."""


class FolderLock:
    """Exclusive use of a sweep folder by one driver (``flock`` on ``DIR/.lock``, released when the
    process dies, however it dies). Then waits (up to ``wait_s``) until worker processes left by a
    killed driver have exited, so no two processes ever train into the same run folder."""

    def __init__(self, folder: Path, wait_s: float = 30.0):
        self.folder, self.wait_s = Path(folder), wait_s
        self.fd = None

    def __enter__(self) -> "FolderLock":
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            owner = path.read_text().strip() or "unknown"
            raise FolderBusy(f"{self.folder} is being written by another sweep run (pid {owner}); wait for it "
                             "to finish or stop it, then run again") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        try:
            self._wait_for_workers()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_for_workers(self) -> None:
        wfd = os.open(self.folder / WORKERS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + self.wait_s
            while True:
                try:
                    fcntl.flock(wfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(wfd, fcntl.LOCK_UN)
                    return
                except OSError:
                    if time.monotonic() > deadline:
                        raise ExpressivityError(f"worker processes of an earlier sweep run still use {self.folder}; "
                                                "stop them (see 'ps') and run again") from None
                    time.sleep(0.05)
        finally:
            os.close(wfd)

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None
        return False


def hold_workers_lock(folder: Path) -> int:
    """Called in a worker process: take the shared workers lock of ``folder`` until exit."""
    fd = os.open(Path(folder) / WORKERS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def precision_counts(records: list[dict]) -> dict[str, int]:
    """How many of ``records`` were trained in each precision (records written before the choice
    existed trained in fp32): more than one key means a table or verdict mixes arithmetics."""
    return _execution_counts(records, "precision", "fp32")


def stream_counts(records: list[dict]) -> dict[str, int]:
    """How many of ``records`` drew their training batches from each data stream (1: the host sampler, 2: the
    device sampler; records written before stream 2 existed drew stream 1). A run's id leaves the stream out (a sweep
    resumes on any machine), so more than one key means one table or verdict rests on two samplings of the data."""
    return _execution_counts(records, "stream", 1)


def _execution_counts(records: list[dict], key: str, before: object) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        value = str((r.get("execution") or {}).get(key, before))
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))
