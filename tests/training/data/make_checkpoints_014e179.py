"""Checkpoints written by the code at 014e179 (run from a checkout of that commit)."""
import sys, shutil
from pathlib import Path
from expressivity.training import RunConfig, run, run_ensemble

out = Path(sys.argv[1])
shutil.rmtree(out, ignore_errors=True)
model = dict(layers=1, heads=2, d_model=8, ffn_width=8, rpe="log", learnable_slopes=True, norm="pre")
train = dict(steps=12, batch_size=4, eval_every=4, eval_size=8, log_every=2, checkpoint_every=4)
cfg = RunConfig.for_task("reverse", {"length": 4, "vocab": 4}, model, train)
run(cfg, out / "single_done")


class Stop(Exception):
    pass


def crash(step, *_):
    if step == 8:
        raise Stop


try:
    run(cfg, out / "single_running", on_step=crash)
except Stop:
    pass
cfgs = [cfg.with_changes(seed=s) for s in (0, 1)]
try:
    run_ensemble(cfgs, out / "ensemble_running", on_step=crash)
except Stop:
    pass
print(sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()))
