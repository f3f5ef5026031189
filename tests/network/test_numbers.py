"""Weights and typed numbers: exact entries stay exact, float ones stay fast, what is not a number is refused."""

import math
from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import NetworkError
from expressivity.network.numbers import MAX_EXACT_DIGITS, TooManyDigits, as_weight, exact_from_text


@pytest.mark.parametrize("big", [2**53 + 1, -(2**53 + 1), Fraction(2**53 + 1), 2**64 + 3])
def test_an_integer_float64_cannot_hold_stays_exact(big):
    """Mutation testing (2026-11-28): the limit at 2^53 could move, and ints or Fractions float64 rounds be stored as
    floats, with no test failing; np.float64(2**53) == 2**53 + 1 is True, so only the dtype and an int compare tell."""
    weights = as_weight([big, 1])
    assert weights.dtype == object and int(weights[0]) == int(big) and weights[0] - int(big) == 0


def test_what_float64_holds_exactly_is_float64():
    assert as_weight([2**53, -(2**53), Fraction(6, 3), 0.5]).dtype == np.float64
    assert as_weight([Fraction(1, 3)]).dtype == object


def test_a_bias_may_hold_minus_infinity_never_plus_infinity_or_nan():
    assert as_weight([Fraction(1, 3), -math.inf], allow_inf=True)[1] == -math.inf
    assert as_weight([0.5, -math.inf], allow_inf=True)[1] == -math.inf
    for bad in (math.inf, math.nan):
        for exact in (Fraction(1, 3), 0.5):   # the exact (object) and the float64 path
            with pytest.raises(NetworkError, match="a bias may be -inf|a bias is a finite number or -inf"):
                as_weight([exact, bad], allow_inf=True)
    with pytest.raises(NetworkError):
        as_weight([Fraction(1, 3), -math.inf])   # a weight is finite


def test_typed_exact_numbers_stop_at_their_digit_limit():
    assert exact_from_text("1" * MAX_EXACT_DIGITS) == int("1" * MAX_EXACT_DIGITS)
    with pytest.raises(TooManyDigits, match=f"more than {MAX_EXACT_DIGITS} digits"):
        exact_from_text("1" * (MAX_EXACT_DIGITS + 1))
    assert exact_from_text("1/3") == Fraction(1, 3) and exact_from_text("0.1") == Fraction(1, 10)
