"""The second line of verification, always on: the compiled network against ``rasp.evaluate``, end to end.

The claim rests on the block proofs (:mod:`.proofs`); this check runs whole inputs through the
assembled network as an independent witness.

Inputs: every sequence over the vocabulary of length 1..L when there are at most
``exhaustive_limit`` of them, else ``samples`` random ones (each length 1..L in turn, the rest
of full length L, from ``seed``). Every input is run through the float64 reference pass (batched
by length). A **hardmax** network's claim is exact: as many inputs as ``exact_ops`` allows (all of
them when it fits, else the float64 disagreements, then the longest that fit, at least one) are
re-run in exact rational arithmetic; its check counts exact runs only, and the float64
disagreements are reported beside it. A **softmax** network is checked in
float64, on every input where there are at most :data:`SOFTMAX_EXHAUSTIVE_LIMIT` (this check is its
claim); sampled, it carries no claim on any one input (:func:`~.compiler.compile`). An input where ``rasp.evaluate`` raises (a function failing on a value) is left out, as
the claim leaves it out, and counted (``inputs_evaluate_fails``). Decoded outputs must equal the
interpreter's exactly (numerical ones within
:data:`~expressivity.rasp.compiled.NUMERIC_TOLERANCE` in float64, and a float mean's within its
stated tolerance).
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import numpy as np

from expressivity.constructions.report import Check
from expressivity.network.exact import forward_exact
from expressivity.network.reference import forward
from expressivity.rasp.compiled import CompiledProgram
from expressivity.rasp.interpreter import evaluate
from expressivity.rasp.language import RASPError
from expressivity.rasp.values import value_key

EXHAUSTIVE_LIMIT = 4096     # inputs: check all of them when there are at most this many
# A softmax network's claim is this check itself: the block proofs hold in the hardmax limit, and nothing bounds the
# error its inverse temperature leaves through blocks that scale values (a value of 10^6 read through a lookup
# table turned a weight of 3e-4 off the selected key into an error of 333 past a margin of 1/4, on 1 input in 200,
# which 64 samples missed: a fresh audit, 2026-11-29). So every input is run where there are at most this many
# (about 10 s of the interpreter here); above it the network carries no claim on any one input.
SOFTMAX_EXHAUSTIVE_LIMIT = 2 ** 16
SAMPLES = 64                # random inputs otherwise (the block proofs carry the claim; this is a witness)
EXACT_OPS = 5e6              # exact-arithmetic budget, in multiply-adds (about a second)
# budget of the witness, in multiply-adds (tokens x weights): 1,000 inputs of length 128 through sort's 2.9M weights
# are 3.8e11 and took 2.8 minutes on the 2-core CPU (the interpreter's answers and the float64 pass); --samples
# 100000 there ran unbounded
FLOAT_OPS = 1.5e11
FLOAT_CHUNK_BYTES = 2**28     # residual streams of one forward pass at a time (a batch of every input was 93 GB)
MAX_EXAMPLES = 3


def all_inputs(vocab: list, max_seq_len: int, limit: int) -> list[tuple] | None:
    """Every sequence of length 1..L over ``vocab``, or ``None`` when there are more than ``limit``."""
    total = input_count(len(vocab), max_seq_len)
    if total > limit:
        return None
    return [seq for n in range(1, max_seq_len + 1) for seq in itertools.product(range(len(vocab)), repeat=n)]


def input_count(vocab_size: int, max_seq_len: int) -> int:
    """How many inputs (sequences of length 1..L over the vocabulary) there are."""
    return sum(vocab_size ** n for n in range(1, max_seq_len + 1))


def softmax_limit(vocab_size: int, max_seq_len: int, weights: int, exhaustive_limit: int) -> int:
    """The ``exhaustive_limit`` a softmax network is checked with: every input (:data:`SOFTMAX_EXHAUSTIVE_LIMIT` at
    most) where they fit the float64 budget :data:`FLOAT_OPS`, else the caller's limit (then sampled: no claim)."""
    total = input_count(vocab_size, max_seq_len)
    if total > SOFTMAX_EXHAUSTIVE_LIMIT:
        return exhaustive_limit
    tokens = sum(vocab_size ** n * (n + 1) for n in range(1, max_seq_len + 1))
    return max(exhaustive_limit, total) if tokens * weights <= FLOAT_OPS else exhaustive_limit


def _within_budget(inputs: list[tuple], weights: int, seed: int) -> list[tuple]:
    """A random part of ``inputs`` (at least one) whose tokens, BOS included, times ``weights`` fit :data:`FLOAT_OPS`."""
    chosen, tokens = [], 0
    for i in np.random.default_rng(seed).permutation(len(inputs)):
        tokens += len(inputs[i]) + 1
        if chosen and tokens * weights > FLOAT_OPS:
            break
        chosen.append(inputs[i])
    return chosen


def sampled_inputs(vocab: list, max_seq_len: int, samples: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    lengths = [1 + k % max_seq_len for k in range(min(samples, max_seq_len))]
    lengths += [max_seq_len] * (samples - len(lengths))
    return [tuple(int(t) for t in rng.integers(0, len(vocab), size=n)) for n in lengths]


def _ops_per_input(compiled: CompiledProgram, n: int) -> float:
    """Multiply-adds of one exact forward pass on ``n`` positions (dense matmuls plus the n x n scores)."""
    net = compiled.network
    per_token = net.d_in * net.d + sum(layer.parameter_count() for layer in net.layers)
    scores = sum(n * len(layer.heads) * (n + net.d) for layer in net.layers if layer.kind == "attention")
    return n * per_token + n * scores


def _expected(compiled: CompiledProgram, inputs: list[tuple]) -> tuple[dict[tuple, list], list[tuple], str]:
    """evaluate's output (BOS first) on each of ``inputs`` where it returns one; the inputs where it raises
    (a function failing on a value: left out of the claim, as the block proofs leave the value out) and
    the first such error. Every input failing is refused: there would be nothing to witness."""
    expected, failing, first = {}, [], ""
    for seq in inputs:
        tokens = [compiled.vocab[t] for t in seq]
        try:
            expected[seq] = [compiled.bos] + list(evaluate(compiled.program, tokens))
        except RASPError as exc:
            failing.append(seq)
            first = first or f"on the input {tokens}: {exc}"
    if not expected:
        raise RASPError(f"rasp.evaluate fails on every one of the {len(inputs)} inputs checked ({first}); "
                        "fix the program so that it returns a value on some input")
    return expected, failing, first


def _same(a, b, tolerance: float = 0.0, typed: bool = False) -> bool:
    """Whether a decoded output ``a`` is evaluate's ``b``: a categorical output (``typed``) is one of its
    typed values, so ``True`` is not ``1`` nor ``-0.0`` ``0.0`` (:func:`~.values.value_key`); a numerical
    one is a number, equal or within ``tolerance``."""
    if a is None or b is None:
        return a is b
    if tolerance and isinstance(a, (int, float, Fraction)) and isinstance(b, (int, float, Fraction)):
        if not all(math.isfinite(v) for v in (a, b) if isinstance(v, float)):
            return a == b
        # exactly: in floats the difference of 2^-1075 and 0.0 rounded to 0 (a fresh audit, 2026-11-29)
        return abs(Fraction(a) - Fraction(b)) <= Fraction(tolerance)
    if typed:
        try:
            return value_key(a) == value_key(b)
        except TypeError:   # an unhashable value has no key; Python's equality is all there is
            pass
    return a == b


def _batch_by_length(inputs: list[tuple]) -> dict[int, list[tuple]]:
    groups: dict[int, list[tuple]] = {}
    for seq in inputs:
        groups.setdefault(len(seq), []).append(seq)
    return groups


def _ids(seq: tuple) -> list[int]:
    return [0] + [t + 1 for t in seq]


def _exact_choice(compiled: CompiledProgram, inputs: list[tuple], float_bad: list[tuple], budget: float) -> list:
    """The inputs re-run in exact arithmetic: every float64 disagreement, then the longest inputs that fit in the
    ``budget`` (multiply-adds); at least one input (the shortest, when no longer one fits)."""
    chosen = list(dict.fromkeys(float_bad))
    budget -= sum(_ops_per_input(compiled, len(s) + 1) for s in chosen)
    bad = set(chosen)
    for seq in sorted((s for s in inputs if s not in bad), key=len, reverse=True):
        cost = _ops_per_input(compiled, len(seq) + 1)
        if cost <= budget:
            chosen.append(seq)
            budget -= cost
    return chosen or [min(inputs, key=len)]


def verify(compiled: CompiledProgram, *, exhaustive_limit: int = EXHAUSTIVE_LIMIT, samples: int = SAMPLES,
           seed: int = 0, exact_ops: float = EXACT_OPS, exact: bool = True,
           tolerance: float = 0.0) -> tuple[list[Check], dict]:
    """Check ``compiled`` against the interpreter; returns the checks and facts for the report. ``exact=False``
    checks a hardmax network in float64 only; ``tolerance``: how far a numerical output may be from evaluate's
    (a float mean's, :func:`~.values.float_mean_tolerance`; 0 means equal)."""
    typed = not compiled.output_numerical
    agree = lambda got, want: all(_same(a, b, tolerance, typed) for a, b in zip(got, want))  # noqa: E731
    inputs = all_inputs(compiled.vocab, compiled.max_seq_len, exhaustive_limit)
    how = "exhaustive" if inputs is not None else f"{samples} random inputs (seed {seed})"
    L = compiled.max_seq_len
    first = min(samples, L)   # sampled_inputs' lengths: 1..L once, then L
    tokens = (sum(len(s) + 1 for s in inputs) if inputs is not None
              else first * (first + 3) // 2 + (samples - first) * (L + 1))
    weights = compiled.network.parameter_count()
    work = tokens * weights
    if work > FLOAT_OPS and inputs is not None and compiled.exact:
        # hardmax: the block proofs carry the claim and this check is a witness, so a list of every input too costly
        # to run is cut to a random part that fits; it was refused, and the --samples it advised refused too (a fresh
        # audit, 2026-11-29). Not exhaustive any more: a partial program's failing inputs are then not all known.
        total = len(inputs)
        inputs = _within_budget(inputs, weights, seed)
        how = (f"{len(inputs):,} random inputs of the {total:,} (seed {seed}; all would be about {work:.2g} "
               f"multiply-adds, above the check's budget of {FLOAT_OPS:.2g})")
    elif work > FLOAT_OPS:   # before the inputs are drawn and the interpreter runs on them
        count = len(inputs) if inputs is not None else samples
        raise RASPError(f"checking {count:,} inputs of up to {compiled.max_seq_len} tokens through {weights:,} "
                        f"weights is about {work:.2g} multiply-adds (budget {FLOAT_OPS:.2g}, about a minute here); use "
                        "fewer --samples or a shorter --max-len")
    if inputs is None:
        inputs = sampled_inputs(compiled.vocab, compiled.max_seq_len, samples, seed)
    expected, failing, first_failure = _expected(compiled, inputs)
    if failing:
        inputs = [seq for seq in inputs if seq in expected]
        how += f", less {len(failing)} where rasp.evaluate fails"
    start = time.perf_counter()
    float_bad: list[tuple] = []
    width = len(compiled.network.labels)
    beyond = None   # a weight float64 cannot hold (a value of 10^400): a traceback before (a fuzz, 2026-11-29)
    for n, group in _batch_by_length(inputs).items():
        step = max(1, FLOAT_CHUNK_BYTES // (8 * (n + 1) * max(width, 1)))
        for k in range(0, len(group), step):
            part = group[k:k + step]
            X = compiled.one_hot([_ids(s) for s in part])
            try:
                with np.errstate(all="ignore"):
                    # the check itself: a hardmax network's claim is exact, and float64 is what this pass compares
                    decoded = compiled.decode(forward(compiled.network, X, allow_outside=True), exact=False)
            except OverflowError:
                beyond = "a weight is beyond the float64 range"
                break
            float_bad += [s for s, got in zip(part, decoded) if not agree(got, expected[s])]
        if beyond:
            break
    if beyond and (not compiled.exact or not exact):   # the float64 check is the claim's: it cannot run
        raise RASPError(f"the float64 check cannot run ({beyond}); compile with hardmax attention and check it in "
                        "exact arithmetic, or scale the program's values down")
    float_seconds = time.perf_counter() - start
    facts = {"inputs": how, "lengths": f"1..{compiled.max_seq_len}",
             "float64_points": 0 if beyond else len(inputs), "float64_disagreements": len(float_bad)}
    if beyond:
        facts["float64"] = f"not run: {beyond} (the claim is exact: the inputs are run in exact arithmetic)"
    if failing:
        # "failing_inputs" is compile's, for the network's input domain (every one, where the check is exhaustive):
        # it pops it before the report is made
        facts |= {"inputs_evaluate_fails": len(failing), "evaluate_fails": first_failure, "failing_inputs": failing}
    examples = lambda bad: tuple({"input": [compiled.vocab[t] for t in s], "expected": expected[s][1:]}  # noqa: E731
                                 for s in bad[:MAX_EXAMPLES])
    if not compiled.exact or not exact:
        return [Check("outputs equal rasp.evaluate", len(inputs), len(float_bad), "float64 (NumPy reference pass)",
                      float_seconds, {"inputs": how}, examples(float_bad))], facts
    chosen = _exact_choice(compiled, inputs, float_bad, exact_ops)
    start = time.perf_counter()
    exact_bad = []
    for n, group in _batch_by_length(chosen).items():
        X = compiled.one_hot([_ids(s) for s in group]).astype(int)
        decoded = compiled.decode(forward_exact(compiled.network, X), exact=True)
        exact_bad += [s for s, got in zip(group, decoded) if not agree(got, expected[s])]
    facts |= {"exact_points": len(chosen), "exhaustive_in_exact": len(chosen) == len(inputs)}
    detail = {"inputs": how if len(chosen) == len(inputs) else f"{len(chosen)} of the {how}, float64 "
              "disagreements first, then the longest that fit the budget", "float64_points": facts["float64_points"],
              "float64_disagreements": len(float_bad), **({"float64": facts["float64"]} if beyond else {})}
    return [Check("outputs equal rasp.evaluate", len(chosen), len(exact_bad), "exact rationals (Python int/Fraction)",
                  time.perf_counter() - start, detail, examples(exact_bad))], facts
