"""Exact forward pass: the Fraction path against the scaled-integer fast path, in one process.

``forward_exact`` runs a network that qualifies on scaled integers (integer numerators over one
common denominator) and anything else on ``Fraction`` objects; both give the same numbers of the
same types (tests/network/test_exact_scaled.py). This times both on the same inputs, on

* a compiled RASP network: ``rasp.compile`` of the library's ``sort`` (hardmax attention, ReLU
  feed-forward layers, one-hot inputs, BOS first), and
* a Yun et al. network: the quantizer followed by the contextual map (piecewise-linear and
  hardmax layers; inputs on the grid of multiples of ``1/(2N)``).

Rounds interleave the two paths (fast, then Fraction, ``--rounds`` times) so drift on a shared
machine hits both; the ratio is of the medians. Each round first checks the two outputs are equal.

    python benchmarks/bench_exact.py [--json] [--rounds 5] [--batch 16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from fractions import Fraction

import numpy as np

from expressivity import rasp
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import contextual_map
from expressivity.constructions.yun.quantize import quantizer
from expressivity.network.exact import forward_exact
from expressivity.network.exact_scaled import scaled_refusal
from expressivity.rasp.library import make_sort


def rasp_case(batch: int, rng: np.random.Generator):
    """``sort`` compiled at length 8 over {1..4}, and ``batch`` one-hot inputs ``(batch, 9, d_in)``."""
    model = rasp.compile(make_sort(rasp.tokens, rasp.tokens, max_seq_len=8, min_key=1), vocab={1, 2, 3, 4},
                         max_seq_len=8)
    ids = np.concatenate([np.zeros((batch, 1), int), rng.integers(1, 5, size=(batch, 8))], axis=1)
    return "rasp sort (L=8)", model.network, model.one_hot(ids).astype(int)


def yun_case(batch: int, rng: np.random.Generator):
    """Quantizer + contextual map for n=3, d=2, N=4, and ``batch`` grid inputs ``(batch, 3, 2)``."""
    p = YunParams(3, 2, 4, positional=False)
    net = contextual_map(p)
    net = quantizer(net.metadata["params"]).then(net)
    X = np.empty((batch, 3, 2), dtype=object)
    X.flat[:] = [Fraction(int(k), 2 * p.N) for k in rng.integers(0, 2 * p.N, size=X.size)]
    return "yun quantizer+contextual (n=3, d=2, N=4)", net, X


def measure(name: str, network, X, rounds: int) -> dict:
    if scaled_refusal(network) is not None:
        raise SystemExit(f"{name}: does not take the fast path ({scaled_refusal(network)})")
    fast, fractions = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        a = forward_exact(network, X)
        t1 = time.perf_counter()
        b = forward_exact(network, X, fast=False)
        t2 = time.perf_counter()
        if a.tolist() != b.tolist():
            raise SystemExit(f"{name}: the two paths disagree")
        fast.append(t1 - t0)
        fractions.append(t2 - t1)
    f, r = statistics.median(fast), statistics.median(fractions)
    return {"network": name, "layers": len(network.layers), "batch": int(X.shape[0]), "rounds": rounds,
            "fast_s": f, "fraction_s": r, "ratio": r / f}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = [measure(*case(args.batch, rng), args.rounds) for case in (rasp_case, yun_case)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['network']:<42} {row['layers']:>3} layers  batch {row['batch']:>3}  "
              f"Fraction {row['fraction_s']:8.3f} s  fast {row['fast_s']:8.3f} s  "
              f"ratio {row['ratio']:6.1f}x  (median of {row['rounds']} interleaved rounds)")


if __name__ == "__main__":
    main()
