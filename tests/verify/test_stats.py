import math
import statistics

import pytest

from expressivity.verify.stats import log10_t_interval, t_interval, t_quantile_975


def test_t_interval_matches_hand_computation():
    mean, low, high = t_interval([1.0, 2.0, 3.0])
    half = 4.303 * statistics.stdev([1, 2, 3]) / math.sqrt(3)
    assert (mean, low, high) == pytest.approx((2.0, 2.0 - half, 2.0 + half))


def test_quantiles_decrease_to_normal():
    qs = [t_quantile_975(df) for df in range(1, 40)]
    assert all(b <= a for a, b in zip(qs, qs[1:])) and qs[-1] == 1.96
    with pytest.raises(ValueError):
        t_interval([1.0])


def test_log_interval_is_geometric():
    g, low, high = log10_t_interval([1e-6, 1e-4])
    assert g == pytest.approx(1e-5) and low < 1e-6 < 1e-4 < high
