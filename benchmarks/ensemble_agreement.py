"""How far ensemble members are from their single runs after S steps: the largest |member - single run|
over all parameters and the largest relative final-loss difference.

Default: reverse (length 6, vocab 8), K = 3 members (lr 1e-3, 3e-3, 3e-3) per architecture. With
``claim4``: claim 4's widest cell (the model of ``bench_train_ensemble.py``'s docstring), K = 8
members (seeds 0..7, train's defaults: lr 3e-3), each member's worst parameter printed.
One thread. Usage: python benchmarks/ensemble_agreement.py 1,15,300 [arch prefix | claim4]"""
import sys, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from expressivity.experiments.claims.wang_e_trained import CLAIM4_TASK
from expressivity.training import RunConfig, run, run_ensemble

# claim 4's widest cell: its task, the widest DP-free model of bench_train_ensemble.py's docstring
CLAIM4_MODEL = dict(mixer="dpfree", rpe="free", heads=8, d_model=16, ffn_width=32)
CLAIM4_TRAIN = dict(batch_size=32, eval_every=150)


def compare(cfgs, per_member=False):
    res, _ = run_ensemble(cfgs)
    worst_p, worst_l = 0.0, 0.0
    for k, (r, c) in enumerate(zip(res, cfgs)):
        single = run(c)
        a, b = r.model.state_dict(), single.model.state_dict()
        diffs = {name: (a[name] - b[name]).abs().max().item() for name in a}
        name = max(diffs, key=diffs.get)
        if per_member:
            print(f"    member {k} (seed {c.seed}): max |param diff| {diffs[name]:.1e} in {name}")
        worst_p = max(worst_p, diffs[name])
        worst_l = max(worst_l, abs(r.final_loss - single.final_loss) / abs(single.final_loss))
    return worst_p, worst_l


def main(argv):
    which = argv[2] if len(argv) > 2 else ""
    for steps in map(int, argv[1].split(",")):
        if which == "claim4":
            base = RunConfig.for_task("fixed-memory", CLAIM4_TASK, CLAIM4_MODEL, {**CLAIM4_TRAIN, "steps": steps})
            p, l = compare([base.with_changes(seed=s) for s in range(8)], per_member=True)
            print(f"steps {steps:4d}  claim 4's widest cell, K = 8   max |param diff| {p:.2e}  max rel loss diff {l:.2e}")
            continue
        archs = {"attention t5 rotary pre-LN": dict(rpe="t5", rotary=True, norm="pre"),
                 "sepconv+dpfree log slopes": dict(mixer=("sepconv", "dpfree"), layers=2, rpe="log", learnable_slopes=True),
                 "bilinear": dict(mixer="bilinear")}
        for name, arch in archs.items():
            if not name.startswith(which):
                continue
            base = RunConfig.for_task("reverse", {"length": 6, "vocab": 8},
                                      {"layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16, **arch},
                                      dict(steps=steps, batch_size=16, lr=3e-3, eval_every=steps, eval_size=64))
            p, l = compare([base.with_changes(seed=s, train={"lr": lr}) for s, lr in ((0, 1e-3), (1, 3e-3), (2, 3e-3))])
            print(f"steps {steps:4d}  {name:28s} max |param diff| {p:.2e}  max rel loss diff {l:.2e}")


ARCHS = ("attention t5 rotary pre-LN", "sepconv+dpfree log slopes", "bilinear")
MAX_STEPS = 100_000


def parse(argv: list[str]) -> list[str]:
    """``argv`` checked: steps as comma-separated whole numbers in 1..MAX_STEPS, then an optional
    architecture prefix or ``claim4``; anything else one line ``error: ...``, exit 2."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> None:   # one line, not argparse's usage block
            print(f"error: {message}; see --help", file=sys.stderr)
            sys.exit(2)

    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("steps", help=f"comma-separated step counts in 1..{MAX_STEPS:,}, e.g. 1,15,300")
    p.add_argument("which", nargs="?", default="", help=f"claim4, or a prefix of one of: {', '.join(ARCHS)}")
    a = p.parse_args(argv[1:])
    try:
        steps = [int(s) for s in a.steps.split(",")]
    except ValueError:
        steps = []
    if not steps or min(steps) < 1 or max(steps) > MAX_STEPS:
        p.error(f"steps must be whole numbers in 1..{MAX_STEPS:,} separated by commas, e.g. 1,15,300; got {a.steps!r}")
    if a.which != "claim4" and not any(name.startswith(a.which) for name in ARCHS):
        p.error(f"{a.which!r} is neither claim4 nor a prefix of an architecture ({', '.join(ARCHS)})")
    return [argv[0], ",".join(map(str, steps)), a.which]


if __name__ == "__main__":
    main(parse(sys.argv))
