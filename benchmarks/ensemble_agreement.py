"""Max |member - single run| over all parameters and the relative final-loss difference after S steps, on
reverse (length 6, vocab 8), K = 3 members (lr 1e-3, 3e-3, 3e-3). Usage: python benchmarks/ensemble_agreement.py 1,15,300 [arch prefix]"""
import sys, warnings, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from expressivity.training import RunConfig, run, run_ensemble
archs0 = {"attention t5 rotary pre-LN": dict(rpe="t5", rotary=True, norm="pre"),
         "sepconv+dpfree log slopes": dict(mixer=("sepconv", "dpfree"), layers=2, rpe="log", learnable_slopes=True),
         "bilinear": dict(mixer="bilinear")}
archs = {k: v for k, v in archs0.items() if len(sys.argv) < 3 or k.startswith(sys.argv[2])}
for steps in map(int, sys.argv[1].split(",")):
    for name, arch in archs.items():
        base = RunConfig.for_task("reverse", {"length": 6, "vocab": 8}, {"layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16, **arch},
                                  dict(steps=steps, batch_size=16, lr=3e-3, eval_every=steps, eval_size=64))
        cfgs = [base.with_changes(seed=s, train={"lr": lr}) for s, lr in ((0, 1e-3), (1, 3e-3), (2, 3e-3))]
        res, _ = run_ensemble(cfgs)
        worst_p, worst_l = 0.0, 0.0
        for r, c in zip(res, cfgs):
            single = run(c)
            a, b = r.model.state_dict(), single.model.state_dict()
            worst_p = max(worst_p, max((a[k] - b[k]).abs().max().item() for k in a))
            worst_l = max(worst_l, abs(r.final_loss - single.final_loss) / abs(single.final_loss))
        print(f"steps {steps:4d}  {name:28s} max |param diff| {worst_p:.2e}  max rel loss diff {worst_l:.2e}")
