import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expressivity.statistics import (R2_RESOLUTION, Interval, clopper_pearson, fisher_exact,
                                     floored_geometric_interval, interval, log10_t_interval, paired_difference,
                                     newcombe, rate_difference, t_interval, t_quantile_975, wilson)


def test_t_interval_matches_hand_computation():
    mean, low, high = t_interval([1.0, 2.0, 3.0])
    half = 4.303 * statistics.stdev([1, 2, 3]) / math.sqrt(3)
    assert (mean, low, high) == pytest.approx((2.0, 2.0 - half, 2.0 + half), abs=1e-3)  # the table is rounded


# Two-sided 95% Student-t quantiles t_{0.975, df}, df = 1..30 (a printed table): scipy's must match.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def test_quantiles_match_the_table_and_decrease_to_normal():
    assert [round(t_quantile_975(df), 3) for df in range(1, 31)] == list(T975)
    qs = [t_quantile_975(df) for df in range(1, 200)]
    assert all(b < a for a, b in zip(qs, qs[1:])) and qs[-1] > 1.96
    # the old defect: 1.96 above 30 degrees of freedom, 3% too narrow at 40 and 60
    assert t_quantile_975(40) == pytest.approx(2.0211, abs=1e-4) and t_quantile_975(60) == pytest.approx(2.0003, abs=1e-4)
    with pytest.raises(ValueError):
        t_interval([1.0])


def test_a_zero_width_interval_decides_nothing():
    """The defect: two identical paired differences gave a zero-width, 'decided' interval."""
    same = interval([0.3, 0.3])
    assert same.low == same.high == pytest.approx(0.3) and not same.decided
    assert not same.excludes(0.0) and not same.below(interval([1.0, 1.1])) and "zero width" in same.fmt()
    floored, _ = floored_geometric_interval([0.0, 0.0, 0.0], R2_RESOLUTION)
    assert not floored.decided  # every seed at the floor: no interval either
    assert Interval(0.5, 0.2, 0.8, 5).clipped(high=0.6) == Interval(0.5, 0.2, 0.6, 5)


def test_log_interval_is_geometric():
    g, low, high = log10_t_interval([1e-6, 1e-4])
    assert g == pytest.approx(1e-5) and low < 1e-6 < 1e-4 < high


def test_one_seed_gives_no_interval_and_is_never_disjoint():
    """The defect: one seed made a zero-width interval that counted as 'disjoint'."""
    one, three = interval([0.5]), interval([0.9, 0.91, 0.92])
    assert not one.decided and one.low == -math.inf and one.high == math.inf
    assert not one.below(three) and not three.below(one) and not one.excludes(0.0)


def test_zero_seed_group_does_not_crash():
    empty = interval([])
    assert empty.n == 0 and math.isnan(empty.value) and not empty.decided and empty.fmt() == "no values"


def test_non_finite_values_are_refused():
    with pytest.raises(ValueError):
        interval([1.0, float("nan")])


def test_exact_zeros_are_floored_not_dropped():
    """The defect: exact zeros of 1 - R^2 were dropped as missing, biasing the geometric mean up."""
    values = [0.0, 0.0, 1e-10, 1e-6]
    got, floored = floored_geometric_interval(values, R2_RESOLUTION)
    assert floored == 2 and got.n == 4
    dropped = 10 ** statistics.fmean(math.log10(v) for v in values if v > 0)
    assert got.value < dropped  # dropping the zeros overstates the error
    assert got.value == pytest.approx(10 ** statistics.fmean([-53 * math.log10(2)] * 2 + [-10, -6]))


def test_floor_is_float64_spacing_below_one():
    assert 1.0 - (1.0 - R2_RESOLUTION) == R2_RESOLUTION and (1.0 - R2_RESOLUTION / 2) in (1.0, 1.0 - R2_RESOLUTION / 2)


def test_paired_difference_uses_common_seeds_and_is_tighter_than_unpaired():
    a = {0: 1.00, 1: 2.00, 2: 3.00, 3: 4.00}
    b = {0: 0.90, 1: 1.91, 2: 2.89, 3: 3.90, 9: 100.0}  # seed 9 has no partner
    d = paired_difference(a, b)
    assert d.n == 4 and d.value == pytest.approx(0.1, abs=1e-9) and d.low > 0
    unpaired_a, unpaired_b = interval(a.values()), interval([b[s] for s in a])
    assert not unpaired_b.below(unpaired_a)  # the same data, unpaired, cannot tell them apart


def test_clopper_pearson_known_values():
    got = clopper_pearson(4, 5)
    assert (got.low, got.high) == pytest.approx((0.28358, 0.99495), abs=1e-4)
    assert clopper_pearson(0, 24).low == 0 and clopper_pearson(0, 24).high == pytest.approx(0.14247, abs=1e-4)
    assert clopper_pearson(24, 24).high == 1
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_clopper_pearson_bounds_solve_their_tail_equations(kn):
    k, n = kn
    ci = clopper_pearson(k, n)
    assert ci.low <= k / n <= ci.high
    if k > 0:  # P(X >= k | low) = 0.025
        tail = sum(math.comb(n, i) * ci.low**i * (1 - ci.low) ** (n - i) for i in range(k, n + 1))
        assert tail == pytest.approx(0.025, abs=1e-6)
    if k < n:  # P(X <= k | high) = 0.025
        tail = sum(math.comb(n, i) * ci.high**i * (1 - ci.high) ** (n - i) for i in range(0, k + 1))
        assert tail == pytest.approx(0.025, abs=1e-6)


def test_fisher_exact_known_values():
    assert fisher_exact(1, 10, 9, 10) == pytest.approx(0.0010934, rel=1e-4)  # R: fisher.test(matrix(c(1,9,9,1),2))
    assert fisher_exact(3, 5, 4, 5) == 1.0
    assert fisher_exact(24, 24, 0, 24) < 1e-12
    assert fisher_exact(2, 3, 1, 3) == fisher_exact(1, 3, 2, 3)  # symmetric in the arms


def test_wilson_and_newcombe_known_values():
    """Newcombe (1998), Statistics in Medicine 17, 873-890, Table II, method 10 (the hybrid score,
    Wilson arms); :func:`rate_difference` is the same hybrid with exact arms, wider."""
    def method_10(a, n_a, b, n_b):
        return newcombe(wilson(a, n_a), wilson(b, n_b))

    d = method_10(56, 70, 48, 80)
    assert (d.value, d.low, d.high) == pytest.approx((0.2, 0.0524, 0.3339), abs=1e-4)
    d = method_10(9, 10, 3, 10)
    assert (d.low, d.high) == pytest.approx((0.1705, 0.8090), abs=1e-4)
    d = method_10(5, 56, 0, 29)  # one arm at 0
    assert (d.low, d.high) == pytest.approx((-0.0381, 0.1926), abs=1e-4)
    for counts in ((56, 70, 48, 80), (9, 10, 3, 10), (5, 56, 0, 29)):
        exact, wilsons = rate_difference(*counts), method_10(*counts)
        assert exact.value == wilsons.value and exact.low < wilsons.low and exact.high > wilsons.high
    w = wilson(0, 10)
    assert w.low == 0 and w.high == pytest.approx(0.2775, abs=1e-4)
    with pytest.raises(ValueError):
        rate_difference(3, 2, 1, 2)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.integers(1, 30).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_newcombe_contains_the_observed_difference_and_stays_in_range(a, b):
    d = rate_difference(*a, *b)
    assert -1 <= d.low <= d.value <= d.high <= 1


def test_a_floored_geometric_interval_never_reaches_below_its_floor():
    """Every floored value is at least the floor, so is their geometric mean: a t interval on the logs
    gave a lower end of 1.4e-12 for {1e-7, 1e-5} at a floor of 1e-6 (a fresh audit, 2026-11-28)."""
    iv, floored = floored_geometric_interval([1e-7, 1e-5], 1e-6)
    assert floored == 1 and iv.low == 1e-6 and iv.high > 1e-5 and iv.value == pytest.approx(10**-5.5)


def test_the_newcombe_p_and_the_interval_agree_at_their_very_edge():
    """A review (2026-11-28): an interval 1e-9 inside its margin had p 0.02500000596 from the bisection."""
    from expressivity.statistics import digits_showing, newcombe_tail

    high = rate_difference(0, 20, 5, 20).high
    assert newcombe_tail((0, 20), (5, 20), high + 1e-9, False) <= 0.025
    assert newcombe_tail((0, 20), (5, 20), high - 1e-9, False) > 0.025
    assert digits_showing([0.5], [0.4], 20) == 20


def test_counts_and_levels_that_are_no_counts_or_levels_are_refused():
    """clopper_pearson(2.5, 5) read 2.5 successes as 2; a confidence of 1.5 or NaN gave NaN bounds (a fuzz
    pass, 2026-11-28)."""
    import numpy as np

    from expressivity.statistics import newcombe_tail

    for args in ((2.5, 5), (2, 5.0), (True, 5), (2, 5, 1.5), (2, 5, float("nan")), (2, 5, -0.1)):
        with pytest.raises(ValueError):
            clopper_pearson(*args)
    assert clopper_pearson(np.int64(2), np.int64(5)) == clopper_pearson(2, 5)
    with pytest.raises(ValueError, match="margin must be a finite number"):
        newcombe_tail((1, 5), (2, 5), float("nan"), True)


def test_boundaries_mutation_testing_found_unpinned():
    """Each line below kills a change that passed every test (mutation testing, 2026-11-28)."""
    from scipy.stats import t

    from expressivity.statistics import digits_showing, t_tail

    # an interval's ends: touching is neither excluding nor lying below
    one = Interval(1.0, 0.5, 1.5, 5)
    assert not one.excludes(0.5) and not one.excludes(1.5) and one.excludes(0.4999) and one.excludes(1.5001)
    assert not one.below(Interval(2.0, 1.5, 2.5, 5)) and one.below(Interval(2.0, 1.5001, 2.5, 5))
    assert not one.below(Interval(3.0, 3.0, 3.0, 3))   # seeds all equal: no interval to lie below
    # the t tail has n - 1 degrees of freedom: 3 seeds, mean 0.6, sd 0.1, by scipy
    assert t_tail(interval([0.5, 0.6, 0.7]), 0.0, True) == pytest.approx(t.sf(0.6 / (0.1 / math.sqrt(3)), 2), rel=1e-9)
    assert t_tail(interval([0.5, 0.6, 0.7]), 0.0, True) == pytest.approx(0.0045663, rel=1e-4)
    # 0.150001 printed to 3 digits is "0.15", on the threshold it lies above: it needs 6
    assert digits_showing([0.150001], [0.15], 3) == 6 and digits_showing([0.1496], [0.15], 3) == 4
    # a value exactly at the floor is the floor, not floored
    assert floored_geometric_interval([0.01, 0.02, 0.04], 0.01)[1] == 0
    assert floored_geometric_interval([0.0, 0.02, 0.04], 0.01)[1] == 1
    for bad in ((0, 0), (1, 0)):   # no trials: no rate (a ZeroDivisionError where the check is off by one)
        with pytest.raises(ValueError, match="trials >= 1"):
            clopper_pearson(*bad)
    with pytest.raises(ValueError, match=r"confidence must be a level in \[0, 1\)"):
        clopper_pearson(1, 2, confidence=1.0)


def test_an_interval_one_rounding_error_wide_decides_nothing(tmp_path):
    """An audit (2026-11-29): 0.1 + 0.2 against 0.3 over three seeds gave the paired interval [-0.3, -0.3], which
    decided a comparison with p 9e-34; `results` printed ci_low = ci_high = 0.3 for the same values."""
    from expressivity.experiments.claims.rules import compare_paired
    from expressivity.experiments.query import aggregate, open_source
    from expressivity.statistics import paired_difference, rounding_width

    diff = paired_difference({0: 0.0, 1: 0.0, 2: 0.0}, {0: 0.1 + 0.2, 1: 0.1 + 0.2, 2: 0.3})
    assert not diff.decided and compare_paired(diff, "x").word == "undecided"
    assert interval([0.3, 0.3 + 1e-9, 0.3 - 1e-9]).decided   # a real spread, however small, still decides
    assert rounding_width(0.3, 0.30000000000000004) and not rounding_width(0.0, 1e-300)
    table = tmp_path / "t.csv"
    table.write_text("g,m\na,0.3\na,0.3\na,0.30000000000000004\n")
    head, rows = aggregate(open_source(table), "m", ["g"])
    row = dict(zip(head, rows[0]))
    assert row["ci_low"] is None and row["ci_high"] is None and row["n"] == 3


def test_intervals_of_huge_finite_values_are_infinite_not_an_overflow_error():
    # A fresh audit (2026-11-29): interval([1e308, 1.5e308]) raised "OverflowError: intermediate overflow in fsum",
    # and floored_geometric_interval([1e308, 1.7e308], 1e-16) an OverflowError from 10 ** x
    from expressivity.statistics import floored_geometric_interval, interval, log10_t_interval

    wide = interval([1e308, 1.5e308])
    assert wide.value == pytest.approx(1.25e308) and wide.low == -math.inf and wide.high == math.inf
    both = interval([1.7e308, -1.7e308])
    assert both.value == 0.0 and not both.decided
    small = interval([1.0, 2.0, 3.0])   # ordinary values: the t interval as before
    assert (small.value, small.high) == pytest.approx((2.0, 2.0 + 4.302652729749464 / math.sqrt(3)))
    geometric, floored = floored_geometric_interval([1e308, 1.7e308], 1e-16)
    assert floored == 0 and geometric.high == math.inf and 1e308 <= geometric.value <= 1.7e308
    assert log10_t_interval([1e300, 1e308])[2] == math.inf
