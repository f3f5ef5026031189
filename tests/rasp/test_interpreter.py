"""The reference interpreter on hand-computed examples (tracr's documented outputs, exact)."""

import math
from fractions import Fraction as F

import pytest

from expressivity import rasp
from expressivity.rasp import library as lib
from expressivity.rasp.language import RASPError


def test_primitives():
    assert rasp.evaluate(rasp.tokens, "abc") == ["a", "b", "c"]
    assert rasp.evaluate(rasp.indices, [7, 7, 7]) == [0, 1, 2]
    assert rasp.evaluate(rasp.Full(4), [1, 2]) == [4, 4]


def test_library_programs_on_tracrs_examples():
    assert rasp.evaluate(lib.make_length(), "abcdefg") == [7] * 7
    assert rasp.evaluate(lib.make_reverse(rasp.tokens), "Hello") == list("olleH")
    assert rasp.evaluate(lib.make_hist(), "abac") == [2, 1, 2, 1]
    assert rasp.evaluate(lib.make_sort_unique(rasp.tokens, rasp.tokens), [2, 4, 3, 1]) == [1, 2, 3, 4]
    assert rasp.evaluate(lib.make_sort(rasp.tokens, rasp.tokens, max_seq_len=5, min_key=1), [2, 4, 1, 2]) == [1, 2, 2, 4]
    assert rasp.evaluate(lib.make_sort_freq(5), [2, 4, 2, 1]) == [2, 2, 4, 1]
    assert rasp.evaluate(lib.make_frac_prevs(rasp.tokens == "l"), "hello") == [0, 0, F(1, 3), F(1, 2), F(2, 5)]
    assert rasp.evaluate(lib.make_pair_balance(rasp.tokens, "(", ")"), "a()b(c))") == \
        [0, F(1, 2), 0, 0, F(1, 5), F(1, 6), 0, F(-1, 8)]
    dyck2 = lib.make_shuffle_dyck(["()", "{}"])
    assert rasp.evaluate(dyck2, "({)}") == [1, 1, 1, 1]
    assert rasp.evaluate(dyck2, "(){)}") == [0] * 5
    assert rasp.evaluate(lib.detect_pattern(rasp.tokens, "abc"), "abcabc") == [None, None, True, False, False, True]
    assert rasp.evaluate(lib.make_count_less_freq(2), list("aaabbc")) == [3] * 6      # tracr's docstring examples
    assert rasp.evaluate(lib.make_count_less_freq(2), list("aacbbc")) == [6] * 6
    assert rasp.evaluate(lib.make_count(rasp.tokens, "a"), list("cabc")) == [1] * 4
    assert rasp.evaluate(lib.shift_by(2, rasp.tokens), [4, 2, 9]) == [None, None, 4]
    assert rasp.evaluate(lib.make_nary_sequencemap(lambda x, y, z: x + y - z, rasp.tokens, rasp.tokens, rasp.indices),
                         [3, 1, 2]) == [6, 1, 2]


def test_beyond_tracr():
    assert rasp.evaluate(lib.make_most_freq(), [3, 1, 3, 1, 2]) == [1] * 5     # tie 2-2: the smallest
    assert rasp.evaluate(lib.make_sum([1, 2, 3]), [3, 1, 3]) == [7, 7, 7]
    assert rasp.evaluate(lib.make_max(), [2, 5, 1, 5]) == [5] * 4


def test_aggregate_is_an_exact_mean_with_a_default():
    select = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LT)   # keys before the query
    agg = rasp.numerical(rasp.Aggregate(select, rasp.numerical(rasp.tokens), default=0))
    assert rasp.evaluate(agg, [1, 2, 4]) == [0, 1, F(3, 2)]
    none = rasp.Aggregate(select, rasp.tokens)
    assert rasp.evaluate(none, [5, 5]) == [None, 5]


def test_a_categorical_aggregate_copies_the_one_value_however_many_keys_hold_it():
    # several selected keys, one value: a copy keeps its type and sign (the compiled head's average
    # of equal one-hot vectors is that value's); tracr's evaluator gave 1.0 for [True, True] and
    # raised on ["a", "a"]
    T = rasp.tokens
    same = rasp.Select(T, T, rasp.Comparison.EQ)
    is_a = rasp.Map(lambda x: x == "a", T)
    got = rasp.evaluate(rasp.Aggregate(same, is_a), ["a", "a", "b"])
    assert got == [True, True, False] and all(type(v) is bool for v in got)
    assert rasp.evaluate(rasp.Aggregate(same, T), ["a", "a"]) == ["a", "a"]
    signs = rasp.evaluate(rasp.Aggregate(same, rasp.Map(lambda x: -0.0, T)), ["a", "a"])
    assert [math.copysign(1.0, v) for v in signs] == [-1.0, -1.0]
    # different values: the mean, as before (a categorical compile refuses it as not single-valued)
    assert rasp.evaluate(rasp.Aggregate(rasp.Select(T, T, rasp.Comparison.TRUE), T), [1, 2]) == [F(3, 2)] * 2
    # a numerical Aggregate averages numbers: [True, True] is the number 1
    numbers = rasp.evaluate(rasp.numerical(rasp.Aggregate(same, rasp.numerical(is_a), default=0)), ["a", "a"])
    assert numbers == [1, 1] and all(type(v) is int for v in numbers)


def test_selector_width_counts_selected_keys():
    width = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.LT))
    assert rasp.evaluate(width, [3, 1, 2]) == [2, 0, 1]


def test_errors_name_the_sop():
    bad = rasp.Map(lambda x: 1 // x, rasp.tokens).named("inverse")
    with pytest.raises(RASPError, match="inverse"):
        rasp.evaluate(bad, [1, 0])
    with pytest.raises(RASPError):
        rasp.evaluate(rasp.tokens, 5)
    agg = rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE), rasp.tokens)
    with pytest.raises(RASPError, match="average"):
        rasp.evaluate(agg, ["a", "b"])
