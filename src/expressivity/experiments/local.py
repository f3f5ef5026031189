"""The local backend: a pool of worker processes, each training one pack at a time.

Workers are plain subprocesses (``python -m expressivity.experiments.worker_process``) speaking JSON
Lines: a job per line on stdin, events on stdout (``progress``, ``done`` with the records). Each
sets its PyTorch threads so the pool does not oversubscribe the CPU (``threads x workers <=
cores``; a contended 2-thread default made small trainings ten times slower here). A worker
exits when its driver dies, however it dies: it watches its parent process; and while it lives
it holds the folder's shared workers lock (see :class:`~expressivity.experiments.store.FolderLock`).
A worker that dies mid-pack (out of memory, killed) is replaced; its pack is reported as crashed.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator


def cpu_count() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def run_local(jobs: list[tuple[int, dict]], workers: int, threads: int,
              folder: Path | None = None) -> Iterator[tuple[str, int, object]]:
    """Run ``jobs`` (``(index, job)`` pairs, see :func:`~expressivity.experiments.worker.execute_pack`)
    on ``workers`` processes with ``threads`` PyTorch threads each.

    Yields ``("start", index, None)``, ``("progress", index, steps)``, ``("done", index, records)``
    and ``("crashed", index, reason)`` as they happen. Closing the generator (or an exception in
    the consumer, Ctrl-C included) stops every worker.
    """
    queue = list(jobs)
    procs: dict[int, _Worker] = {}
    sel = selectors.DefaultSelector()
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}

    def spawn() -> None:
        w = _Worker(env, threads, folder)
        procs[w.fd] = w
        sel.register(w.fd, selectors.EVENT_READ)

    try:
        while True:
            busy = sum(w.index is not None for w in procs.values())
            while queue and len(procs) < min(workers, busy + len(queue)):
                spawn()
            for w in list(procs.values()):
                if w.index is None and queue:
                    index, job = queue.pop(0)
                    w.give(index, job)
                    yield "start", index, None
            if not any(w.index is not None for w in procs.values()):
                return
            for key, _ in sel.select(timeout=1.0):
                w = procs[key.fd]
                lines, alive = w.read()
                for msg in lines:
                    if msg.get("event") == "progress":
                        yield "progress", msg["index"], msg["steps"]
                    elif msg.get("event") == "done":
                        w.index = None
                        yield "done", msg["index"], msg["records"]
                if not alive:
                    sel.unregister(w.fd)
                    del procs[w.fd]
                    if w.index is not None:
                        index, w.index = w.index, None
                        yield "crashed", index, w.death()
                    w.stop()
    finally:
        for w in procs.values():
            w.stop()
        sel.close()


class _Worker:
    def __init__(self, env: dict, threads: int, folder: Path | None):
        args = [sys.executable, "-m", "expressivity.experiments.worker_process", str(os.getpid()), str(threads),
                str(folder) if folder is not None else ""]
        # Own process group: Ctrl-C at the terminal reaches the driver only, which then stops us.
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     start_new_session=True)
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buffer = b""
        self.index: int | None = None

    def give(self, index: int, job: dict) -> None:
        self.index = index
        try:
            self.proc.stdin.write((json.dumps({"index": index, "job": job}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died; its stdout reaches EOF and the job is reported as crashed

    def read(self) -> tuple[list[dict], bool]:
        alive = True
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                alive = False
                break
            self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # not ours (a library printed to stdout); the worker keeps stdout for us
        return out, alive

    def death(self) -> str:
        code = self.proc.wait()
        how = f"signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exit code {code}"
        return f"worker: the worker process died ({how}); if it ran out of memory, use a smaller pack (--pack) or fewer workers"

    def stop(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
