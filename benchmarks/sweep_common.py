"""The 48-run tiny sweep shared by bench_sweep.py and bench_tune.py: reverse (n=6), 1-layer
attention d=16, heads {1, 2} x lr {1e-3, 3e-3, 1e-2, 3e-2} x seeds 0-5, 200 steps, learning rate
selected on validation. Every run is exactly what ``expressivity train`` with TRAIN_ARGS does."""

from __future__ import annotations

HEADS = (1, 2)
LRS = (1e-3, 3e-3, 1e-2, 3e-2)
SEEDS = tuple(range(6))
STEPS = 200
TRAIN_ARGS = ["--task", "reverse", "--length", "6", "--task-arg", "vocab=8", "--d-model", "16", "--ffn-width", "16",
              "--steps", str(STEPS), "--batch-size", "16", "--eval-every", "100"]


def configs():
    from expressivity.training import RunConfig

    out = []
    for h in HEADS:
        base = RunConfig.for_task("reverse", {"length": 6, "vocab": 8}, {"d_model": 16, "ffn_width": 16, "heads": h},
                                  {"steps": STEPS, "batch_size": 16, "eval_every": 100})
        out += [base.with_changes(seed=s, train={"lr": lr}) for lr in LRS for s in SEEDS]
    return out


def train_args(config) -> list[str]:
    """The ``expressivity train`` command line of one run of :func:`configs`."""
    return [*TRAIN_ARGS, "--heads", str(config.model.heads), "--lr", repr(config.train.lr), "--seeds", str(config.seed)]


SELECT = {"train.lr": "min val_loss"}
NAME = "bench48"
