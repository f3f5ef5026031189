"""The local backend's worker process: a driver that is gone ends it quietly."""

import os

import pytest

from expressivity.experiments import worker_process


def test_a_worker_whose_driver_is_gone_exits_quietly_instead_of_a_broken_pipe_traceback(monkeypatch):
    read, write = os.pipe()
    os.close(read)   # the driver is gone: nobody reads the protocol
    proto = os.fdopen(write, "w")

    def exit_now(code):
        raise SystemExit(code)

    monkeypatch.setattr(worker_process.os, "_exit", exit_now)
    with pytest.raises(SystemExit) as ended:
        worker_process._sender(proto)({"event": "progress", "index": 0, "steps": 1})
    assert ended.value.code == 3
    # its buffer still holds the line nobody reads: point the descriptor at /dev/null so closing it does not fail
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, proto.fileno())
    os.close(devnull)
    proto.close()


def test_a_worker_sends_one_json_line_per_event():
    read, write = os.pipe()
    with os.fdopen(write, "w") as proto:
        worker_process._sender(proto)({"event": "done", "index": 2, "records": []})
    with os.fdopen(read) as got:
        assert got.read() == '{"event": "done", "index": 2, "records": []}\n'
