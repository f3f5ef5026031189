"""RASP programs to verified networks: tracr's language, an interpreter, and a compiler that never miscompiles silently.

Port a tracr program by changing its import (``from tracr.rasp import rasp`` ->
``from expressivity import rasp``)::

    from expressivity import rasp
    length = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE)).named("length")
    rasp.evaluate(length, [1, 2, 3])                          # [3, 3, 3]
    compiled = rasp.compile(length, vocab={1, 2, 3}, max_seq_len=5)
    compiled.apply(["BOS", 1, 2, 3]).decoded                  # ['BOS', 3, 3, 3]

Modules: :mod:`.language` (the language), :mod:`.interpreter` (its meaning), the compiler stages
:mod:`.graph`, :mod:`.values`, :mod:`.layout`, :mod:`.blocks`, :mod:`.assemble`, :mod:`.verify`,
driven by :mod:`.compiler`; :mod:`.library` holds the classic programs.
"""

from expressivity.rasp.compiled import AssembledOutput, CompiledProgram
from expressivity.rasp.compiler import compile
from expressivity.rasp.interpreter import evaluate
from expressivity.rasp.language import (Aggregate, Comparison, Encoding, Full, LinearSequenceMap, Map, RASPError,
                                        RASPExpr, Select, Selector, SelectorAnd, SelectorNot, SelectorOr, SelectorWidth,
                                        SequenceMap, SOp, categorical, get_encoding, indices, is_categorical,
                                        is_numerical, numerical, tokens)

__all__ = [
    "Aggregate", "AssembledOutput", "Comparison", "CompiledProgram", "Encoding", "Full", "LinearSequenceMap", "Map",
    "RASPError", "RASPExpr", "Select", "Selector", "SelectorAnd", "SelectorNot", "SelectorOr", "SelectorWidth",
    "SequenceMap", "SOp", "categorical", "compile", "evaluate", "get_encoding", "indices", "is_categorical",
    "is_numerical", "numerical", "tokens",
]
