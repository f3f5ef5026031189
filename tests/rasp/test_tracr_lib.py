"""tracr's lib.py runs on expressivity.rasp: its programs, written as a tracr user writes them.

tracr cannot be a dependency, so this file stands in for ``tracr/compiler/lib.py``: the same
function names and signatures, written here against ``from expressivity import rasp`` using only
names tracr's ``rasp`` module has (``rasp.Value``, ``rasp.SOp``, ``rasp.numerical``, ...). Each
program runs on tracr's documented examples and compiles to a verified network.
"""

from fractions import Fraction as F
from typing import List, Sequence

import numpy as np
import pytest

from expressivity import rasp

# --- the library, tracr's names and signatures ------------------------------------------------------------------


def make_length() -> rasp.SOp:
    everything = rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE).named("all_true_selector")
    return rasp.SelectorWidth(everything).named("length")


length = make_length()


def make_reverse(sop: rasp.SOp) -> rasp.SOp:
    last_minus_i = ((length - rasp.indices).named("opp_idx") - 1).named("opp_idx-1")
    mirror = rasp.Select(rasp.indices, last_minus_i, rasp.Comparison.EQ).named("reverse_selector")
    return rasp.Aggregate(mirror, sop).named("reverse")


def make_pair_balance(sop: rasp.SOp, open_token: str, close_token: str) -> rasp.SOp:
    opened = rasp.numerical(make_frac_prevs(rasp.numerical(sop == open_token).named("bools_open"))).named("opens")
    closed = rasp.numerical(make_frac_prevs(rasp.numerical(sop == close_token).named("bools_close"))).named("closes")
    return rasp.numerical(rasp.LinearSequenceMap(opened, closed, 1, -1)).named("pair_balance")


def make_shuffle_dyck(pairs: List[str]) -> rasp.SOp:
    assert len(pairs) >= 1
    balances = [make_pair_balance(rasp.tokens, p[0], p[1]).named(f"balance_{p}") for p in pairs]
    negative = balances[0] < 0
    for b in balances[1:]:
        negative = negative | (b < 0)
    negative = rasp.numerical(rasp.Map(lambda x: x, negative)).named("any_negative")
    everywhere = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.TRUE).named("select_all")
    has_neg = rasp.numerical(rasp.Aggregate(everywhere, negative, default=0)).named("has_neg")
    zero = balances[0] == 0
    for b in balances[1:]:
        zero = zero & (b == 0)
    at_end = rasp.Select(rasp.indices, length - 1, rasp.Comparison.EQ).named("select_last")
    ends_zero = rasp.Aggregate(at_end, zero).named("last_zero")
    return (ends_zero & (~has_neg).named("not_has_neg")).named("shuffle_dyck")


def make_shuffle_dyck2() -> rasp.SOp:
    return make_shuffle_dyck(pairs=["()", "{}"]).named("shuffle_dyck2")


def make_hist() -> rasp.SOp:
    return rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ).named("same_tok")).named("hist")


def make_sort_unique(vals: rasp.SOp, keys: rasp.SOp) -> rasp.SOp:
    position = rasp.SelectorWidth(rasp.Select(keys, keys, rasp.Comparison.LT).named("smaller")).named("target_pos")
    return rasp.Aggregate(rasp.Select(position, rasp.indices, rasp.Comparison.EQ), vals).named("sort")


def make_sort(vals: rasp.SOp, keys: rasp.SOp, *, max_seq_len: int, min_key: float) -> rasp.SOp:
    unique = rasp.SequenceMap(lambda x, i: x + min_key * i / max_seq_len, keys, rasp.indices)
    return make_sort_unique(vals, unique)


def make_sort_freq(max_seq_len: int) -> rasp.SOp:
    return make_sort(rasp.tokens, -1 * make_hist().named("hist"), max_seq_len=max_seq_len,
                     min_key=1).named("sort_freq")


def make_frac_prevs(bools: rasp.SOp) -> rasp.SOp:
    up_to_here = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ)
    return rasp.numerical(rasp.Aggregate(up_to_here, rasp.numerical(bools), default=0)).named("frac_prevs")


def shift_by(offset: int, /, sop: rasp.SOp) -> rasp.SOp:
    behind = rasp.Select(rasp.indices, rasp.indices, lambda k, q: q == k + offset)
    return rasp.Aggregate(behind, sop, default=None).named(f"shift_by({offset})")


def detect_pattern(sop: rasp.SOp, pattern: Sequence[rasp.Value]) -> rasp.SOp:
    if len(pattern) < 1:
        raise ValueError(f"Length of `pattern` must be at least 1. Got {pattern}")
    found = [shift_by(i, sop == v) if i else sop == v for i, v in enumerate(reversed(pattern))]
    detected = found.pop()
    while found:
        detected = detected & found.pop()
    return detected.named(f"detect_pattern({pattern})")


def make_count_less_freq(n: int) -> rasp.SOp:
    hist = make_hist().named("hist")
    return rasp.SelectorWidth(rasp.Select(hist, hist, lambda x, y: x <= n).named("select_less")).named("count_less_freq")


def make_count(sop, token):
    return rasp.SelectorWidth(rasp.Select(sop, sop, lambda k, q: k == token)).named(f"count_{token}")


def make_nary_sequencemap(f, *sops):
    values, *rest = sops
    for sop in rest:
        values = rasp.SequenceMap(lambda x, y: (*x, y) if isinstance(x, tuple) else (x, y), values, sop)
    return rasp.Map(lambda args: f(*args), values)


# --- tracr's documented examples ----------------------------------------------------------------------------------


def test_tracrs_documented_examples():
    assert make_length()("abcdefg") == [7] * 7
    assert make_reverse(rasp.tokens)("Hello") == list("olleH")
    assert make_pair_balance(rasp.tokens, "(", ")")("a()b(c))") == [0, F(1, 2), 0, 0, F(1, 5), F(1, 6), 0, F(-1, 8)]
    assert make_shuffle_dyck2()("({)}") == [1] * 4 and make_shuffle_dyck2()("(){)}") == [0] * 5
    assert make_hist()("abac") == [2, 1, 2, 1]
    assert make_sort_unique(rasp.tokens, rasp.tokens)([2, 4, 3, 1]) == [1, 2, 3, 4]
    assert make_sort(rasp.tokens, rasp.tokens, max_seq_len=5, min_key=1)([2, 4, 1, 2]) == [1, 2, 2, 4]
    assert make_sort_freq(5)([2, 4, 2, 1]) == [2, 2, 4, 1]
    assert make_frac_prevs(rasp.tokens == "l")("hello") == [0, 0, F(1, 3), F(1, 2), F(2, 5)]
    assert detect_pattern(rasp.tokens, "abc")("abcabc") == [None, None, True, False, False, True]
    assert make_count_less_freq(2)(list("aaabbc")) == [3] * 6 and make_count_less_freq(2)(list("aacbbc")) == [6] * 6
    assert make_count(rasp.tokens, "a")(list("aaabbc")) == [3] * 6 and make_count(rasp.tokens, "a")("cabc") == [1] * 4
    assert make_nary_sequencemap(lambda x, y, z: x + y - z, rasp.tokens, rasp.tokens, rasp.indices)([3, 1]) == [6, 1]
    with pytest.raises(ValueError):
        detect_pattern(rasp.tokens, "")


# --- each compiles, verified, and runs through tracr's interface ---------------------------------------------------

DIGITS = [1, 2, 3, 4, 5]
PROGRAMS = {
    "length": (make_length, DIGITS),
    "reverse": (lambda: make_reverse(rasp.tokens), DIGITS),
    "hist": (make_hist, DIGITS),
    "sort_unique": (lambda: make_sort_unique(rasp.tokens, rasp.tokens), DIGITS),
    "sort": (lambda: make_sort(rasp.tokens, rasp.tokens, max_seq_len=5, min_key=1), DIGITS),
    "sort_freq": (lambda: make_sort_freq(5), DIGITS),
    "frac_prevs": (lambda: make_frac_prevs(rasp.tokens == "x"), ["a", "b", "x"]),
    "pair_balance": (lambda: make_pair_balance(rasp.tokens, "(", ")"), ["(", ")", "a"]),
    "shuffle_dyck": (lambda: make_shuffle_dyck(["()"]), ["(", ")"]),
    "shuffle_dyck2": (make_shuffle_dyck2, ["(", ")", "{", "}"]),
    "shift_by": (lambda: shift_by(1, rasp.tokens), DIGITS),
    "detect_pattern": (lambda: detect_pattern(rasp.tokens, "ab"), ["a", "b", "c"]),
    "count_less_freq": (lambda: make_count_less_freq(2), ["a", "b", "c", "d"]),
    "count": (lambda: make_count(rasp.tokens, "a"), ["a", "b", "c"]),
    "nary_sequencemap": (lambda: make_nary_sequencemap(lambda x, y, z: x + y - z, rasp.tokens, rasp.tokens,
                                                       rasp.indices), DIGITS),
}
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_program_compiles_with_tracrs_arguments_and_runs_through_tracrs_interface(name):
    build, vocab = PROGRAMS[name]
    model = rasp.compile(build(), set(vocab), 5, compiler_bos="compiler_bos", compiler_pad="compiler_pad",
                         samples=16, exact_ops=2e5)
    assert model.report.ok
    rng = np.random.default_rng(5)
    for n in (5, 3, 1):
        xs = [vocab[k] for k in rng.integers(0, len(vocab), size=n)]
        tokens = model.input_encoder.encode(["compiler_bos"] + xs + ["compiler_pad"] * (5 - n))
        out = model.apply(model.input_encoder.decode(tokens))
        assert out.decoded == ["compiler_bos"] + rasp.evaluate(model.program, xs) + ["compiler_pad"] * (5 - n)
