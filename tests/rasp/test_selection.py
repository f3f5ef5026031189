"""Proofs about selections (rasp/selection.py, rasp/dependence.py): the rules, what they prove, what they refuse."""

import numpy as np
import pytest

from expressivity import rasp
from expressivity.rasp import library as lib
from expressivity.rasp.dependence import Dependence, ranks
from expressivity.rasp.graph import build_graph
from expressivity.rasp.language import RASPError
from expressivity.rasp.selection import PredicateTable, prove_selections
from expressivity.rasp.values import infer_values

T, I = rasp.tokens, rasp.indices


def analysed(program, vocab, L, causal=False, limit=0):
    """The unfused graph with its value sets and selection proofs (``limit`` 0: static rules only)."""
    graph = build_graph(program)
    values = infer_values(graph, vocab, L)
    prove_selections(graph, values, causal=causal, vocab=vocab, max_seq_len=L, exhaustive_limit=limit)
    return graph, values


def proofs_by_name(graph):
    return {n.name: n.proofs for n in graph.nodes if n.proofs}


@pytest.mark.parametrize("build, name, rule", [
    (lambda L: lib.make_reverse(), "reverse", "R1: each query selects one value of 'indices'"),
    (lambda L: lib.make_sort(T, T, max_seq_len=L, min_key=1), "sort", "R1: each query selects one value of 'target_pos'"),
    (lambda L: lib.make_sort_unique(T, T), "sort", "R1: each query selects one value of 'target_pos'"),
    (lambda L: lib.make_sort_freq(L), "sort_freq", "R1: each query selects one value of 'target_pos'"),
    (lambda L: lib.make_max(), "max", "R1: each query selects one value of 'n_larger'"),
    (lambda L: lib.make_most_freq(), "most_freq", "R1: each query selects one value of 'beaten_by'"),
    (lambda L: lib.shift_by(1, T).named("previous"), "previous", "R1: each query selects one value of 'indices'"),
])
def test_library_aggregates_are_single_valued_by_a_static_rule_at_any_length(build, name, rule):
    # L = 12 over 5 tokens: 3e8 inputs, so no exhaustive check (limit 0) could stand in for the rule
    graph, _ = analysed(build(12), [1, 2, 3, 4, 5], 12)
    assert proofs_by_name(graph)[name]["single-valued"].startswith(rule)


def test_r2_values_a_function_of_the_keys_constant_on_each_selection():
    parity = rasp.Map(lambda t: t % 2, T).named("parity")
    program = rasp.Aggregate(rasp.Select(T, T, lambda k, q: k % 2 == q % 2), parity).named("same_parity")
    graph, _ = analysed(program, [1, 2, 3, 4], 6)
    assert proofs_by_name(graph)["same_parity"]["single-valued"].startswith("R2: 'parity' is a function of 'tokens'")


def test_r0_and_r3_and_the_refusal_without_them():
    constant = rasp.Aggregate(rasp.Select(T, T, rasp.Comparison.TRUE), rasp.Full(7)).named("seven")
    assert analysed(constant, [1, 2], 4)[0].nodes[-1].proofs["single-valued"].startswith("R0")
    # the first token of a sequence whose tokens are all equal or not: single-valued, but no static rule knows
    first_if_constant = rasp.Aggregate(rasp.Select(T, T, rasp.Comparison.TRUE), T).named("mean")
    with pytest.raises(RASPError, match=r"refused: Aggregate 'mean' is categorical.*\(R1 .*R2 .*over the limit"):
        analysed(first_if_constant, [1, 2], 3)
    with pytest.raises(RASPError, match=r"on the input \[1, 2\] query 0 selects the values 1, 2"):
        analysed(first_if_constant, [1, 2], 3, limit=100)
    graph, _ = analysed(first_if_constant, [1], 3, limit=100)     # one token: every selection holds one value
    assert graph.nodes[-1].proofs["single-valued"].startswith("R0")


def test_causal_rules():
    graph, _ = analysed(lib.make_frac_prevs(T == 1), [1, 2], 6, causal=True)
    assert proofs_by_name(graph)["frac_prevs"]["backward-only"].startswith("C1: keys and queries are functions of "
                                                                           "indices")
    graph, _ = analysed(lib.shift_by(1, T).named("previous"), [1, 2], 6, causal=True)
    assert proofs_by_name(graph)["previous"]["backward-only"].startswith("C1")
    never = rasp.SelectorWidth(rasp.Select(T, T, rasp.Comparison.FALSE)).named("never")
    assert analysed(never, [1, 2], 6, causal=True)[0].nodes[-1].proofs["backward-only"].startswith("C0")
    with pytest.raises(RASPError, match="refused: causal=True, but the Select of 'length'"):
        analysed(lib.make_reverse(), [1, 2], 6, causal=True)            # tracr#19: reverse's length looks ahead
    nxt = rasp.Aggregate(rasp.Select(I, I, lambda k, q: k == q + 1), T).named("next")
    with pytest.raises(RASPError, match="refused: causal=True, but the Select of 'next'"):
        analysed(nxt, [1, 2], 6, causal=True)


def test_causal_networks_equal_the_bidirectional_meaning_on_every_input():
    program = lib.make_frac_prevs(T == 1)
    model = rasp.compile(program, vocab={1, 2}, max_seq_len=4, causal=True)
    assert all(layer.causal for layer in model.network.layers if layer.kind == "attention")
    for n in range(1, 5):
        for xs in np.ndindex(*(2,) * n):
            tokens = [x + 1 for x in xs]
            assert model.apply(["BOS", *tokens]).decoded[1:] == rasp.evaluate(program, tokens)


@pytest.mark.parametrize("select, default, compiles", [
    (rasp.Select(I, I, rasp.Comparison.LEQ), None, True),                  # each query selects itself
    (rasp.Select(I, T, lambda k, q: k == 0), None, True),                  # index 0 always exists
    (rasp.Select(T, T, rasp.Comparison.TRUE), None, True),                 # every key value
    (rasp.Select(T, T, rasp.Comparison.LT), None, False),                  # the smallest token selects nothing
    (rasp.Select(T, T, rasp.Comparison.LT), 0, True),
])
def test_a_numerical_mean_with_default_none_compiles_only_when_every_query_selects(select, default, compiles):
    ones = rasp.numerical(rasp.Map(lambda t: t == 1, T))
    program = rasp.numerical(rasp.Aggregate(select, ones, default=default)).named("mean")
    if not compiles:
        with pytest.raises(RASPError, match="numerical SOp 'mean' may be None"):
            rasp.compile(program, vocab={1, 2}, max_seq_len=3)
        return
    model = rasp.compile(program, vocab={1, 2}, max_seq_len=3)
    for xs in ([1], [2, 1], [1, 2, 2]):
        assert model.apply(["BOS", *xs]).decoded[1:] == rasp.evaluate(program, xs)


def test_a_categorical_aggregate_that_always_selects_has_no_none_value():
    first = rasp.Aggregate(rasp.Select(I, T, lambda k, q: k == 0), T).named("first")
    graph = build_graph(first)
    values = infer_values(graph, [1, 2], 3)
    assert None not in values[graph.output] and graph.nodes[graph.output].nonempty == "every query selects index 0"


def table(sets):
    """A predicate table of one SOp with itself from the selection sets ``sets[q]`` (value indices)."""
    n = len(sets)
    M = np.zeros((n, n), dtype=bool)
    for q, s in enumerate(sets):
        M[q, list(s)] = True
    return PredicateTable(list(range(n)), list(range(n)), M)


@pytest.mark.parametrize("comparison, holds", [
    (rasp.Comparison.LT, True), (rasp.Comparison.LEQ, True), (rasp.Comparison.GT, True), (rasp.Comparison.GEQ, True),
    (rasp.Comparison.EQ, False), (rasp.Comparison.TRUE, False), (rasp.Comparison.NEQ, False),
])
def test_the_ranks_rule_on_comparisons(comparison, holds):
    n = 6
    M = np.array([[comparison(k, q) for k in range(n)] for q in range(n)], dtype=bool)
    assert ranks(PredicateTable(list(range(n)), list(range(n)), M)) is holds


def test_the_ranks_rule_needs_a_witness_in_each_step():
    assert ranks(table([set(), {0}, {0, 1}]))          # LT on 0 < 1 < 2
    assert not ranks(table([set(), {2}, {2, 0}]))      # nested, but value 1's set adds 0 only: widths may tie


def test_determination_through_injective_maps_and_ranks():
    keys = rasp.SequenceMap(lambda x, i: x + i / 10, T, I).named("keys")     # injective in i
    rank = rasp.SelectorWidth(rasp.Select(keys, keys, rasp.Comparison.LT)).named("rank")
    doubled = rasp.Map(lambda t: 2 * t, T).named("doubled")
    parity = rasp.Map(lambda t: t % 2, T).named("parity")
    program = rasp.SequenceMap(lambda a, b: (a, b), rasp.SequenceMap(lambda a, b: a, rank, doubled), parity)
    graph = build_graph(program)
    values = infer_values(graph, [1, 2, 3], 5)
    dep = Dependence(graph, values)
    ids = {n.name: n.id for n in graph.nodes}
    assert ids["indices"] in dep.determined_by(ids["keys"]) and ids["tokens"] in dep.determined_by(ids["rank"])
    assert ids["tokens"] in dep.determined_by(ids["doubled"])             # 2t is one-to-one
    assert ids["tokens"] not in dep.determined_by(ids["parity"])          # t % 2 is not
    assert ids["parity"] in dep.determined_by(ids["doubled"])             # but parity is a function of tokens
    table_of = dep.function_of(ids["tokens"], ids["parity"])
    assert sorted(table_of.values()) == [0, 1, 1]
    assert dep.function_of(ids["tokens"], ids["rank"]) is None            # a rank depends on the whole input


def test_annotated_copies_of_tokens_and_indices_are_the_same_sop_to_the_rules():
    shifted = rasp.Aggregate(rasp.Select(rasp.categorical(I), I, lambda k, q: q == k + 1), T).named("shifted")
    graph, _ = analysed(shifted, [1, 2], 6, causal=True)
    assert proofs_by_name(graph)["shifted"]["backward-only"].startswith("C1")
    same = rasp.Aggregate(rasp.Select(rasp.categorical(T), T, rasp.Comparison.EQ), rasp.categorical(T)).named("same")
    graph, _ = analysed(rasp.Map(lambda x: x, same), [1, 2], 6)
    assert proofs_by_name(graph)["same"]["single-valued"].startswith("R1")


def _pair(a, b, name):
    return rasp.SequenceMap(lambda x, y: (x, y), a, b).named(name)


def _occurrence(prefix_only=True):
    """How many positions up to this one (or anywhere, without ``prefix_only``) hold this position's token."""
    at = _pair(T, I, "at")
    same = (lambda k, q: k[0] == q[0] and k[1] <= q[1]) if prefix_only else (lambda k, q: k[0] == q[0])
    return rasp.SelectorWidth(rasp.Select(at, at, same)).named("occurrence")


def induction(prefix_only=True):
    """The token after the previous occurrence of this position's token (an induction head)."""
    seen = _pair(T, _occurrence(prefix_only), "seen")
    previous_seen = lib.shift_by(1, seen).named("previous_seen")
    wanted = rasp.Map(lambda s: (s[0], s[1] - 1), seen).named("wanted")
    return rasp.Aggregate(rasp.Select(previous_seen, wanted, lambda k, q: k == q), T).named("induction")


def running_max():
    """The largest token so far, as the token of the last record."""
    token_at = _pair(T, I, "token_at")
    beaten = rasp.SelectorWidth(rasp.Select(token_at, token_at, lambda k, q: k[1] < q[1] and not q[0] > k[0]))
    is_record = (beaten == 0).named("is_record")
    records = rasp.SelectorWidth(rasp.Select(_pair(is_record, I, "record_at"), I, lambda k, q: k[0] and k[1] <= q))
    rank = _pair(is_record, records.named("records"), "record_rank")
    last = rasp.Select(rank, records, lambda k, q: k[0] and k[1] == q)
    return rasp.Aggregate(last, T).named("running_max")


def test_uniqueness_u3_prefix_ranks_and_u4_copies_prove_an_induction_head():
    graph, _ = analysed(induction(), [1, 2, 3], 12)           # 800k inputs: only the rules can prove it
    rule = proofs_by_name(graph)["induction"]["single-valued"]
    assert rule == "R1: each query selects one value of 'previous_seen', held by one position at most (U4 < U3)"
    with pytest.raises(RASPError, match="refused: Aggregate 'induction' is categorical"):
        analysed(induction(prefix_only=False), [1, 2, 3], 12)  # (token, count anywhere) repeats: no proof
    program = induction()
    model = rasp.compile(program, vocab={1, 2, 3}, max_seq_len=4)
    for n in range(1, 5):
        for xs in np.ndindex(*(3,) * n):
            tokens = [x + 1 for x in xs]
            assert model.apply(["BOS", *tokens]).decoded[1:] == rasp.evaluate(program, tokens)


def test_uniqueness_u3_counts_of_marked_positions_prove_a_running_max():
    graph, _ = analysed(running_max(), [1, 2, 3], 12)
    assert proofs_by_name(graph)["running_max"]["single-valued"].endswith("held by one position at most (U3)")
    model = rasp.compile(running_max(), vocab={1, 2, 3}, max_seq_len=5)
    for xs in ([2], [1, 3, 2], [3, 3, 1, 2], [1, 2, 2, 3, 1]):
        assert model.apply(["BOS", *xs]).decoded[1:] == rasp.evaluate(running_max(), xs) == \
            [max(xs[:i + 1]) for i in range(len(xs))]
