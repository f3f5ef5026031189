"""Compile + proof seconds of every RASP library program, against the goal of issue 31 (30 s each at L = 20).

For each program of ``expressivity.rasp.library.PROGRAMS`` at ``--length`` (default 20), one
``rasp.compile`` with its library vocabulary, timed as the report times it:

* ``compile``: the stages up to the assembled network (graph, value sets, selection proofs, layout,
  blocks, assembly);
* ``proof``: every block of the network proven exactly (rasp/proofs.py);
* ``witness``: the end-to-end check against ``rasp.evaluate`` (64 random inputs beyond 4,096);

and the ratio ``proof / witness`` (both in the same process): what proving every block costs next
to the sampled check it makes a second line. Goal: ``total <= 30 s`` per program on the 2-core
machine; the load average is printed beside the figures, since the machine is shared.

    python benchmarks/bench_rasp_compile.py [--length 20] [--json] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from expressivity import rasp
from expressivity.rasp.library import PROGRAMS

GOAL_SECONDS = 30.0


def measure(name: str, length: int) -> dict:
    entry = PROGRAMS[name]
    started = time.perf_counter()
    model = rasp.compile(entry.build(length), vocab=list(entry.vocab), max_seq_len=length)
    total = time.perf_counter() - started
    c = model.report.constants
    return {"program": name, "length": length, "total_s": round(total, 3), "compile_s": c["compile_seconds"],
            "proof_s": c["proof_seconds"], "witness_s": c["verify_seconds"],
            "proof_over_witness": round(c["proof_seconds"] / max(c["verify_seconds"], 1e-9), 3),
            "proof_cases": model.report.check("every block proven").points,
            "parameters": model.network.parameter_count(), "goal_met": total <= GOAL_SECONDS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="library programs (default: all)")
    parser.add_argument("--length", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = args.names or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        parser.error(f"unknown program {unknown[0]!r}; choose from {', '.join(PROGRAMS)}")
    load = os.getloadavg()[0]
    rows = [measure(n, args.length) for n in names]
    summary = {"length": args.length, "goal_seconds": GOAL_SECONDS, "load_average_1min": round(load, 2),
               "max_total_s": max(r["total_s"] for r in rows), "sum_total_s": round(sum(r["total_s"] for r in rows), 2),
               "all_met": all(r["goal_met"] for r in rows), "rows": rows}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"rasp compile + proof at L = {args.length} (load average {load:.1f}; goal <= {GOAL_SECONDS:.0f} s each)")
    print(f"{'program':16s} {'total s':>8s} {'compile':>8s} {'proof':>7s} {'witness':>8s} {'proof/witness':>13s} "
          f"{'cases':>8s}")
    for r in rows:
        print(f"{r['program']:16s} {r['total_s']:8.2f} {r['compile_s']:8.2f} {r['proof_s']:7.2f} {r['witness_s']:8.2f} "
              f"{r['proof_over_witness']:13.2f} {r['proof_cases']:8d}")
    verdict = "MET" if summary["all_met"] else "NOT MET"
    print(f"slowest {summary['max_total_s']:.2f} s, all {summary['sum_total_s']:.2f} s: goal (each <= "
          f"{GOAL_SECONDS:.0f} s) {verdict}")


if __name__ == "__main__":
    main()
