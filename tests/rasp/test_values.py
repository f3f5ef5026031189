"""Value sets (rasp/values.py): typed values, None, float means."""

import itertools
from fractions import Fraction

import pytest

from expressivity import rasp
from expressivity.rasp.graph import build_graph
from expressivity.rasp.language import RASPError
from expressivity.rasp.values import float_mean_tolerance, infer_values, sort_values, value_key

T, I = rasp.tokens, rasp.indices


def test_value_keys_tell_apart_what_python_calls_equal():
    keys = {value_key(v) for v in (True, 1, 1.0, Fraction(1), -0.0, 0.0, 0, False, (1, True), (1, 1))}
    assert len(keys) == 10   # Fraction(1) too: x / 3 is a Fraction on it and a float on 1
    assert sort_values([1.0, True, 1, "a", 0]) == [0, True, 1, 1.0, "a"]


def all_agree(program, vocab, L):
    model = rasp.compile(program, vocab=vocab, max_seq_len=L)
    for n in range(1, L + 1):
        for xs in itertools.product(sorted(vocab), repeat=n):
            assert model.apply(["BOS", *xs]).decoded[1:] == rasp.evaluate(program, list(xs)), xs
    return model


def test_bools_and_ints_that_functions_tell_apart_get_their_own_dimensions():
    # x is True at some positions and 1 at others; str and / 3 treat them differently
    x = rasp.SequenceMap(lambda t, i: t > 1 if i == 0 else 1, T, I).named("x")
    assert infer_values(build_graph(x), [1, 2], 3)[build_graph(x).output] == [False, True, 1]
    as_text = rasp.Map(lambda v: str(v), x).named("text")
    assert all_agree(as_text, {1, 2}, 3).output_values == ["1", "False", "True"]
    all_agree(rasp.Map(lambda v: v / 3 == 1 / 3, x).named("third"), {1, 2}, 3)     # True / 3 is a float


def test_numerical_sops_holding_true_and_1_alike_compile_only_where_that_is_harmless():
    x = rasp.numerical(rasp.SequenceMap(lambda t, i: t > 1 if i == 0 else 1, T, I)).named("x")
    keep = lambda sop: rasp.SequenceMap(lambda a, b: a, sop, x)     # noqa: E731 - a second user: x is not fused away
    all_agree(keep(rasp.numerical(rasp.Map(lambda v: 2 * v, x))), {1, 2}, 3)
    with pytest.raises(RASPError, match="values equal as numbers, e.g. True and 1, must give equal results"):
        rasp.compile(keep(rasp.Map(lambda v: str(v), x)), vocab={1, 2}, max_seq_len=3)


@pytest.mark.parametrize("program, words", [
    (rasp.Map(lambda t: [t], T), "unhashable value"),
    (rasp.Map(lambda t: 1 if t == 1 else "1", T).named("m"), "SOp 'm' takes both 1 and '1'"),
    (rasp.numerical(rasp.Map(lambda t: "a", T)).named("n"), "numerical but takes the value 'a'"),
    (rasp.numerical(rasp.Map(lambda t: float("inf"), T)).named("n"), "takes the value inf"),
])
def test_values_no_residual_can_hold_are_refused_in_one_line(program, words):
    with pytest.raises(RASPError, match=words) as info:
        rasp.compile(program, vocab={1, 2}, max_seq_len=3)
    assert "\n" not in str(info.value)


def test_a_map_fused_into_a_producer_is_not_called_where_the_producer_gives_none():
    maybe = rasp.SequenceMap(lambda a, b: None if a == b else a, T, I)
    is_none = rasp.Map(lambda x: x is None, maybe).named("is_none")      # evaluate never calls it on None
    model = all_agree(is_none, {0, 1, 2}, 3)
    assert model.apply(["BOS", 0, 2]).decoded == ["BOS", None, False]


def test_an_output_that_is_always_none_has_no_dimension_and_decodes_as_none():
    nothing = rasp.Aggregate(rasp.Select(I, I, rasp.Comparison.EQ), rasp.Full(None)).named("nothing")
    model = all_agree(nothing, {1, 2}, 3)
    assert model.output_values == [] and model.apply(["BOS", 1, 2]).decoded == ["BOS", None, None]


def test_none_propagates_as_in_evaluate_and_never_reaches_a_numerical_sop():
    previous = rasp.Aggregate(rasp.Select(I, I, lambda k, q: q == k + 1), T).named("previous")
    plus_one = rasp.Map(lambda t: t + 1, previous).named("plus_one")
    all_agree(plus_one, {1, 2}, 3)                                   # None at position 0 stays None
    with pytest.raises(RASPError, match="numerical SOp 'n' may be None \\(it reads 'previous', which may be None\\)"):
        rasp.compile(rasp.numerical(rasp.Map(lambda t: t + 1, previous)).named("n"), vocab={1, 2}, max_seq_len=3)


def test_the_float_mean_tolerance_bounds_the_interpreters_rounding():
    values = [Fraction(0.1), Fraction(0.2), Fraction(0.7)]
    L = 8
    tau = float_mean_tolerance(values, L)
    worst = 0.0
    for n in range(1, L + 1):
        for picked in itertools.product([0.1, 0.2, 0.7], repeat=n):
            exact = sum(Fraction(v) for v in picked) / n
            worst = max(worst, abs(float(sum(picked) / n - exact)))
    assert 0 < worst <= tau


def test_a_sequence_map_over_a_huge_product_is_refused_before_it_is_walked():
    """pair_balance at max-len 128 built the values of 25 million pairs (minutes, then out of memory)
    before its budget refused it (a fresh audit, 2026-11-28): the product is refused by its size, and a
    walk stops at the first value past the budget."""
    from expressivity.rasp.library import PROGRAMS

    balance = PROGRAMS["pair_balance"]
    with pytest.raises(RASPError, match=r"5,025 x 5,025 = 25,250,625 value pairs at max_seq_len 128, above the budget"):
        rasp.compile(balance.program(128), vocab=set(balance.vocab), max_seq_len=128)
    with pytest.raises(RASPError, match="takes more than 200000 values at max_seq_len 64"):
        rasp.compile(balance.program(64), vocab=set(balance.vocab), max_seq_len=64)
