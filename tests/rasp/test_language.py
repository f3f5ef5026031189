"""The RASP language: tracr's names, operators building Maps, annotations as copies."""

from fractions import Fraction

import pytest

from expressivity import rasp
from expressivity.rasp.language import RASPError


def test_operators_build_maps_and_sequence_maps():
    assert isinstance(rasp.tokens + 1, rasp.Map)
    assert isinstance(rasp.tokens + rasp.indices, rasp.SequenceMap)
    assert isinstance(rasp.tokens == 2, rasp.Map)
    assert isinstance(rasp.tokens < rasp.indices, rasp.SequenceMap)
    assert rasp.evaluate(2 - rasp.tokens, [1, 5]) == [1, -3]
    assert rasp.evaluate(rasp.tokens / 2, [1, 4]) == [Fraction(1, 2), 2]   # exact, not 0.5


def test_map_of_map_is_fused_unless_told_not_to():
    inner = rasp.Map(lambda x: x + 1, rasp.tokens)
    fused = rasp.Map(lambda x: x * 10, inner)
    assert fused.inner is rasp.tokens and rasp.evaluate(fused, [1, 2]) == [20, 30]
    kept = rasp.Map(lambda x: x * 10, inner, simplify=False)
    assert kept.inner is inner and rasp.evaluate(kept, [1, 2]) == [20, 30]


def test_named_and_numerical_return_annotated_copies():
    sop = rasp.Map(lambda x: x, rasp.tokens)
    named = sop.named("copy")
    assert named is not sop and named.name == "copy" and sop.name != "copy"
    num = rasp.numerical(named)
    assert rasp.is_numerical(num) and rasp.is_categorical(named) and num.name == "copy"
    assert rasp.get_encoding(rasp.categorical(num)) is rasp.Encoding.CATEGORICAL


@pytest.mark.parametrize("bad", ["", "a:b", "x\ny", 3])
def test_bad_names_are_refused(bad):
    with pytest.raises(RASPError):
        rasp.tokens.named(bad)


def test_comparisons_take_the_key_first():
    assert rasp.Comparison.LT(1, 2) and not rasp.Comparison.LT(2, 1)   # key < query
    assert rasp.Comparison.GEQ(2, 2) and rasp.Comparison.TRUE("a", 0) and not rasp.Comparison.FALSE(1, 1)
    with pytest.raises(RASPError):
        rasp.Comparison.EQ(None, 1)


def test_selectors_over_the_same_sops_combine_into_one_select():
    a = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ)
    b = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.GEQ)
    both = a & b
    assert isinstance(both, rasp.Select)
    assert rasp.evaluate(both, [0, 0]) == [[True, False], [False, True]]
    assert isinstance(~a, rasp.Select) and rasp.evaluate(~a, [0, 0]) == [[False, True], [False, False]]
    other = rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)
    assert isinstance(a | other, rasp.SelectorOr)


def test_constructors_refuse_wrong_arguments():
    with pytest.raises(RASPError):
        rasp.Map(rasp.tokens, rasp.tokens)
    with pytest.raises(RASPError):
        rasp.Aggregate(rasp.tokens, rasp.tokens)
    with pytest.raises(RASPError):
        rasp.SelectorWidth(rasp.tokens)
    with pytest.raises(RASPError):
        rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ), rasp.tokens, default=[1])
