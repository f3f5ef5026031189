"""The classic RASP programs: tracr's ``compiler/lib.py`` (its names, signatures and meanings) and programs from
the RASP literature that tracr does not ship.

``PROGRAMS`` maps a name to a :class:`LibraryProgram`: how to build the program for a
``max_seq_len``, the vocabulary it is meant for, what it computes and where it comes from. Written
here from the programs' definitions (the RASP paper, tracr's library, TransformerPrograms'
tasks); the tracr ones keep tracr's function names and signatures, so code calling
``tracr.compiler.lib`` can call this module instead.

Several programs beyond tracr need "the last position with property P" or "the previous
occurrence". RASP has no max over positions; they use one idiom, :func:`rank_by`: count the
positions with the same key up to here (a SelectorWidth), then select the position whose
(key, rank) pair is the one wanted. Pairs are categorical SOps (one residual dimension per pair
of values), so these programs grow with ``L^2`` in width.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

from expressivity.rasp.language import (Aggregate, Comparison, LinearSequenceMap, Map, RASPError, Select,
                                        SelectorWidth, SequenceMap, SOp, Value, indices, numerical, tokens)

# ---------------------------------------------------------------------------------------------
# tracr's lib.py (names and signatures as there)
# ---------------------------------------------------------------------------------------------


def make_length() -> SOp:
    """The number of tokens, at every position: the width of an all-true selector."""
    return SelectorWidth(Select(tokens, tokens, Comparison.TRUE).named("all_true_selector")).named("length")


length = make_length()


def make_reverse(sop: SOp = tokens) -> SOp:
    """``sop`` backwards: position ``i`` reads position ``length - 1 - i``."""
    opp_idx = (length - indices).named("opp_idx")
    opp_idx = (opp_idx - 1).named("opp_idx-1")
    reverse_selector = Select(indices, opp_idx, Comparison.EQ).named("reverse_selector")
    return Aggregate(reverse_selector, sop).named("reverse")


def make_pair_balance(sop: SOp, open_token: str, close_token: str) -> SOp:
    """Fraction of open tokens minus fraction of close tokens up to each position (numerical)."""
    bools_open = numerical(sop == open_token).named("bools_open")
    opens = numerical(make_frac_prevs(bools_open)).named("opens")
    bools_close = numerical(sop == close_token).named("bools_close")
    closes = numerical(make_frac_prevs(bools_close)).named("closes")
    return numerical(LinearSequenceMap(opens, closes, 1, -1)).named("pair_balance")


def make_shuffle_dyck(pairs: list[str]) -> SOp:
    """True at every position if every bracket pair in ``pairs`` is balanced (shuffle-Dyck), else False."""
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
    select_last = Select(indices, length - 1, Comparison.EQ).named("select_last")
    last_zero = Aggregate(select_last, all_zero).named("last_zero")
    not_has_neg = (~has_neg).named("not_has_neg")
    return (last_zero & not_has_neg).named("shuffle_dyck")


def make_shuffle_dyck2() -> SOp:
    """Shuffle-Dyck over ``()`` and ``{}``."""
    return make_shuffle_dyck(pairs=["()", "{}"]).named("shuffle_dyck2")


def make_hist() -> SOp:
    """How often each position's token occurs in the input."""
    return SelectorWidth(Select(tokens, tokens, Comparison.EQ).named("same_tok")).named("hist")


def make_sort_unique(vals: SOp, keys: SOp) -> SOp:
    """``vals`` ordered by ``keys`` (which must be unique): position ``i`` reads the key with ``i`` smaller keys."""
    smaller = Select(keys, keys, Comparison.LT).named("smaller")
    target_pos = SelectorWidth(smaller).named("target_pos")
    sel_new = Select(target_pos, indices, Comparison.EQ).named("sel_new")
    return Aggregate(sel_new, vals).named("sort")


def make_sort(vals: SOp, keys: SOp, *, max_seq_len: int, min_key: float) -> SOp:
    """``vals`` ordered by ``keys``, ties kept in input order: keys are made unique by ``+ min_key * i / L``,
    in exact arithmetic (tracr adds floats: 2^53 + 1 and 2^53 collided, and sort answered their average and a None,
    an audit, 2026-11-29)."""
    step = Fraction(min_key) / max_seq_len
    keys = SequenceMap(lambda x, i: (Fraction(x) if isinstance(x, float) else x) + step * i, keys,
                       indices).named("unique_keys")
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


def shift_by(offset: int, /, sop: SOp) -> SOp:
    """``sop`` moved ``offset`` positions right; the first ``offset`` positions are empty (None)."""
    select = Select(indices, indices, lambda k, q: q == k + offset).named(f"shift_{offset}")
    return Aggregate(select, sop, default=None).named(f"shift_by({offset})")


def detect_pattern(sop: SOp, pattern: Sequence[Value]) -> SOp:
    """True at the last position of every occurrence of ``pattern`` in ``sop`` (None where it cannot end yet)."""
    if len(pattern) < 1:
        raise RASPError(f"detect_pattern needs a pattern of at least one value, got {pattern!r}")
    detectors = []
    for i, element in enumerate(reversed(pattern)):
        detector = sop == element
        detectors.append(shift_by(i, detector) if i else detector)
    detected = detectors.pop()
    while detectors:
        detected = detected & detectors.pop()
    return detected.named(f"detect_pattern({''.join(map(str, pattern))})")


def make_count_less_freq(n: int) -> SOp:
    """How many positions hold a token that occurs at most ``n`` times (the same number everywhere)."""
    hist = make_hist().named("hist")
    select_less = Select(hist, hist, lambda k, q: k <= n).named("select_less")
    return SelectorWidth(select_less).named("count_less_freq")


def make_count(sop: SOp, token: Value) -> SOp:
    """How often ``token`` occurs in ``sop`` (the same number everywhere)."""
    return SelectorWidth(Select(sop, sop, lambda k, q: k == token)).named(f"count_{token}")


def make_nary_sequencemap(f: Callable, *sops: SOp) -> SOp:
    """``f(x_1, ..., x_n)`` at every position: binary SequenceMaps build the argument tuples (categorical, so the
    width grows with the product of the value sets), then a Map applies ``f``."""
    if not sops:
        raise RASPError("make_nary_sequencemap needs at least one SOp after the function")
    values, *rest = sops
    for sop in rest:
        values = SequenceMap(lambda x, y: (*x, y) if isinstance(x, tuple) else (x, y), values, sop)
    return Map(lambda args: f(*args) if isinstance(args, tuple) else f(args), values)


# ---------------------------------------------------------------------------------------------
# beyond tracr: the RASP literature
# ---------------------------------------------------------------------------------------------


def pair(a: SOp, b: SOp, name: str) -> SOp:
    """``(a_i, b_i)`` at every position (categorical: one dimension per pair that can occur)."""
    return SequenceMap(lambda x, y: (x, y), a, b).named(name)


def rank_by(key: SOp, name: str) -> SOp:
    """How many positions ``j <= i`` have ``key_j == key_i`` (1 at a key's first occurrence)."""
    at = pair(key, indices, f"{name}_at")
    same_before = Select(at, at, lambda k, q: k[0] == q[0] and k[1] <= q[1]).named(f"{name}_same_before")
    return SelectorWidth(same_before).named(name)


def make_most_freq() -> SOp:
    """At every position, the most frequent token (ties: the smallest)."""
    hist = make_hist()
    rank = SequenceMap(lambda h, t: (h, _neg(t)), hist, tokens).named("freq_rank")
    beaten = SelectorWidth(Select(rank, rank, Comparison.GT).named("beats")).named("beaten_by")
    is_best = (beaten == 0).named("is_best")
    return Aggregate(Select(is_best, tokens, lambda k, q: k).named("best"), tokens).named("most_freq")


def _neg(t):
    """An order-reversing key for tokens (numbers negated; strings compared backwards by code point, then a
    sentinel above every negated code point, so a prefix outranks the strings it begins: without it "ab" beat "a",
    and most_freq broke its tie rule, an audit, 2026-11-29)."""
    return -t if isinstance(t, (int, float, Fraction)) else tuple(-ord(c) for c in str(t)) + (1,)


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


def make_dyck_depth(open_token: str = "(", close_token: str = ")") -> SOp:
    """The nesting depth after each position: opens minus closes so far (negative once a close is unmatched)."""
    bracket = pair(tokens, indices, "bracket_at")
    opens = SelectorWidth(Select(bracket, indices, lambda k, q: k[0] == open_token and k[1] <= q)).named("opens")
    closes = SelectorWidth(Select(bracket, indices, lambda k, q: k[0] == close_token and k[1] <= q)).named("closes")
    return (opens - closes).named("dyck_depth")


def make_dyck_ptf(pairs: list[str]) -> SOp:
    """Dyck-k over ``pairs`` (e.g. ``["()", "[]", "{}"]``), as TransformerPrograms tags prefixes: ``"T"`` where the
    prefix is balanced, ``"P"`` where it is a proper prefix of a balanced string, ``"F"`` from the first bracket
    that cannot be matched on.

    A bracket's level is the depth outside it. While the prefix is valid, the brackets of one level alternate
    open, close, open, ... and matched ones cancel, so before a close the only unmatched bracket of its level is
    its partner: for each kind, (opens - closes of that kind at this level before here) is 1 for the partner's
    kind and 0 for the others, and so is its mean's sign (one numerical Aggregate per kind)."""
    if not pairs or any(len(p) != 2 for p in pairs):
        raise RASPError(f"dyck_ptf needs bracket pairs such as ['()', '[]', '{{}}'], got {pairs!r}")
    closing = {p[0]: p[1] for p in pairs}
    open_at = SequenceMap(lambda t, i: (t in closing, i), tokens, indices).named("open_at")
    opens_before = SelectorWidth(Select(open_at, indices, lambda k, q: k[0] and k[1] < q)).named("opens_before")
    closes_to = SelectorWidth(Select(open_at, indices, lambda k, q: not k[0] and k[1] <= q)).named("closes_to")
    # -1 stands for every negative level: the prefix has failed there, and F stays
    level = SequenceMap(lambda a, b: max(a - b, -1), opens_before, closes_to).named("level")
    level_at = pair(level, indices, "level_at")
    earlier_same_level = Select(level_at, level_at, lambda k, q: k[0] == q[0] and k[1] < q[1]).named("same_level")
    ok = None
    for o, c in pairs:
        signed = numerical(Map(lambda t, o=o, c=c: 1 if t == o else -1 if t == c else 0, tokens)).named(f"signed_{o}")
        pending = numerical(Aggregate(earlier_same_level, signed, default=0)).named(f"pending_{o}")
        fits = SequenceMap(lambda t, p, c=c: t != c or p > 0, tokens, (pending > 0).named(f"is_pending_{o}"))
        ok = fits.named(f"fits_{o}") if ok is None else (ok & fits).named(f"fits_to_{o}")
    bad = SequenceMap(lambda lv, fine: int(lv < 0 or not fine), level, ok).named("bad")
    failed = (make_frac_prevs(numerical(bad)).named("bad_so_far") > 0).named("failed")
    closes_all = SequenceMap(lambda t, lv: t not in closing and lv == 0, tokens, level).named("closes_all")
    return SequenceMap(lambda f, b: "F" if f else ("T" if b else "P"), failed, closes_all).named("dyck_ptf")


def make_sort_stable(vals: SOp = tokens, keys: SOp = tokens) -> SOp:
    """``vals`` ordered by ``keys`` with ties in input order, the RASP paper's tie-break as one key: the pair
    ``(key, index)``, which is unique. Works for any ordered keys (strings too), unlike tracr's ``make_sort``."""
    key_at = pair(keys, indices, "key_at")
    target_pos = SelectorWidth(Select(key_at, key_at, Comparison.LT).named("smaller_pair")).named("target_pos")
    return Aggregate(Select(target_pos, indices, Comparison.EQ).named("to_target"), vals).named("sort_stable")


def make_successor() -> SOp:
    """A decimal number (digits, most significant first) plus one, as many digits (99..9 wraps to 00..0): a digit
    carries exactly when every digit after it is 9."""
    nine_at = SequenceMap(lambda d, i: (d == 9, i), tokens, indices).named("nine_at")
    not_nine_after = SelectorWidth(Select(nine_at, indices, lambda k, q: not k[0] and k[1] > q)).named("not_nine_after")
    return SequenceMap(lambda d, n: (d + (n == 0)) % 10, tokens, not_nine_after).named("successor")


def make_add_binary() -> SOp:
    """Two binary numbers added column by column (tokens ``"ab"``: bit ``a`` of the first, ``b`` of the second,
    most significant first), the sum's bit in every column (mod 2^n). A column receives a carry when the nearest
    column to its right where the bits agree has two ones (a carry is generated there and propagated since)."""
    agree_at = SequenceMap(lambda t, i: (t[0] == t[1], i), tokens, indices).named("agree_at")
    after = SelectorWidth(Select(agree_at, indices, lambda k, q: k[0] and k[1] > q)).named("agree_after")
    from_here = SelectorWidth(Select(agree_at, indices, lambda k, q: k[0] and k[1] >= q)).named("agree_from_here")
    agree_rank = pair(Map(lambda t: t[0] == t[1], tokens).named("agree"), from_here, "agree_rank")
    nearest = Select(agree_rank, after, lambda k, q: k[0] and k[1] == q).named("nearest_agreeing")
    generate = numerical(Map(lambda t: int(t == "11"), tokens)).named("generate")
    carry_in = numerical(Aggregate(nearest, generate, default=0)).named("carry_in")
    carry = Map(lambda c: int(c > 0), carry_in).named("carry")
    return SequenceMap(lambda t, c: (int(t[0]) + int(t[1]) + c) % 2, tokens, carry).named("add_binary")


def make_majority() -> SOp:
    """1 at every position when more than half of the tokens are 1 (the Boolean majority), else 0."""
    ones = numerical(Aggregate(Select(indices, indices, Comparison.TRUE).named("all"),
                               numerical(Map(lambda t: int(t == 1), tokens)).named("is_one"), default=0))
    return Map(lambda f: int(f > Fraction(1, 2)), ones.named("frac_ones")).named("majority")


def make_parity() -> SOp:
    """The parity of the number of 1 tokens, at every position."""
    ones = SelectorWidth(Select(tokens, tokens, lambda k, q: k == 1).named("ones")).named("n_ones")
    return Map(lambda n: n % 2, ones).named("parity")


def make_induction() -> SOp:
    """The induction head's answer: at each position, the token that followed the previous occurrence of this
    position's token (None at a token's first occurrence)."""
    occurrence = rank_by(tokens, "occurrence")
    seen = pair(tokens, occurrence, "token_and_occurrence")
    previous_seen = shift_by(1, seen).named("previous_seen")
    wanted = Map(lambda to: (to[0], to[1] - 1), seen).named("previous_occurrence")
    after_previous = Select(previous_seen, wanted, lambda k, q: k == q).named("after_previous")
    return Aggregate(after_previous, tokens).named("induction")


def make_double_hist() -> SOp:
    """The histogram of the histogram: at each position, how many distinct tokens occur as often as its token."""
    hist = make_hist()
    first = (rank_by(tokens, "occurrence") == 1).named("first_occurrence")
    hist_first = pair(hist, first, "hist_and_first")
    same_count = Select(hist_first, hist, lambda k, q: k[1] and k[0] == q).named("same_count_first")
    return SelectorWidth(same_count).named("double_hist")


def make_running_extreme(largest: bool = True) -> SOp:
    """The largest (or smallest) token so far: the token of the last record (a token beating every earlier one)."""
    beats = (lambda new, old: new > old) if largest else (lambda new, old: new < old)
    token_at = pair(tokens, indices, "token_at")
    beaten = SelectorWidth(Select(token_at, token_at, lambda k, q: k[1] < q[1] and not beats(q[0], k[0])))
    is_record = (beaten.named("not_beaten") == 0).named("is_record")
    record_at = pair(is_record, indices, "record_at")
    records = SelectorWidth(Select(record_at, indices, lambda k, q: k[0] and k[1] <= q)).named("records_so_far")
    last = Select(pair(is_record, records, "record_rank"), records, lambda k, q: k[0] and k[1] == q)
    return Aggregate(last.named("last_record"), tokens).named("running_max" if largest else "running_min")


# ---------------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------------


TOKEN_RULES = {
    "any": "any tokens (what it computes does not name particular ones)",
    "numbers": "numbers (it does arithmetic on the tokens)",
    "listed": "its listed tokens and subsets of them (it is defined on those alone)",
}


@dataclass(frozen=True)
class LibraryProgram:
    """``build(max_seq_len) -> SOp``; ``vocab``: the tokens it is meant for (strings or numbers); ``origin``: where
    the program comes from: tracr's lib.py, the course's tutorial circuits, or a paper (see ``ORIGINS``).
    ``tokens``: which vocabularies it computes its description on (``TOKEN_RULES``); ``build_for(max_seq_len,
    vocab)``: for a program whose definition enumerates the vocabulary (sum: ``sum_v v * count_v``), the
    program for that vocabulary; ``sized``: whether the program depends on ``max_seq_len`` at all. Build through :meth:`program`, which checks the vocabulary first."""

    name: str
    description: str
    build: Callable[[int], SOp]
    vocab: tuple
    origin: str = "tracr"
    tokens: str = "any"
    build_for: Callable[[int, tuple], SOp] | None = None
    sized: bool = False   # whether the program depends on max_seq_len (sort's keys are made unique with it)

    def __post_init__(self) -> None:
        if self.tokens not in TOKEN_RULES:
            raise ValueError(f"tokens must be one of {sorted(TOKEN_RULES)}, got {self.tokens!r}")

    def program(self, max_seq_len: int, vocab: Sequence | None = None) -> SOp:
        """The program for ``max_seq_len`` over ``vocab`` (default :attr:`vocab`); a vocabulary it does not
        compute its description on is refused (:class:`RASPError`, one line) rather than given a program that
        means something else there (sum over tokens it never counts)."""
        vocab = self.vocab if vocab is None else tuple(vocab)
        self.check_vocab(vocab)
        return self.build_for(max_seq_len, vocab) if self.build_for is not None else self.build(max_seq_len)

    def check_vocab(self, vocab: Sequence, what: str = "the vocabulary") -> None:
        """Raise :class:`RASPError` unless ``vocab`` obeys :attr:`tokens`."""
        if self.tokens == "numbers":
            bad = [t for t in vocab if isinstance(t, bool) or not isinstance(t, (int, Fraction))]
            if bad:
                raise RASPError(f"{self.name} is defined on integers; {what} has {_spelled(bad[0])}; give integer tokens")
        elif self.tokens == "listed":
            bad = [t for t in vocab if t not in self.vocab]
            if bad:
                raise RASPError(f"{self.name} is defined on the tokens {', '.join(map(str, self.vocab))}; {what} has "
                                f"{bad[0]!r}; give tokens from those")


def _spelled(token) -> str:
    """A token as an error names it: text as text (``the text '1.5'``), anything else by its repr."""
    return f"the text {token!r}" if isinstance(token, str) else repr(token)


ORIGINS = {
    "tracr": "google-deepmind/tracr, compiler/lib.py (Lindner et al. 2023)",
    "tutorial": "this project's tutorial circuits (expressivity circuit sum|max)",
    "Weiss 2021": "Weiss, Goldberg, Yahav, Thinking Like Transformers (ICML 2021): the RASP paper",
    "Friedman 2023": "Friedman, Wettig, Chen, Learning Transformer Programs (NeurIPS 2023): its task suite",
    "Friedman 2023 (Dyck-PTF)": "Friedman et al. 2023's dyck tasks (prefix tags T/P/F), here with three bracket kinds",
    "Zhou 2023 (RASP-L)": "Zhou et al., What Algorithms can Transformers Learn? (ICLR 2024): RASP-L arithmetic",
    "Hahn 2020": "Hahn, Theoretical Limitations of Self-Attention (TACL 2020): parity and majority",
    "Olsson 2022": "Olsson et al., In-context Learning and Induction Heads (2022)",
}
DIGITS = (1, 2, 3, 4, 5)
PROGRAMS: dict[str, LibraryProgram] = {p.name: p for p in (
    LibraryProgram("length", "number of tokens", lambda L: make_length(), DIGITS),
    LibraryProgram("reverse", "the tokens backwards", lambda L: make_reverse(tokens), DIGITS),
    LibraryProgram("hist", "how often each token occurs", lambda L: make_hist(), DIGITS),
    LibraryProgram("sort_unique", "tokens sorted (meant for distinct tokens; repeated ones leave gaps)",
                   lambda L: make_sort_unique(tokens, tokens), DIGITS),
    LibraryProgram("sort", "tokens sorted, ties in input order",
                   lambda L: make_sort(tokens, tokens, max_seq_len=L, min_key=1), DIGITS, sized=True),
    LibraryProgram("sort_freq", "tokens by descending frequency", make_sort_freq, DIGITS, sized=True),
    LibraryProgram("frac_prevs", "fraction of 'x' tokens so far", lambda L: make_frac_prevs(tokens == "x"),
                   ("a", "b", "x")),
    LibraryProgram("pair_balance", "fraction of '(' minus fraction of ')' so far",
                   lambda L: make_pair_balance(tokens, "(", ")"), ("(", ")", "a")),
    LibraryProgram("shuffle_dyck", "True if the parentheses are balanced (Dyck-1)",
                   lambda L: make_shuffle_dyck(["()"]), ("(", ")")),
    LibraryProgram("shuffle_dyck2", "True if both bracket kinds are balanced (shuffle-Dyck-2)",
                   lambda L: make_shuffle_dyck2(), ("(", ")", "{", "}")),
    LibraryProgram("shift_by", "the previous token (shift_by(1, tokens); None first)",
                   lambda L: shift_by(1, tokens), DIGITS),
    LibraryProgram("detect_pattern", "True where 'a b' ends", lambda L: detect_pattern(tokens, "ab"),
                   ("a", "b", "c")),
    LibraryProgram("count_less_freq", "how many tokens occur at most twice", lambda L: make_count_less_freq(2),
                   ("a", "b", "c", "d")),
    LibraryProgram("count", "how often 'a' occurs", lambda L: make_count(tokens, "a"), ("a", "b", "c")),
    LibraryProgram("nary_sequencemap", "x + y - z of (tokens, tokens, indices) through tuples",
                   lambda L: make_nary_sequencemap(lambda x, y, z: x + y - z, tokens, tokens, indices).named(
                       "nary_sequencemap"), DIGITS, tokens="numbers"),
    LibraryProgram("most_freq", "the most frequent token (ties: the smallest)", lambda L: make_most_freq(), DIGITS,
                   "Friedman 2023"),
    LibraryProgram("sum", "sum of the tokens (the tutorial's sum circuit)", lambda L: make_sum(DIGITS), DIGITS,
                   "tutorial", tokens="numbers", build_for=lambda L, vocab: make_sum(vocab)),
    LibraryProgram("max", "largest token (the tutorial's max circuit)", lambda L: make_max(), DIGITS, "tutorial"),
    LibraryProgram("dyck3", "Dyck-3 prefix tags: T balanced, P open, F failed", lambda L: make_dyck_ptf(
        ["()", "[]", "{}"]).named("dyck3"), ("(", ")", "[", "]", "{", "}"), "Friedman 2023 (Dyck-PTF)"),
    LibraryProgram("dyck_depth", "nesting depth after each position", lambda L: make_dyck_depth(), ("(", ")"),
                   "Weiss 2021"),
    LibraryProgram("sort_stable", "tokens sorted by (token, position): duplicates in input order, any order type",
                   lambda L: make_sort_stable(), ("a", "b", "c", "d"), "Weiss 2021"),
    LibraryProgram("successor", "a decimal number plus one, digit by digit", lambda L: make_successor(),
                   tuple(range(10)), "Zhou 2023 (RASP-L)", tokens="listed"),
    LibraryProgram("add_binary", "two binary numbers added column by column", lambda L: make_add_binary(),
                   ("00", "01", "10", "11"), "Zhou 2023 (RASP-L)", tokens="listed"),
    LibraryProgram("majority", "1 if more than half the tokens are 1", lambda L: make_majority(), (0, 1),
                   "Hahn 2020"),
    LibraryProgram("parity", "parity of the number of 1s", lambda L: make_parity(), (0, 1), "Hahn 2020"),
    LibraryProgram("induction", "the token after the previous occurrence of this token", lambda L: make_induction(),
                   ("a", "b", "c", "d"), "Olsson 2022"),
    LibraryProgram("double_hist", "how many distinct tokens occur as often as this one", lambda L: make_double_hist(),
                   (1, 2, 3, 4), "Friedman 2023"),
    LibraryProgram("running_max", "the largest token so far", lambda L: make_running_extreme(True), DIGITS,
                   "Weiss 2021"),
    LibraryProgram("running_min", "the smallest token so far", lambda L: make_running_extreme(False), DIGITS,
                   "Weiss 2021"),
)}


def get_program(name: str) -> LibraryProgram:
    try:
        return PROGRAMS[name]
    except KeyError:
        raise RASPError(f"unknown program {name!r}; choose one of: {', '.join(PROGRAMS)} (or give module:function)") \
            from None
