"""What multiplying a feed-forward layer's tokens as one matrix buys the float64 reference pass: the check
of a Wang & E fixed-memory network with a ``max`` grid readout (``wang-e build --memory fixed --readout max
--grid G``; feed-forward widths 17,000-68,000 at G = 16-32), run with the reference's feed-forward update as
it was (``A @ W`` on the stacked ``(batch, n, k)`` form) and as it is (``A`` reshaped to ``(batch * n, k)``
first), interleaved in this one process.

Reported per grid: median seconds of each over ``--rounds`` rounds, the ratio before / now, and the two
checks' sup errors (equal up to rounding: the products' summation order may differ). Goal: at least 1.3x
at G = 32 (measured 2026-11-29 on this 2-core machine: 14 s before, 8 s now, end to end).

    python benchmarks/bench_reference_feedforward.py [--json] [--rounds 3] [--grids 16,32]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

GOAL_RATIO = 1.3


def _stacked(layer, H):
    """The feed-forward update as the reference computed it before 2026-11-29."""
    from expressivity.network import reference as ref

    pre = ref.layer_norm(layer.norm, H) @ ref._f(layer.W_1) + ref._f(layer.b_1)
    return ref.activate(layer.activation, pre) @ ref._f(layer.W_2) + ref._f(layer.b_2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grids", default="16,32")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from expressivity.constructions.wang_e.fixed import build_fixed_memory, check_fixed_memory
    from expressivity.network import reference as ref

    now = ref.UPDATES["feedforward"]
    rows = []
    for grid in [int(g) for g in args.grids.split(",")]:
        net, report = build_fixed_memory("1,3", readout="max", grid=grid)
        seconds, sups = {"before": [], "now": []}, {}
        try:
            for _ in range(args.rounds):
                for name, update in (("before", _stacked), ("now", now)):
                    ref.UPDATES["feedforward"] = update
                    t0 = time.perf_counter()
                    checked = check_fixed_memory(net, report)
                    seconds[name].append(time.perf_counter() - t0)
                    sups[name] = next(e.value for e in checked.errors if e.name == "sup_error")
        finally:
            ref.UPDATES["feedforward"] = now
        before, after = statistics.median(seconds["before"]), statistics.median(seconds["now"])
        rows.append({"grid": grid, "before_s": before, "now_s": after, "ratio": before / after,
                     "sup_error_before": sups["before"], "sup_error_now": sups["now"]})
    meta = {"numpy": np.__version__, "machine": platform.processor() or platform.machine(), "goal_ratio": GOAL_RATIO}
    if args.json:
        print(json.dumps({"rows": rows, **meta}))
        return
    for r in rows:
        print(f"grid {r['grid']:3d}: before {r['before_s']:.2f} s, now {r['now_s']:.2f} s, ratio {r['ratio']:.2f}x "
              f"(goal >= {GOAL_RATIO:g}x at the largest grid); sup error {r['sup_error_before']:.17g} before, "
              f"{r['sup_error_now']:.17g} now")
    print(f"numpy {meta['numpy']}")


if __name__ == "__main__":
    main()
