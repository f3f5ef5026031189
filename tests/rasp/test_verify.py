"""The witness's comparison of a decoded output with evaluate's."""

from fractions import Fraction

from expressivity.rasp.verify import _same


def test_a_categorical_output_is_compared_typed_a_numerical_one_as_a_number():
    assert not _same(True, 1, typed=True) and not _same(-0.0, 0.0, typed=True) and not _same("1", 1, typed=True)
    assert _same(True, True, typed=True) and _same(Fraction(2, 2), Fraction(1), typed=True) and _same(None, None, typed=True)
    assert not _same(Fraction(2, 2), 1, typed=True)   # x / 3 tells them apart (a Fraction, a float)
    assert _same(1, 1.0) and _same(Fraction(1, 2), 0.5) and not _same(None, 0)
    assert _same(0.1 + 0.2, 0.3, tolerance=1e-15) and not _same(0.31, 0.3, tolerance=1e-15)
