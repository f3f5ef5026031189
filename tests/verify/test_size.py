"""Sizes in messages (expressivity.verify.size)."""

import pytest

from expressivity.verify.size import counted, fmt_size


@pytest.mark.parametrize("n, noun, text", [(1, "layer", "1 layer"), (0, "head", "0 heads"), (2, "row", "2 rows"),
                                           (1234, "parameter", "1,234 parameters")])
def test_counted_says_the_noun_singular_only_for_one(n, noun, text):
    assert counted(n, noun) == text


def test_counted_writes_huge_counts_as_fmt_size_does():
    assert counted(10 ** 20, "layer") == f"{fmt_size(10 ** 20)} layers" == "about 1 x 10^20 layers"
