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


# Every public name of tracr's rasp module (tracr/rasp/rasp.py at 9ce2b8c), listed here by hand.
TRACR_NAMES = """
Value NumericValue SelectorValue VT RASPExprT SOpT DEFAULT_ANNOTATORS Annotator RASPExpr annotate SOp TokensType
IndicesType LengthType tokens indices length Map SequenceMap LinearSequenceMap Full sop_not ConstantSOp Predicate
Comparison Selector Select ConstantSelector SelectorWidth SelectorAnd SelectorOr SelectorNot selector_not
selector_and selector_or Aggregate Encoding numerical categorical get_encoding is_numerical is_categorical
default_encoding default_name RASPEvaluator DefaultRASPEvaluator evaluate
""".split()


def test_every_name_of_tracrs_rasp_module_is_here():
    missing = [name for name in TRACR_NAMES if not hasattr(rasp, name)]
    assert not missing
    assert set(TRACR_NAMES) <= set(rasp.__all__)


def test_the_language_does_not_import_the_interpreter():
    import ast
    from pathlib import Path

    import expressivity.rasp.language as language

    tree = ast.parse(Path(language.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("expressivity.rasp")}
    assert rasp.tokens([3, 1]) == [3, 1]          # yet expressions stay callable, as in tracr


def test_annotations_fill_defaults_lazily_from_the_default_annotators():
    sop = rasp.Map(lambda x: x + 1, rasp.tokens)
    assert sop.annotations["encoding"] is rasp.Encoding.CATEGORICAL and sop.annotations["name"] == sop.name
    rasp.DEFAULT_ANNOTATORS["colour"] = lambda expr: f"colour of {expr.name}"
    try:
        assert sop.annotations["colour"] == f"colour of {sop.name}"
    finally:
        del rasp.DEFAULT_ANNOTATORS["colour"]
    with pytest.raises(KeyError, match="no annotation"):
        sop.annotations["nothing"]
    tagged = rasp.annotate(sop, name="plus_one", note=7)
    assert tagged is not sop and tagged.annotations["note"] == 7 and tagged.name == "plus_one"
    assert "note" not in sop.annotations and rasp.evaluate(tagged, [1]) == [2]
    sop.annotations = {"encoding": "numerical"}         # tracr's setter; the string is read as the Encoding
    assert rasp.is_numerical(sop)
    with pytest.raises(RASPError, match="encoding"):
        rasp.annotate(sop, encoding="one-hot")
    with pytest.raises(RASPError, match="only SOps"):
        rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ).annotations["encoding"]


def test_length_is_a_primitive_that_compiles():
    assert rasp.length("abcd") == [4] * 4 and rasp.length.name == "length"
    program = (rasp.length - rasp.indices).named("left")
    model = rasp.compile(program, vocab={"a", "b"}, max_seq_len=4)
    assert model.apply(["BOS", "a", "b", "a"]).decoded == ["BOS", 3, 2, 1]


def test_selector_functions_simplify_as_tracrs_do():
    leq = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ)
    geq = rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.GEQ)
    assert isinstance(rasp.selector_and(leq, geq), rasp.Select)
    assert isinstance(rasp.selector_and(leq, geq, simplify=False), rasp.SelectorAnd)
    # a Full key matches any key SOp: its fill is baked into its predicate
    is_two = rasp.Select(rasp.Full(2), rasp.tokens, lambda k, q: q == k)
    combined = rasp.selector_or(is_two, rasp.Select(rasp.indices, rasp.tokens, rasp.Comparison.EQ))
    assert isinstance(combined, rasp.Select) and combined.keys is rasp.indices
    assert rasp.evaluate(combined, [2, 0]) == [[True, True], [True, False]]
    assert isinstance(rasp.selector_not(leq, simplify=False), rasp.SelectorNot)
    other = rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)
    assert rasp.evaluate(rasp.selector_and(leq, other), [1, 1]) == [[True, False], [True, True]]
    with pytest.raises(RASPError):
        rasp.selector_and(leq, rasp.tokens)


def test_constants_are_for_the_interpreter_and_refused_by_the_compiler():
    assert rasp.evaluate(rasp.ConstantSOp([1, 2, 3]), "abc") == [1, 2, 3]
    with pytest.raises(RASPError, match="check_length"):
        rasp.evaluate(rasp.ConstantSOp([1, 2]), "abc")
    assert rasp.evaluate(rasp.ConstantSOp([1, 2], check_length=False), "abc") == [1, 2]
    matrix = [[True, False], [True, True]]
    assert rasp.evaluate(rasp.SelectorWidth(rasp.ConstantSelector(matrix)), "ab") == [1, 2]
    with pytest.raises(RASPError, match="ConstantSelector") as info:
        rasp.compile(rasp.SelectorWidth(rasp.ConstantSelector(matrix)), vocab={1}, max_seq_len=2)
    assert "\n" not in str(info.value)
    with pytest.raises(RASPError, match="ConstantSOp"):
        rasp.compile(rasp.Map(lambda x: x, rasp.ConstantSOp([1, 2])), vocab={1}, max_seq_len=2)


def test_the_evaluator_object_is_the_evaluate_function():
    evaluator = rasp.DefaultRASPEvaluator()
    assert isinstance(evaluator, rasp.RASPEvaluator)
    assert evaluator.evaluate(rasp.tokens + 1, [1, 2]) == rasp.evaluate(rasp.tokens + 1, [1, 2]) == [2, 3]
    assert rasp.sop_not(rasp.tokens == 1)([1, 2]) == [False, True]
