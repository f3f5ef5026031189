"""``expressivity wang-e build`` and ``kernel`` as a user runs them."""

import json

import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli


def run(*args):
    result = CliRunner().invoke(cli, ["wang-e", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("args", [["--memory", "fixed"], ["--memory", "kernel"], ["--memory", "adaptive", "--length", "12"],
                                  ["--memory", "nested", "--depth", "2", "--max-lag", "3", "--length", "12"],
                                  ["--memory", "dpfree-pointer", "--max-lag", "4"], ["--memory", "dpfree-boolean"]])
def test_build_prints_the_documented_keys(args):
    code, out, err = run("build", *args, "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert {"sup_error", "bound", "kernel_l1", "ffn_error", "params", "max_abs_weight", "report", "run"} <= set(obj)
    assert obj["ok"] and obj["sup_error"] <= obj["bound"] and obj["run"]["command"] == "wang-e build"


def test_build_saves_the_network(tmp_path):
    from expressivity.export import load_network

    code, _, err = run("build", "--memory", "fixed", "--readout", "linear", "--out", str(tmp_path / "net"))
    assert code == 0, err
    net = load_network(tmp_path / "net" / "network")
    assert net.layers[0].normaliser == "infinite" and (tmp_path / "net" / "report.json").exists()


def test_kernel_command_reproduces_a_spec_value():
    code, out, _ = run("kernel", "--rpe", "lin", "--lag", "3", "--b", "2", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["l1_error"] == pytest.approx(3.44e-3, rel=0.01) and obj["heads"] == 5
    assert obj["max_abs_coefficient"] > 1e7 and obj["arithmetic"].startswith("mpmath")
    code, out, _ = run("kernel", "--rpe", "lin", "--lag", "4", "--heads", "256", "--construction", "chebyshev",
                       "--eps", "0.1", "--json")
    assert code == 0 and json.loads(out)["l1_error"] == pytest.approx(3.4e-3, rel=0.05)


@pytest.mark.parametrize("args, needle", [
    (["build", "--memory", "adaptive", "--lags", "1,3"], "does not take --lags"),
    (["build", "--memory", "dpfree-pointer", "--beta", "inf"], "does not take --beta"),
    (["build", "--memory", "dpfree-pointer", "--max-lag", "33"], "max-lag must be an integer in [1, 32]"),
    (["build", "--memory", "dpfree-pointer", "--max-lag", "8", "--length", "8"], "length must be an integer in [9,"),
    # the reason of the lower end, named by its flags (it read "length must be an integer in [6, 512]": a review)
    (["build", "--memory", "dpfree-boolean", "--lags", "2,5", "--length", "5"], "reach past the largest of --lags"),
    (["build", "--memory", "dpfree-boolean", "--lags", "2,2"], "distinct"),
    (["build", "--memory", "dpfree-boolean", "--lags", "1,2,3,4,5,6,7,8,9"], "at most 8 lags"),
    (["build", "--memory", "dpfree-boolean", "--max-lag", "3"], "does not take --max-lag"),
    (["build", "--memory", "kernel", "--readout", "product"], "does not take --readout"),
    (["build", "--memory", "fixed", "--b", "nan"], "--b"),
    (["build", "--memory", "fixed", "--b", "4"], "float64 cannot carry"),
    (["build", "--memory", "fixed", "--lags", ""], "lags"),
    (["build", "--memory", "nested", "--beta", "-1"], "--beta"),
    (["build", "--memory", "adaptive", "--beta", "1e999"], "beyond float64; write 'inf'"),   # was built as hardmax
    (["build", "--memory", "kernel", "--alpha", "inf"], "--alpha"),
    (["build", "--memory", "fixed", "--out", ""], "current folder"),
    (["kernel", "--rpe", "lin", "--lag", "3", "--eps", "0.1"], "--eps applies"),
    (["kernel", "--rpe", "lin", "--lag", "3", "--construction", "chebyshev"], "needs --heads"),
    (["kernel", "--rpe", "lin", "--lag", "300"], "budget"),
    (["kernel", "--rpe", "cos", "--lag", "3"], "--rpe"),
])
def test_bad_input_is_one_line(args, needle):
    code, out, err = run(*args)
    assert code == 2 and err.startswith("error:") and needle in err and len(err.strip().splitlines()) == 1, err


def test_coefficients_beyond_float64_are_reported_by_their_exact_order_of_magnitude():
    code, out, err = run("kernel", "--rpe", "log", "--lag", "64", "--heads", "512", "--construction", "chebyshev", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["max_abs_coefficient"] == "inf" and 308 < obj["max_abs_coefficient_log10"] < 10_000
    code, out, _ = run("kernel", "--rpe", "log", "--lag", "64", "--heads", "512", "--construction", "chebyshev")
    assert code == 0 and "(beyond float64)" in out and "10^" in out


@pytest.mark.parametrize("args", [["build", "--memory", "fixed", "--b", "1e308"], ["build", "--memory", "fixed", "--b", "1e-308"],
                                  ["kernel", "--rpe", "log", "--lag", "3", "--b", "1e-308"],
                                  ["build", "--memory", "kernel", "--alpha", "1e-308"],
                                  ["build", "--memory", "adaptive", "--beta", "1e308"]])
def test_parameters_outside_their_range_are_one_line_errors(args):
    code, out, err = run(*args)
    assert code == 2 and out == "" and err.startswith("error:") and len(err.strip().splitlines()) == 1, err


def test_too_many_mismatched_heads_are_refused_in_one_line():
    code, out, err = run("build", "--memory", "kernel", "--heads", "4096")
    assert code == 2 and out == "" and "beyond float64" in err and len(err.strip().splitlines()) == 1, err


def test_eps_is_refused_where_the_single_matched_head_ignores_it():
    code, _, err = run("build", "--memory", "kernel", "--eps", "0.2")
    assert code == 2 and "--eps" in err
    code, _, err = run("build", "--memory", "kernel", "--eps", "0.2", "--heads", "4", "--rpe", "lin", "--json")
    assert code == 0, err


@pytest.mark.parametrize("lag,says", [(0, "needs a lag of at least 1"), (10000, "is beyond float64")])
def test_a_chebyshev_kernel_it_cannot_build_is_refused_not_printed_as_a_zero_fit(lag, says):
    """lag 0 made a bump of no width ("l1 error 1; max |coefficient| 0", exit 0); lag 10,000 of lin
    divided by zero (a traceback): a fuzz pass and a resource audit, 2026-11-28."""
    code, _, err = run("kernel", "--rpe", "lin", "--lag", str(lag), "--heads", "8", "--construction", "chebyshev")
    assert code == 2 and says in err and err.count("\n") == 1, err


def test_a_kernel_fit_no_better_than_zero_is_said():
    """`wang-e build --memory kernel --kernel exp --rpe log` built weights of 6e-219 and said "checks passed"
    against a bound of 1, the zero kernel's error, without a word (an audit, 2026-11-28)."""
    code, out, err = run("build", "--memory", "kernel", "--kernel", "exp", "--rpe", "log")
    assert code == 0, err
    assert "note: kernel l1 error 1 is no better than the zero kernel's" in out
    code, out, err = run("build", "--memory", "kernel", "--kernel", "exp")
    assert code == 0 and "no better than the zero kernel" not in out
    code, out, err = run("build", "--memory", "kernel", "--kernel", "exp", "--rpe", "log", "--json")
    assert code == 0 and json.loads(out)["note"].startswith("kernel l1 error 1 is no better than the zero kernel's")


def test_a_fixed_memory_check_shorter_than_its_largest_lag_is_refused_naming_the_lag():
    """A review (2026-11-28): the checker's range (past the largest lag) contradicted the command's help (2..4096)
    without saying why: "length must be between 4 and 4096, got 2"."""
    from click.testing import CliRunner

    from expressivity.cli.main import cli

    res = CliRunner().invoke(cli, ["wang-e", "build", "--memory", "fixed", "--length", "2"])
    assert res.exit_code == 2 and "must reach past the largest lag (3): give a length of 4 to 4096" in res.stderr


def test_a_softmax_pointer_bound_no_better_than_any_average_is_refused_and_a_weak_one_noted():
    """--beta 0.5 bounded the error by 3.12 (any average of values in [-1, 1] is within 2) and "checks passed"; at
    beta 1 a network whose hop retrieves nothing (error 1.23) passed against 1.55 (a fresh audit, 2026-11-29)."""
    code, _, err = run("build", "--memory", "adaptive", "--beta", "0.5")
    assert code == 2 and "no better than any average of values in [-1, 1]" in err, err
    code, out, err = run("build", "--memory", "adaptive", "--beta", "1")
    assert code == 0 and "note: the bound 1.54862 is above 1" in out, out + err
    code, out, err = run("build", "--memory", "adaptive", "--beta", "8")
    assert code == 0 and "note:" not in out, out + err
    code, _, err = run("build", "--memory", "fixed", "--width", "3")
    assert code == 2 and "--width must be even" in err, err


def test_a_function_readout_whose_bound_is_above_the_target_says_a_zero_network_would_pass():
    """An audit (2026-11-29): sin-product at the default grid has bound 3.26 against |f| <= 1, and a network
    answering 0 passed its check (error 0.99999) with "checks passed" and no note."""
    code, out, err = run("build", "--memory", "fixed", "--readout", "max", "--grid", "1", "--json")
    assert code == 0, err
    summary = json.loads(out)["summary"] if "summary" in json.loads(out) else json.loads(out)
    note = summary.get("note") or ""
    assert "is not below the target's largest value 1: a network answering 0 would pass" in note, summary
    code, out, err = run("build", "--memory", "fixed", "--readout", "product", "--json")
    assert code == 0 and "answering 0" not in out, err


def test_the_fixed_memory_check_takes_few_sequences_at_a_time_through_a_wide_readout(monkeypatch):
    """An audit (2026-11-29): the check sized its chunks by the attention scores alone, so --grid 64 put 261
    sequences through a million-unit readout at once and was killed out of memory (12 GB at --grid 32)."""
    import expressivity.progress as progress
    from expressivity.constructions.wang_e import fixed

    seen = []
    real = progress.in_chunks
    monkeypatch.setattr(progress, "in_chunks", lambda fn, x, chunk, *a, **k: seen.append(chunk) or real(fn, x, chunk, *a, **k))
    net, rep = fixed.build_fixed_memory("1,3", readout="sin-product", grid=4)
    widest = max(layer.W_1.shape[1] for layer in net.layers if hasattr(layer, "W_1"))
    fixed.check_fixed_memory(net, rep, length=20, samples=8)
    heads = sum(len(layer.heads) for layer in net.layers if hasattr(layer, "heads"))
    assert seen == [max(1, 2 ** 25 // (heads * 400 + 2 * 20 * widest))] and widest > 1000


def test_messages_name_options_the_command_takes():
    """An audit (2026-11-29): `build --heads 4096` said "use --construction chebyshev" (a `wang-e kernel` option),
    the kernel memory's zero-kernel note named --b (it takes --eps), and `--lags 506` was refused naming a length
    of 513 the user never gave (the default's)."""
    code, _, err = run("build", "--memory", "fixed", "--heads", "4096")
    assert code == 2 and "give at most 200 heads" in err and "use --construction" not in err
    code, out, err = run("build", "--memory", "kernel", "--kernel", "exp", "--rpe", "log", "--heads", "1")
    assert code == 0 and "another --eps" in out + err and "larger --b" not in out + err
    code, _, err = run("build", "--memory", "dpfree-boolean", "--lags", "506")
    assert code == 0 and "513" not in err, err


def test_the_summary_line_does_not_say_plain_passed_beside_a_note_that_the_check_cannot_tell():
    """An audit (2026-11-29): beside a note that a network answering 0 would pass, the line still read "checks
    passed"."""
    code, out, err = run("build", "--memory", "fixed", "--readout", "max", "--grid", "1")
    assert code == 0 and "checks passed, but they cannot tell (note below)" in out, out + err
    code, out, err = run("build", "--memory", "fixed", "--readout", "product")
    assert code == 0 and "checks passed" in out and "cannot tell" not in out


def test_a_build_whose_checks_cannot_tell_is_saved_without_a_claim(tmp_path):
    """An audit (2026-11-29): `wang-e build --memory fixed --b 0.01` passed checks that cannot tell (kernel l1 3.5e8,
    bound 2.4e17); saved, `run` answered 1.8e9 for x[t-1] x[t-3] in [-1, 1] "within the claim". Its folder now
    carries no claim; a build whose checks can tell keeps its claim."""
    from tests.cli_runner import cli_run

    x = "1,1,1,1,1,-1,1,1"
    assert cli_run("wang-e", "build", "--memory", "fixed", "--b", "0.01", "--out", tmp_path / "bad")[0] == 0
    code, _, err = cli_run("run", tmp_path / "bad", "--input", x)
    assert code == 2 and "its checks cannot tell a right network from a wrong one" in err, err
    code, out, err = cli_run("run", tmp_path / "bad", "--input", x, "--allow-outside", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False, err
    assert cli_run("wang-e", "build", "--memory", "fixed", "--out", tmp_path / "good")[0] == 0
    code, out, err = cli_run("run", tmp_path / "good", "--input", x, "--json")
    assert code == 0 and json.loads(out)["within_claim"] is True, err


def test_the_json_of_a_build_says_whether_its_folder_carries_a_claim(tmp_path):
    from tests.cli_runner import cli_run

    code, out, err = cli_run("wang-e", "build", "--memory", "fixed", "--b", "0.01", "--json", "--out", tmp_path / "b")
    assert code == 0 and json.loads(out)["no_claim"].startswith("its checks cannot tell"), err
    code, out, err = cli_run("wang-e", "build", "--memory", "fixed", "--json")
    assert code == 0 and json.loads(out)["no_claim"] is None, err
