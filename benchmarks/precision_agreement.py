"""Does a lower precision change what a claim measures? Two claims' cells trained with the same
seeds (so the same initial weights and batches) in float32 and in ``--precision`` (bf16 autocast,
or TF32 on CUDA): the paired per-seed difference of the final held-out test loss, with its 95% t
interval, against the seed-to-seed spread of the float32 runs (their standard deviation).

Verdict ``smaller than the seed spread`` when the whole interval of the paired difference lies
within +-1 seed standard deviation; ``not smaller`` when it lies wholly outside; else
``undecided``. Run on the CPU (bf16 autocast exists there) and, by ``gpu_check.py``, on a GPU.

Measured on the 2-core CPU (2026-11-27, 5 seeds x 1,500 steps, lr 0.01, bf16): claim 4's widest
cell fp32 0.255 (seed sd 0.018), bf16 - fp32 -0.0035 [-0.040, +0.033]; claim 7's T = 8 cell fp32
0.0018 (seed sd 0.0011), bf16 - fp32 +0.0036 [-0.0084, +0.0155] (one seed 0.022 against 0.0014):
both undecided. bf16 moves a seed's final loss about as far as another seed would, so it is not
the CUDA default; TF32 (float32 storage and sums) is, pending this check on a GPU.

    python benchmarks/precision_agreement.py [--device cpu] [--precision bf16] [--seeds 5] [--steps 1500] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

# label -> (task, task args, model, train): claim 4's widest cell and claim 7's T = 8 scan cell
CELLS = {
    "claim 4 widest cell (dpfree, 8 heads, d 16)": (
        "fixed-memory", {"length": 16, "lags": "2,5", "readout": "sin-product-diff"},
        {"mixer": "dpfree", "rpe": "free", "heads": 8, "d_model": 16, "ffn_width": 32},
        {"batch_size": 32, "eval_size": 256, "lr": 1e-2}),
    "claim 7 T = 8 (attention, 2 layers, d 16)": (
        "nested-memory", {"length": 16, "max_lag": 8, "depth": 1},
        {"mixer": "attention", "layers": 2, "heads": 2, "d_model": 16, "ffn_width": 32, "rpe": "free", "ape": "none"},
        {"batch_size": 32, "eval_size": 256, "lr": 1e-2}),
}


def compare(label: str, device: str, seeds: int, steps: int, precision: str = "bf16") -> dict:
    from expressivity.statistics import interval, paired_difference
    from expressivity.training import RunConfig, run_ensemble

    task, args, model, train = CELLS[label]
    base = RunConfig.for_task(task, args, model=model, train={**train, "steps": steps, "eval_every": steps // 10})
    configs = [base.with_changes(seed=s) for s in range(seeds)]
    losses = {}
    for arm in ("fp32", precision):
        results, _ = run_ensemble(configs, device=device, execution={"precision": arm})
        n = str(results[0].config.task.args["length"])
        losses[arm] = {r.seed: r.lengths[int(n)]["test_loss"] for r in results}
    diff = paired_difference(losses[precision], losses["fp32"])
    spread = statistics.stdev(losses["fp32"].values())
    if diff.decided and -spread < diff.low and diff.high < spread:
        word = "smaller than the seed spread"
    elif diff.decided and (diff.low > spread or diff.high < -spread):
        word = "not smaller"
    else:
        word = "undecided"
    return {"cell": label, "device": device, "precision": precision, "seeds": seeds, "steps": steps,
            "fp32": losses["fp32"], precision: losses[precision], "paired_minus_fp32": diff._asdict(), "seed_sd_fp32": spread,
            "fp32_mean": statistics.fmean(losses["fp32"].values()), "verdict": word,
            "fp32_interval": interval(losses["fp32"].values())._asdict()}


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["bf16", "tf32"], default="bf16", help="compared with fp32 (tf32: CUDA)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.seeds < 2 or a.steps < 10:
        p.error("--seeds must be at least 2 (a paired interval) and --steps at least 10")
    if a.precision == "tf32" and a.device != "cuda":   # a CUDA matrix-unit mode (it tracebacked on the CPU)
        p.error("--precision tf32 is a CUDA mode; on the CPU compare bf16 (the default)")
    import torch

    torch.set_num_threads(a.threads)
    rows = []
    for label in CELLS:   # each cell printed as it finishes (a slow machine shows progress)
        rows.append(compare(label, a.device, a.seeds, a.steps, a.precision))
        if not a.json:
            print(line(rows[-1]), flush=True)
    if a.json:
        print(json.dumps({"benchmark": "precision_agreement", "rows": rows}))
    return rows


def line(r: dict) -> str:
    d = r["paired_minus_fp32"]
    return (f"{r['cell']} on {r['device']}, {r['seeds']} seeds x {r['steps']} steps: final test loss fp32 mean "
            f"{r['fp32_mean']:.4g} (seed sd {r['seed_sd_fp32']:.3g}); {r['precision']} - fp32 paired {d['value']:.3g} "
            f"[{d['low']:.3g}, {d['high']:.3g}]: {r['verdict']}")


if __name__ == "__main__":
    main(sys.argv[1:])
