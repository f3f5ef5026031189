"""The decision rules every claim's verdict is made of: a word from an interval, never from a point.

* **Directional** (:func:`compare_paired`): *reproduced* when the interval of the paired difference
  lies wholly on the claimed side of 0, *refuted* when wholly on the other.
* **Equivalence with a margin** (:func:`equivalent`): "X is not needed / no worse / flat" is
  *reproduced* only when the whole interval of the difference lies inside ``(-margin, margin)``
  -- a non-significant difference is not equivalence -- and decidedly not when it lies beyond the
  margin on one side at twice the evidence (either side would have said so).
* **Per-seed outcomes** (:class:`Outcomes`): "solves / fails" counts the seeds past a threshold
  and decides on the exact (Clopper-Pearson) interval of that share, with a minimum of valid
  seeds; runs that failed (crashed, or diverged to a non-finite value) are reported, never
  counted as seeds.
* **Power lines** (:func:`paired_detectable`, :func:`equivalence_power`, :func:`majority_power`):
  what a criterion's seed count can detect, stated before the run.

Anything else is *undecided: underpowered*, with what was measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from expressivity.experiments.claims import Verdict, led_by_reason
from expressivity.statistics import (Interval, binomial_tail, clopper_pearson, newcombe, newcombe_tail,
                                     paired_difference, rate_difference, t_quantile_975, t_tail)

MAJORITY = 0.5   # a cell "solves" when the exact interval of its share of passing seeds lies above this
ALPHA = 0.025    # one side of a 95% interval: the error rate a decided word claims, for a claim as a whole
NEGATIVE = ("refuted", "not reproduced")


# ---- continuous differences ----------------------------------------------------------------------------


def _too_few_pairs(diff: Interval, what: str, min_pairs: int, tests: int = 1) -> Verdict | None:
    """Undecided where fewer than ``min_pairs`` seeds are paired: the criteria count valid seeds per cell, and two
    cells of 3 seeds each that share only 2 gave "reproduced" over 2 pairs (an audit, 2026-11-29)."""
    if diff.decided and diff.n < min_pairs:
        return Verdict("undecided", f"underpowered: {what}: only {diff.n} paired seeds (the seeds both compared cells "
                                    f"have; the criterion needs >= {min_pairs})", None, tests)
    return None


def compare_paired(diff: Interval, what: str, min_pairs: int = 2) -> Verdict:
    """``diff`` = claimed-better minus claimed-worse, per seed (lower is better). Reproduced if the
    whole interval is below 0, refuted if above, else undecided (underpowered); undecided too with
    fewer than ``min_pairs`` paired seeds."""
    if not diff.decided:
        return Verdict("undecided", f"underpowered: {what}: {diff.fmt()}: no interval (needs 2 paired seeds with "
                                    "different values)")
    few = _too_few_pairs(diff, what, min_pairs)
    if few is not None:
        return few
    pairs = f"over {diff.n} paired seeds"   # seeds missing from either arm (failed runs) are not pairs
    shown = diff.fmt(against=(0.0,))
    if diff.high < 0:
        return Verdict("reproduced", f"{what}: paired difference {shown} {pairs} < 0", t_tail(diff, 0.0, False))
    if diff.low > 0:
        return Verdict("refuted", f"{what}: paired difference {shown} {pairs} > 0 (the reverse)",
                       t_tail(diff, 0.0, True))
    return Verdict("undecided", f"underpowered: {what}: paired difference {shown} {pairs} contains 0")


def paired(a: dict, b: dict, what: str, min_pairs: int = 2) -> tuple[Interval, Verdict]:
    """``a`` claimed lower than ``b`` (both ``{seed: value}``): the paired difference and its verdict."""
    diff = paired_difference(a, b)
    return diff, compare_paired(diff, what, min_pairs)


def chosen_among(verdict: Verdict, among: int, how: str) -> Verdict:
    """``verdict`` on one of ``among`` candidates that was chosen ``how`` on data its test shares
    (the models' validation loss moves with their test loss): a *reproduced* word stands only
    where its one-sided p times ``among`` is at most 0.025 (Bonferroni over the candidates it
    could have been; the p then recorded is that product), else it is *undecided*. Testing the
    chosen one at its own 95% interval said "reproduced" 3.9% of the time where no candidate
    was better (a fresh audit, 2026-11-28, simulated yun-hybrids). A negative word is left as it
    is: the choice favours the claim, so it does not make a negative word likelier."""
    if verdict.word != "reproduced" or verdict.p is None or among == 1:
        return verdict
    corrected = min(1.0, verdict.p * among)
    note = f"the best of {among} chosen {how}: one-sided p {verdict.p:.2g} x {among} = {corrected:.2g}"
    if corrected <= ALPHA:
        return Verdict("reproduced", f"{verdict.reason} ({note} <= {ALPHA:g})", corrected, verdict.tests)
    return Verdict("undecided", f"underpowered: {verdict.reason}, but {note} > {ALPHA:g}", None, verdict.tests)


def equivalent(diff: Interval, margin: float, what: str, units: str = "", min_pairs: int = 2) -> Verdict:
    """"The difference is smaller than ``margin``": reproduced if the whole interval lies inside
    ``(-margin, margin)``; *not reproduced* if it lies beyond the margin on one side (a decided
    difference larger than the margin) with a one-sided p at most ``ALPHA / 2``, since either side
    would have said it (its recorded ``p`` is that side's times 2); else undecided (the interval
    reaches past the margin: the seeds cannot tell). A difference that is merely not significant is
    not equivalence. The word stands for two tests (``tests = 2``, whatever it is), one per side of
    the margin, which a claim combining it corrects over. Undecided with fewer than ``min_pairs`` paired seeds."""
    band = f"(-{margin:g}, {margin:g}){units}"
    if not diff.decided:
        return Verdict("undecided", f"underpowered: {what}: {diff.fmt()}: no interval", None, 2)
    few = _too_few_pairs(diff, what, min_pairs, 2)
    if few is not None:
        return few
    pairs, shown = f"over {diff.n} paired seeds", diff.fmt(against=(-margin, margin))
    if -margin < diff.low and diff.high < margin:   # two one-sided tests: the larger p is the equivalence's
        return Verdict("reproduced", f"{what}: {shown} {pairs} inside the margin {band}",
                       max(t_tail(diff, -margin, True), t_tail(diff, margin, False)), 2)
    if diff.low >= margin or diff.high <= -margin:
        # Past either side says "not reproduced": at the 95% interval's 2.5% a side, a true difference of 0 with
        # wide seeds was called "not reproduced" 5.1% of the time, and the p recorded was half the word's (an
        # audit, 2026-11-28). Bonferroni over the two sides.
        tail = t_tail(diff, margin, True) if diff.low >= margin else t_tail(diff, -margin, False)
        p = min(1.0, 2 * tail)
        if p <= ALPHA:
            return Verdict("not reproduced", f"{what}: {shown} {pairs} wholly beyond the margin {band} (one-sided "
                                             f"p {tail:.2g} x 2 sides = {p:.2g})", p, 2)
        return Verdict("undecided", f"underpowered: {what}: {shown} {pairs} beyond the margin {band} at its 95% "
                                    f"interval, but either side would have said so: one-sided p {tail:.2g} x 2 sides "
                                    f"= {p:.2g} > {ALPHA:g}", None, 2)
    return Verdict("undecided", f"underpowered: {what}: {shown} {pairs} reaches past the margin {band}", None, 2)


def raw_p(verdict: Verdict) -> float | None:
    """For a negative word (*refuted*, *not reproduced*: what :func:`stands` and :func:`family_p`
    read), the smallest one-sided p among the tests behind it: its ``p`` undone of the correction
    over its own ``tests`` (a ``p`` that correction clipped to 1 gives ``1 / tests``, which stands
    in no family of ``tests`` or more). Not meaningful for a *reproduced* word, whose ``p`` is
    uncorrected."""
    return None if verdict.p is None else verdict.p / verdict.tests


def stands(verdict: Verdict, family: int) -> bool:
    """Whether a decided word stands in a family of ``family`` tests (its own ``tests`` among them):
    a deterministic one (``p`` is ``None``) always; a sampled one when its smallest p times
    ``family`` is at most 0.025 (Bonferroni over every test of the claim, counted once however
    the parts nest). Any one of several 95% intervals lies past its threshold by chance far more
    often than 2.5% (a fresh audit, 2026-11-28: claim 5's rule called a null effect *refuted* 14.5%
    of the time)."""
    return verdict.p is None or raw_p(verdict) * family <= ALPHA


def family_p(verdicts, family: int) -> float | None:
    """The Bonferroni p-value of "at least one of ``verdicts`` (of ``family`` tests) holds": the
    smallest p behind them times ``family`` (at most 1); ``None`` when one of them is deterministic."""
    ps = [raw_p(v) for v in verdicts]
    return None if any(p is None for p in ps) else min(1.0, min(ps) * family)


def combine(parts: dict[str, Verdict], also_refute: dict[str, Verdict] | None = None) -> Verdict:
    """Reproduced when every part is (each at its own 95% interval: an intersection of tests needs no
    correction); refuted when a refuted part stands across the parts (:func:`stands`: its one-sided
    p times the number of tests at most 0.025), else not reproduced when such a not-reproduced part
    stands; else undecided, with the parts' reasons (a part negative on its own interval but not
    across the parts says so). ``also_refute``: other ways the claim is refuted (a mirror image
    holding), not needed for *reproduced*: a refuted one among them counts as a refuted part; all
    are counted in the number of tests; one refuted on its own interval but not across them leaves the
    verdict undecided (never reproduced). The number of tests is every part's ``tests`` summed
    (a part that is itself a combination counts its own parts), and the verdict returned stands for
    all of them, so nesting corrects once over the whole family."""
    routes = {name: v for name, v in (also_refute or {}).items() if v.word == "refuted"}
    k = sum(v.tests for v in [*parts.values(), *(also_refute or {}).values()])
    words = {v.word for v in parts.values()}
    weak = {name for name, v in parts.items() if v.word in NEGATIVE and not stands(v, k)}
    weak |= {name for name, v in routes.items() if not stands(v, k)}
    parts = {**parts, **routes}

    def said(name: str, v: Verdict) -> str:
        if name in weak:
            return f"{name}: {v.word} on its own interval but not across the {k} tests (p {raw_p(v):.2g} x {k} > {ALPHA:g})"
        return f"{name}: {v.word}"

    summary = "; ".join(said(name, v) for name, v in parts.items())
    for word in NEGATIVE:
        standing = [v for name, v in parts.items() if v.word == word and name not in weak]
        if standing:   # refuted first
            return Verdict(word, summary, family_p(standing, k), k)
    if words == {"reproduced"} and not weak & set(routes):
        # (a refuting route decided on its own interval only leaves the claim open, not reproduced: a review,
        # 2026-11-28, found claim 5's mirror and parts both holding on the same paired differences)
        ps = [v.p for name, v in parts.items() if name not in routes]
        return Verdict("reproduced", summary, None if any(p is None for p in ps) else max(ps), k)
    first = next((v.reason for v in parts.values() if v.word == "undecided"), "underpowered")
    return Verdict("undecided", led_by_reason(summary, first), None, k)


def standing_note(part: Verdict, family: int) -> str:
    """What a claim's text must add to ``part``'s reason where the part is negative on its own
    interval but does not stand across the ``family`` tests of the claim (:func:`stands`), so that
    a printed interval past its threshold is not read as the claim's word; else ``""``."""
    if part.word in NEGATIVE and not stands(part, family):
        return f" (on its own interval; not across the {family} tests: p {raw_p(part):.2g} x {family} > {ALPHA:g})"
    return ""


def part_reason(part: Verdict, verdict: Verdict) -> str:
    """``part``'s reason as a claim whose combined word is ``verdict`` (:func:`combine`) quotes it."""
    return part.reason + standing_note(part, verdict.tests)


def explained(parts: dict[str, Verdict], extra: str = "") -> Verdict:
    """:func:`combine`'s word with every part's reason (and ``extra``) in place of the words, the
    parts that carry the verdict's word first: an undecided verdict's reason word ("underpowered:
    ...") leads what it applies to, not a part that was decided (a fresh audit, 2026-11-28, read
    "underpowered: DP-free succeeds in 20/20 ...: above 1/2"), and a refuted one leads with what
    refutes it. A negative part that does not stand across the parts says so (:func:`standing_note`)."""
    verdict = combine(parts)
    k = verdict.tests
    # the parts that carry the verdict's word first (stable: the parts' order otherwise), so a refuted
    # verdict does not read "underpowered: ..." of an undecided part before the refuting one
    ordered = sorted(parts.values(), key=lambda v: v.word != verdict.word)
    detail = "; ".join(v.reason + standing_note(v, k) for v in ordered) + (f"; {extra}" if extra else "")
    if verdict.word == "undecided":
        detail = led_by_reason(detail, verdict.reason)
    return Verdict(verdict.word, detail, verdict.p, k)


# ---- success rates -------------------------------------------------------------------------------------


def rate_margin_verdict(a: tuple[int, int], b: tuple[int, int], margin: float, what: str) -> tuple[Verdict, Interval]:
    """"Arm a does not beat arm b by ``margin`` or more" on ``(successes, trials)``: the Newcombe
    interval of ``p_a - p_b`` with exact arms (:func:`~expressivity.statistics.rate_difference`);
    reproduced if its upper end is below ``margin``, refuted if its lower end is above ``margin``
    (a decided gain of at least the margin), else undecided."""
    diff = rate_difference(*a, *b)
    text = (f"{what}: {a[0]}/{a[1]} - {b[0]}/{b[1]} = {diff.fmt(2, against=(margin,))} (Newcombe 95%, exact arms), "
            f"margin {margin:g}")
    if diff.high < margin:
        return Verdict("reproduced", f"{text}: the upper end is below the margin", newcombe_tail(a, b, margin, False)), diff
    if diff.low > margin:
        return Verdict("refuted", f"{text}: the lower end is above the margin", newcombe_tail(a, b, margin, True)), diff
    return Verdict("undecided", f"underpowered: {text}: the interval contains the margin"), diff


@dataclass(frozen=True)
class Outcomes:
    """Per-seed pass/fail outcomes of one cell: of ``valid`` seeds, ``passed`` reached the pass threshold and
    ``failed`` stayed at or below the fail threshold or diverged; ``diverged`` of them trained and diverged
    (every learning rate, or the test pass): counted as failing, as a seed that did not learn. ``broken`` runs
    crashed (no result): reported, never counted as seeds, and a status holds only if it holds whatever they
    would have been (each counted against it). ``against=False``: the rule claim 7's folders state, ``broken``
    runs (crashed or diverged) left out and not counted against a status."""

    passed: int
    failed: int
    valid: int
    broken: int = 0
    diverged: int = 0
    against: bool = True

    @classmethod
    def of(cls, values: dict, pass_at: float, fail_at: float, broken: int = 0, diverged: int = 0,
           against: bool = True) -> "Outcomes":
        """From ``{seed: value}`` (higher is better) and the counts of seeds that diverged (failing) or crashed
        (not counted); a non-finite value counts as a diverged seed."""
        good = [float(v) for v in values.values() if math.isfinite(float(v))]
        diverged += len(values) - len(good)
        return cls(sum(v >= pass_at for v in good), sum(v <= fail_at for v in good) + diverged,
                   len(good) + diverged, broken, diverged, against)

    def pass_rate(self) -> Interval:
        return clopper_pearson(self.passed, self.valid) if self.valid else Interval(math.nan, 0.0, 1.0, 0)

    def fail_rate(self) -> Interval:
        return clopper_pearson(self.failed, self.valid) if self.valid else Interval(math.nan, 0.0, 1.0, 0)

    def _worst(self, status: str) -> Interval:
        """The share behind ``status`` with every crashed run counted against it."""
        count = {"solved": self.passed, "failed": self.failed}[status]
        return clopper_pearson(count, self.valid + (self.broken if self.against else 0))

    def p(self, status: str) -> float:
        """The one-sided exact p-value behind ``status`` ``solved`` (more than half the seeds pass) or
        ``failed`` (more than half fail), crashed runs counted against it: at most 0.025 exactly when
        :meth:`status` says it."""
        count = {"solved": self.passed, "failed": self.failed}[status]
        total = self.valid + (self.broken if self.against else 0)
        return binomial_tail(count, total, MAJORITY, True) if self.valid else 1.0

    def status(self, min_seeds: int) -> str:
        """``solved`` (the exact interval of the share of passing seeds lies above 1/2), ``failed``
        (that of failing seeds does), ``unclear``, or ``too few seeds`` (fewer than ``min_seeds``); crashed
        runs count against ``solved`` and ``failed`` alike."""
        if self.valid < min_seeds:
            return "too few seeds"
        if self._worst("solved").low > MAJORITY:
            return "solved"
        if self._worst("failed").low > MAJORITY:
            return "failed"
        return "unclear"

    def fmt(self) -> str:
        rate = self.pass_rate()
        ends = (rate.low, rate.high, *self.fail_rate()[1:3])   # each compared with 1/2 by status()
        places = next(d for d in range(2, 18) if all((round(v, d) > MAJORITY) == (v > MAJORITY)
                                                     and (round(v, d) < MAJORITY) == (v < MAJORITY) for v in ends))
        text = (f"{self.passed}/{self.valid} pass [{rate.low:.{places}f}, {rate.high:.{places}f}], "
                f"{self.failed}/{self.valid} fail" if self.valid else "no valid seeds")
        text += f" ({self.diverged} diverged, counted as failing)" if self.diverged else ""
        if not self.broken:
            return text
        return text + (f", {self.broken} crashed run(s) not counted (counted against the status)" if self.against
                       else f", {self.broken} failed run(s) not counted")


# ---- power lines -----------------------------------------------------------------------------------------


def paired_detectable(n: int, power: float = 0.8) -> float:
    """The smallest mean paired difference, in standard deviations of the per-seed difference,
    that a two-sided 95% t interval over ``n`` seeds excludes from 0 with probability ``power``
    (``(t_{0.975, n-1} + t_{power, n-1}) / sqrt(n)``, the usual approximation)."""
    from scipy.stats import t

    if n < 2:
        return math.inf
    return float((t_quantile_975(n - 1) + t.ppf(power, n - 1)) / math.sqrt(n))


def equivalence_sd(n: int, margin: float, power: float = 0.8) -> float:
    """The largest standard deviation of the per-seed difference at which a two-sided 95% t interval
    over ``n`` seeds lies inside ``(-margin, margin)`` with probability ``power`` when the true
    difference is 0 (``margin sqrt(n) / (t_{0.975, n-1} + t_{(1+power)/2, n-1})``, the usual approximation)."""
    from scipy.stats import t

    if n < 2:
        return 0.0
    return float(margin * math.sqrt(n) / (t_quantile_975(n - 1) + t.ppf((1 + power) / 2, n - 1)))


def min_majority(n: int) -> int | None:
    """The fewest passing seeds of ``n`` whose exact interval lies above 1/2 (``None``: no count does)."""
    return next((k for k in range(n + 1) if clopper_pearson(k, n).low > MAJORITY), None) if n else None


def majority_power(n: int, p: float) -> float:
    """The probability that a cell whose seeds pass with probability ``p`` is called solved with ``n`` seeds."""
    k = min_majority(n)
    return 0.0 if k is None else sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


def equivalence_power(n: int, p: float, margin: float) -> float:
    """The probability that two arms of ``n`` seeds with the same success probability ``p`` are
    called equivalent within ``margin`` by :func:`rate_margin_verdict` (exact enumeration)."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    rates = [clopper_pearson(k, n) for k in range(n + 1)]   # the arms of rate_difference
    return sum(pmf[a] * pmf[b] for a in range(n + 1) for b in range(n + 1)
               if newcombe(rates[a], rates[b]).high < margin)
