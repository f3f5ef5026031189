"""``expressivity train`` and ``expressivity tasks`` as a user runs them."""

import json

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli

FAST = ["--length", "6", "--d-model", "16", "--heads", "2", "--ffn-width", "16", "--batch-size", "16"]


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_train_json_has_the_documented_keys():
    code, out, _ = run("train", "--task", "reverse", *FAST, "--steps", "20", "--seeds", "0,1", "--json")
    assert code == 0, out
    obj = json.loads(out)
    assert obj["task"] == "reverse" and obj["seconds"] > 0
    assert [r["seed"] for r in obj["runs"]] == [0, 1]
    for r in obj["runs"]:
        assert set(r) >= {"seed", "final_loss", "final_metric", "steps", "seconds", "params"}
        assert r["steps"] == 20
    assert obj["run"]["seeds"] == [0, 1] and obj["run"]["expressivity_version"]
    assert obj["run"]["config"]["seed"] == 0 and obj["run"]["config"]["task"]["name"] == "reverse"
    assert [r["id"] for r in obj["runs"]] == obj["run"]["ids"] and len(set(obj["run"]["ids"])) == 2


def test_train_out_writes_record_metrics_checkpoint_and_figure_then_resumes(tmp_path):
    out = tmp_path / "run"
    code, _, _ = run("train", "--task", "copy", *FAST, "--steps", "20", "--mixer", "sepconv,attention", "--rpe", "lin",
                     "--task-arg", "vocab=5", "--out", str(out), "--json")
    assert code == 0
    record = json.loads((out / "run.json").read_text())
    assert record["command"] == "train" and record["seed"] == 0 and record["expressivity_version"]
    assert record["config"]["model"]["mixer"] == ["sepconv", "attention"] and record["config"]["task"]["args"]["vocab"] == 5
    assert (out / "loss_curve.png").stat().st_size > 1000
    assert (out / "seed_0" / "checkpoint" / "model.safetensors").exists()
    assert (out / "seed_0" / "metrics.jsonl").read_text().strip()
    code, res, _ = run("train", "--resume", str(out), "--json")  # finished: returned as it ended
    assert code == 0 and json.loads(res)["runs"][0]["steps"] == 20
    code, _, err = run("train", "--resume", str(out), "--steps", "30", "--lr", "0.1")
    assert code == 2 and "drop --steps, --lr" in err
    code, _, err = run("train", "--task", "copy", *FAST, "--out", str(out))
    assert code == 2 and "already holds a run" in err


def test_ensemble_flag_trains_all_seeds_at_once():
    code, out, _ = run("train", "--task", "sum", *FAST, "--layers", "1", "--steps", "10", "--seeds", "3,4", "--ensemble", "--json")
    assert code == 0
    assert [r["seed"] for r in json.loads(out)["runs"]] == [3, 4]


def test_tasks_lists_names_and_defaults():
    code, out, _ = run("tasks", "--json")
    assert code == 0
    tasks = {t["name"]: t for t in json.loads(out)["tasks"]}
    assert set(tasks) == {"fixed-memory", "adaptive-memory", "nested-memory", "kernel-memory", "reverse", "sort", "copy",
                          "sum", "parity", "associative-recall", "yun-target", "lm-causal", "lm-masked"}
    assert tasks["reverse"]["args"] == {"length": 8, "vocab": 16}
    code, out, _ = run("tasks")
    assert code == 0 and "associative-recall" in out


@pytest.mark.parametrize("args,needle", [
    (["--task", "nope"], "unknown task"),
    (["--task", "reverse", "--mixer", "conv"], "unknown mixer"),
    (["--task", "reverse", "--rpe", "alibi"], "unknown rpe"),
    (["--task", "reverse", "--task-arg", "vocab"], "KEY=VALUE"),
    (["--task", "reverse", "--task-arg", "foo=1"], "no argument 'foo'"),
    (["--task", "reverse", "--steps", "0"], "--steps"),
    (["--task", "reverse", "--seeds", "a,b"], "--seeds"),
    (["--task", "reverse", "--d-model", "10", "--heads", "4"], "divisible"),
    (["--resume", "/nonexistent/dir"], "not found"),
    (["--task", "reverse", "--length", "100000000"], "GiB"),
    (["--task", "reverse", "--length", "5000"], "budget"),
    (["--task", "reverse", "--seeds", "0,,1"], "empty field"),
    (["--task", "reverse", "--seeds", "-1"], "[0, 2^63)"),
    (["--task", "reverse", "--seeds", "100000000000000000000"], "[0, 2^63)"),
    (["--task", "reverse", "--threads", "100000"], "CPU cores"),
    (["--task", "reverse", "--lr", "inf"], "lr must be a finite number"),
    (["--task", "reverse", "--target-metric", "nan"], "target-metric must be a finite number"),
    (["--task", "reverse", "--target-metric", "-inf"], "target-metric must be a finite number"),
    (["--task", "reverse", "--task-arg", "vocab=1000000000"], "GiB"),
    (["--task", "reverse", "--out", ""], "current folder"),
    (["--task", "reverse", "--eval-lengths", "0"], "--eval-lengths"),
    (["--task", "reverse", "--memory-budget", "1MiB"], "above the budget of 0.000977 GiB (--memory-budget)"),
    (["--task", "reverse", "--memory-budget", "many"], "not a size"),
    (["--task", "reverse", "--precision", "tf32"], "CUDA matrix-unit mode"),
    (["--task", "reverse", "--precision", "fp8"], "--precision"),
    (["--task", "reverse", "--sampler", "gpu"], "--sampler"),
    (["--task", "reverse", "--task-arg", "vocab=1"], "vocab must be >= 2"),
    (["--task", "kernel-memory", "--task-arg", "alpha=nan"], "finite"),
    (["--task", "reverse", "--steps", "1", "--out", "/proc/expressivity-test"], "cannot"),
    ([], "missing --task"),
    (["--task", "reverse", "--mixer", "sepconv", "--rpe", "lin"], "rpe 'lin' applies only to attention and dpfree"),
    (["--task", "reverse", "--mixer", "dpfree", "--rotary"], "rotary applies only to attention"),
    (["--task", "reverse", "--rpe", "none", "--learn-slopes"], "learnable slopes (--learn-slopes) apply only to rpe lin or log"),
])
def test_bad_input_is_one_line_error(args, needle):
    code, out, err = run("train", *args)
    assert code == 2
    assert err.startswith("error: ") and needle in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_demo_section_writes_a_figure(tmp_path):
    from expressivity.cli.train import demo_section

    summary = demo_section(tmp_path)
    assert summary["final_metric"] >= 0.99
    assert (tmp_path / "train_loss_curve.png").exists()


def test_a_run_that_fails_before_its_first_checkpoint_leaves_no_folder(tmp_path, monkeypatch):
    import expressivity.training as training

    def broken(*args, **kwargs):
        raise RuntimeError("model exploded")

    monkeypatch.setattr(training, "run", broken)
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["train", "--task", "reverse", *FAST, "--steps", "5", "--out", str(out)])
    assert result.exit_code != 0 and not out.exists()


def test_task_defaults_that_do_not_apply_are_dropped_not_refused():
    # copy suggests rpe 'free'; with sepconv (no attention) the suggestion is dropped.
    no_heads = [a for i, a in enumerate(FAST) if a != "--heads" and FAST[i - 1] != "--heads"]
    code, out, err = run("train", "--task", "copy", *no_heads, "--mixer", "sepconv", "--steps", "2", "--json")
    assert code == 0, err
    assert json.loads(out)["run"]["config"]["model"]["rpe"] == "none"


def test_options_that_no_layer_reads_are_refused_by_name():
    code, _, err = run("train", "--task", "copy", *FAST, "--mixer", "sepconv", "--steps", "2")
    assert code == 2 and "--heads" in err and "Traceback" not in err
    code, _, err = run("train", "--task", "copy", "--length", "6", "--rpe", "none", "--learn-slopes", "--steps", "2")
    assert code == 2 and "slopes" in err and "Traceback" not in err


def test_a_diverged_run_exits_1_with_an_error_line():
    code, out, err = run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--steps", "2", "--lr", "1e30",
                         "--json")
    assert code == 1 and json.loads(out)["runs"][0]["status"] == "nan"
    assert err.startswith("error:") and "--lr" in err


def test_how_steps_run_is_chosen_recorded_and_kept_on_resume(tmp_path):
    code, out, _ = run("train", "--task", "nested-memory", "--length", "8", "--task-arg", "max_lag=4", "--d-model", "8",
                       "--heads", "2", "--ffn-width", "8", "--steps", "6", "--seeds", "0,1", "--ensemble",
                       "--precision", "bf16", "--sampler", "device", "--attention-kernel", "sdpa", "--json",
                       "--out", str(tmp_path / "r"))
    assert code == 0, out
    obj = json.loads(out)
    for record in (obj["run"]["execution"], *(r["execution"] for r in obj["runs"])):
        assert (record["precision"], record["sampler"], record["attention"], record["stream"]) == ("bf16", "device",
                                                                                                   "sdpa", 2)
    code, out, _ = run("train", "--resume", str(tmp_path / "r"), "--json")   # execution options are allowed, none given
    resumed = json.loads(out)
    assert code == 0 and resumed["runs"][0]["execution"]["precision"] == "bf16"
    assert resumed["run"]["execution"] == resumed["runs"][0]["execution"]   # what ran, not this call's defaults


def test_resume_refuses_the_choices_its_checkpoint_keeps_and_records_what_ran(tmp_path):
    # a fresh audit (2026-11-28): --resume --precision bf16 --sampler device was accepted, ran fp32/host (the
    # checkpoint's), and --json then said both fp32 (runs) and bf16 (run)
    out = tmp_path / "r"
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--ffn-width", "8",
                       "--batch-size", "4", "--steps", "3", "--out", out)
    assert code == 0, err
    for flag, value in (("--precision", "bf16"), ("--sampler", "device")):
        code, _, err = run("train", "--resume", out, flag, value)
        assert code == 2 and "keeps the precision and sampler it started with; drop " + flag in err
    code, text, err = run("train", "--resume", out, "--json")
    assert code == 0, err
    result = json.loads(text)
    assert result["run"]["execution"] == result["runs"][0]["execution"]


def test_resuming_a_finished_run_reports_how_and_how_long_it_ran_not_this_call(tmp_path):
    """A fresh audit (2026-11-28): --resume of a finished run said 0.0002 seconds and this call's attention
    kernel (explicit) for a run trained with sdpa."""
    for extra in ((), ("--seeds", "0,1", "--ensemble")):
        out = tmp_path / f"r{len(extra)}"
        code, text, err = run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--ffn-width", "8",
                              "--batch-size", "4", "--steps", "30", "--attention-kernel", "sdpa", *extra, "--json",
                              "--out", out)
        assert code == 0, err
        first = json.loads(text)
        code, text, err = run("train", "--resume", out, "--json")
        assert code == 0, err
        again = json.loads(text)
        assert [r["execution"]["attention"] for r in again["runs"]] == ["sdpa"] * len(again["runs"])
        assert [r["execution"] for r in again["runs"]] == [r["execution"] for r in first["runs"]]
        assert [r["seconds"] for r in again["runs"]] == [r["seconds"] for r in first["runs"]] and again["seconds"] > 0
        sessions = json.loads((out / "run.json").read_text())["resumed"]   # which code each resume ran
        assert len(sessions) == 1 and {"created_unix", "source", "expressivity_version", "threads"} <= set(sessions[0])
        assert json.loads((out / "run.json").read_text())["hardware"]["cpus"] >= 1


def test_each_resumed_session_records_how_it_ran(tmp_path):
    """--resume takes --attention-kernel (a run started on the CPU may go on on a GPU), which moves the numbers at
    float rounding; the session's entry recorded no execution and run.json named the first session's kernel only
    (a fresh audit, 2026-11-29)."""
    out = tmp_path / "r"
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--ffn-width", "8",
                       "--batch-size", "4", "--steps", "3", "--precision", "bf16", "--out", out)
    assert code == 0, err
    code, _, err = run("train", "--resume", out, "--attention-kernel", "sdpa")
    assert code == 0, err
    record = json.loads((out / "run.json").read_text())
    assert record["execution"]["attention"] == "explicit"   # the first session's
    session = record["resumed"][-1]["execution"]
    assert (session["attention"], session["precision"], session["sampler"]) == ("sdpa", "bf16", "host")


def test_a_refused_resume_records_no_session(tmp_path):
    """A resume refused for a damaged state.pt appended a session to run.json all the same (a fuzz, 2026-11-29)."""
    out = tmp_path / "r"
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--d-model", "8", "--ffn-width", "8",
                       "--batch-size", "4", "--steps", "3", "--out", out)
    assert code == 0, err
    states = list(out.rglob("state.pt"))
    assert states
    states[0].write_bytes(states[0].read_bytes()[:100])
    code, _, err = run("train", "--resume", out)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert json.loads((out / "run.json").read_text()).get("resumed", []) == []


def test_run_json_records_the_sampler_that_ran(tmp_path):
    """associative-recall samples on the host; run.json said ``sampler: device`` (the --json answer did not).
    Asked for by name, the device sampler it cannot honour is refused (it was replaced silently: an audit,
    2026-11-28)."""
    code, _, err = run("train", "--task", "associative-recall", "--steps", "3", "--sampler", "device")
    assert code == 2 and "--sampler device (task associative-recall samples on the host only)" in err
    code, out, err = run("train", "--task", "associative-recall", "--steps", "3", "--out", tmp_path / "ar", "--json")
    assert code == 0, err
    recorded = json.loads((tmp_path / "ar" / "run.json").read_text())["execution"]
    assert recorded == json.loads(out)["run"]["execution"] and recorded["sampler"] == "host"


def test_options_no_layer_or_resumed_model_reads_are_refused(tmp_path):
    """`--causal` with feed-forward-only blocks gave bit-identical numbers under another run id, and `--resume`
    took `--attention-kernel sdpa` for a sepconv run and ignored it (an audit, 2026-11-28)."""
    code, _, err = run("train", "--task", "reverse", "--steps", "2", "--d-model", "8", "--mixer", "none", "--causal")
    assert code == 2 and "feed-forward-only blocks mix no tokens" in err
    code, _, err = run("train", "--task", "reverse", "--steps", "2", "--d-model", "8", "--mixer", "sepconv",
                       "--out", tmp_path / "r")
    assert code == 0, err
    code, _, err = run("train", "--resume", tmp_path / "r", "--attention-kernel", "sdpa")
    assert code == 2 and "--attention-kernel (no softmax attention layer: the mixers are sepconv)" in err


def test_a_refused_run_leaves_an_empty_folder_empty(tmp_path):
    """run.json and manifest.json stayed, and the next try was refused as 'already holds a run'."""
    folder = tmp_path / "empty"
    folder.mkdir()
    code, _, err = run("train", "--task", "reverse", "--steps", "2", "--memory-budget", "1MiB", "--out", folder)
    assert code == 2 and "above the budget" in err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("mixer", [["--mixer", "dpfree", "--rpe", "free"], ["--mixer", "sepconv"]])
def test_the_attention_kernel_is_refused_without_softmax_attention(mixer):
    code, _, err = run("train", "--task", "reverse", "--steps", "1", *mixer, "--attention-kernel", "sdpa")
    assert code == 2 and "--attention-kernel (no softmax attention layer" in err


def test_ctrl_c_outside_the_steps_is_one_line_not_aborted(tmp_path, monkeypatch):
    """A review (2026-11-28): Ctrl-C after the last step (held-out scores) printed click's 'error: aborted'."""
    import expressivity.cli.train as train_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_cli, "execute", interrupted)
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--steps", "2", "--out", tmp_path / "r")
    assert code == 130 and err.strip() == "error: interrupted; nothing was written" and not (tmp_path / "r").exists()


def test_a_run_folder_is_trained_by_one_process_at_a_time(tmp_path):
    """A fresh audit (2026-11-28): two `train --resume` of one run both exited 0 with their metrics interleaved
    (385 lines for 275 steps), or one tracebacked when the other removed its checkpoint.tmp."""
    from expressivity.records import folder_in_use

    out = tmp_path / "r"
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--steps", "4", "--out", out)
    assert code == 0, err
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with folder_in_use(out, "train run"):   # another process holding it (flock: any other open file description)
        code, _, err = run("train", "--resume", out)
        assert code == 2 and err == f"error: {out} is in use by another train run; wait for it to finish or stop it, " \
                                     "then run again\n"
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    code, _, err = run("train", "--resume", out)   # released at the end of the holder's block and of each command
    assert code == 0, err


def test_the_record_names_the_memory_budget_the_run_was_held_to(tmp_path):
    """`--memory-budget` was recorded nowhere, in the --json record or run.json (an audit, 2026-11-28)."""
    code, out, err = run("train", "--task", "reverse", "--steps", "2", "--d-model", "8", "--memory-budget", "2GiB",
                         "--out", tmp_path / "r", "--json")
    assert code == 0, err
    assert json.loads(out)["run"]["memory_budget"] == "2 GiB (--memory-budget)"
    assert json.loads((tmp_path / "r" / "run.json").read_text())["memory_budget"] == "2 GiB (--memory-budget)"


def test_a_run_whose_folder_was_removed_while_it_trained_is_not_reported_as_written(tmp_path, monkeypatch):
    """A fresh audit (2026-11-28): `rm -rf OUT` mid-run, exit 0 and "results in OUT/: run.json, ..." over a folder
    that the later checkpoints had re-made without run.json or seed_0/."""
    import shutil

    import expressivity.cli.train as train_cli

    execute = train_cli.execute

    def removed_meanwhile(configs, out, **kwargs):
        shutil.rmtree(out)
        return execute(configs, out, **kwargs)

    monkeypatch.setattr(train_cli, "execute", removed_meanwhile)
    out = tmp_path / "r"
    code, stdout, err = run("train", "--task", "reverse", "--length", "4", "--steps", "4", "--out", out, "--json")
    assert code == 2 and stdout == "" and err == (f"error: {out} was removed while the run trained (its run.json is "
                                                  f"gone): what is there now is not a whole run; remove {out} and "
                                                  "train again\n")
    assert not (out / "loss_curve.png").exists() and not (out / "manifest.json").exists()


def test_ctrl_c_while_the_loss_curve_is_drawn_names_what_was_kept_and_how_to_finish(tmp_path, monkeypatch):
    """A fresh audit (2026-11-28): Ctrl-C while the figure was drawn said only "error: aborted"; the trained
    checkpoints were kept and --resume writes the figure and manifest of the finished run."""
    import expressivity.figures.training as figures

    plot = figures.plot_loss_curves

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(figures, "plot_loss_curves", interrupted)
    out = tmp_path / "r"
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--steps", "4", "--out", out)
    assert code == 130 and err == ("error: interrupted after training, before the loss curve and manifest were "
                                   f"written; the trained checkpoints are kept: finish with --resume {out}\n")
    assert not (out / "loss_curve.png").exists()
    monkeypatch.setattr(figures, "plot_loss_curves", plot)
    code, _, err = run("train", "--resume", out)
    assert code == 0, err
    assert (out / "loss_curve.png").stat().st_size > 1000
    assert json.loads((out / "manifest.json").read_text())["files"]["loss_curve.png"]


def test_a_train_stopped_by_sigterm_checkpoints_its_last_step_says_so_and_exits_143(tmp_path):
    """`timeout 1h expressivity train ...` or a scheduler's preemption: SIGTERM killed the run where it stood,
    silently, losing every step since the last checkpoint (the default is every 1,000 steps). Now the step in
    progress finishes, is checkpointed, and the command says so and how to continue, exit 143 (128 + SIGTERM)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    import expressivity

    src = Path(expressivity.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "expressivity.cli.main", "train", "--task", "reverse", "--length",
                             "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8", "--batch-size", "8",
                             "--steps", "1000000", "--eval-every", "5", "--out", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = out / "seed_0" / "metrics.jsonl"
    deadline = time.monotonic() + 600   # a guard against a hang, far beyond a loaded machine's start (seconds)
    while not (metrics.is_file() and metrics.stat().st_size > 0):   # training has begun: steps are being taken
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "training did not start within ten minutes"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted (SIGTERM) after step ") and \
        f"kept: continue with --resume {out}" in err
    step = int(err.split("(SIGTERM) after step ")[1].split(";")[0])
    saved = json.loads((out / "seed_0" / "checkpoint" / "config.json").read_text())
    assert saved["status"] == "running" and saved["step"] == step > 0


def test_an_ensemble_stopped_before_its_first_checkpoint_resumes_afresh(tmp_path):
    # A fresh audit (2026-11-29): killed before its first checkpoint (the default is every 500 steps), an ensemble's
    # folder held run.json and manifest.json only; --resume answered "no ensemble checkpoint to resume; start a fresh
    # run" and a fresh run "already holds a run; continue it with --resume": no way out but deleting the folder.
    out = tmp_path / "ens"
    args = ("train", "--task", "sort", "--steps", "20", "--seeds", "0,1", "--ensemble")
    code, _, err = run(*args, "--out", out)
    assert code == 0, err
    whole = {s: (out / f"seed_{s}" / "metrics.jsonl").read_text() for s in (0, 1)}
    import shutil
    for name in ("ensemble", "seed_0", "seed_1", "loss_curve.png"):   # what is not there before a first checkpoint
        path = out / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    code, _, err = run("train", "--resume", out)
    assert code == 0, err
    assert {s: (out / f"seed_{s}" / "metrics.jsonl").read_text() for s in (0, 1)} == whole   # trained afresh, the same


@pytest.mark.parametrize("option", [["--length"], ["--task-arg", "vocab="], ["--layers"], ["--d-model"]])
def test_an_integer_beyond_float64_is_refused_in_one_line(option):
    """A fuzz pass (2026-11-29): 10**309 ended in an OverflowError traceback (exit 1) while the size guard formatted
    its own message with :.3g."""
    huge = str(10 ** 309)
    args = [*option[:-1], option[-1] + huge] if option[-1].endswith("=") else [*option, huge]
    code, _, err = run("train", "--task", "reverse", *args)
    assert code == 2 and "about 10^309 is beyond any memory budget" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
