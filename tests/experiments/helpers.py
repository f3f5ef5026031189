"""Tiny sweeps for the engine's tests: seconds, not minutes, on two CPU cores."""

import json

BASE = {"task": {"name": "reverse", "args": {"length": 4, "vocab": 6}},
        "model": {"layers": 1, "heads": 1, "d_model": 8, "ffn_width": 8},
        "train": {"steps": 20, "batch_size": 8, "eval_every": 10, "eval_size": 32, "log_every": 10,
                  "checkpoint_every": 10, "target_metric": None}}


def grid_spec(grid=None, select=None, base=None, **extra):
    spec = {"base": base or BASE, "grid": grid or {"train.lr": [1e-3, 1e-2], "seed": [0, 1]}}
    if select is not None:
        spec["select"] = select
    return spec | extra


def write_spec(path, spec):
    path.write_text(json.dumps(spec))
    return path
