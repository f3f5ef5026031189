"""The compiler stages one by one: graph, value sets, layout, blocks, assembly."""

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from expressivity import rasp
from expressivity.rasp import library as lib
from expressivity.rasp.blocks import Unit, attention_block, piecewise_units
from expressivity.rasp.graph import build_graph, fuse_maps
from expressivity.rasp.language import RASPError
from expressivity.rasp.layout import BOS, ONE, allocate
from expressivity.rasp.values import MAX_VALUES, infer_values


def stages(program, vocab, L):
    graph = build_graph(program)
    graph, values = fuse_maps(graph, infer_values(graph, vocab, L))
    return graph, values, allocate(graph, values)


def test_graph_fuses_a_map_into_its_only_producer():
    graph = build_graph(lib.make_reverse())
    assert "opp_idx" in [n.name for n in graph.nodes]       # kept for the proofs; fused after them
    graph, _ = fuse_maps(graph, infer_values(graph, [1, 2], 3))
    names = [n.name for n in graph.nodes]
    assert "opp_idx" not in names and "opp_idx-1" in names          # (length - indices) - 1 in one block
    fused = graph.nodes[names.index("opp_idx-1")]
    assert fused.kind == "sequence_map" and fused.fused == ["opp_idx"] and fused.f(5, 1) == 3
    assert graph.nodes[graph.output].name == "reverse"


def test_graph_keeps_a_map_whose_producer_has_other_users():
    x = rasp.Map(lambda t: t + 1, rasp.tokens).named("x")
    y = rasp.SequenceMap(lambda a, b: a + b, x, (x * 2).named("y"))
    names = [n.name for n in build_graph(y).nodes]
    assert "x" in names and "y" in names


@pytest.mark.parametrize("program, words", [
    (rasp.Aggregate(rasp.Select(rasp.numerical(rasp.tokens), rasp.tokens, rasp.Comparison.EQ), rasp.tokens),
     "numerical; attention compares"),
    (rasp.numerical(rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ), rasp.tokens)),
     "averages the categorical"),
    (rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ), rasp.tokens, default=1),
     "default 1 cannot"),
    (rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)
                        & rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LT)), "not compiled"),
])
def test_graph_refuses_what_it_cannot_compile(program, words):
    with pytest.raises(RASPError, match=words):
        build_graph(program)


def test_value_sets_hold_every_mean():
    graph, values, _ = stages(lib.make_frac_prevs(rasp.tokens == "x"), ["a", "x"], 3)
    out = values[graph.output]
    assert F(2, 3) in out and F(1, 2) in out and 0 in out and 1 in out      # tracr's {v/n} misses 2/3
    assert set(out) == {0, 1, F(1, 2), F(1, 3), F(2, 3)}


def test_value_sets_of_maps_and_widths():
    graph, values, _ = stages(lib.make_reverse(), [1, 2], 4)
    by_name = {n.name: values[n.id] for n in graph.nodes}
    assert by_name["length"] == [0, 1, 2, 3, 4] and by_name["indices"] == [0, 1, 2, 3]
    assert by_name["opp_idx-1"] == list(range(-4, 4))
    assert by_name["reverse"] == [1, 2, None]       # a categorical Aggregate may select nothing


def test_value_set_budget_is_refused_with_the_size():
    wide = rasp.SequenceMap(lambda a, b: (a, b), rasp.tokens, rasp.indices)
    with pytest.raises(RASPError, match="budget"):
        stages(wide, list(range(MAX_VALUES // 10 + 1)), 11)


def test_layout_labels_and_sublayers():
    graph, values, layout = stages(lib.make_reverse(), [1, 2], 3)
    assert layout.labels[:2] == (ONE, BOS)
    assert "tokens:1" in layout.labels and "indices:2" in layout.labels and "reverse:2" in layout.labels
    assert "length:1/(w+1)" in layout.labels
    kinds = [k for k, _ in layout.sublayers]
    assert kinds == ["attention", "mlp", "mlp", "attention"]     # width attn+mlp, opp_idx mlp, aggregate
    named = [[graph.nodes[i].name for i in ids] for _, ids in layout.sublayers]
    assert named == [["length"], ["length"], ["opp_idx-1"], ["reverse"]]


def test_attention_table_factorisation():
    for comparison, columns in ((rasp.Comparison.TRUE, 1), (rasp.Comparison.EQ, 3), (rasp.Comparison.LT, 3)):
        prog = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, comparison))
        graph, values, layout = stages(prog, [1, 2, 3], 4)
        block = attention_block(graph.nodes[graph.output], graph, layout, values, snap=False)
        assert block.head.size == columns + 1            # + the BOS column


def _evaluate(units, form_dim, s, d):
    x = np.zeros(d, dtype=object)
    x[...] = 0
    x[0], x[form_dim] = 1, s
    out = np.zeros(d, dtype=object)
    out[...] = 0
    for u in units:
        h = sum(w * x[i] for i, w in u.w_in.items())
        for i, w in u.w_out.items():
            out[i] += max(h, 0) * w
    return out


@given(st.lists(st.fractions(min_value=-5, max_value=5, max_denominator=7), min_size=1, max_size=8, unique=True),
       st.lists(st.integers(-3, 3), min_size=8, max_size=8), st.booleans())
def test_piecewise_units_are_exact_on_the_known_values(xs, ys, robust):
    xs = sorted(xs)
    points = [(s, {2: y} if y else {}) for s, y in zip(xs, ys)]
    units, margin = piecewise_units({1: 1}, points, 0, robust)
    assert all(isinstance(u, Unit) for u in units)
    for s, target in points:
        assert _evaluate(units, 1, s, 3)[2] == target.get(2, 0)
    if robust and len(xs) > 1 and any(a != b for a, b in zip(ys, ys[1:len(xs)])):
        # a perturbation below the margin changes nothing
        gap = min(b - a for a, b in zip(xs, xs[1:]))
        assert margin >= gap / 4
        for s, target in points:
            assert _evaluate(units, 1, s + margin * F(9, 10), 3)[2] == target.get(2, 0)
