"""Wang & E (2024) spec §6 claim 3 (their Table 8): RPE type vs memory tail, as a sweep.

Model: 1-layer, FFN-free, DP-free (RPE-only) Transformer with a learnable slope beta per head,
H in {1, 2, 4, 8}; RPE log-type (-beta log(1+s)) or lin-type (-beta s). Target: kernel-memory
y_t = sum_s rho(s) x_{t-s}, x_t ~ N(0, 1), with a heavy-tailed rho(s) ∝ (1+s)^-1.5 (power,
alpha=0.5) and a light-tailed rho(s) ∝ e^{-0.5 s} (exp). Claim: on the heavy tail log-type
reaches near-zero error with one head while lin-type stays clearly worse even with many heads;
the reverse on the light tail.

The learning rate is selected per configuration and seed on the validation split (lowest
validation loss among LRS); what is reported is the test split's normalised MSE, 1 - R^2.
The seeds of one configuration and all learning rates train together as one ensemble.

    expressivity sweep run experiments/wang_e_rpe_tails.py --out runs/wang_e
    expressivity results runs/wang_e --metric "1 - test_metric" --log \
        --group-by "task.args.kernel, model.rpe, model.heads"
    expressivity fit runs/wang_e --x model.heads --y "1 - test_metric" --by "task.args.kernel, model.rpe"
"""

from expressivity.training import RunConfig

NAME = "wang_e_rpe_tails"
SELECT = {"train.lr": "min val_loss"}
LENGTH, STEPS = 128, 1000
HEADS = (1, 2, 4, 8)
LRS = (3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
SEEDS = (0, 1, 2, 3, 4)


def configs(length=LENGTH, steps=STEPS, heads=HEADS, lrs=LRS, seeds=SEEDS, kernels=("power", "exp")):
    """Every (kernel, RPE type, heads, learning rate, seed) as one run: the R^2 view of Table 8.
    (``expressivity reproduce wang-e-3`` measures the learned kernel's l1 error against the horizon.)"""
    out = []
    for kernel in kernels:
        for rpe in ("log", "lin"):
            for h in heads:
                base = RunConfig.for_task(
                    "kernel-memory", {"length": length, "kernel": kernel, "alpha": 0.5},
                    model={"mixer": "dpfree", "rpe": rpe, "learnable_slopes": True, "heads": h, "d_model": 8,
                           "ffn_width": 0, "layers": 1},
                    train={"steps": steps, "batch_size": 32, "eval_every": steps, "eval_size": 256})
                out += [base.with_changes(seed=s, train={"lr": lr}) for lr in lrs for s in seeds]
    return out
