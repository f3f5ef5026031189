"""expressivity.rasp against tracr on tracr's whole library: size, compile + proof seconds, correctness.

For every program of tracr's ``compiler/lib.py`` and every L in ``--lengths`` (default 5, 10, 20,
40) this compiles the library's program with ``rasp.compile`` (hardmax; its verification is always
on: exhaustive where the inputs fit, else ``--samples`` random inputs, exact arithmetic within its
budget) and runs the network on 30 random full-length and 30 random shorter inputs, comparing the
decoded output with ``rasp.evaluate``. tracr's figures beside each row come from a recorded run of
tracr itself on the same programs, vocabularies and inputs (``data/tracr_lib_figures.json``: its
commit and how they were measured; nothing here imports tracr). The inputs are drawn the same way
on both sides (``check_inputs``) and the recorded SHA-256 of tracr's inputs is compared with ours.

Parameters count every stored weight, zeros included, on both sides; layers are tracr's (an
attention sublayer and the feed-forward one after it), heads the most in one layer. Times are
wall-clock seconds on this machine (2 CPU cores shared with other jobs), for orientation only.

Goals (issue 31): at L = 20 fewer parameters than tracr on every program of its library, and a
geometric mean of the ratios at most 0.15 over the whole library.

    python benchmarks/bench_tracr.py [--json] [--lengths 5,10,20,40] [--programs reverse,hist] [--samples 64]
                                     [--check auto|exact|float64]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

import numpy as np

from expressivity import rasp
from expressivity.rasp.library import PROGRAMS

TRACR_FIGURES = Path(__file__).with_name("data") / "tracr_lib_figures.json"
CHECKS = 30                  # full-length inputs, and as many shorter ones
EXACT_CHECK_PARAMETERS = 300_000   # --check auto: exact arithmetic up to this many parameters, float64 beyond
GOAL_GEOMEAN_L20 = 0.15


def tracr_figures(path: Path = TRACR_FIGURES) -> dict:
    """The recorded tracr run: ``{"tracr_commit", "how", "rows": {(program, L): row}}``."""
    data = json.loads(path.read_text())
    data["rows"] = {(r["program"], r["L"]): r for r in data["rows"]}
    return data


def check_inputs(vocab: list, L: int) -> tuple[list[list], list[list]]:
    """30 full-length and 30 shorter (1..L-1 tokens) random inputs over ``vocab``, seeded by ``L``: the draws the
    recorded tracr run made (NumPy's PCG64 with seed ``L``)."""
    rng = np.random.default_rng(L)
    full = [[vocab[k] for k in rng.integers(0, len(vocab), size=L)] for _ in range(CHECKS)]
    short = [[vocab[k] for k in rng.integers(0, len(vocab), size=int(rng.integers(1, L)))] for _ in range(CHECKS)]
    return full, short


def inputs_digest(full: list, short: list) -> str:
    return hashlib.sha256(json.dumps([full, short], default=str).encode()).hexdigest()[:16]


def model_layers(network) -> int:
    """Layers in tracr's unit: an attention sublayer and the feed-forward one after it count once (tracr's
    ``num_layers``; a layer missing either half still counts)."""
    count, previous = 0, None
    for layer in network.layers:
        count += layer.kind == "attention" or previous != "attention"
        previous = layer.kind
    return count


def correct(compiled, inputs: list[list], dtype: str) -> int:
    """How many inputs the network decodes exactly as ``rasp.evaluate`` does (every position)."""
    good = 0
    for tokens in inputs:
        got = compiled.apply([compiled.bos] + tokens, dtype=dtype).decoded[1:]
        want = rasp.evaluate(compiled.program, tokens)
        good += got == (want if dtype == "exact" else [_as_float(w, compiled) for w in want])
    return good


def _as_float(value, compiled):
    """What a float apply decodes a numerical value as (a Python float); categorical values stay as they are."""
    return float(value) if compiled.output_numerical and value is not None else value


def measure(name: str, L: int, samples: int, check: str, tracr: dict) -> dict:
    entry = PROGRAMS[name]
    vocab = list(entry.vocab)
    row = {"program": name, "L": L}
    started = time.perf_counter()
    try:
        compiled = rasp.compile(entry.build(L), vocab=vocab, max_seq_len=L, samples=samples)
    except rasp.RASPError as exc:
        row |= {"refused": str(exc), "compile_proof_s": round(time.perf_counter() - started, 2)}
    else:
        size, verification = compiled.report.size, compiled.report.checks[0]
        dtype = check if check != "auto" else ("exact" if size.parameters <= EXACT_CHECK_PARAMETERS else "float64")
        full, short = check_inputs(vocab, L)
        row |= {"layers": model_layers(compiled.network), "sublayers": size.layers,
                "heads": size.extra["heads_max"], "d_model": size.width,
                "mlp_hidden": size.extra["mlp_hidden_max"], "params": size.parameters,
                "compile_proof_s": round(time.perf_counter() - started, 2),
                "verified": f"{verification.points} inputs ({verification.details['inputs']}), "
                            f"{verification.failures} failures, {verification.arithmetic}",
                "correct_full": correct(compiled, full, dtype), "correct_short": correct(compiled, short, dtype) if L > 1
                else None, "correct_arithmetic": dtype, "inputs_sha256": inputs_digest(full, short)}
    theirs = tracr["rows"].get((name, L))
    if theirs is not None:
        row["tracr"] = {k: theirs.get(k) for k in ("layers", "heads", "d_model", "mlp_hidden", "params", "compile_s",
                                                   "correct_full", "correct_short", "error")}
        row["same_inputs_as_tracr"] = row.get("inputs_sha256") == theirs.get("inputs_sha256") \
            if "inputs_sha256" in row else None
        if "params" in row and theirs.get("params"):
            row["params_ratio"] = row["params"] / theirs["params"]
    return row


def summary(rows: list[dict], tracr_programs: list[str]) -> dict:
    """The goals at L = 20 over tracr's whole library (a refused program fails the first and is left out of the
    geometric mean, which says over how many programs it ran)."""
    at20 = {r["program"]: r for r in rows if r["L"] == 20}
    ratios = {p: at20[p]["params_ratio"] for p in tracr_programs if "params_ratio" in at20.get(p, {})}
    missing = [p for p in tracr_programs if p not in ratios]
    geomean = statistics.geometric_mean(ratios.values()) if ratios else None
    measured = [r for r in rows if "correct_full" in r]
    both = [r for r in measured if (r.get("tracr") or {}).get("params")]
    return {
        "programs_at_L20": f"{len(ratios)} of {len(tracr_programs)}" + (f" (no ratio: {', '.join(missing)})"
                                                                       if missing else ""),
        "fewer_params_than_tracr_at_L20_every_program": not missing and all(x < 1 for x in ratios.values()),
        "not_fewer_at_L20": sorted(p for p, x in ratios.items() if x >= 1),
        "geomean_params_ratio_L20": geomean,
        "geomean_goal": f"<= {GOAL_GEOMEAN_L20}: " + ("MET" if geomean is not None and geomean <= GOAL_GEOMEAN_L20
                                                       and not missing else "NOT MET" if geomean is not None
                                                       else "no data"),
        "ours_correct": _correct(measured, lambda r: r),
        "where_both_ran": f"ours {_correct(both, lambda r: r)}, tracr {_correct(both, lambda r: r['tracr'])}",
        "same_inputs_as_tracr": all(r.get("same_inputs_as_tracr") for r in measured if "tracr" in r),
        "refused": [f"{r['program']} L={r['L']}: {r['refused']}" for r in rows if "refused" in r],
    }


def _correct(rows: list[dict], side) -> str:
    """``"good of total"`` over the checked inputs of ``rows`` (``side(row)`` holds ``correct_full`` / ``_short``)."""
    good = sum(side(r)["correct_full"] + (side(r)["correct_short"] or 0) for r in rows)
    return f"{good} of {sum(CHECKS * (2 if r['L'] > 1 else 1) for r in rows)}"


def _k(n) -> str:
    if n is None:
        return "-"
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e4 else f"{n:,}"


def print_table(rows: list[dict]) -> None:
    head = f"{'program':17s} {'L':>3s} {'layers':>9s} {'d_model':>11s} {'params':>17s} {'ratio':>6s} " \
           f"{'seconds':>12s} {'correct full+short':>22s}"
    print(head + "\n" + "-" * len(head))
    for r in rows:
        t = r.get("tracr") or {}
        if "refused" in r:
            print(f"{r['program']:17s} {r['L']:>3d}  refused ({r['compile_proof_s']} s): {r['refused'][:90]}")
            continue
        correct_ours = f"{r['correct_full']}+{r['correct_short']}"
        correct_tracr = f"{t.get('correct_full')}+{t.get('correct_short')}" if t.get("params") else "-"
        print(f"{r['program']:17s} {r['L']:>3d} {r['layers']:>4d} ({t.get('layers') or '-':>2}) "
              f"{r['d_model']:>5d} ({t.get('d_model') or '-':>3}) {_k(r['params']):>7s} ({_k(t.get('params')):>7s}) "
              f"{r.get('params_ratio', float('nan')):>6.3f} {r['compile_proof_s']:>5.1f} ({t.get('compile_s') or '-':>4}) "
              f"{correct_ours:>9s} ({correct_tracr:>7s})")


def main() -> None:
    tracr = tracr_figures()
    tracr_programs = list(dict.fromkeys(p for p, _ in tracr["rows"]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="5,10,20,40")
    parser.add_argument("--programs", default=",".join(tracr_programs))
    parser.add_argument("--samples", type=int, default=64, help="random verification inputs where exhaustive is too many")
    parser.add_argument("--check", choices=("auto", "exact", "float64"), default="auto",
                        help=f"arithmetic of the 60 checked inputs (auto: exact up to {EXACT_CHECK_PARAMETERS:,} "
                             "parameters, float64 beyond)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    unknown = [p for p in args.programs.split(",") if p not in PROGRAMS]
    if unknown:
        parser.error(f"unknown programs {unknown}; choose from {', '.join(tracr_programs)}")
    lengths = [int(x) for x in args.lengths.split(",")]
    rows = []
    for name in args.programs.split(","):
        for L in lengths:
            rows.append(measure(name, L, args.samples, args.check, tracr))
            if not args.json:
                print(json.dumps(rows[-1], default=str), flush=True)
    result = {"tracr_commit": tracr["tracr_commit"], "tracr_how": tracr["how"], "rows": rows,
              "summary": summary(rows, [p for p in tracr_programs if p in args.programs.split(",")])}
    if args.json:
        print(json.dumps(result, default=str))
        return
    print(f"\ntracr at {tracr['tracr_commit'][:7]} in parentheses ({tracr['how'][:80]}...)")
    print_table(rows)
    print(json.dumps(result["summary"], indent=2, default=str))


if __name__ == "__main__":
    main()
