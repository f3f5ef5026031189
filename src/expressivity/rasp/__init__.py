"""RASP programs to verified networks: tracr's language, an interpreter, and a compiler that never miscompiles silently.

Port a tracr program by changing its import (``from tracr.rasp import rasp`` ->
``from expressivity import rasp``): every name of tracr's ``rasp`` module is here::

    from expressivity import rasp
    length = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE)).named("length")
    rasp.evaluate(length, [1, 2, 3])                          # [3, 3, 3]
    compiled = rasp.compile(length, vocab={1, 2, 3}, max_seq_len=5)
    compiled.apply(["BOS", 1, 2, 3]).decoded                  # ['BOS', 3, 3, 3]

Modules: :mod:`.language` (the language), :mod:`.interpreter` (its meaning), the compiler stages
:mod:`.graph`, :mod:`.values`, :mod:`.layout`, :mod:`.blocks`, :mod:`.assemble`, :mod:`.verify`,
driven by :mod:`.compiler`; :mod:`.compiled` and :mod:`.encoders` (tracr's ``apply`` and encoders);
:mod:`.library` holds the classic programs.
"""

from expressivity.rasp.compiled import AssembledOutput, CompiledProgram
from expressivity.rasp.compiler import compile
from expressivity.rasp.interpreter import DefaultRASPEvaluator, RASPEvaluator, evaluate
from expressivity.rasp.language import (DEFAULT_ANNOTATORS, Aggregate, Annotator, Comparison, ConstantSelector,
                                        ConstantSOp, Encoding, Full, IndicesType, LengthType, LinearSequenceMap, Map,
                                        NumericValue, Predicate, RASPError, RASPExpr, RASPExprT, Select, Selector,
                                        SelectorAnd, SelectorNot, SelectorOr, SelectorValue, SelectorWidth,
                                        SequenceMap, SOp, SOpT, TokensType, Value, VT, annotate, categorical,
                                        default_encoding, default_name, get_encoding, indices, is_categorical,
                                        is_numerical, length, numerical, selector_and, selector_not, selector_or,
                                        sop_not, tokens)

__all__ = [
    "DEFAULT_ANNOTATORS", "Aggregate", "Annotator", "AssembledOutput", "Comparison", "CompiledProgram",
    "ConstantSOp", "ConstantSelector", "DefaultRASPEvaluator", "Encoding", "Full", "IndicesType", "LengthType",
    "LinearSequenceMap", "Map", "NumericValue", "Predicate", "RASPError", "RASPEvaluator", "RASPExpr", "RASPExprT",
    "SOp", "SOpT", "Select", "Selector", "SelectorAnd", "SelectorNot", "SelectorOr", "SelectorValue",
    "SelectorWidth", "SequenceMap", "TokensType", "VT", "Value", "annotate", "categorical", "compile",
    "default_encoding", "default_name", "evaluate", "get_encoding", "indices", "is_categorical", "is_numerical",
    "length", "numerical", "selector_and", "selector_not", "selector_or", "sop_not", "tokens",
]
