"""The ensemble benchmarks' arithmetic (not their timings): how per-round ratios become a
verdict, and that the script runs end to end on a tiny setting with its JSON intact."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _imported(*names):
    """The benchmark scripts ``names`` imported as modules (``benchmarks/`` on the path meanwhile):
    one module, or a tuple of them."""
    import importlib

    sys.path.insert(0, str(BENCHMARKS))
    try:
        modules = tuple(importlib.import_module(name) for name in names)
        yield modules[0] if len(modules) == 1 else modules
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def bench():
    yield from _imported("bench_ensemble", "ensemble_ceiling")


def test_a_goal_is_met_only_when_the_whole_interval_clears_it(bench):
    _, ceiling = bench
    assert ceiling.verdict(0.95, 0.91, 0.99, 0.9) == "MET"
    assert ceiling.verdict(0.85, 0.80, 0.89, 0.9) == "NOT MET"
    assert ceiling.verdict(0.93, 0.87, 1.01, 0.9) == "UNDECIDED (estimate above the goal)"
    assert ceiling.verdict(0.88, 0.80, 0.95, 0.9) == "UNDECIDED (estimate below the goal)"
    one = ceiling.ratio_interval([0.95])   # one draw: no interval, so never MET
    assert one[0] == 0.95 and one[1] == -math.inf and one[2] == math.inf
    assert ceiling.verdict(*one, 0.9).startswith("UNDECIDED")


def test_processes_are_the_units_of_the_interval(bench):
    mod, _ = bench
    # two processes of two rounds: per process the geometric mean of the paired ratios
    cell = {"size": "micro", "task": "reverse", "params_per_model": 1, "batch_size": 1, "speedup_ceiling": 10.0}
    first = cell | {"ensemble_s": [1.0, 2.0], "one_model_k_batch_s": [0.9, 1.6], "sequential_s": [4.0, 8.0]}
    second = cell | {"ensemble_s": [1.0, 1.0], "one_model_k_batch_s": [1.1, 1.1], "sequential_s": [3.0, 3.0]}
    (row,) = mod.summarise([[first], [second]], ["micro"])
    per = [math.sqrt(0.9 * 0.8), 1.1]
    assert row["packing_per_process"] == pytest.approx(per)
    assert row["packing"] == pytest.approx(math.sqrt(per[0] * per[1]))
    low, high = row["packing_ci95"]
    # t with 1 degree of freedom on log10 over the two processes (t_{0.975, 1} = 12.7062047..., scipy's t.ppf)
    half = 12.7062047362 * abs(math.log10(per[0]) - math.log10(per[1])) / 2
    assert math.log10(low) == pytest.approx(math.log10(row["packing"]) - half)
    assert math.log10(high) == pytest.approx(math.log10(row["packing"]) + half)
    assert row["speedup_per_process"] == pytest.approx([4.0, 3.0])
    assert row["packing_verdict"].startswith("UNDECIDED")


def test_the_ensemble_benchmark_runs_in_fresh_processes(tmp_path):
    out = subprocess.run([sys.executable, str(BENCHMARKS / "bench_ensemble.py"), "--sizes", "micro", "--k", "2",
                          "--steps", "2", "--rounds", "1", "--processes", "2", "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    (row,) = res["sizes"]
    assert res["processes"] == 2 and len(row["packing_per_process"]) == 2
    assert all(v > 0 and math.isfinite(v) for v in row["packing_per_process"] + row["speedup_per_process"])
    assert row["packing_ci95"][0] <= row["packing"] <= row["packing_ci95"][1]
    bad = subprocess.run([sys.executable, str(BENCHMARKS / "bench_ensemble.py"), "--processes", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "at least 1" in bad.stderr


@pytest.mark.slow
def test_the_gpu_check_runs_its_cpu_half_and_says_in_one_line_when_there_is_no_gpu(tmp_path):
    import torch

    out = subprocess.run(["bash", str(BENCHMARKS / "gpu_check.sh"), "--quick", "--out", str(tmp_path / "check")],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads((tmp_path / "check" / "gpu_check.json").read_text())
    assert set(report["cpu"]["packs"]) == {"claim 7 T=8 pack", "wang-e-dp L=2 pack"}
    for pack in report["cpu"]["packs"].values():
        assert all(w["steps_per_s"] > 0 and w["execution"]["device"] == "cpu" for w in pack["ways"])
    assert report["cpu"]["ensemble_vs_sequential"]["ratio"] > 0
    notes = [line for line in out.stdout.splitlines() if "GPU half" in line]
    side = report["gpu" if torch.cuda.is_available() else "cpu"]["agreement"]   # the fast paths against the reference
    assert [row["cell"] for row in side] == ["claim 7 attention", "claim 7 DP-free", "wang-e-dp L=2 attention",
                                             "claim 6 attention"]
    assert all(row["ok"] and "sdpa" in row["relative"] for row in side)
    if torch.cuda.is_available():
        assert not notes and report["gpu"]["packs"]
    else:
        assert notes == ["no CUDA GPU here: the GPU half did not run (the CPU figures above are this machine's)"]
        assert "gpu" not in report and notes[0] in (tmp_path / "check" / "gpu_check.md").read_text()


def test_the_gpu_check_keeps_its_budget_and_says_what_it_skipped(tmp_path):
    # a spent budget skips every part and still writes the report and exits 0; a bad one is refused
    out = subprocess.run(["bash", str(BENCHMARKS / "gpu_check.sh"), "--quick", "--budget-s", "0.001",
                          "--out", str(tmp_path / "check")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads((tmp_path / "check" / "gpu_check.json").read_text())
    for pack in report["cpu"]["packs"].values():
        assert all("skipped" in w for w in pack["ways"]) and pack["runs_per_hour"] is None
    assert "skipped" in report["cpu"]["ensemble_vs_sequential"]
    assert "claim 4's widest cell: skipped (the 0.001 s budget was spent)" in out.stdout
    for bad in ("nan", "-1", "inf"):
        res = subprocess.run(["bash", str(BENCHMARKS / "gpu_check.sh"), "--budget-s", bad, "--out", str(tmp_path / bad)],
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 2 and "--budget-s" in res.stderr and not (tmp_path / bad).exists()


def test_a_gpu_check_part_that_raises_is_recorded_and_the_others_still_run(tmp_path, monkeypatch):
    """On a GPU never tried, a compile or an out-of-memory error in one part must not cost the
    other parts' figures: the error is recorded and printed, the script ends normally."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import gpu_check

        from expressivity.experiments import plan

        def broken(*args, **kwargs):
            raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore lines")

        monkeypatch.setattr(plan, "time_pack", broken)
        threads = torch.get_num_threads()
        try:
            assert gpu_check.main(["--quick", "--out", str(tmp_path / "check")]) == 0
        finally:
            torch.set_num_threads(threads)
    finally:
        sys.path.remove(str(BENCHMARKS))
    report = json.loads((tmp_path / "check" / "gpu_check.json").read_text())
    for pack in report["cpu"]["packs"].values():
        assert [w["error"] for w in pack["ways"]] == ["RuntimeError: CUDA error: an illegal memory access was encountered"]
    assert report["cpu"]["ensemble_vs_sequential"]["ratio"] > 0   # the part after the failures still ran
    text = (tmp_path / "check" / "gpu_check.md").read_text()
    assert "eager fp32 failed (RuntimeError: CUDA error: an illegal memory access was encountered)" in text
    assert gpu_check.part(lambda: 1 / 0, gpu_check.Clock(60)) == {"error": "ZeroDivisionError: division by zero"}
    assert "skipped" in gpu_check.part(lambda: 1, gpu_check.Clock(1e-9))


def _full_on_gpu(*args, timeout=600):
    return subprocess.run([sys.executable, str(BENCHMARKS / "full_on_gpu.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


def test_the_full_scale_script_bundles_what_finished_and_stops_at_its_budget_resumably(tmp_path):
    """On the CPU (``--device cpu --scale quick``): a claim that finishes is bundled with the files a
    README cell quotes, under SCALE/NAME/; the next one is stopped by Ctrl-C's signal when the budget
    runs out and reported as such, with its resume command; the claim after it is not started."""
    import tarfile

    out = tmp_path / "gpu"
    res = _full_on_gpu("--device", "cpu", "--scale", "quick", "--minutes", "1", "--stop-grace", "10",
                       "--start-at-least", "0", "--capture", "eager", "--out", out, "wang-e-8", "wang-e-6", "wang-e-2")
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    first, second, third = summary["claims"]
    verdict = json.loads((out / "runs" / "wang-e-8" / "verdict.json").read_text())
    assert first["status"] == "finished" and first["verdict"] == verdict["verdict"]
    assert first["hardware"]["device"] == "cpu"
    assert second["status"] == "stopped at the budget" and second["resume"].startswith(   # options passed through
        "python -m expressivity reproduce wang-e-6 --scale quick --device cpu --capture=eager --out ")
    assert third["status"].startswith("not started")
    assert summary["used_minutes"] < 1.0 + 0.5   # the minutes hold the claims, their grace and the bundles
    with tarfile.open(out / "full_results.tar.gz") as tar:
        names = set(tar.getnames())
        assert {f"quick/wang-e-8/{f}" for f in ("criterion.md", "verdict.json", "results.csv", "run.json")} <= names
        assert not any("wang-e-6" in n for n in names)
        assert json.load(tar.extractfile("quick/wang-e-8/verdict.json")) == verdict
    assert set(summary["files"]) <= {"full_results.tar.gz", "resume_wang-e-6.tar"}
    assert "wang-e-6 (quick): stopped at the budget" in (out / "summary.md").read_text()


@pytest.fixture
def full_on_gpu():
    yield from _imported("full_on_gpu")


def test_a_resume_bundle_leaves_out_finished_weights_the_verdict_does_not_read(full_on_gpu, tmp_path):
    """Records, logs and manifests always; a finished run's checkpoint only where the claim's verdict
    reads its weights, a failed run's always (a retry resumes from it); the runs in flight
    (unrecorded run folders, packs) whole where the bundle then fits its limit, else none, named."""
    claim = tmp_path / "claim"
    sweep = claim / "sweep"
    files = {"criterion.md": 10, "sweep/sweep.json": 10, "sweep/records.jsonl": 0,
             "sweep/runs/a/metrics.jsonl": 100, "sweep/runs/a/checkpoint/model.safetensors": 4000,
             "sweep/runs/b/metrics.jsonl": 100, "sweep/runs/b/checkpoint/state.pt": 3000,
             "sweep/runs/f/metrics.jsonl": 100, "sweep/runs/f/checkpoint/state.pt": 500,
             "sweep/runs/c/metrics.jsonl": 100, "sweep/runs/c/checkpoint/model.safetensors": 2000,
             "sweep/packs/p/ensemble/model.safetensors": 2000}
    for name, size in files.items():
        (claim / name).parent.mkdir(parents=True, exist_ok=True)
        (claim / name).write_bytes(b"x" * size)
    (sweep / "records.jsonl").write_text("".join(json.dumps({"id": i, "status": s, "config": {}}) + "\n"
                                                 for i, s in (("a", "done"), ("b", "target-reached"), ("f", "failed"))))
    names = lambda paths: {p.relative_to(claim).as_posix() for p in paths}  # noqa: E731
    finished = {"sweep/runs/a/checkpoint/model.safetensors", "sweep/runs/b/checkpoint/state.pt"}
    kept, facts = full_on_gpu.resume_files(claim, lambda record: False, limit=10**6)
    assert names(kept) == set(files) - finished
    assert facts == {"finished_checkpoints_left_out_mib": round(7000 / 2**20, 1), "runs_in_flight_left_out": []}
    kept, facts = full_on_gpu.resume_files(claim, lambda record: record["id"] == "b", limit=10**6)
    assert names(kept) == set(files) - {"sweep/runs/a/checkpoint/model.safetensors"}
    kept, facts = full_on_gpu.resume_files(claim, lambda record: False, limit=1500)
    assert names(kept) == {"criterion.md", "sweep/sweep.json", "sweep/records.jsonl", "sweep/runs/a/metrics.jsonl",
                           "sweep/runs/b/metrics.jsonl", "sweep/runs/f/metrics.jsonl", "sweep/runs/f/checkpoint/state.pt"}
    assert facts["runs_in_flight_left_out"] == ["sweep/packs/p", "sweep/runs/c"]


def test_which_claims_verdicts_read_finished_runs_weights():
    """Claim 3's always (learned kernels); wang-e-dp's only for a record without its copy-byte loss;
    the other claims' never."""
    from expressivity.experiments.claims import all_claims

    claims = all_claims()
    record = {"config": {"task": {"args": {"length": 8}}, "train": {"eval_size": 4}},
              "lengths": {"8": {"test_loss": 2.0}}}
    assert claims["wang-e-3"].needs_weights(record)
    assert claims["wang-e-dp"].needs_weights(record)
    record["lengths"]["8"]["test_subsets"] = {"copies": {"loss": 1.0, "metric": 0.5, "share": 0.25}}
    assert not claims["wang-e-dp"].needs_weights(record)
    assert [n for n, c in claims.items() if c.needs_weights(record)] == ["wang-e-3"]


def _reads(path: Path) -> str:
    try:
        return path.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:   # the process ended meanwhile
        return ""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_the_running_claim_resumably_and_writes_the_summary(tmp_path, signal_name):
    """Ctrl-C (SIGINT to the script) is passed to the running claim, which has its own session,
    and the script records it as interrupted with its resume command and folder, exit 130. So is
    SIGTERM (a timeout's): the claim trained on as an orphan before (a fresh audit)."""
    import signal
    import time

    out = tmp_path / "gpu"
    script = subprocess.Popen([sys.executable, str(BENCHMARKS / "full_on_gpu.py"), "--device", "cpu", "--scale", "quick",
                               "--minutes", "5", "--stop-grace", "30", "--out", str(out), "wang-e-6"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert "wang-e-6 (quick, cpu): up to" in script.stdout.readline()   # the claim has started
    deadline = time.monotonic() + 120
    while not (out / "runs" / "wang-e-6" / "run.json").exists() and time.monotonic() < deadline:
        time.sleep(0.5)   # its plan timed, its folder begun: training
    time.sleep(2)
    script.send_signal(getattr(signal, signal_name))
    assert script.wait(timeout=120) == 130
    time.sleep(1)
    left = [p.name for p in Path("/proc").glob("[0-9]*") if _reads(p / "cmdline").find(str(out / "runs")) >= 0]
    assert left == [], f"processes left training: {left}"
    summary = json.loads((out / "summary.json").read_text())
    (row,) = summary["claims"]
    assert summary["interrupted"] and row["status"] == "stopped (interrupted)" and "resume" in row
    assert (out / "runs" / "wang-e-6").is_dir() and "resume_wang-e-6.tar" in summary["files"]


def test_the_full_scale_script_refuses_in_one_line_what_it_cannot_do(tmp_path):
    import torch

    cases = [(["--minutes", "nan"], "--minutes"), (["--minutes", "-1"], "--minutes"), (["nosuch"], "unknown claim"),
             (["wang-e-7", "wang-e-7"], "named twice"), (["--device", "cpu", "--check-seconds", "5"], "does not apply"),
             (["--check-seconds", "600", "--minutes", "5"], "leaves nothing"),
             (["--device", "cpu", "--minutes", "1"], "leaves 0 s for the claims"),
             (["--capture", "graphs"], "--capture"),
             (["--device", "cpu", "--minutes", "3", "--runs", __file__], "--runs")]
    if not torch.cuda.is_available():
        cases.append(([], "no CUDA GPU here"))
    for args, needle in cases:
        res = _full_on_gpu(*args, "--out", tmp_path / "o", timeout=120)
        assert res.returncode == 2 and needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, (args, res.stderr)
        assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def bench_tracr():
    yield from _imported("bench_tracr")


def test_the_recorded_tracr_run_covers_tracrs_library(bench_tracr):
    figures = bench_tracr.tracr_figures()
    assert len(figures["tracr_commit"]) == 40 and "mlp_exactness=100" in figures["how"]
    programs = {p for p, _ in figures["rows"]}
    assert programs == {"length", "reverse", "hist", "sort_unique", "sort", "sort_freq", "frac_prevs",
                        "pair_balance", "shuffle_dyck", "shuffle_dyck2", "shift_by", "detect_pattern",
                        "count_less_freq", "count", "nary_sequencemap"}
    assert {(p, L) for p in programs for L in (5, 10, 20, 40)} <= set(figures["rows"])
    # the inputs the bench draws are the ones tracr ran on
    for (program, L), row in figures["rows"].items():
        if "inputs_sha256" in row:
            vocab = list(bench_tracr.PROGRAMS[program].vocab)
            assert bench_tracr.inputs_digest(*bench_tracr.check_inputs(vocab, L)) == row["inputs_sha256"]


def test_the_tracr_goals_read_over_the_whole_library(bench_tracr):
    rows = [{"program": "a", "L": 20, "params_ratio": 0.1, "correct_full": 30, "correct_short": 30,
             "tracr": {"params": 10, "correct_full": 0, "correct_short": 30}, "same_inputs_as_tracr": True},
            {"program": "b", "L": 20, "params_ratio": 0.4, "correct_full": 30, "correct_short": 30,
             "tracr": {"params": 10, "correct_full": 30, "correct_short": 30}, "same_inputs_as_tracr": True}]
    out = bench_tracr.summary(rows, ["a", "b"])
    assert out["geomean_params_ratio_L20"] == pytest.approx(0.2) and out["geomean_goal"].endswith("NOT MET")
    assert out["fewer_params_than_tracr_at_L20_every_program"] and out["ours_correct"] == "120 of 120"
    assert out["where_both_ran"] == "ours 120 of 120, tracr 90 of 120"
    refused = rows[:1] + [{"program": "b", "L": 20, "refused": "no"}]
    out = bench_tracr.summary(refused, ["a", "b"])     # a refused program is not a pass, and the mean says so
    assert not out["fewer_params_than_tracr_at_L20_every_program"] and "no ratio: b" in out["programs_at_L20"]
    assert out["geomean_goal"].endswith("NOT MET")


def test_the_tracr_benchmark_runs_end_to_end():
    out = subprocess.run([sys.executable, str(BENCHMARKS / "bench_tracr.py"), "--programs", "hist", "--lengths", "5",
                          "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    (row,) = result["rows"]
    assert row["correct_full"] == row["correct_short"] == 30 and row["same_inputs_as_tracr"]
    assert row["params"] < row["tracr"]["params"] and row["layers"] == row["tracr"]["layers"] == 1


def test_the_x_transformers_benchmark_times_each_step_it_reports(tmp_path):
    out = subprocess.run([sys.executable, str(BENCHMARKS / "bench_xtransformers.py"), "--capture", "compiled", "--json",
                          "--d-model", "16", "--layers", "1", "--heads", "2", "--length", "8", "--batch", "2",
                          "--rounds", "1", "--repeats", "2", "--threads", "1"],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ("ours_ms", "theirs_ms", "ours_compiled_ms", "ours_compiled_adamw_ms"):
        assert res[name] > 0, name
    assert res["ratio"] == pytest.approx(res["theirs_ms"] / res["ours_ms"])
    assert res["ratio_compiled_adamw"] == pytest.approx(res["theirs_ms"] / res["ours_compiled_adamw_ms"])
    assert res["met_compiled"] == (max(res["ratio_compiled"], res["ratio_compiled_adamw"]) >= 1.3)


def _gpu_check():
    import importlib
    import sys

    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("gpu_check")
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_gpu_checks_agreement_sees_a_kernel_that_drops_the_position_bias(monkeypatch):
    """A fresh audit (2026-11-28): the position tables start at zero and 3 steps' losses barely move them, so
    an SDPA path that dropped the bias mask agreed (7.6e-8) on every cell."""
    import torch.nn.functional as F

    from expressivity.nn.mixers.attention import Attention

    gpu_check = _gpu_check()
    clock = gpu_check.Clock(600)
    rows = gpu_check.agreement("cpu", True, clock, compile_ways=False)
    assert all(row["ok"] for row in rows) and all("sdpa, first gradient" in row["relative"] for row in rows)

    def no_bias(self, x):
        K, b, n, _ = x.shape
        q, k, v = (t.transpose(0, 1).reshape(b, K * self.heads, n, self.d_head) for t in self._qkv(x))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=self.scale)
        return out.view(b, K, self.heads, n, self.d_head).permute(1, 0, 3, 2, 4).reshape(K, b, n, -1)

    monkeypatch.setattr(Attention, "_fused", no_bias)
    broken = gpu_check.agreement("cpu", True, clock, compile_ways=False)
    biased = [row for row in broken if row["cell"] != "claim 7 DP-free"]   # DP-free has no SDPA path
    assert biased and not any(row["ok"] for row in biased), broken


def test_a_way_whose_compile_fell_back_is_not_timed_as_compiled(monkeypatch):
    """A fresh audit (2026-11-28): with torch.compile failing, the 'compiled' row held eager timings, the
    captured/eager ratio compared eager with eager, and the agreement said AGREE."""
    import torch

    from expressivity.training import step as step_module

    def failing(fn, *args, **kwargs):
        def compiled(*a, **k):
            raise RuntimeError("simulated inductor error")
        return compiled

    monkeypatch.setattr(step_module.torch, "compile", failing)
    gpu_check = _gpu_check()
    configs, _ = gpu_check.packs(True)["claim 7 T=8 pack"]
    clock = gpu_check.Clock(300)
    with pytest.warns(RuntimeWarning, match="torch.compile failed"):
        rows = gpu_check.time_ways(configs, "cpu", [("eager", "fp32"), ("compiled", "fp32")], 3, 1, clock, 5.0, 0.0)
    assert "error" not in rows[0] and rows[1]["error"].startswith("fell back: the compiled step failed")
    pack = {"ways": rows}
    gpu_check.set_rates(pack, configs)
    assert pack["captured_vs_eager"] is None
    with pytest.warns(RuntimeWarning):
        cells = gpu_check.agreement("cpu", True, clock, compile_ways=True)
    compiled = [row for row in cells if row["cell"] in gpu_check.COMPILED_AGREEMENT]
    assert compiled and all(not row["ok"] and "fell back" in row["error"] for row in compiled)
    assert torch.compile is failing


@pytest.mark.parametrize("args", [["1"], ["2", "claim4"]])
def test_the_ensemble_agreement_script_runs(args):
    """A fresh audit (2026-11-28): docs/training.md cites it, and it failed at its import since a constant moved."""
    out = subprocess.run([sys.executable, str(BENCHMARKS / "ensemble_agreement.py"), *args], capture_output=True,
                         text=True, timeout=600, env={**__import__("os").environ,
                                                      "PYTHONPATH": str(BENCHMARKS.parent / "src")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "max |param diff|" in out.stdout and "max rel loss diff" in out.stdout


@pytest.mark.parametrize("args", [["--help"], ["x"], ["0"], [], ["2000000000", "bilinear"], ["1", "foo"]])
def test_the_ensemble_agreement_script_says_its_usage(args):
    """An audit: `--help` was a traceback (int('--help')); then (a fuzz pass) 2e9 steps were a traceback and an
    unknown architecture printed nothing with exit 0."""
    out = subprocess.run([sys.executable, str(BENCHMARKS / "ensemble_agreement.py"), *args], capture_output=True,
                         text=True, timeout=120, env={**__import__("os").environ,
                                                      "PYTHONPATH": str(BENCHMARKS.parent / "src")})
    if args == ["--help"]:
        assert out.returncode == 0 and "usage: ensemble_agreement.py" in out.stdout
    else:
        assert out.returncode == 2 and out.stderr.startswith("error: ") and len(out.stderr.splitlines()) == 1, out.stderr


def test_a_gpu_check_part_still_running_at_the_budget_is_stopped_there(tmp_path, monkeypatch):
    """The budget is the script's wall time, not a bound on when its last part may start: a part
    that would run past it (a compile, a slow step on a GPU never tried) is stopped at the budget
    and recorded so, the parts after it are skipped, and the alarm is put back as it was."""
    import signal
    import time

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import gpu_check

        from expressivity.experiments import plan

        monkeypatch.setattr(gpu_check, "agreement", lambda *args, **kwargs: [])
        monkeypatch.setattr(plan, "time_pack", lambda *args, **kwargs: time.sleep(120))
        handler = signal.getsignal(signal.SIGALRM)
        threads = torch.get_num_threads()
        try:
            t0 = time.perf_counter()
            assert gpu_check.main(["--quick", "--budget-s", "15", "--out", str(tmp_path / "check")]) == 0
            took = time.perf_counter() - t0
        finally:
            torch.set_num_threads(threads)
    finally:
        sys.path.remove(str(BENCHMARKS))
    assert took < 60   # 120 s a pack, two packs, without the stop
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    report = json.loads((tmp_path / "check" / "gpu_check.json").read_text())
    first, second = (pack["ways"] for pack in report["cpu"]["packs"].values())
    assert first == [{"capture": "eager", "precision": "fp32", "skipped": "stopped when the 15 s budget ran out"}]
    assert second == [{"capture": "eager", "precision": "fp32", "skipped": "the 15 s budget was spent"}]
    assert "eager fp32 skipped (stopped when the 15 s budget ran out)" in (tmp_path / "check" / "gpu_check.md").read_text()


def test_the_reference_feedforward_benchmark_runs_and_both_passes_agree():
    # the reference's feed-forward update before and after 2026-11-29 (one matrix of tokens): one tiny grid
    done = subprocess.run([sys.executable, str(BENCHMARKS / "bench_reference_feedforward.py"), "--rounds", "1",
                           "--grids", "4", "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["grid"] == 4 and row["before_s"] > 0 and row["now_s"] > 0
    assert row["ratio"] == pytest.approx(row["before_s"] / row["now_s"])
    assert 0 < row["sup_error_now"] == pytest.approx(row["sup_error_before"], rel=1e-12)
