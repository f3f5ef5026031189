"""``expressivity sweep run|show`` as a user runs them, killed with SIGKILL included."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli
from expressivity.experiments import run_sweep, sweep_from_spec

from tests.experiments.helpers import BASE, grid_spec, write_spec

import expressivity

SRC = Path(expressivity.__file__).resolve().parents[1]  # the subprocesses import what this test imports


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_sweep_run_json_then_show(tmp_path):
    spec = write_spec(tmp_path / "s.json", grid_spec({"train.lr": [1e-3, 1e-2], "seed": [0, 1]},
                                                      select={"train.lr": "min val_loss"}))
    code, out, err = run("sweep", "run", spec, "--out", tmp_path / "o", "--workers", "2", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert (obj["runs"], obj["done"], obj["failed"], obj["backend"], obj["packs"]) == (4, 4, 0, "local", 1)
    assert obj["run"]["command"] == "sweep run"
    assert json.loads((tmp_path / "o" / "run.json").read_text())["config"]["select"] == {"train.lr": "min val_loss"}
    code, out, _ = run("sweep", "show", spec, "--json")
    shown = json.loads(out)
    assert code == 0 and shown["runs"] == 4 and shown["varying"] == {"train.lr": [1e-3, 1e-2]} and shown["packs"] == 1
    assert shown["pack_sizes"] == {"4": 1} and shown["planning_seconds"] >= 0
    code, out, _ = run("sweep", "show", spec)
    assert code == 0 and "4 runs in 1 pack (1 pack of 4)" in out and "select train.lr: min val_loss" in out


def test_prints_in_a_python_sweep_file_stay_out_of_the_json(tmp_path):
    f = tmp_path / "noisy.py"
    f.write_text("print('hello from the sweep file')\n"
                 "def configs():\n    print('making configs')\n"
                 f"    return [{BASE!r}]\n".replace("None", "None"))
    code, out, err = run("sweep", "show", f, "--json")
    assert code == 0 and json.loads(out)["runs"] == 1


def test_failures_exit_1_with_a_count(tmp_path):
    spec = write_spec(tmp_path / "s.json", grid_spec({"train.lr": [1e-3, 1e6], "seed": [0]}))
    code, out, err = run("sweep", "run", spec, "--out", tmp_path / "o", "--workers", "1")
    assert code == 1 and "1 done and 1 failed now" in out
    assert "error: 1 of 2 runs failed (nan: 1)" in err and len(err.strip().splitlines()) == 1
    # a diverged run is a result: --retry-failed trains crashed runs only, so it is not offered (an audit, 2026-11-29:
    # it trained none); the listing it names shows the failed run itself, selection or not
    assert "--retry-failed" not in err and "change its learning rate" in err
    listing = err.split("list them with: expressivity ")[1].split(";")[0]
    code, out, _ = run(*shlex.split(listing))
    rows = json.loads(out)["rows"]
    assert code == 0 and [(r["status"], r["reason"][:4], r["train.lr"]) for r in rows] == [("failed", "nan:", 1e6)], rows


@pytest.mark.parametrize("args, needle", [
    (["--workers", "0"], "--workers"),
    (["--workers", "x"], "--workers"),
    (["--threads", "-1"], "--threads"),
    (["--pack", "0"], "--pack"),
    (["--backend", "spark"], "--backend"),
    (["--device", "tpu"], "--device"),
    (["--workers", "100000"], "far more than"),
    # a fresh audit (2026-11-28): 2 workers x 2 threads ran on 2 cores ("the pool never oversubscribes the CPU")
    (["--workers", str(max(2, os.cpu_count() or 1)), "--threads", "2"], "oversubscribes"),
])
def test_bad_options_are_one_line_errors(tmp_path, args, needle):
    spec = write_spec(tmp_path / "s.json", grid_spec({"seed": [0]}))
    code, _, err = run("sweep", "run", spec, "--out", tmp_path / "o", *args)
    assert code == 2 and err.startswith("error:") and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("content, needle", [
    ("{", "not valid JSON"),
    ("", "not valid JSON"),
    ('{"base": {"task": {"name": "nope"}}, "grid": {"seed": [0]}}', "nope"),
    ('{"base": {}, "grid": {"seed": [1e999]}}', "finite"),
    ('{"base": {}, "grid": {"seed": [0]}}', "every run needs"),
    ('{"grid": {"seed": [0]}, "base": ' + json.dumps(BASE) + ', "select": {"train.lr": "min"}}', "select rule"),
    ("\x00\xff", "not valid JSON"),
])
def test_bad_sweep_files(tmp_path, content, needle):
    (tmp_path / "s.json").write_text(content, errors="surrogateescape")
    code, _, err = run("sweep", "run", tmp_path / "s.json", "--out", tmp_path / "o")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_bad_paths(tmp_path):
    spec = write_spec(tmp_path / "s.json", grid_spec({"seed": [0]}))
    code, _, err = run("sweep", "run", tmp_path / "missing.json", "--out", tmp_path / "o")
    assert code == 2 and "not found" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run("sweep", "run", spec, "--out", tmp_path / "file")
    assert code == 2 and err.startswith("error:")
    code, _, err = run("sweep", "run", spec, "--out", "")
    assert code == 2 and "--out" in err
    code, _, err = run("sweep", "run", spec)
    assert code == 2 and "--out" in err


def _start(spec, out, pack=3):
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen([sys.executable, "-m", "expressivity.cli.main", "sweep", "run", str(spec), "--out", str(out),
                             "--workers", "2", "--pack", str(pack)], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the sweep ended before it could be killed: {proc.communicate()}"
        assert time.monotonic() < deadline, "timed out waiting for the sweep"
        time.sleep(0.02)


def _lines(out):
    path = out / "records.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def test_killed_twice_with_sigkill_every_run_is_recorded_exactly_once(tmp_path):
    base = {**BASE, "train": {**BASE["train"], "steps": 300, "eval_every": 50, "checkpoint_every": 25}}
    spec = write_spec(tmp_path / "s.json", {"base": base, "select": {"train.lr": "min val_loss"}, "grid": [
        {"train.lr": [1e-3, 1e-2], "seed": [0, 1, 2]},  # two ensembles of 3
        {"model.heads": [2], "seed": [0]}]})            # and one single run
    out = tmp_path / "o"
    # 1: kill the driver alone while it trains (a checkpoint exists, nothing recorded): its workers
    #    must notice and exit by themselves.
    proc = _start(spec, out)
    _wait_for(lambda: any(out.glob("packs/*/ensemble/config.json")) or any(out.glob("runs/*/checkpoint/config.json")),
              proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with (out / "records.jsonl").open("a") as f:
        f.write('{"id": "torn')  # as if the kill had cut a record in half
    # 2: kill the whole process group after some runs are recorded.
    proc = _start(spec, out)
    _wait_for(lambda: _lines(out) >= 1, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = _lines(out)
    # 3: run to the end.
    proc = _start(spec, out)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "cut off a torn last line" in stderr or done_before > 0
    ids = [json.loads(line)["id"] for line in (out / "records.jsonl").read_text().splitlines()]
    sw = sweep_from_spec(json.loads(spec.read_text()))
    assert sorted(ids) == sorted(sw.ids()) and len(ids) == len(set(ids)) == 7  # each exactly once
    assert 0 < done_before < 7, "the second kill should land mid-sweep"
    # Nothing lost or bent: the killed-and-resumed sweep equals one run without interruption.
    run_sweep(sw, tmp_path / "ref", workers=2, max_pack=3)
    ref = {json.loads(r)["id"]: json.loads(r) for r in (tmp_path / "ref" / "records.jsonl").read_text().splitlines()}
    got = {json.loads(r)["id"]: json.loads(r) for r in (out / "records.jsonl").read_text().splitlines()}
    assert all(got[i]["lengths"] == ref[i]["lengths"] and got[i]["final_loss"] == ref[i]["final_loss"] for i in ref)
    assert not list(out.glob("*.partial*"))


@pytest.mark.parametrize("command", [["sweep", "show", ""], ["sweep", "run", "", "--out", "OUT"]])
def test_an_empty_sweep_file_is_named_as_empty(command, tmp_path):
    """A fresh fuzz (2026-11-28): '' became Path('.'), and the error said "sweep file . not found"."""
    from click.testing import CliRunner

    from expressivity.cli.main import cli

    res = CliRunner().invoke(cli, [str(tmp_path / "o") if a == "OUT" else a for a in command])
    assert res.exit_code == 2 and "the sweep file is empty" in res.stderr and not (tmp_path / "o").exists()


def test_an_attention_kernel_no_run_reads_is_refused_by_sweep_run_and_reproduce(tmp_path):
    """`sweep run --attention-kernel sdpa` over sepconv models and `reproduce wang-e-3 --plan --attention-kernel
    sdpa` (DP-free models) recorded or planned "attention sdpa" (an audit, 2026-11-28; `train` refused it)."""
    spec = tmp_path / "ao.json"
    spec.write_text(json.dumps({"base": {"task": {"name": "reverse", "args": {"length": 4, "vocab": 4}},
                                         "model": {"mixer": "sepconv", "d_model": 8, "layers": 1},
                                         "train": {"steps": 2}}, "grid": {"seed": [0, 1]}}))
    res = CliRunner().invoke(cli, ["sweep", "run", str(spec), "--out", str(tmp_path / "o"), "--attention-kernel", "sdpa"])
    assert res.exit_code == 2 and "--attention-kernel sdpa does not apply: no run has a softmax attention layer " \
                                  "(mixers sepconv)" in res.stderr
    assert not (tmp_path / "o").exists()
    res = CliRunner().invoke(cli, ["reproduce", "wang-e-3", "--plan", "--attention-kernel", "sdpa",
                                   "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "(mixers dpfree)" in res.stderr


def test_a_sweep_in_a_log_says_how_far_it_is_and_an_interrupt_counts_runs_not_lines(tmp_path, monkeypatch):
    """Outside a terminal the bar printed nothing for hours (a batch job's log), and Ctrl-C counted the records
    file's lines: "18500 runs are recorded" where 18,000 were (an audit at scale, 2026-11-28)."""
    import expressivity.cli.common as common

    spec = write_spec(tmp_path / "s.json", grid_spec({"seed": [0, 1, 2]}))
    monkeypatch.setattr(common, "LOG_EVERY_S", 0.0)
    code, _, err = run("sweep", "run", spec, "--out", tmp_path / "o", "--workers", "1", "--pack", "1")
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("sweep ")]
    assert lines and lines[-1].startswith("sweep s: done 3, failed 0, running 0, ETA ") and lines[-1].endswith("(of 3)")
    assert all(", ETA " in line for line in lines)

    records = tmp_path / "o" / "records.jsonl"
    records.write_bytes(records.read_bytes() * 2 + b'{"torn')   # repeats and a torn line: still 3 runs
    import expressivity.experiments as experiments

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiments, "run_sweep", interrupted)
    code, _, err = run("sweep", "run", spec, "--out", tmp_path / "o")
    assert code == 130 and err.startswith(f"error: interrupted: 3 runs are recorded in {tmp_path / 'o'}"), err

