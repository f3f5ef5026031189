"""The witness's comparison of a decoded output with evaluate's."""

from fractions import Fraction

from expressivity.rasp.verify import _same


def test_a_categorical_output_is_compared_typed_a_numerical_one_as_a_number():
    assert not _same(True, 1, typed=True) and not _same(-0.0, 0.0, typed=True) and not _same("1", 1, typed=True)
    assert _same(True, True, typed=True) and _same(Fraction(2, 2), Fraction(1), typed=True) and _same(None, None, typed=True)
    assert not _same(Fraction(2, 2), 1, typed=True)   # x / 3 tells them apart (a Fraction, a float)
    assert _same(1, 1.0) and _same(Fraction(1, 2), 0.5) and not _same(None, 0)
    assert _same(0.1 + 0.2, 0.3, tolerance=1e-15) and not _same(0.31, 0.3, tolerance=1e-15)


def test_a_witness_too_large_is_refused_with_its_estimate_before_it_runs():
    """A fresh fuzz (2026-11-28): rasp compile sort --max-len 128 --samples 100000 ran with no estimate (the float64
    pass would have held every input at once, 93 GB)."""
    import pytest

    from expressivity import rasp
    from expressivity.rasp.language import RASPError
    from expressivity.rasp.verify import verify

    from expressivity.rasp.library import make_length

    model = rasp.compile(make_length(), vocab={1, 2, 3}, max_seq_len=64)
    with pytest.raises(RASPError, match=r"about .* multiply-adds \(budget .*\); use fewer --samples"):
        verify(model, samples=10**6)
