"""d_p estimates between sampled outputs: scaled so large p neither underflows nor overflows."""

import numpy as np
import pytest

from expressivity.errors import ExpressivityError
from expressivity.verify.dp_error import dp_between


def _direct(A, B, p):
    return float(np.mean(np.sum(np.abs(A - B) ** p, axis=(1, 2))) ** (1 / p))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.5])
def test_matches_the_direct_formula_where_it_is_safe(p):
    rng = np.random.default_rng(0)
    A, B = rng.random((50, 3, 2)), rng.random((50, 3, 2))
    assert dp_between(A, B, p).value == pytest.approx(_direct(A, B, p), rel=1e-12)


def test_large_p_does_not_underflow_to_zero():
    # every |A - B| = 0.3 on one entry: d_p = 0.3 for every p; 0.3^1000 underflows float64.
    A = np.zeros((10, 2, 1))
    B = A.copy()
    B[:, 0, 0] = 0.3
    est = dp_between(A, B, 1000.0)
    assert est.value == pytest.approx(0.3, rel=1e-12) and est.ci[0] <= 0.3 <= est.ci[1] * (1 + 1e-12)


def test_large_values_do_not_overflow():
    A = np.full((4, 1, 1), 1e200)
    assert dp_between(A, np.zeros_like(A), 4.0).value == pytest.approx(1e200, rel=1e-12)


def test_equal_outputs_give_zero_and_infinite_ones_are_refused():
    A = np.ones((5, 2, 2))
    assert dp_between(A, A, 2.0).value == 0.0
    B = A.copy()
    B[2, 0, 0] = np.inf
    with pytest.raises(ExpressivityError, match="not finite"):
        dp_between(A, B, 2.0)


def test_intervals_print_as_plain_numbers():
    """The defect (issue 32): ``ci95`` printed as ``(np.float64(...), np.float64(...))``."""
    from fractions import Fraction

    from expressivity.constructions.report import ErrorEstimate

    rng = np.random.default_rng(0)
    est = dp_between(rng.random((20, 3, 2)), rng.random((20, 3, 2)), 2.0)
    assert "np." not in repr(est.ci) and all(type(v) is float for v in (est.value, *est.ci))
    error = ErrorEstimate("d_p", est.value, est.method, est.ci, bound=np.float64(1.0))
    assert "np." not in repr(error) and type(error.bound) is float
    assert ErrorEstimate("exact", Fraction(1, 3), "exact").value == Fraction(1, 3)  # exact values kept
