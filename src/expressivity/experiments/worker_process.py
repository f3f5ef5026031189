"""The worker process of the local backend (``python -m expressivity.experiments.worker_process
PARENT_PID THREADS FOLDER``): reads jobs as JSON lines on stdin, writes events as JSON lines on
stdout, exits when its parent is gone. Not imported by the package, so ``-m`` runs it cleanly."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def _watch_parent(parent: int) -> None:
    """Exit at once when the driver is gone (SIGKILL leaves no chance to tell us)."""
    while True:
        if os.getppid() != parent:
            os._exit(3)
        time.sleep(0.1)


def _sender(proto):
    """``send(msg)``: one JSON line to the driver; a driver gone before the watcher saw it (a closed pipe) ends
    this process at once, as the watcher would: it printed a BrokenPipeError traceback into the user's terminal
    after the command had exited (a fresh audit, 2026-11-28)."""
    def send(msg: dict) -> None:
        try:
            proto.write(json.dumps(msg) + "\n")
            proto.flush()
        except OSError:   # BrokenPipeError, or the pipe otherwise gone with its reader
            os._exit(3)
    return send


def _worker_main(parent: int, threads: int, folder: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when we stop
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything printed by library code goes to stderr, not into the protocol
    if folder:
        from expressivity.experiments.store import hold_workers_lock

        hold_workers_lock(Path(folder))
    import torch

    torch.set_num_threads(threads)
    from expressivity.experiments.worker import execute_pack

    send = _sender(proto)
    for line in sys.stdin:
        msg = json.loads(line)
        index = msg["index"]
        records = execute_pack(msg["job"], on_progress=lambda steps: send({"event": "progress", "index": index,
                                                                             "steps": steps}))
        send({"event": "done", "index": index, "records": records})


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
