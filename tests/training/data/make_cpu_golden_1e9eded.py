"""Writes ``cpu_golden_1e9eded_<CPU>.json``: the CPU results of small runs at commit 1e9eded
(before issue 29's execution choices), which ``tests/training/test_cpu_unchanged.py`` holds today's
CPU defaults to, bit for bit on a machine with the same torch, CPU capability and CPU model.
Run from a checkout of 1e9eded with this file copied in (the code recorded is 1e9eded's):

    git checkout 1e9eded && PYTHONPATH=src python make_cpu_golden_1e9eded.py OUT_FOLDER

``cpu_golden_1e9eded.json`` was recorded on the project's machines of 2026-11-27, whose run
records name the CPU "Intel(R) Xeon(R) Processor" (its ``cpu_name`` was added from them later);
``cpu_golden_1e9eded_amd_epyc.json`` on an "AMD EPYC" machine of 2026-11-28, at 1e9eded.
"""

import json
from pathlib import Path

import torch

from expressivity.training import RunConfig, run, run_ensemble

CASES = {
    # one model, token attention with a learned position table (the reverse default, shortened)
    "reverse-single": dict(task="reverse", args={"length": 8}, settings=dict(steps=30, eval_every=10), seeds=[0]),
    # an ensemble of attention models with a free position bias on claim 7's task (one-hot features)
    "nested-ensemble": dict(task="nested-memory", args={"length": 16, "max_lag": 8, "depth": 1},
                            settings=dict(steps=20, eval_every=10, eval_size=64, batch_size=16, layers=2, heads=2,
                                          d_model=16, ffn_width=32, rpe="free", ape="none"), seeds=[0, 1, 2]),
    # an ensemble of DP-free models on claim 4's task (per-member learning rates)
    "fixed-dpfree-ensemble": dict(task="fixed-memory",
                                  args={"length": 16, "lags": "2,5", "readout": "sin-product-diff"},
                                  settings=dict(steps=20, eval_every=10, eval_size=64, batch_size=16, heads=4,
                                                d_model=16, ffn_width=32), seeds=[0, 1], lrs=[3e-3, 1e-2]),
    # claim 3's model: DP-free over an infinite past with learnable log slopes
    "kernel-single": dict(task="kernel-memory", args={"length": 32}, settings=dict(steps=20, eval_every=10,
                                                                                   eval_size=64), seeds=[1]),
    # a causal pre-norm GELU model with a T5 bias and eval lengths (the LM family's switches on a synthetic task)
    "sum-t5-single": dict(task="sum", args={"length": 8}, settings=dict(steps=20, eval_every=10, eval_size=64,
                                                                        rpe="t5", norm="pre", activation="gelu"),
                          seeds=[2], eval_lengths=(12,)),
}


def configs(case: dict) -> list:
    base = RunConfig.for_task(case["task"], case["args"], eval_lengths=case.get("eval_lengths", ()),
                              **case["settings"])
    lrs = case.get("lrs")
    if lrs:
        return [base.with_changes(seed=s, train={"lr": lr}) for s, lr in zip(case["seeds"], lrs)]
    return [base.with_changes(seed=s) for s in case["seeds"]]


def outcome(results) -> list:
    """Each run's history and held-out numbers, floats as hex (exact)."""
    def exact(v):
        return float(v).hex() if isinstance(v, float) else v

    return [{"history": [{k: exact(v) for k, v in h.items()} for h in r.history],
             "lengths": {str(L): {k: exact(v) for k, v in row.items()} for L, row in r.lengths.items()},
             "params": r.params} for r in results]


def run_case(case: dict) -> list:
    cs = configs(case)
    if len(cs) == 1:
        return outcome([run(cs[0])])
    return outcome(run_ensemble(cs)[0])


def cpu_name() -> str | None:
    """The CPU's model as /proc/cpuinfo names it (``None`` where it does not)."""
    try:
        return next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name")), None)
    except OSError:
        return None


def machine(golden: dict | None = None) -> tuple:
    """What decides whether two runs sum alike: torch, CPU capability and CPU model (of ``golden``,
    or of this machine)."""
    if golden is not None:
        return golden["torch"], golden["cpu_capability"], golden.get("cpu_name")
    return torch.__version__, torch.backends.cpu.get_cpu_capability(), cpu_name()


def main() -> None:
    import re
    import sys

    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
           "cpu_name": cpu_name(), "cases": {name: run_case(case) for name, case in CASES.items()}}
    slug = re.sub(r"[^a-z0-9]+", "_", (out["cpu_name"] or "unknown").lower()).strip("_")
    path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent) / f"cpu_golden_1e9eded_{slug}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
