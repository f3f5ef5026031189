import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli


def run(*args):
    res = CliRunner().invoke(cli, ["yun", *args])
    return res


def test_contextual_json_spec_vector():
    res = run("contextual", "--n", "3", "--d", "1", "--delta", "1/3", "--input", "0;1/3;2/3", "--json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["values"] == [1190, "3580/3", "3608/3"]


def test_contextual_d2_positional():
    res = run("contextual", "--n", "2", "--d", "2", "--delta", "1/2", "--positional", "--input", "0,1/2;1/2,0.25", "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and len(out["values"]) == 2 and all(out["in_range"])


def test_verify_json_keys():
    res = run("verify", "--n", "3", "--d", "2", "--delta", "1/2", "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0
    assert {"failures", "grid_points", "classes", "min_gap", "t_l", "t_r", "seconds", "arithmetic"} <= set(out)
    assert out["failures"] == 0 and out["grid_points"] == 729


def test_verify_set_a_exit_1():
    res = run("verify", "--n", "2", "--d", "1", "--delta", "1/2", "--constants", "A", "--json")
    assert res.exit_code == 1 and json.loads(res.stdout)["failures_by_property"]["P4"] > 0


def test_build_json_and_outputs(tmp_path):
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,1/4", "--samples", "300",
              "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert isinstance(out, list) and len(out) == 2
    for r in out:
        assert {"size", "checks", "errors", "bounds", "margins", "constants", "ok"} <= set(r)
        assert r["ok"] and all(c["failures"] == 0 for c in r["checks"]) and len(r["checks"]) == 6   # Theorem 2: + equivariance at the classes' other orders, + grid points
        assert {"d_p(f, g)", "d_p(f, f_bar)", "d_p(f_bar, g_bar)", "d_p(g_bar, g)"} == {e["name"] for e in r["errors"]}
        assert r["size"]["paper_bound"] > 0 and r["size"]["ratio"] > 1 and r["constants"]["lambda"] > 0
    for name in ("run.json", "dp_vs_delta.png", "delta_1_2/contextual_values.png",
                 "delta_1_4/modified/network.json", "delta_1_4/softened/weights.safetensors"):
        assert (tmp_path / name).exists(), name
    assert json.loads((tmp_path / "run.json").read_text())["command"] == "yun build"


@pytest.mark.parametrize("args,msg", [
    (["verify", "--n", "2", "--d", "1", "--delta", "0.5"], "1/K"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;1;2"], "tokens"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;x"], "not a number"),
    (["verify", "--n", "1", "--d", "1", "--delta", "1/2"], "n >= 2"),
    (["build", "--target", "prefix-mean", "--n", "2", "--d", "1", "--delta", "1/2"], "--positional"),
    (["build", "--target", "nope", "--n", "2", "--d", "1", "--delta", "1/2"], "unknown target"),
    # a file name for a module name: the fix names the spelling that works (a fresh audit, 2026-11-29)
    (["build", "--target", "mytarget_nowhere.py:f", "--n", "2", "--d", "1", "--delta", "1/2"],
     "give the module's name, not its file: mytarget_nowhere:f"),
    (["build", "--target", "mean-shift", "--n", "3", "--d", "3", "--delta", "1/8"], "parameters"),
    (["build", "--target", "mean-shift", "--n", "2", "--d", "2", "--delta", "1/8", "--budget", "100000000"], "float64"),
])
def test_bad_input_exit_2_one_line(args, msg):
    res = run(*args)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and msg in lines[0]


def test_bad_input_subprocess_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "expressivity.cli.main", "yun", "verify", "--n", "2", "--d", "1",
                           "--delta", "1/2x"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.startswith("error:")


# ---- review fixes: sizes, budgets, non-finite numbers, malformed lists, ignored options, output ----

B = ["build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100"]


@pytest.mark.parametrize("args,msg", [
    (["verify", "--n", "100", "--d", "100", "--delta", "1/100"], "about 10^"),
    (["verify", "--n", "3", "--d", "5", "--delta", "1/100"], "about "),
    (["build", "--target", "mean-shift", "--n", "100", "--d", "100", "--delta", "1/100"], "about 10^"),
    (["build", "--target", "mean-shift", "--n", "1000000", "--d", "30", "--delta", "1/2"], "about 10^"),
    (["build", "--target", "mean-shift", "--n", "2", "--d", "5", "--delta", "1/100", "--budget", "1" + "0" * 21], "about 4.9 x 10^21 parameters (softened network"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/1000000000", "--input", "0;0"], "layers"),
    (["contextual", "--n", "2", "--d", "1000", "--delta", "1/1000", "--input", "0;0"], "about 10^"),
    ([*B[:-2], "--samples", "20000000"], "--samples"), ([*B[:-2], "--samples", "2"], "covers far less"),
    ([*B, "--p", "nan"], "--p"), ([*B, "--p", "inf"], "--p"), ([*B, "--p", "0.5"], "--p"),
    ([*B, "--lambda", "nan"], "--lambda"), ([*B, "--lambda", "inf"], "--lambda"), ([*B, "--lambda", "-1"], "--lambda"),
    ([*B, "--epsilon", "nan"], "--epsilon"), ([*B, "--epsilon", "inf"], "--epsilon"),
    ([*B, "--seed", "-1"], "--seed"),
    ([*B, "--lambda", "1e308"], "can overflow float64 in the attention scores"),
    # a fresh audit (2026-11-28): at --lambda 50 the softened check passed deviations of 619 against its
    # first-order "bound" of 1.4e5 (d_2 388 for values in [0, 1]), exit 0
    ([*B, "--lambda", "50"], "beyond delta/8"), ([*B, "--lambda", "1"], "give a lambda of at least"),
    (["build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,,1/4"], "empty field"),
    (["build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,"], "empty field"),
    (["build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,1/2"], "repeats"),
    (["verify", "--n", "2", "--d", "1", "--delta", "1/2,"], "1/K"),
    # a review (2026-11-28): int() took these as 1/2
    (["verify", "--n", "2", "--d", "1", "--delta", "1/\u0662"], "1/K"), (["verify", "--n", "2", "--d", "1", "--delta", "1/0_2"], "1/K"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;"], "empty token"),
    (["contextual", "--n", "2", "--d", "2", "--delta", "1/2", "--input", "0,;0,0"], "empty coordinate"),
    (["verify", "--n", "2", "--d", "1", "--delta", "1/2", "--positional", "--constants", "A"], "--positional"),
    (["verify", "--n", "2", "--d", "1", "--delta", "1/2", "--shift", "paper"], "--positional"),
    ([*B, "--shift", "paper"], "--positional"),
    (["contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", "0;0", "--shift", "paper"], "--positional"),
])
def test_review_refusals_exit_2_one_line(args, msg):
    res = run(*args)
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and msg in lines[0], res.stderr


def test_huge_target_values_agree_with_the_verified_network_within_a_bound_of_their_size(tmp_path, monkeypatch):
    # d_p is computed with scaled differences (no overflow). The agreement bound was absolute (rounding of the value
    # map in its own units), so targets of size 1e5 failed by 2.9e-7 against 2.5e-7 and 1e300 "could not be carried";
    # it is now in the value map's units times the output rescale 1/sigma (an audit, 2026-11-28): at 1e300 the
    # softened network agrees with g_bar to about 3e-9 relative, within the bound, and the build passes.
    (tmp_path / "yun_huge_target.py").write_text("def huge(X):\n    return X * 1e300\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("build", "--target", "yun_huge_target:huge", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
              "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    agreement = next(c for c in report["checks"] if c["property"].startswith("softened g equals the verified g_bar off"))
    assert report["ok"] and 0 < agreement["max_deviation"] <= report["margins"]["agreement_bound"] < 1e-6 * 1e300


def test_epsilon_outside_its_range_is_refused_by_name():
    for eps in ("0.2", "1e-310"):
        res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/4", "--epsilon", eps)
        assert res.exit_code == 2 and "--epsilon" in res.stderr and "delta/4" in res.stderr, res.output


def test_an_epsilon_whose_ramps_cover_more_than_the_automatic_width_is_said_next_to_the_checks():
    """--epsilon 1e-3 at delta 1/4 gave d_2(f, g) 28.9 (0.33 by default, a target in [0, 1]) with "all checks
    passed" and no word that the checks leave the ramps, 2% of the cube, out (a fresh audit, 2026-11-28)."""
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import SoftenConfig, automatic_epsilon, ramp_measure

    base = ("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/4", "--samples", "100")
    p = YunParams(2, 1, 4)
    automatic = automatic_epsilon(p, SoftenConfig())
    # 2 entries x 2 breakpoints x (levels + 1) ramps of width 2^-10 each, plus float64's drift
    assert ramp_measure(p, 1e-3) >= 2 * 2 * (p.levels + 1) * 2.0 ** -10 > ramp_measure(p, automatic)
    for eps, wide in (("0.001", True), ("1e-9", True), (repr(automatic), False), (None, False)):
        res = run(*base, *(("--epsilon", eps) if eps else ()))
        assert res.exit_code == 0 and "all checks passed" in res.stdout, res.output
        assert ("g is unverified on them" in res.stdout) is wide, (eps, res.stdout)
        report = json.loads(run(*base, *(("--epsilon", eps) if eps else ()), "--json").stdout)
        assert ("only the output clamp bounds it, to [0, 0.75]" in report["notes"]) is wide, report["notes"]
    assert "up to 0.0195 of the cube" in run(*base, "--epsilon", "0.001").stdout


def test_large_p_reports_a_nonzero_error():
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
              "--p", "2000", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["errors"][0]["value"] > 0.01


def test_verify_human_summary_on_stdout():
    res = run("verify", "--n", "2", "--d", "1", "--delta", "1/2")
    assert res.exit_code == 0 and "0 failures" in res.stdout and "extended-grid points" in res.stdout


def test_positional_defaults_still_accepted():
    assert run("verify", "--n", "2", "--d", "1", "--delta", "1/2", "--positional", "--shift", "paper").exit_code == 0
    assert run("verify", "--n", "2", "--d", "1", "--delta", "1/2", "--constants", "B").exit_code == 0


def test_json_run_records():
    c = json.loads(run("contextual", "--n", "3", "--d", "1", "--delta", "1/3", "--input", "0;1/3;2/3", "--json").stdout)
    assert c["run"]["command"] == "yun contextual" and c["run"]["config"]["delta"] == "1/3"
    assert c["values"] == [1190, "3580/3", "3608/3"] and "expressivity_version" in c["run"]
    v = json.loads(run("verify", "--n", "2", "--d", "1", "--delta", "1/2", "--json").stdout)
    assert v["run"]["command"] == "yun verify" and v["failures"] == 0 and v["run"]["config"]["constants"] == "B"
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2,1/4", "--samples", "100",
              "--seed", "3", "--json")
    out = json.loads(res.stdout)
    assert isinstance(out, list) and len(out) == 2
    for r in out:
        assert r["run"]["command"] == "yun build" and r["run"]["seed"] == 3 and r["errors"][0]["name"] == "d_p(f, g)"
        assert r["run"]["config"]["deltas"] == ["1/2", "1/4"]


def test_dp_terms_state_their_method():
    r = {e["name"]: e for e in json.loads(run(*B, "--json").stdout)["errors"]}
    assert "network evaluation" in r["d_p(f, g)"]["method"] and "network evaluation" in r["d_p(g_bar, g)"]["method"]
    assert r["d_p(f_bar, g_bar)"]["method"].startswith("exact identity verified on every cube")
    assert "Monte Carlo" in r["d_p(f, f_bar)"]["method"]


def test_a_failure_in_a_later_delta_leaves_no_output_folder(tmp_path, monkeypatch):
    # The target raises only on the finer grid's cube centres: delta 1/2 builds, 1/4 fails.
    (tmp_path / "_late_failing_target.py").write_text(
        "import numpy as np\n"
        "def f(X):\n"
        "    if np.any((X > 0.1) & (X < 0.2)):\n"
        "        raise ValueError('no')\n"
        "    return X + X.mean(axis=1, keepdims=True)\n"
        "f.equivariant = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    res = run("build", "--target", "_late_failing_target:f", "--n", "2", "--d", "1", "--delta", "1/2,1/4",
              "--samples", "100", "--out", str(out))
    assert res.exit_code == 2 and "ValueError: no" in res.stderr
    assert not out.exists() and not list(tmp_path.glob("out.partial*"))


def test_out_must_be_a_usable_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    for out, msg in (("", "current folder"), (str(tmp_path / "mine"), "did not write")):
        res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--out", out)
        assert res.exit_code == 2 and msg in res.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_a_user_target_in_the_current_folder_imports_and_its_prints_leave_json_intact(tmp_path, monkeypatch):
    (tmp_path / "chatty_target.py").write_text(
        'print("importing")\ndef f(X):\n    print("called")\n    return X.mean(axis=1, keepdims=True) + 0 * X\n')
    monkeypatch.chdir(tmp_path)
    res = run("build", "--target", "chatty_target:f", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
              "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["ok"] is True and "called" in res.stderr and "importing" in res.stderr


def test_an_exhaustive_check_above_the_memory_available_is_refused_before_it_starts(monkeypatch):
    """``yun verify --delta 1/4000`` (16M points, inside the default --budget of 20M) ran out of memory
    after 38 s under a 3 GB limit (a fresh audit, 2026-11-28): refused at once, with its estimate."""
    from expressivity.training import budget

    monkeypatch.setattr(budget, "available_ram", lambda: (2 * 2**30, True))
    for args in (["verify", "--n", "2", "--d", "1", "--delta", "1/4000"],
                 ["build", "--target", "mean-shift", "--n", "2", "--d", "1", "--delta", "1/4000", "--budget", "300000000"]):
        res = run(*args)
        assert res.exit_code == 2 and res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
        assert "16,008,001 extended-grid points holds about 4.47 GiB" in res.stderr
        assert "above the budget of 1.6 GiB" in res.stderr
    res = run("verify", "--n", "2", "--d", "1", "--delta", "1/100")
    assert res.exit_code == 0 and "0 failures on 10,201 extended-grid points" in res.stdout


def test_run_on_a_softened_network_answers_grid_points_and_refuses_ramps(tmp_path):
    """An audit (2026-11-28): `run` on the softened network printed 493,331.79 at (0, 1/2), within its claim, for a
    target in [0, 1]; at delta 1/5, 1,069 at (1/5, 3/5), whose float64 values lie a rounding from a breakpoint."""
    from click.testing import CliRunner

    from expressivity.cli.main import cli

    def expressivity(*args):
        return CliRunner().invoke(cli, [str(a) for a in args])

    for delta in ("1/16", "1/5"):
        res = expressivity("yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", delta,
                           "--samples", "200", "--out", tmp_path / delta.replace("/", "_"))
        assert res.exit_code == 0, res.output
    soft, modified = tmp_path / "1_16" / "delta_1_16" / "softened", tmp_path / "1_16" / "delta_1_16" / "modified"
    res = expressivity("run", soft, "--input", "0;1/2", "--json")
    exact = expressivity("run", modified, "--input", "0;1/2", "--json")
    assert res.exit_code == 0 and exact.exit_code == 0, res.output + exact.output
    got, want = json.loads(res.stdout), json.loads(exact.stdout)
    assert got["within_claim"] and max(abs(float(a[0]) - float(eval(str(b[0]), {}))) for a, b in
                                       zip(got["output"], want["output"])) < 1e-6
    res = expressivity("run", soft, "--input", "0.4999999999;1/2")
    assert res.exit_code == 2 and "1e-10 below the quantizer breakpoint 1/2: on the softened ramp" in res.stderr
    res = expressivity("run", tmp_path / "1_5" / "delta_1_5" / "softened", "--input", "1/5;3/5")
    assert res.exit_code == 2 and "the quantizer breakpoint 1/5" in res.stderr
    res = expressivity("run", tmp_path / "1_5" / "delta_1_5" / "softened", "--input", "1/5;3/5", "--allow-outside",
                       "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["within_claim"] is False


def test_a_user_target_s_run_record_names_its_code(tmp_path, monkeypatch):
    """An audit (2026-11-28): `yun build --target mytgt:f` recorded only "mytgt:f"; replayed after the file changed,
    it built other weights from a record that read the same. The record now names the file and its SHA-256."""
    import hashlib

    (tmp_path / "yun_rec_tgt.py").write_text("def f(X):\n    return X * 0.25\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(sys.path))
    res = run("build", "--target", "yun_rec_tgt:f", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "200",
              "--out", str(tmp_path / "b"))
    assert res.exit_code == 0, res.output
    config = json.loads((tmp_path / "b" / "run.json").read_text())["config"]
    assert config["target_source"] == str(tmp_path / "yun_rec_tgt.py")
    assert config["target_sha256"] == hashlib.sha256((tmp_path / "yun_rec_tgt.py").read_bytes()).hexdigest()


def test_theorem_2_with_fewer_cells_than_tokens_is_refused_and_verify_says_p1_to_p3_are_empty(tmp_path):
    """An audit (2026-11-28): n = 3 tokens at delta 1/2 (2 cells per token): the build exited 1 ("no point could be
    checked") and `yun verify` printed "0 failures ... 0 classes", exit 0."""
    res = run("build", "--target", "smooth-rank", "--n", "3", "--d", "1", "--delta", "1/2")
    assert res.exit_code == 2 and "2 grid cells per token, fewer than n=3 tokens" in res.stderr and res.stdout == ""
    res = run("verify", "--n", "3", "--d", "1", "--delta", "1/2")
    assert res.exit_code == 0 and "P1-P3 concern no cube here" in res.stderr
    assert "P1-P3" not in run("verify", "--n", "3", "--d", "1", "--delta", "1/3").stderr


def test_a_folder_whose_build_failed_a_check_carries_no_claim(tmp_path, monkeypatch):
    """An audit (2026-11-28): `yun build` exits 1 on a failed check but keeps the folder, and `run` on it answered
    within the claim, exit 0."""
    import expressivity.constructions.yun.build as yun_build

    monkeypatch.setattr(yun_build, "value_map_rounding", lambda p, value_scale=None: 0.0)   # a bound that fails
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/12", "--samples", "300",
              "--out", str(tmp_path / "b"))
    assert res.exit_code == 1, res.output
    monkeypatch.undo()
    ran = CliRunner().invoke(cli, ["run", str(tmp_path / "b" / "delta_1_12" / "softened"), "--input", "0.1;0.6"])
    assert ran.exit_code == 2 and "records a failed check" in ran.stderr


def test_a_build_s_d_p_samples_may_land_on_the_ramps_and_a_too_narrow_ramp_is_refused_by_name():
    """A fuzz (2026-11-28): with 10^6 samples (or --epsilon 0.06) a Monte-Carlo sample landed on a ramp and the
    build was refused by the softened network's input domain, though d_p is over the whole cube; --epsilon 1e-20 was
    refused naming an internal rule ("rule 'off-ramps': left must be ...")."""
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/4", "--samples", "2000",
              "--epsilon", "0.06", "--json")
    assert res.exit_code == 0, res.output
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/4", "--epsilon", "1e-20")
    assert res.exit_code == 2 and res.stderr.startswith("error: --epsilon 1e-20 is outside [1.13687e-13, delta/4") and \
        "narrower ramps make the quantizer's units so steep" in res.stderr   # the range now starts where drift allows


def test_the_output_clamp_is_the_default_and_no_clamp_builds_the_paper_s_network():
    """Without the clamp the quantizer ramps carried 100% of d_2(f, g) = 7.4 at delta 1/8 (off them 0.246): g reached
    the contextual values there. The clamp bounds them by the target's range; --no-clamp gives the paper's network
    and says why its d_2 is large; the run record says which was built."""
    base = ("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/8", "--samples", "400")
    clamped = json.loads(run(*base, "--json").stdout)
    paper = json.loads(run(*base, "--no-clamp", "--json").stdout)
    assert clamped["errors"][0]["value"] < 0.3 < 2 < paper["errors"][0]["value"]
    assert clamped["run"]["config"]["clamp"] is True and paper["run"]["config"]["clamp"] is False
    assert clamped["constants"]["clamp"] is True and paper["margins"]["output_clamp"] is None
    assert clamped["size"]["layers_by_stage"]["value"] == paper["size"]["layers_by_stage"]["value"] + 2   # two passes
    text = run(*base, "--no-clamp").stdout
    assert "from the quantizer ramps proper" in text and "(built with --no-clamp)" in text
    assert "quantizer ramps proper" not in run(*base).stdout


def test_a_coordinate_the_agreement_checks_cannot_fail_for_is_said_by_build_and_run(tmp_path, monkeypatch):
    # A fresh audit (2026-11-29): smooth-rank with output coordinate 0 scaled by 1e-9 beside coordinate 1 of size 1
    # said "all checks passed" with no word (the note compared the absolute bound 2.5e-7 with the largest value of all
    # coordinates, 0.75), and `run` on the saved softened network answered coordinate 0 off by 35% (median)
    # "within_claim: true" with no note either.
    (tmp_path / "split_target.py").write_text(
        "from expressivity.targets import get_target\n"
        "def split(X):\n"
        "    Y = get_target('smooth-rank')(X)\n"
        "    Y[..., 0] *= 1e-9\n"
        "    return Y\n"
        "split.equivariant = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("build", "--target", "split_target:split", "--n", "2", "--d", "2", "--delta", "1/4", "--samples",
              "200", "--out", str(tmp_path / "b"))
    assert res.exit_code == 0, res.stderr
    assert "cannot fail there" in res.stdout and "output coordinate 0" in res.stdout

    def cli_run(folder, text):
        done = CliRunner().invoke(cli, ["run", str(tmp_path / "b" / "delta_1_4" / folder), "--input", text, "--json"])
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)

    warnings = cli_run("softened", "0.6,0.1;0.9,0.3")["warnings"]
    assert any("cannot fail for output coordinate 0," in w for w in warnings), warnings
    assert "warnings" not in cli_run("modified", "1/2,0;3/4,1/4")   # the verified network: exact, nothing to say


def test_an_input_on_a_ramp_is_refused_with_the_fix_for_ramps(tmp_path):
    # A fresh audit (2026-11-29): 0.4999999999 (inside [0, 1), 1e-10 below the breakpoint 1/2) was refused with
    # "rescale the inputs into [0, 1)" alone, which changes nothing
    res = run("build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/16", "--samples", "100",
              "--out", str(tmp_path / "y"))
    assert res.exit_code == 0, res.stderr
    done = CliRunner().invoke(cli, ["run", str(tmp_path / "y" / "delta_1_16" / "softened"), "--input", "0.4999999999;1/2"])
    assert done.exit_code == 2 and "move every entry off the quantizer's ramps (not within" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert CliRunner().invoke(cli, ["run", str(tmp_path / "y" / "delta_1_16" / "softened"), "--input",
                                    "0.49;1/2"]).exit_code == 0   # moved off the ramp, as the fix says


def test_a_coordinate_the_checks_cannot_fail_for_is_said_by_its_transformer_lens_export_too(tmp_path, monkeypatch):
    # A review (2026-11-29): exporting the softened network kept its claim but not the warning, so every later read of
    # the exported folder answered "within_claim: true" with no word
    (tmp_path / "tiny_target.py").write_text(
        "from expressivity.targets import get_target\n"
        "def tiny(X):\n"
        "    return 1e-9 * get_target('smooth-rank')(X)\n"
        "tiny.equivariant = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    res = run("build", "--target", "tiny_target:tiny", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
              "--out", str(tmp_path / "b"))
    assert res.exit_code == 0, res.stderr
    done = CliRunner().invoke(cli, ["export", str(tmp_path / "b" / "delta_1_2" / "softened"), "--to",
                                    "transformer-lens", "--out", str(tmp_path / "tl"), "--json"])
    assert done.exit_code == 0, done.stderr
    done = CliRunner().invoke(cli, ["run", str(tmp_path / "tl"), "--input", "0.1;0.6", "--json"])
    assert done.exit_code == 0, done.stderr
    warnings = json.loads(done.stdout)["warnings"]
    assert any(w.startswith("the network it was exported from: its build's agreement checks") for w in warnings)
