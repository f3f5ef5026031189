"""What checking the input domain costs an evaluation: the check alone (``net.outside_claim(X)``, the
work ``evaluate`` adds) against ``evaluate(net, X, allow_outside=True)`` (the evaluation without
it), in this one process, interleaved. The check is timed on its own because it is 1-4% of an
evaluation whose own run-to-run spread on a loaded machine is larger than that.

Networks and batches as the library evaluates them: a compiled RASP sort (BOS first, one-hot
tokens, a first-only rule) on 4,096 inputs in float64 and 256 in exact arithmetic; the reverse
circuit (a spread) on 1,000 inputs of 64 tokens; a softened Yun network (an interval) on 2,000
inputs; the adaptive-memory network (sets, a start flag, pointers) on 512 inputs of 32 tokens.

Reported per case: median seconds of each over ``--rounds`` rounds (the two alternate which runs
first) and the ratio (evaluation + check) / evaluation. Goal: at most 1.05 (the check costs at most
5% of the evaluation it guards).

    python benchmarks/bench_domain_check.py [--json] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

GOAL_RATIO = 1.05


def _cases():
    from expressivity import rasp
    from expressivity.constructions.circuits import build_reverse, embed
    from expressivity.constructions.wang_e.adaptive import build_adaptive_memory
    from expressivity.constructions.yun.build import build_yun
    from expressivity.rasp import library

    rng = np.random.default_rng(0)
    sort = rasp.compile(library.make_sort(rasp.tokens, rasp.tokens, max_seq_len=10, min_key=1), vocab=[1, 2, 3, 4, 5],
                        max_seq_len=10).network
    tokens = sort.input_domain.sample(rng, 4096, 11, sort.input_labels)
    reverse, _ = build_reverse(64, "auto", input_range=2.0)
    yun = build_yun("mean-shift", n=2, d=1, delta="1/4", samples=200).softened
    memory, _ = build_adaptive_memory(4, 1, 32, beta=30.0)
    return {
        "rasp sort, 4096 x 11 tokens, float64": (sort, tokens, "float64"),
        "rasp sort, 256 x 11 tokens, exact": (sort, tokens[:256].astype(int), "exact"),
        "reverse circuit, 1000 x 64 tokens, float64": (reverse, embed(reverse, rng.uniform(-1, 1, (1000, 64))), "float64"),
        "softened yun, 2000 x 2 tokens, float64": (yun, yun.input_domain.sample(rng, 2000, 2, yun.input_labels), "float64"),
        "adaptive memory, 512 x 32 tokens, float64": (memory, memory.input_domain.sample(rng, 512, 32,
                                                                                         memory.input_labels), "float64"),
    }


def _seconds(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def measure(rounds: int) -> dict:
    from expressivity.network import evaluate
    from expressivity.network.exact import to_exact

    rows = {}
    for name, (net, X, dtype) in _cases().items():
        Xd = to_exact(X) if dtype == "exact" else X        # the array the evaluator checks
        assert net.outside_claim(Xd) is None, name          # the check passes: its whole cost is paid
        check, run = [], []
        for r in range(rounds):
            jobs = [(check, lambda: net.outside_claim(Xd)),
                    (run, lambda: evaluate(net, X, dtype, allow_outside=True))]
            for times, work in (jobs if r % 2 else jobs[::-1]):
                times.append(_seconds(work))
        on, off = statistics.median(check), statistics.median(run)
        ratio = (off + on) / off
        rows[name] = {"check_s": on, "evaluation_s": off, "ratio": ratio, "goal": GOAL_RATIO,
                      "meets_goal": ratio <= GOAL_RATIO}
    return {"cases": rows, "rounds": rounds, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.rounds)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"domain check cost, median of {args.rounds} rounds ({result['machine']}, Python {result['python']})")
    for name, row in result["cases"].items():
        verdict = "MET" if row["meets_goal"] else "NOT MET"
        print(f"  {name}: check {row['check_s'] * 1e3:.2f} ms, evaluation {row['evaluation_s'] * 1e3:.1f} ms, "
              f"ratio {row['ratio']:.3f} (goal <= {GOAL_RATIO}): {verdict}")


if __name__ == "__main__":
    main()
