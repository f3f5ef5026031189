"""The Ray backend against a real local Ray: the same 48-run sweep with learning-rate selection
gives the same per-run results as the local pool, and failures come back as records."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments import run_sweep, sweep_from_spec
from expressivity.experiments.ray_backend import run_ray
from expressivity.experiments.table import rows_of

from tests.experiments.helpers import grid_spec

GRID = {"model.heads": [1, 2], "train.lr": [1e-3, 3e-3, 1e-2, 3e-2], "seed": [0, 1, 2, 3, 4, 5]}


def records(out):
    return {r["id"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}


def test_a_48_run_sweep_gives_equal_results_locally_and_on_ray(tmp_path, ray_local):
    sw = sweep_from_spec(grid_spec(GRID, select={"train.lr": "min val_loss"}))
    assert len(sw.configs) == 48
    local = run_sweep(sw, tmp_path / "local", workers=2)
    on_ray = run_sweep(sw, tmp_path / "ray", backend="ray", threads=1)
    assert (local.done, on_ray.done, on_ray.backend) == (48, 48, "ray")
    a, b = records(tmp_path / "local"), records(tmp_path / "ray")
    assert a.keys() == b.keys() == set(sw.ids())
    # the same packs (at most 16 runs each on the CPU, whatever the backend): a folder resumes across backends
    # from its packs' checkpoints (Ray packed 24 here, local 12 + 12)
    assert {(r["pack"]["id"], r["pack"]["size"]) for r in a.values()} == \
        {(r["pack"]["id"], r["pack"]["size"]) for r in b.values()}
    for i in a:  # bit-equal: the same packs, the same threads, the same arithmetic
        assert (a[i]["lengths"], a[i]["final_loss"], a[i]["status"]) == (b[i]["lengths"], b[i]["final_loss"],
                                                                         b[i]["status"])
    select = sw.select
    picked = [{(r["id"], r["test_metric"]) for r in rows_of(list(x.values()), select)} for x in (a, b)]
    assert picked[0] == picked[1] and len(picked[0]) == 12  # 2 architectures x 6 seeds, one lr each
    assert ray_local.is_initialized()  # the backend used the session's Ray and left it running


def test_ray_failures_and_rerun(tmp_path, ray_local):
    sw = sweep_from_spec(grid_spec({"train.lr": [1e-3, 1e6], "seed": [0]}))
    report = run_sweep(sw, tmp_path / "s", backend="ray")
    assert (report.done, report.failed, report.failures) == (1, 1, {"nan": 1})
    again = run_sweep(sw, tmp_path / "s", backend="ray")
    assert (again.skipped, again.done) == (2, 0) and len(records(tmp_path / "s")) == 2


def test_cuda_on_a_cluster_without_a_gpu_is_refused_and_the_folder_left_as_it_was(tmp_path, ray_local):
    """Every task waited for a GPU forever; the folder's run.json and manifest were rewritten anyway."""
    run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", workers=1)
    before = {name: (tmp_path / "s" / name).read_bytes() for name in ("run.json", "manifest.json", "sweep.json")}
    with pytest.raises(ExpressivityError, match="the Ray cluster has no GPU"):
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", backend="ray", device="cuda")
    assert {name: (tmp_path / "s" / name).read_bytes() for name in before} == before
    with pytest.raises(ExpressivityError, match="precision tf32"):   # refused before anything, as locally
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "t", backend="ray", device="cpu",
                  execution={"precision": "tf32"})
    assert not (tmp_path / "t").exists()


def test_workers_do_not_apply_to_a_ray_cluster(tmp_path, monkeypatch):
    with pytest.raises(ExpressivityError, match="--workers does not apply to a Ray cluster"):
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", backend="ray", workers=3,
                  ray_address="127.0.0.1:6379")
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")   # the cluster named by the environment instead
    with pytest.raises(ExpressivityError, match="--workers does not apply to a Ray cluster"):
        run_sweep(sweep_from_spec(grid_spec({"seed": [0]})), tmp_path / "s", backend="ray", workers=3)
    assert not (tmp_path / "s").exists()


def test_a_task_that_raises_outside_the_pack_is_reported_as_crashed(ray_local):
    events = list(run_ray([(0, {"pack": "x", "configs": [{"not": "a config"}], "out": None})]))
    kind, index, reason = events[-1]
    assert (kind, index) == ("crashed", 0) and reason.startswith("ray: the task failed")


def test_more_threads_than_the_cluster_has(ray_local):
    with pytest.raises(ExpressivityError, match="lower --threads"):
        list(run_ray([(0, {"pack": "x", "configs": [], "out": None})], threads=64))


# ---- fail fast on an address where no Ray cluster answers (issue 16, item 3) --------------------
def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound by the OS, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_ray_address_fails_in_seconds_with_one_line_and_leaves_nothing(tmp_path):
    import time

    from click.testing import CliRunner

    from expressivity.cli.main import cli

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(grid_spec({"seed": [0, 1]})))
    out = tmp_path / "o"
    started = time.perf_counter()
    res = CliRunner().invoke(cli, ["sweep", "run", str(spec), "--out", str(out), "--backend", "ray",
                                   "--ray-address", f"127.0.0.1:{free_port()}"])
    seconds = time.perf_counter() - started
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach Ray at 127.0.0.1:"), res.stderr
    assert seconds < 30 and not out.exists()


@pytest.mark.parametrize("address, needle", [("nohost", "not host:port"), ("127.0.0.1:0", "port from 1 to 65535"),
                                             ("", "empty")])
def test_malformed_ray_addresses_are_refused_before_ray_starts(address, needle):
    from expressivity.experiments.ray_backend import check_address

    with pytest.raises(ExpressivityError, match=needle):
        check_address(address)  # "" too: an empty --ray-address must not start a private Ray


def test_an_address_from_the_environment_is_named_as_ray_address_not_as_the_option(monkeypatch):
    """A malformed RAY_ADDRESS was reported as "--ray-address 'nohost'", an option the user never gave."""
    from expressivity.experiments.ray_backend import check_address

    monkeypatch.setenv("RAY_ADDRESS", "nohost")
    with pytest.raises(ExpressivityError, match=r"^RAY_ADDRESS 'nohost' is not host:port.*unset RAY_ADDRESS"):
        check_address(None)
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{free_port()}")
    with pytest.raises(ExpressivityError, match=r"cannot reach Ray at 127\.0\.0\.1:\d+ \(from RAY_ADDRESS\)"):
        check_address(None, timeout=2.0)
    with pytest.raises(ExpressivityError, match=r"^--ray-address 'nohost'"):   # the option still named as itself
        check_address("nohost")


def test_a_port_that_is_not_ray_fails_within_30_seconds_without_ray_lines(tmp_path):
    """Something listens but is not a Ray head: Ray's client would retry for many minutes and print
    its warnings; the command gives up in time, prints one line, and leaves no folder. Run as a
    separate process: the abandoned join stays behind in the process until it exits."""
    import os
    import socket
    import subprocess
    import sys
    import time

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(grid_spec({"seed": [0, 1]})))
    out = tmp_path / "o"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        started = time.perf_counter()
        res = subprocess.run([sys.executable, "-c", "from expressivity.cli.main import main; main()", "sweep", "run",
                              str(spec), "--out", str(out), "--backend", "ray", "--ray-address", f"127.0.0.1:{port}"],
                             capture_output=True, text=True, timeout=120, env={**os.environ, "RAY_ADDRESS": ""})
        seconds = time.perf_counter() - started
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and "did not answer as a Ray cluster" in res.stderr
    assert seconds < 30 and not out.exists()


def test_verbose_applies_only_to_ray(tmp_path):
    from click.testing import CliRunner

    from expressivity.cli.main import cli

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(grid_spec({"seed": [0]})))
    res = CliRunner().invoke(cli, ["sweep", "run", str(spec), "--out", str(tmp_path / "o"), "--verbose"])
    assert res.exit_code == 2 and "--verbose" in res.stderr and not (tmp_path / "o").exists()


def test_ray_driver_messages_stay_off_stdout(ray_local, capsys):
    """A killed worker's raylet line reached stdout before the --json object."""
    from ray._private import worker as ray_worker

    from expressivity.experiments.ray_backend import connect

    connect(None, 1, verbose=False)
    ray_worker.print_to_stdstream({"lines": ["A worker died or was killed"], "pid": "raylet", "is_err": False},
                                  ignore_prefix=False)
    connect(None, 1, verbose=True)
    ray_worker.print_to_stdstream({"lines": ["A worker died or was killed"], "pid": "raylet", "is_err": False},
                                  ignore_prefix=False)
    captured = capsys.readouterr()
    assert "worker died" not in captured.out and captured.err.count("worker died") == 1
    connect(None, 1, verbose=False)


def test_an_interruption_while_ray_starts_stops_what_it_started(monkeypatch):
    """A fresh audit (2026-11-29): Ctrl-C inside ray.init left Ray's dashboard and runtime-env agents running for a
    minute and more, since run_ray's shutdown came after connect returned. connect now shuts Ray down first."""
    import ray

    from expressivity.experiments import ray_backend

    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kw: (_ for _ in ()).throw(KeyboardInterrupt()))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    with pytest.raises(KeyboardInterrupt):
        ray_backend.connect(None, 1)
    assert calls == ["shutdown"]
