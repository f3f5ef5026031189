"""The public Python API at the package top: lazy (importing it loads nothing heavy), and every function checks its
arguments, raising the CLI's one-line ExpressivityError. One test per case of issue 16's "Accepted nonsense" list."""

import subprocess
import sys

import numpy as np
import pytest

import expressivity as E
from expressivity.errors import ExpressivityError


def test_import_expressivity_loads_no_numpy_torch_or_click():
    code = "import sys, expressivity; print(sorted(m for m in ('numpy', 'torch', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_resolves_and_unknown_names_do_not():
    for name in E.PUBLIC:
        assert getattr(E, name) is not None, name
    assert set(E.PUBLIC) <= set(dir(E))
    with pytest.raises(AttributeError):
        E.no_such_thing  # noqa: B018


@pytest.fixture(scope="module")
def net():
    return E.build_reverse_dot(8, "auto")[0]


def _one_line(call, needle):
    with pytest.raises(ExpressivityError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and needle in message, message


# ---- issue 16, "Accepted nonsense", Python part -------------------------------------------------

def test_a_negative_input_range_is_refused_not_turned_into_a_negative_bound():
    _one_line(lambda: E.build_reverse_dot(8, "auto", input_range=-1.0), "input_range")
    _one_line(lambda: E.build_shift(8, "auto", input_range=float("nan")), "input_range")
    _one_line(lambda: E.build_max(8, "auto", tolerance=0), "tolerance")


def test_build_config_refuses_p_below_1_like_the_cli():
    _one_line(lambda: E.BuildConfig(p=0.5), "p (the exponent of d_p) must be >= 1")
    _one_line(lambda: E.BuildConfig(p=float("inf")), "finite")


def test_build_config_refuses_one_sample_with_the_real_reason():
    _one_line(lambda: E.BuildConfig(samples=1), "samples must be between 100 and")
    _one_line(lambda: E.BuildConfig(samples=2.5), "samples must be an integer")
    _one_line(lambda: E.BuildConfig(seed=-1), "seed")


@pytest.mark.parametrize("call, needle", [
    (lambda net: E.save_network("not a network", "nets/a"), "save_network's network must be a Network"),
    (lambda net: E.save_network(net, 3), "save_network's directory must be a path"),
    (lambda net: E.load_network(3), "load_network's directory must be a path"),
    (lambda net: E.load_network("no/such/folder"), "no saved network"),
    (lambda net: E.evaluate(net, "abc"), "X must be an array"),
    (lambda net: E.evaluate(net, np.zeros((8, net.d_in)), "float16"), "unknown dtype"),
    (lambda net: E.evaluate([1, 2], np.zeros((8, 1))), "evaluate takes a Network"),
    (lambda net: E.evaluate(net, np.full((8, net.d_in), np.nan)), "NaN"),
    # float64 read dates as days since 1970 and strings as the numbers they spell (a fresh audit, 2026-11-28)
    (lambda net: E.evaluate(net, np.full((8, net.d_in), np.datetime64("1970-01-02"))), "got datetime64"),
    (lambda net: E.evaluate(net, np.full((8, net.d_in), np.timedelta64(0, "D"))), "got timedelta64"),
    (lambda net: E.evaluate(net, np.full((8, net.d_in), "0")), "must hold numbers, got <U1"),
    (lambda net: E.evaluate(net, np.full((8, net.d_in), np.datetime64("1970-01-02"), dtype=object)), "got date entries"),
    (lambda net: E.embed("x", [1, 2]), "embed's network must be a Network"),
    (lambda net: E.embed(net, "1,2"), "values must be an array"),
    (lambda net: E.embed(E.Network(layers=(), labels=("x", "x")), [1, 2]), "2 input dimensions named 'x'"),
    (lambda net: E.from_network("x"), "from_network's net must be a Network"),
    (lambda net: E.from_network(net, max_len=-1), "max_len"),
    (lambda net: E.to_network(net), "to_network's model must be a Model"),
    (lambda net: E.run("x"), "run takes a RunConfig"),
    (lambda net: E.run(E.RunConfig.for_task("reverse"), 3), "out_dir must be a path"),
    (lambda net: E.load_trained(3), "load_trained's run folder must be a path"),
    (lambda net: E.run_sweep("x", "out"), "run_sweep takes a Sweep"),
    (lambda net: E.Sweep(["a"]), "configs must be RunConfig"),
    (lambda net: E.load_sweep(3), "load_sweep's sweep file"),
    (lambda net: E.YunParams(2.5, 1, 4), "YunParams.n must be an integer"),
    (lambda net: E.build_yun("smooth-rank", 2, 1, "2/3"), "delta must be 1/K"),
    (lambda net: E.build_and_check("smooth-rank", E.YunParams(2, 1, 2)), "target must be a Target"),
])
def test_wrong_types_give_one_line_errors_not_raw_exceptions(net, call, needle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line(lambda: call(net), needle)


def test_save_network_refuses_a_file_where_its_folder_should_be(net, tmp_path):
    (tmp_path / "run.json").write_text("{}")
    _one_line(lambda: E.save_network(net, tmp_path / "run.json"), "is a file")
    assert (tmp_path / "run.json").read_text() == "{}"


def test_run_config_for_task_takes_the_obvious_keywords():
    config = E.RunConfig.for_task("reverse", {"length": 8}, steps=60, lr=1e-3, d_model=16, seed=2)
    assert (config.train.steps, config.train.lr, config.model.d_model, config.seed) == (60, 1e-3, 16, 2)
    assert config == E.RunConfig.for_task("reverse", {"length": 8}, model={"d_model": 16},
                                          train={"steps": 60, "lr": 1e-3}, seed=2)
    _one_line(lambda: E.RunConfig.for_task("reverse", stepz=60), "no setting 'stepz'; training settings: batch_size")
    _one_line(lambda: E.RunConfig.for_task("reverse", "length=8"), "task_args must be a dict")
    _one_line(lambda: E.RunConfig.for_task("reverse", steps=-5), "steps")


def test_build_yun_builds_one_delta_with_every_check():
    result = E.build_yun("mean-shift", n=2, d=1, delta="1/2", samples=200)
    assert result.report.ok and result.softened.valid_lengths == E.ValidLengths.of([2])
    assert E.build_yun("mean-shift", 2, 1, 2, samples=200).report.constants["delta"] == result.report.constants["delta"]


def test_the_rasp_package_and_the_wang_e_checkers_are_reached_from_the_package_top():
    """``import expressivity; expressivity.rasp`` raised AttributeError, and the checks that fill a
    Wang & E builder's report were not exported (a fresh audit, 2026-11-28)."""
    import subprocess
    import sys

    code = ("import expressivity as e; print(e.rasp.compile.__name__); "
            "net, rep = e.build_fixed_memory((1, 3)); print(rep.ok, e.check_fixed_memory(net, rep, samples=4).ok)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["compile", "False", "True"]


def test_embed_keeps_integers_float64_cannot_hold():
    """embed cast every array to float64: the exact pass then summed 2^53 for 2^53 + 1 (a fuzz, 2026-11-29)."""
    net, _ = E.build_sum(6)
    X = E.embed(net, [2**53 + 1, 0, 0, 0, 0, 0])
    assert E.evaluate(net, X, "exact")[0, 0] == 2**53 + 1
    assert E.embed(net, [1, 2, 3, 4, 5, 6]).dtype == np.float64   # small integers stay float64, as before
