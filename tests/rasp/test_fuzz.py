"""The fuzz suite of issue 31: random well-typed RASP programs either refuse in one line or agree with
``rasp.evaluate`` on **every** input.

Depth <= 6, vocabularies of <= 6 tokens, max_seq_len <= 8, chosen so that each program has at most
``EXPRESSIVITY_RASP_FUZZ_INPUTS`` inputs (every one is run through ``compile(...).apply``). CI runs
``EXPRESSIVITY_RASP_FUZZ`` programs (default 30, seconds); a long local run sets it higher, e.g.
``EXPRESSIVITY_RASP_FUZZ=2000 EXPRESSIVITY_RASP_FUZZ_INPUTS=2000 pytest tests/rasp/test_fuzz.py -s``.
"""

import itertools
import os
import random
import re

from expressivity import rasp
from expressivity.rasp.language import RASPError
from expressivity.rasp.values import value_key
from tests.rasp.random_programs import random_program

PROGRAMS = int(os.environ.get("EXPRESSIVITY_RASP_FUZZ", "30"))
INPUTS = int(os.environ.get("EXPRESSIVITY_RASP_FUZZ_INPUTS", "250"))


def _shape(rng: random.Random) -> tuple[list, int]:
    """A vocabulary (<= 6 integer tokens) and max_seq_len (<= 8) with at most INPUTS inputs in all."""
    while True:
        size, L = rng.randint(1, 6), rng.randint(1, 8)
        if sum(size ** n for n in range(1, L + 1)) <= INPUTS:
            start = rng.choice([0, 1, -1])
            return list(range(start, start + size)), L


def _same(got, want, tolerance, typed) -> bool:
    """A categorical output is one of its typed values (``True`` is not ``1``, ``-0.0`` not ``0.0``); a
    numerical one a number, equal or within ``tolerance``."""
    if got is None or want is None:
        return got is want
    if typed:
        return value_key(got) == value_key(want)
    return got == want if tolerance == 0 else abs(float(got) - float(want)) <= tolerance


def _agrees_everywhere(model, program, vocab, L, tolerance) -> int:
    inputs = 0
    for n in range(1, L + 1):
        for xs in itertools.product(vocab, repeat=n):
            got = model.apply([model.bos, *xs]).decoded[1:]
            want = rasp.evaluate(program, list(xs))
            same = [_same(a, b, tolerance, typed=not model.output_numerical) for a, b in zip(got, want)]
            assert all(same) and all((a is None) == (b is None) for a, b in zip(got, want)), (list(xs), got, want)
            inputs += 1
    return inputs


REASONS = {"is categorical, so each query": "not single-valued", "causal=True": "looks ahead under causal",
           "may be None": "None in a numerical SOp", "but aggregates the numerical": "categorical Aggregate of numbers",
           "averages the categorical": "numerical Aggregate of categories", "compound": "compound selector",
           "over different keys": "compound selector", "budget": "over a budget", "predicate fails": "predicate fails",
           "function fails": "function fails", "numerical SOps": "nonlinear numerical map", "floats": "float mean",
           "numerical; attention": "Select on numbers"}


def _reason(message: str) -> str:
    return next((v for k, v in REASONS.items() if k in message), message[:80])


def test_random_programs_refuse_in_one_line_or_agree_on_every_input():
    compiled = refused = inputs = 0
    reasons: dict[str, int] = {}
    rules: dict[str, int] = {}
    for seed in range(PROGRAMS):
        rng = random.Random(seed)
        program = random_program(rng, rng.randint(1, 6))
        vocab, L = _shape(rng)
        causal = rng.random() < 0.2
        try:
            model = rasp.compile(program, vocab=vocab, max_seq_len=L, causal=causal)
        except RASPError as exc:
            message = str(exc)
            assert "\n" not in message and "compiler bug" not in message, (seed, message)
            refused += 1
            key = _reason(message)
            reasons[key] = reasons.get(key, 0) + 1
            continue
        assert model.report.ok and model.report.check("every block proven").passed, seed
        tolerance = model.report.bounds.get("numerical_output_tolerance", 0)
        inputs += _agrees_everywhere(model, program, vocab, L, tolerance)
        compiled += 1
        for block in model.report.constants["blocks"]:
            for rule in re.findall(r"\b([RC][0-3]):", block["proof"]):
                rules[rule] = rules.get(rule, 0) + 1
    print(f"\nfuzz: {PROGRAMS} programs, {compiled} compiled and agreed with evaluate on all {inputs} of their "
          f"inputs, {refused} refused in one line; refusals by reason: {reasons}; selection rules used: {rules}")
    assert compiled >= PROGRAMS // 4, (compiled, refused, reasons)
