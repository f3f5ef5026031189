"""Values held by one position at most (rasp/uniqueness.py): each rule fires where its conditions hold and not
where one of them fails. Mutation testing (2026-11-28) found every condition below could be dropped or loosened
with no test failing; each program here has a value the loosened rule would call unique that an input repeats."""

import itertools

import pytest

from expressivity import rasp
from expressivity.rasp.dependence import Dependence
from expressivity.rasp.graph import build_graph
from expressivity.rasp.uniqueness import Uniqueness
from expressivity.rasp.values import infer_values, value_key

T, I = rasp.tokens, rasp.indices
VOCAB, L = [1, 2, 3], 4


def _pair(x, w, name):
    return rasp.SequenceMap(lambda a, b: (a, b), x, w).named(name)


def _prefix_count():
    """How often each position's token occurs up to it: strictly grows along the positions holding a token."""
    same_before = rasp.Select(_pair(T, I, "key"), _pair(T, I, "query"), lambda k, q: k[0] == q[0] and k[1] <= q[1])
    return rasp.SelectorWidth(same_before).named("count")


PROGRAMS = {
    # U3 needs the width to grow: each index selects itself alone, so the width is 1 everywhere
    "width_not_growing": lambda: _pair(T, rasp.SelectorWidth(rasp.Select(I, I, rasp.Comparison.EQ)).named("w"), "s"),
    # U3 needs each position's own key selected: nothing is, the width is 0 everywhere
    "own_key_not_held": lambda: _pair(T, rasp.SelectorWidth(rasp.Select(I, I, rasp.Comparison.FALSE)).named("w"), "s"),
    # U3 needs a new key at each step: every key is selected from the start, the width is the length everywhere
    "no_new_key": lambda: _pair(T, rasp.SelectorWidth(rasp.Select(I, I, rasp.Comparison.TRUE)).named("w"), "s"),
    # U3 needs f one-to-one in both arguments: the count alone repeats across tokens
    "not_one_to_one": lambda: rasp.SequenceMap(lambda t, w: w, T, _prefix_count()).named("s"),
    # U4 needs each key selected by one query value at most: key k by queries 2k and 2k + 1
    "key_selected_twice": lambda: rasp.Aggregate(rasp.Select(I, I, lambda k, q: k == q // 2), I).named("s"),
    # U4 needs the selecting queries unique: two positions holding one token select one index
    "queries_repeat": lambda: rasp.Aggregate(rasp.Select(I, T, lambda k, q: k == q), I).named("s"),
    # U2 needs every preimage of a value to share the unique argument: 0 comes from every index
    "preimages_differ": lambda: rasp.SequenceMap(lambda i, t: i if t == 1 else 0, I, T).named("s"),
}


def _unique_and_repeated(program):
    graph = build_graph(program)
    values = infer_values(graph, VOCAB, L)
    from expressivity.rasp.selection import prove_selections

    prove_selections(graph, values, causal=False, vocab=VOCAB, max_seq_len=L, exhaustive_limit=10**5)
    node = next(n for n in graph.nodes if n.name == "s")
    unique = Uniqueness(graph, values, Dependence(graph, values)).unique(node.id)
    repeated = set()   # the values some input holds at two positions, by running the program on every input
    for n in range(1, L + 1):
        for tokens in itertools.product(VOCAB, repeat=n):
            out = [value_key(v) for v in rasp.evaluate(program, list(tokens)) if v is not None]
            repeated |= {v for v in out if out.count(v) > 1}
    return unique, repeated


@pytest.mark.parametrize("name", PROGRAMS)
def test_no_value_an_input_repeats_is_called_unique(name):
    unique, repeated = _unique_and_repeated(PROGRAMS[name]())
    assert repeated and not unique & repeated, (unique & repeated)


def test_the_rules_fire_where_their_conditions_hold():
    unique, repeated = _unique_and_repeated(_pair(T, _prefix_count(), "s"))   # U3: (token, its count so far)
    assert not repeated and len(unique) == len(VOCAB) * (L + 1)   # every (token, count) of the value sets
    unique, repeated = _unique_and_repeated(rasp.Aggregate(rasp.Select(I, I, lambda k, q: k == L - 1 - q), I).named("s"))
    assert not repeated and unique == {value_key(i) for i in range(L)}   # reversal copies the unique indices
