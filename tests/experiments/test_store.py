"""The results store: one line per record, torn last lines skipped with a warning and cut before
appending, the last record of an id wins, one writer per folder."""

import json
import os

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments.store import FolderLock, RecordWarning, RecordWriter, read_records


def rec(i, status="done"):
    return {"id": f"r{i}", "config": {"seed": i}, "status": status, "final_loss": float("nan")}


def test_append_and_read_back(tmp_path):
    with RecordWriter(tmp_path / "records.jsonl") as w:
        for i in range(3):
            w.append(rec(i))
    records = read_records(tmp_path)
    assert [r["id"] for r in records] == ["r0", "r1", "r2"]
    assert records[0]["final_loss"] == "nan"  # strict JSON: non-finite floats are strings
    assert all(json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines())


def test_a_torn_last_line_is_skipped_with_a_warning_and_cut_by_the_next_writer(tmp_path):
    path = tmp_path / "records.jsonl"
    with RecordWriter(path) as w:
        w.append(rec(0))
    with path.open("a") as f:
        f.write('{"id": "r1", "config": {"se')  # a writer killed mid-line
    with pytest.warns(RecordWarning, match="torn last line"):
        assert [r["id"] for r in read_records(path)] == ["r0"]
    with pytest.warns(RecordWarning, match="cut off a torn last line"):
        w = RecordWriter(path)
    w.append(rec(1))
    w.close()
    assert [r["id"] for r in read_records(path)] == ["r0", "r1"]
    assert path.read_text().count("\n") == 2


def test_malformed_lines_and_repeated_ids(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(rec(0, "failed")) + "\nnot json\n[1]\n" + json.dumps(rec(1)) + "\n"
                    + json.dumps(rec(0)) + "\n")
    with pytest.warns(RecordWarning) as caught:
        records = read_records(path)
    assert [(r["id"], r["status"]) for r in records] == [("r1", "done"), ("r0", "done")]  # the retry replaced the failure
    text = " ".join(str(w.message) for w in caught)
    assert "skipped 2 line(s)" in text and "more than one record" not in text   # a retried failure is expected
    path.write_text(json.dumps(rec(0)) + "\n" + json.dumps(rec(0)) + "\n")      # two finished records are not
    with pytest.warns(RecordWarning, match="1 run\\(s\\) have more than one record"):
        assert [r["id"] for r in read_records(path)] == ["r0"]


def test_missing_store_is_a_one_line_error(tmp_path):
    with pytest.raises(ExpressivityError, match="not found"):
        read_records(tmp_path / "nothing")


def test_one_writer_per_folder(tmp_path):
    with FolderLock(tmp_path):
        with pytest.raises(ExpressivityError, match=f"another sweep run \\(pid {os.getpid()}\\)"):
            with FolderLock(tmp_path):
                pass
    with FolderLock(tmp_path):  # released on exit
        pass


def test_the_lock_waits_for_workers_of_a_dead_driver(tmp_path):
    import fcntl

    fd = os.open(tmp_path / ".workers.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)  # an orphaned worker still holds it
    try:
        with pytest.raises(ExpressivityError, match="worker processes of an earlier sweep run"):
            with FolderLock(tmp_path, wait_s=0.2):
                pass
    finally:
        os.close(fd)
    with FolderLock(tmp_path, wait_s=0.2):
        pass


def test_a_record_whose_configuration_does_not_hash_to_its_id_is_skipped(tmp_path):
    """A fresh audit (2026-11-28): a record edited after it was written ("heads": 1 -> 2) was counted as the other
    configuration's run (a cell n = 3 with one seed twice, its own n = 1), with exit 0 and no warning."""
    from expressivity.records import content_hash

    configs = [{"model": {"heads": h}, "seed": s} for h in (1, 2) for s in (0, 1)]
    lines = [json.dumps({"id": content_hash(c), "config": c, "status": "done"}) for c in configs]
    lines[1] = lines[1].replace('"heads": 1', '"heads": 2')
    lines.append(json.dumps({"id": "run-by-hand", "config": {"x": 1}, "status": "done"}))   # not a hash: read as is
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(RecordWarning, match=r"skipped 1 record\(s\) whose configuration does not match their id "
                                           r"\(line 2: changed after they were written\)"):
        records = read_records(tmp_path)
    assert [r["id"] for r in records] == [content_hash(configs[k]) for k in (0, 2, 3)] + ["run-by-hand"]


@pytest.mark.parametrize("edit", [{"lengths": [1, 2]}, {"lengths": {"4": 5}}, {"lengths": {"abc": {"val_loss": 1.0}}},
                                  {"config": 5}, {"config": {"task": "reverse", "seed": 0}},
                                  {"config": {"task": {"name": "r", "args": [4]}, "seed": 0}},
                                  {"config": {"model": "m", "seed": 0}}])
def test_a_record_of_the_wrong_shape_is_skipped_not_a_traceback(tmp_path, edit):
    """An audit (2026-11-29): an edited record ("lengths": [1, 2], "task": "reverse") kept its id's hash, or had an id
    that is no hash, and `results` ended in an AttributeError."""
    from expressivity.cli.main import cli
    from click.testing import CliRunner

    good = {"id": "run-a", "status": "done", "config": {"task": {"name": "r", "args": {"length": 4}}, "seed": 0},
            "lengths": {"4": {"val_loss": 1.0, "test_loss": 1.0}}}
    (tmp_path / "records.jsonl").write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "run-b", **edit}) + "\n")
    with pytest.warns(RecordWarning, match=r"skipped 1 line\(s\) that are not run records \(line 2\)"):
        assert [r["id"] for r in read_records(tmp_path)] == ["run-a"]
    result = CliRunner().invoke(cli, ["results", str(tmp_path / "records.jsonl"), "--runs", "--json"])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("status", [5, "weird", None, ""])
def test_a_record_whose_status_is_not_one_the_worker_writes_is_skipped_with_a_warning(tmp_path, status):
    """A fresh audit (2026-11-29): status 5 made results end in "bad query (Conversion Error ...)", blaming the
    user's query, and status "weird" was averaged as a finished run."""
    import json

    from expressivity.experiments.store import RECORD_STATUSES, RecordWarning, read_records

    good = {"id": "a", "config": {}, "status": "done"}
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "b", "status": status}) + "\n")
    with pytest.warns(RecordWarning):
        kept = read_records(path)
    from expressivity.experiments.worker import OK_STATUSES

    assert [r["id"] for r in kept] == ["a"] and set(RECORD_STATUSES) == {*OK_STATUSES, "failed"}
