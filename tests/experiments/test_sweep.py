"""Sweeps: grids expand to validated run configurations; Python sweep files; one-line errors."""

import json

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments.sweep import MAX_RUNS, Sweep, expand_grid, load_sweep, sweep_from_spec
from expressivity.training import RunConfig

from tests.experiments.helpers import BASE, grid_spec, write_spec


def test_grid_is_the_product_of_its_axes_over_the_base():
    sw = sweep_from_spec(grid_spec({"model.heads": [1, 2], "train.lr": [1e-3, 1e-2, 3e-2], "seed": [0, 1]}))
    assert len(sw.configs) == 12 and len(set(sw.ids())) == 12
    assert {(c.model.heads, c.train.lr, c.seed) for c in sw.configs} == {
        (h, lr, s) for h in (1, 2) for lr in (1e-3, 1e-2, 3e-2) for s in (0, 1)}
    c = sw.configs[0]
    assert c.model.d_model == 8 and c.train.steps == 20 and c.model.vocab_size == 6  # base + task defaults


def test_a_base_printed_by_train_json_gives_the_same_run():
    full = RunConfig.for_task("reverse", {"length": 5}, {"d_model": 16, "heads": 2}, {"steps": 7})
    sw = sweep_from_spec({"base": json.loads(json.dumps(full.to_dict())), "grid": {"seed": [0, 3]}})
    assert sw.configs[0] == full and sw.configs[1] == full.with_changes(seed=3)


def test_changing_the_task_recomputes_what_only_repeated_the_base_tasks_defaults():
    full = RunConfig.for_task("reverse", {"length": 4}, {"d_model": 16, "heads": 2})
    sw = sweep_from_spec({"base": full.to_dict(), "grid": {"task.args.length": [4, 9], "task.args.vocab": [16, 5]}})
    by = {(c.task.args["length"], c.task.args["vocab"]): c for c in sw.configs}
    assert by[9, 5].model.max_len == 9 and by[9, 5].model.vocab_size == 5  # recomputed for the new task
    assert by[9, 5].model.d_model == 16  # a user choice is kept
    assert by[4, 16] == full


def test_a_list_of_grids_is_their_union():
    sw = sweep_from_spec({"base": BASE, "grid": [{"seed": [0, 1]}, {"seed": [2], "model.heads": [2]}]})
    assert sorted((c.seed, c.model.heads) for c in sw.configs) == [(0, 1), (1, 1), (2, 2)]


@pytest.mark.parametrize("spec, needle", [
    (grid_spec({"model.haeds": [1]}), "unknown model settings haeds"),
    (grid_spec({"train.speed": [1]}), "unknown training settings speed"),
    (grid_spec({"optimizer.lr": [1]}), "is not a setting"),
    (grid_spec({"model.heads": []}), "non-empty list"),
    (grid_spec({"model.heads": 2}), "non-empty list"),
    (grid_spec({"seed": [0, 0]}), "same run more than once"),
    (grid_spec({"seed": [-1]}), "seed must be"),
    (grid_spec({"train.lr": [float("nan")]}), "finite"),
    (grid_spec({"train.lr": [0.0]}), "lr must be > 0"),
    # a fresh audit (2026-11-28): 1e38 passed and raised a torch RuntimeError mid-run; "max val_loss" selected
    # the worst learning rate
    (grid_spec({"train.lr": [1e38]}), r"lr 1e\+38 makes AdamW's first step .* beyond float32"),
    # `train --lr 5e-324` trained nothing and reported its initial losses as a run's (2026-11-28)
    (grid_spec({"train.lr": [5e-324]}), r"lr 4.94066e-324 is below 1e-12: .* give a larger --lr"),
    (grid_spec({"train.lr": [9e-13]}), "is below 1e-12"),
    (grid_spec(select={"train.lr": "max val_loss"}), 'must be "min val_loss" or "max val_metric"'),
    (grid_spec(select={"train.lr": "min val_metric"}), 'must be "min val_loss" or "max val_metric"'),
    (grid_spec({"task.args.length": ["x"]}), "length"),
    (grid_spec({"task.name": ["nope"]}), "nope"),
    (grid_spec(select={"train.lr": "min test_loss"}), "validation split only"),
    (grid_spec(select={"seed": "min val_loss"}), "cannot select over"),
    (grid_spec(select={"train.lrr": "min val_loss"}), "not a setting"),
    (grid_spec(select={"train.lr": "min val_loss", "train.weight_decay": "max val_metric"}), "one rule"),
    (grid_spec(select=["train.lr"]), "must be an object"),
    (grid_spec(extra_key=1), "unknown sweep keys extra_key"),
    ({"base": BASE, "grid": {"model.heads": list(range(1, 400)), "seed": list(range(400))}}, "above the limit"),
    ({"base": [], "grid": {}}, '"base" must be'),
    ([1, 2], "must be an object"),
    ({"base": {"task": {"name": "reverse"}, "model": {"heads": "two"}}, "grid": {"seed": [0]}}, "heads"),
])
def test_bad_grids_are_one_line_errors(spec, needle):
    with pytest.raises(ExpressivityError, match=needle) as info:
        sweep_from_spec(spec)
    assert "\n" not in str(info.value)


def test_limit_constant_is_generous_but_finite():
    assert 10_000 <= MAX_RUNS <= 1_000_000


def test_sweep_round_trips_through_its_stored_form():
    sw = sweep_from_spec(grid_spec(select={"train.lr": "min val_loss"}))
    again = Sweep.from_dict(json.loads(json.dumps(sw.to_dict())))
    assert again.ids() == sw.ids() and again.select == sw.select and again.id() == sw.id()


def test_python_sweep_file(tmp_path):
    f = tmp_path / "mine.py"
    f.write_text("from expressivity.training import RunConfig\n"
                 "SELECT = {'train.lr': 'min val_loss'}\nNAME = 'mine'\n"
                 "def configs():\n"
                 "    base = RunConfig.for_task('reverse', {'length': 4}, {'d_model': 8, 'heads': 1}, {'steps': 5})\n"
                 "    return [base.with_changes(seed=s, train={'lr': lr}) for s in (0, 1) for lr in (1e-3, 1e-2)]"
                 " + [{'task': {'name': 'sort', 'args': {'length': 4}}, 'train': {'steps': 5}}]\n")
    sw = load_sweep(f)
    assert sw.name == "mine" and len(sw.configs) == 5 and sw.select == {"train.lr": ("min", "val_loss")}
    assert sw.configs[-1].task.name == "sort"


@pytest.mark.parametrize("body, needle", [
    ("def configs(:\n", "raised SyntaxError"),
    ("x = 1\n", "no configs()"),
    ("def configs():\n    raise KeyError('boom')\n", "raised KeyError"),
    ("import sys\nsys.exit(3)\n", "raised SystemExit"),
    ("def configs():\n    return [1]\n", "item 0 is a int"),
    ("def configs():\n    return []\n", "has no runs"),
    ("def configs():\n    return [{'task': {'name': 'reverse'}, 'model': {'mixer': 'nope'}}]\n", "run 0: .*unknown mixer"),
    # without end: refused one past the limit, not after the memory is full (13 GB in a minute, an audit at scale)
    ("import itertools\ndef configs():\n    return ({'task': {'name': 'reverse'}, 'seed': s} for s in itertools.count())\n",
     f"gives more than {MAX_RUNS:,} runs"),
])
def test_bad_python_sweep_files_are_one_line_errors(tmp_path, body, needle):
    f = tmp_path / "bad.py"
    f.write_text(body)
    with pytest.raises(ExpressivityError, match=needle) as info:
        load_sweep(f)
    assert "\n" not in str(info.value)


def test_toml_and_json_files(tmp_path):
    toml = tmp_path / "g.toml"
    toml.write_text('name = "t"\n[base.task]\nname = "reverse"\n[base.task.args]\nlength = 4\n'
                    '[grid]\n"model.heads" = [1, 2]\n"train.lr" = [1e-3, 1e-2]\nseed = [0]\n'
                    '[select]\n"train.lr" = "min val_loss"\n')
    sw = load_sweep(toml)
    assert sw.name == "t" and len(sw.configs) == 4
    js = write_spec(tmp_path / "g.json", grid_spec())
    assert len(load_sweep(js).configs) == 4


@pytest.mark.parametrize("name, text, needle", [
    ("a.json", "{not json", "not valid JSON"),
    ("a.json", '{"base": {}, "grid": {"train.lr": [NaN]}}', "finite"),
    ("a.toml", "x = = 1", "not valid TOML"),
    ("a.yaml", "x: 1", "must end in"),
    ("a.json", "", "not valid JSON"),
])
def test_bad_files(tmp_path, name, text, needle):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(ExpressivityError, match=needle):
        load_sweep(f)
    with pytest.raises(ExpressivityError, match="not found"):
        load_sweep(tmp_path / "missing.json")


def test_expand_grid_keeps_values_independent():
    # Values are copied per point: a list value (a mixer per layer) is not shared between configs.
    cfgs = expand_grid({"base": BASE, "grid": {"model.mixer": [["sepconv", "attention"]], "model.layers": [2],
                                                "seed": [0, 1]}})
    assert [c.model.mixer for c in cfgs] == [("sepconv", "attention")] * 2


# ---- configuration files refuse what they would otherwise silently take (issue 16, item 5) -----
@pytest.mark.parametrize("name, text, key", [
    # JSON keeps the last of two keys: the first grid would be dropped without a word
    ("two_grids.json", '{"base": {"task": {"name": "reverse"}}, "grid": {"seed": [0, 1]}, "grid": {"seed": [2]}}',
     "'grid' appears twice"),
    ("nested.json", '{"base": {"task": {"name": "reverse", "name": "sort"}}, "grid": {"seed": [0]}}',
     "'name' appears twice"),
    ("two_values.toml", '[base.task]\nname = "reverse"\n[grid]\nseed = [0, 1]\nseed = [2]\n', "key 'seed' is given twice"),
    ("two_tables.toml", '[base.task]\nname = "reverse"\n[grid]\nseed = [0]\n[grid]\n"train.lr" = [1e-3]\n',
     "key 'grid' is given twice"),
])
def test_repeated_keys_are_refused_by_name(tmp_path, name, text, key):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ExpressivityError, match=key):
        load_sweep(path)


@pytest.mark.parametrize("suffix", ["json", "toml"])
def test_unknown_task_keys_are_refused_by_name(tmp_path, suffix):
    spec = {"base": {"task": {"name": "reverse", "argz": {"length": 4}}}, "grid": {"seed": [0, 1]}}
    path = tmp_path / f"s.{suffix}"
    path.write_text(json.dumps(spec) if suffix == "json" else
                    '[base.task]\nname = "reverse"\n[base.task.argz]\nlength = 4\n[grid]\nseed = [0, 1]\n')
    with pytest.raises(ExpressivityError, match="unknown task keys argz"):
        load_sweep(path)


def test_select_must_name_a_grid_axis(tmp_path):
    # train.lr is a setting of every run but not an axis: the "selection" would choose nothing
    not_an_axis = write_spec(tmp_path / "a.json", grid_spec({"model.heads": [1, 2], "seed": [0]},
                                                            select={"train.lr": "min val_loss"}))
    with pytest.raises(ExpressivityError, match="'train.lr', which is not a grid axis"):
        load_sweep(not_an_axis)
    one_value = write_spec(tmp_path / "b.json", grid_spec({"train.lr": [1e-3], "seed": [0, 1]},
                                                          select={"train.lr": "min val_loss"}))
    with pytest.raises(ExpressivityError, match="every run has the same train.lr"):
        load_sweep(one_value)
    an_axis = write_spec(tmp_path / "c.json", grid_spec({"train.lr": [1e-3, 1e-2], "seed": [0]},
                                                        select={"train.lr": "min val_loss"}))
    assert load_sweep(an_axis).select == {"train.lr": ("min", "val_loss")}


def test_python_sweep_selecting_a_setting_the_runs_share_is_refused(tmp_path):
    py = tmp_path / "s.py"
    py.write_text("from expressivity.training import RunConfig\n"
                  "SELECT = {'train.lr': 'min val_loss'}\n"
                  "def configs():\n"
                  "    base = RunConfig.for_task('reverse', {'length': 4})\n"
                  "    return [base.with_changes(seed=s) for s in (0, 1)]\n")
    with pytest.raises(ExpressivityError, match="every run has the same train.lr"):
        load_sweep(py)


@pytest.mark.parametrize("grid, needle", [
    ({"model.mixer": ["sepconv"], "model.heads": [1, 2, 4], "seed": [0]}, "differ only in model.heads, which no layer of "
                                                                          "mixer sepconv reads"),
    ({"model.mixer": ["attention", "sepconv"], "model.heads": [1, 2], "seed": [0]}, "mixer sepconv reads"),
    ({"model.mixer": ["bilinear"], "model.conv_kernel": [3, 5], "seed": [0]}, "model.conv_kernel"),
    ({"model.mixer": ["none"], "model.causal": [True, False], "seed": [0]}, "model.causal"),
])
def test_runs_that_differ_only_in_settings_no_layer_reads_are_refused(grid, needle):
    """A grid of model.heads over sepconv trained one model three times, and `results` printed the three as rows of
    heads with equal losses, as if heads had no effect (an audit, 2026-11-28)."""
    with pytest.raises(ExpressivityError, match=needle):
        sweep_from_spec(grid_spec(grid))


def test_a_setting_some_mixers_of_a_sweep_read_may_sit_in_its_base():
    sweep = sweep_from_spec(grid_spec({"model.mixer": ["attention", "sepconv"], "model.heads": [2], "seed": [0, 1]}))
    assert len(sweep.configs) == 4
    sweep = sweep_from_spec(grid_spec({"model.mixer": ["attention"], "model.heads": [1, 2], "seed": [0]}))
    assert sorted(c.model.heads for c in sweep.configs) == [1, 2]


def test_runs_that_differ_only_in_how_a_number_is_written_are_one_run():
    """grad_clip 1 and 1.0 gave two ids for one run: both trained, and results counted the seed twice (n=2, sd 0) in
    one group (a review, 2026-11-28)."""
    with pytest.raises(ExpressivityError, match=r"differ only in how train.grad_clip is written \(1 and 1.0; seed 0\)"):
        sweep_from_spec(grid_spec({"train.grad_clip": [1, 1.0], "seed": [0]}))


def test_a_repeated_run_is_named():
    """(Found in one pass: counting every id per run took 19 s at 40,000 runs, an audit at scale, 2026-11-28.)"""
    with pytest.raises(ExpressivityError, match="lists the same run more than once \\(seed 2, id "):
        sweep_from_spec(grid_spec([{"seed": [0, 1, 2]}, {"seed": [2, 3]}]))
