"""Numbers as a network file stores them: read back exactly, and a corrupt entry refused quickly."""

from fractions import Fraction

import pytest

from expressivity.errors import NetworkError
from expressivity.network.serial import number_from_json, number_to_json


@pytest.mark.parametrize("value", [0, -7, Fraction(1, 3), Fraction(-22, 7), 10**500, 0.1, float("inf")])
def test_a_number_round_trips_exactly(value):
    back = number_from_json(number_to_json(value))
    assert back == value and type(back) in (int, float, Fraction)


@pytest.mark.parametrize("text", ["1e100000000", "1" * 40_001, "1_000", "\u0661", "nan?", "1/0", ""])
def test_a_corrupt_stored_number_is_a_network_error_at_once(text):
    """A stored "1e100000000" took minutes to expand and "1_000" read as 1000 (2026-11-28)."""
    with pytest.raises(NetworkError):
        number_from_json(text)
