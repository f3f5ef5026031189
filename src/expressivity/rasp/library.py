"""The classic RASP programs (tracr's ``compiler/lib.py`` names and meanings) and a few beyond them.

``PROGRAMS`` maps a name to a :class:`LibraryProgram`: how to build the program for a
``max_seq_len``, the vocabulary it is meant for, and what it computes. Written here from the
programs' definitions (the RASP paper, tracr's library, TransformerPrograms' tasks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from expressivity.rasp.language import (Aggregate, Comparison, LinearSequenceMap, Map, RASPError, Select,
                                        SelectorWidth, SequenceMap, SOp, indices, numerical, tokens)


def make_length() -> SOp:
    """The number of tokens, at every position: the width of an all-true selector."""
    return SelectorWidth(Select(tokens, tokens, Comparison.TRUE).named("all_true_selector")).named("length")


def make_reverse(sop: SOp = tokens) -> SOp:
    """``sop`` backwards: position ``i`` reads position ``length - 1 - i``."""
    opp_idx = (make_length() - indices).named("opp_idx")
    opp_idx = (opp_idx - 1).named("opp_idx-1")
    reverse_selector = Select(indices, opp_idx, Comparison.EQ).named("reverse_selector")
    return Aggregate(reverse_selector, sop).named("reverse")


def make_hist() -> SOp:
    """How often each position's token occurs in the input."""
    return SelectorWidth(Select(tokens, tokens, Comparison.EQ).named("same_tok")).named("hist")


def make_sort_unique(vals: SOp, keys: SOp) -> SOp:
    """``vals`` ordered by ``keys`` (which must be unique): position ``i`` reads the key with ``i`` smaller keys."""
    smaller = Select(keys, keys, Comparison.LT).named("smaller")
    target_pos = SelectorWidth(smaller).named("target_pos")
    sel_new = Select(target_pos, indices, Comparison.EQ).named("sel_new")
    return Aggregate(sel_new, vals).named("sort")


def make_sort(vals: SOp, keys: SOp, *, max_seq_len: int, min_key) -> SOp:
    """``vals`` ordered by ``keys``, ties kept in input order: keys are made unique by ``+ min_key * i / L``."""
    keys = SequenceMap(lambda x, i: x + min_key * i / max_seq_len, keys, indices).named("unique_keys")
    return make_sort_unique(vals, keys)


def make_sort_freq(max_seq_len: int) -> SOp:
    """Tokens ordered by how often they occur (most frequent first, ties in input order)."""
    hist = (-1 * make_hist()).named("neg_hist")
    return make_sort(tokens, hist, max_seq_len=max_seq_len, min_key=1).named("sort_freq")


def make_frac_prevs(bools: SOp) -> SOp:
    """The fraction of positions up to each one where ``bools`` holds (a numerical mean)."""
    bools = numerical(bools)
    prevs = Select(indices, indices, Comparison.LEQ).named("prevs")
    return numerical(Aggregate(prevs, bools, default=0)).named("frac_prevs")


def make_pair_balance(sop: SOp, open_token: str, close_token: str) -> SOp:
    """Fraction of open tokens minus fraction of close tokens up to each position."""
    bools_open = numerical(sop == open_token).named("bools_open")
    opens = numerical(make_frac_prevs(bools_open)).named("opens")
    bools_close = numerical(sop == close_token).named("bools_close")
    closes = numerical(make_frac_prevs(bools_close)).named("closes")
    return numerical(LinearSequenceMap(opens, closes, 1, -1)).named("pair_balance")


def make_shuffle_dyck(pairs: list[str]) -> SOp:
    """1 at every position if every bracket pair in ``pairs`` is balanced (shuffle-Dyck), else 0."""
    if not pairs or any(len(p) != 2 for p in pairs):
        raise RASPError(f"shuffle_dyck needs bracket pairs such as ['()', '{{}}'], got {pairs!r}")
    balances = [make_pair_balance(tokens, p[0], p[1]).named(f"balance_{p}") for p in pairs]
    any_negative = balances[0] < 0
    for balance in balances[1:]:
        any_negative = any_negative | (balance < 0)
    any_negative = numerical(Map(lambda x: x, any_negative)).named("any_negative")
    select_all = Select(indices, indices, Comparison.TRUE).named("select_all")
    has_neg = numerical(Aggregate(select_all, any_negative, default=0)).named("has_neg")
    all_zero = balances[0] == 0
    for balance in balances[1:]:
        all_zero = all_zero & (balance == 0)
    select_last = Select(indices, make_length() - 1, Comparison.EQ).named("select_last")
    last_zero = Aggregate(select_last, all_zero).named("last_zero")
    not_has_neg = (~has_neg).named("not_has_neg")
    return (last_zero & not_has_neg).named("shuffle_dyck")


def make_most_freq() -> SOp:
    """At every position, the most frequent token (ties: the smallest token)."""
    hist = make_hist()
    rank = SequenceMap(lambda h, t: (h, _neg(t)), hist, tokens).named("freq_rank")
    beaten = SelectorWidth(Select(rank, rank, Comparison.GT).named("beats")).named("beaten_by")
    is_best = (beaten == 0).named("is_best")
    return Aggregate(Select(is_best, tokens, lambda k, q: k).named("best"), tokens).named("most_freq")


def _neg(t):
    """An order-reversing key for tokens (numbers negated; strings compared backwards by code point)."""
    return -t if isinstance(t, (int, float)) else tuple(-ord(c) for c in str(t))


def shift_by(offset: int, sop: SOp) -> SOp:
    """``sop`` moved ``offset`` positions right; the first ``offset`` positions are empty (None)."""
    select = Select(indices, indices, lambda k, q: q == k + offset).named(f"shift_{offset}")
    return Aggregate(select, sop, default=None).named(f"shift_by({offset})")


def make_previous_token() -> SOp:
    """The token one position back (None at the first position): the first half of an induction head."""
    return shift_by(1, tokens).named("previous_token")


def make_detect_pattern(pattern: tuple) -> SOp:
    """True at the last position of every occurrence of ``pattern`` (None where it cannot end yet)."""
    detectors = []
    for i, element in enumerate(reversed(pattern)):
        detector = tokens == element
        detectors.append(shift_by(i, detector) if i else detector)
    detected = detectors.pop()
    while detectors:
        detected = detected & detectors.pop()
    return detected.named("detect_pattern")


def make_max() -> SOp:
    """The tutorial's max: the largest token, at every position."""
    larger = SelectorWidth(Select(tokens, tokens, Comparison.GT).named("larger")).named("n_larger")
    is_max = (larger == 0).named("is_max")
    return Aggregate(Select(is_max, tokens, lambda k, q: k).named("the_max"), tokens).named("max")


def make_sum(vocab) -> SOp:
    """The tutorial's sum of the (numeric) tokens, at every position: ``sum_v v * count_v``."""
    total = None
    for v in sorted(vocab):
        count = numerical(SelectorWidth(Select(tokens, tokens, lambda k, q, v=v: k == v))).named(f"count_{v}")
        total = numerical(Map(lambda c, v=v: v * c, count)).named(f"sum_{v}") if total is None else \
            numerical(LinearSequenceMap(total, count, 1, v)).named(f"sum_to_{v}")
    return total.named("sum")


@dataclass(frozen=True)
class LibraryProgram:
    """``build(max_seq_len) -> SOp``; ``vocab``: the tokens it is meant for (strings or numbers)."""

    name: str
    description: str
    build: Callable[[int], SOp]
    vocab: tuple
    origin: str = "tracr"


PROGRAMS: dict[str, LibraryProgram] = {p.name: p for p in (
    LibraryProgram("length", "number of tokens", lambda L: make_length(), (1, 2, 3, 4, 5)),
    LibraryProgram("reverse", "the tokens backwards", lambda L: make_reverse(tokens), (1, 2, 3, 4, 5)),
    LibraryProgram("hist", "how often each token occurs", lambda L: make_hist(), (1, 2, 3, 4, 5)),
    LibraryProgram("sort_unique", "tokens sorted (meant for distinct tokens; repeated ones leave gaps)",
                   lambda L: make_sort_unique(tokens, tokens), (1, 2, 3, 4, 5)),
    LibraryProgram("sort", "tokens sorted, ties in input order", lambda L: make_sort(tokens, tokens, max_seq_len=L,
                                                                                      min_key=1), (1, 2, 3, 4, 5)),
    LibraryProgram("sort_freq", "tokens by descending frequency", make_sort_freq, (1, 2, 3, 4, 5)),
    LibraryProgram("frac_prevs", "fraction of 'x' tokens so far", lambda L: make_frac_prevs(tokens == "x"),
                   ("a", "b", "x")),
    LibraryProgram("pair_balance", "fraction of '(' minus fraction of ')' so far",
                   lambda L: make_pair_balance(tokens, "(", ")"), ("(", ")", "a")),
    LibraryProgram("shuffle_dyck", "1 if the parentheses are balanced (Dyck-1)", lambda L: make_shuffle_dyck(["()"]),
                   ("(", ")")),
    LibraryProgram("shuffle_dyck2", "1 if both bracket kinds are balanced (shuffle-Dyck-2)",
                   lambda L: make_shuffle_dyck(["()", "{}"]).named("shuffle_dyck2"), ("(", ")", "{", "}")),
    LibraryProgram("most_freq", "the most frequent token (ties: the smallest)", lambda L: make_most_freq(),
                   (1, 2, 3, 4, 5), "TransformerPrograms"),
    LibraryProgram("sum", "sum of the tokens (the tutorial's sum circuit)", lambda L: make_sum((1, 2, 3, 4, 5)),
                   (1, 2, 3, 4, 5), "tutorial"),
    LibraryProgram("max", "largest token (the tutorial's max circuit)", lambda L: make_max(), (1, 2, 3, 4, 5),
                   "tutorial"),
    LibraryProgram("previous_token", "the previous token (copy; the first half of an induction head)",
                   lambda L: make_previous_token(), (1, 2, 3, 4, 5), "induction"),
    LibraryProgram("detect_pattern", "True where 'a b' ends (tracr's detect_pattern)",
                   lambda L: make_detect_pattern(("a", "b")), ("a", "b", "c"), "tracr"),
)}


def get_program(name: str) -> LibraryProgram:
    try:
        return PROGRAMS[name]
    except KeyError:
        raise RASPError(f"unknown program {name!r}; choose one of: {', '.join(PROGRAMS)} (or give module:function)") \
            from None
