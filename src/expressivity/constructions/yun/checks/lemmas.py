"""Exhaustive exact check of Lemma 4.2's properties P1-P4 over the whole extended grid.

The contextual-map network is read as rank-1 id updates (see
:mod:`expressivity.constructions.yun.grid`) and run on every point of the extended grid
``G_delta^+`` at once, as an ``(points, n)`` array of scaled ids (units ``delta/2``).

* P1: on distinct-column grid points the ``n`` contextual values are distinct.
* P2: grid points that are not column permutations of each other share no value.
* P3: those values lie in ``[t_l, t_r]``.
* P4: on every other point of ``G_delta^+`` (a duplicate column or an out-of-range entry)
  every value lies outside ``[t_l, t_r]``.

``t_l, t_r`` are read from the network's metadata (the constants it was built with).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.grid import as_int_array, column_table, enumerate_grid, parse_rank_one, run_ids, scaled
from expressivity.network.network import Network


@dataclass
class LemmaReport:
    """Outcome of :func:`verify_contextual`. Exact numbers are in paper units (Fractions)."""

    failures: int
    failures_by_property: dict[str, int]
    grid_points: int
    classes: int
    t_l: Fraction
    t_r: Fraction
    min_gap: Fraction | None
    seconds: float
    arithmetic: str
    max_abs_entry: Fraction
    examples: list[dict] = field(default_factory=list)
    # class key -> (configs of the representative in increasing-id order, its final scaled ids)
    representatives: dict = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict:
        return {
            "failures": self.failures,
            "failures_by_property": self.failures_by_property,
            "grid_points": self.grid_points,
            "classes": self.classes,
            "min_gap": self.min_gap,
            "t_l": self.t_l,
            "t_r": self.t_r,
            "max_abs_entry": self.max_abs_entry,
            "seconds": round(self.seconds, 4),
            "arithmetic": self.arithmetic,
            "examples": self.examples,
        }


def verify_contextual(p: YunParams, network: Network, chunk: int = 1 << 17, keep_representatives: bool = False,
                      progress=None) -> LemmaReport:
    """Check P1-P4 for ``network`` (the contextual stage) on every point of ``G_delta^+``.

    Args:
        p: the sizes and mode the network was built for (``network.metadata['params']`` if present).
        network: attention layers of the rank-1 form.
        keep_representatives: also return each permutation class's representative and values,
            which the value-map builder needs.
        progress: optional callable ``(done, total)``.
    """
    t0 = time.perf_counter()
    p = network.metadata.get("params", p)
    layers = parse_rank_one(network, p)
    table = column_table(p)
    t_l, t_r = scaled(p, network.metadata.get("t_l", p.t_l)), scaled(p, network.metadata.get("t_r", p.t_r))
    codes_base = p.N ** p.d
    fails = {"P1": 0, "P2": 0, "P3": 0, "P4": 0, "zero-query-tie": 0}
    examples: list[dict] = []
    arithmetic = set()
    good_vals, good_keys = [], []
    reps: dict = {}
    other_abs = max((abs(e) for col in table.entries for c in col for e in c[1:]), default=0)
    max_abs = other_abs
    total, done = p.extended_grid_points, 0
    first_tables = [as_int_array([c[0] for c in table.entries[j]])[0] for j in range(p.n)]

    def note(prop: str, configs_row, values_row) -> None:
        if len(examples) < 5:
            examples.append({"property": prop, "grid_point": _describe_point(p, table, configs_row),
                             "values": [Fraction(int(v), 2 * p.N) for v in values_row]})

    for configs, ids in enumerate_grid(p, table, chunk):
        res = run_ids(layers, ids)
        q = res.ids
        arithmetic.add(res.arithmetic)
        delta_row1 = q - ids
        first_entries = np.stack([first_tables[j][configs[:, j]] for j in range(p.n)], axis=1)
        row1 = first_entries + delta_row1
        max_abs = max(max_abs, int(np.max(np.abs(row1))))

        oob = table.oob[configs].any(axis=1)
        codes = table.code[configs]
        order = np.argsort(ids, axis=1, kind="stable")
        sorted_ids = np.take_along_axis(ids, order, axis=1)
        distinct = np.all(sorted_ids[:, 1:] != sorted_ids[:, :-1], axis=1)
        good = ~oob & distinct
        inside = (q >= t_l) & (q <= t_r)

        fails["zero-query-tie"] += int(res.zero_query_ties.sum())
        # P1, P3 on good points; P4 on the rest.
        qs = np.sort(q[good].astype(object) if q.dtype == object else q[good], axis=1)
        p1_bad = np.any(qs[:, 1:] == qs[:, :-1], axis=1) if qs.size else np.zeros(0, dtype=bool)
        p3_bad = ~np.all(inside[good], axis=1)
        p4_bad = np.any(inside[~good], axis=1)
        fails["P1"] += int(p1_bad.sum())
        fails["P3"] += int(p3_bad.sum())
        fails["P4"] += int(p4_bad.sum())
        for prop, mask, sub in (("P1", p1_bad, good), ("P3", p3_bad, good), ("P4", p4_bad, ~good)):
            for r in np.flatnonzero(mask)[:2]:
                row = np.flatnonzero(sub)[r]
                note(prop, configs[row], q[row])

        # Class key: in-range configuration numbers in increasing-id order, base N^d.
        gidx = np.flatnonzero(good)
        key = np.zeros(gidx.size, dtype=np.int64) if p.N ** (p.d * p.n) < 2 ** 62 else np.zeros(gidx.size, dtype=object)
        sc = np.take_along_axis(codes[gidx], order[gidx], axis=1)
        for j in range(p.n):
            key = key * codes_base + sc[:, j]
        good_vals.append(q[gidx].reshape(-1))
        good_keys.append(np.repeat(key, p.n))
        if keep_representatives:
            sq = np.take_along_axis(q[gidx], order[gidx], axis=1)
            sconf = np.take_along_axis(configs[gidx], order[gidx], axis=1)
            _, first_idx = np.unique(key, return_index=True)
            for i in first_idx:
                k = int(key[i])
                if k not in reps:
                    reps[k] = (tuple(int(c) for c in sconf[i]), tuple(int(v) for v in sq[i]))
        done += ids.shape[0]
        if progress is not None:
            progress(done, total)

    vals = np.concatenate(good_vals) if good_vals else np.zeros(0, dtype=np.int64)
    keys = np.concatenate(good_keys) if good_keys else np.zeros(0, dtype=np.int64)
    classes = int(np.unique(keys).size)
    min_gap = None
    if vals.size:
        idx = np.argsort(vals, kind="stable")
        sv, sk = vals[idx], keys[idx]
        same_val = sv[1:] == sv[:-1]
        clash = same_val & (sk[1:] != sk[:-1])
        fails["P2"] += int(clash.sum())
        for r in np.flatnonzero(clash)[:2]:
            if len(examples) < 5:
                examples.append({"property": "P2", "value": Fraction(int(sv[r]), 2 * p.N)})
        uniq = sv[np.concatenate([[True], ~same_val])]
        if uniq.size > 1:
            min_gap = Fraction(int(np.min(uniq[1:] - uniq[:-1])), 2 * p.N)
    arith = "python-int" if any("python" in a for a in arithmetic) and all(a == "python-int" for a in arithmetic) else (
        "int64+python-int" if any("python" in a for a in arithmetic) else "int64")
    return LemmaReport(
        failures=sum(fails.values()), failures_by_property=fails, grid_points=p.extended_grid_points,
        classes=classes, t_l=Fraction(t_l, 2 * p.N), t_r=Fraction(t_r, 2 * p.N), min_gap=min_gap,
        seconds=time.perf_counter() - t0, arithmetic=arith, max_abs_entry=Fraction(max_abs, 2 * p.N),
        examples=examples, representatives=reps,
    )


def _describe_point(p: YunParams, table, configs_row) -> list[list]:
    """The grid point as tokens (rows) of paper-unit entries, positional offset removed."""
    out = []
    for j, c in enumerate(configs_row):
        off = 2 * p.N * j if p.positional else 0
        out.append([Fraction(e - off, 2 * p.N) if e >= off else "out" for e in table.entries[j][int(c)]])
    return out
