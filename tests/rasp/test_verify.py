"""The witness's comparison of a decoded output with evaluate's."""

from fractions import Fraction

import numpy as np

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


def _length_model(max_seq_len=4):
    from expressivity import rasp
    from expressivity.rasp.library import make_length

    return rasp.compile(make_length(), vocab={1, 2}, max_seq_len=max_seq_len)


def test_the_inputs_checked_are_every_one_up_to_the_limit_and_samples_reach_the_longest():
    """Mutation testing (2026-11-28): the exhaustive limit made exclusive, and samples that never reach the longest
    length, passed every test."""
    from expressivity.rasp.verify import all_inputs, sampled_inputs

    every = all_inputs(["a", "b"], 3, 14)   # 2 + 4 + 8 = 14 inputs: exactly the limit
    assert every is not None and len(every) == 14 == len(set(every)) and max(map(len, every)) == 3
    assert all_inputs(["a", "b"], 3, 13) is None
    assert [len(s) for s in sampled_inputs(["a", "b"], 4, 10, 0)] == [1, 2, 3, 4, 4, 4, 4, 4, 4, 4]


def test_a_tolerance_is_not_widened():
    assert _same(0.3 + 5e-16, 0.3, tolerance=1e-15) and not _same(0.3 + 5e-15, 0.3, tolerance=1e-15)


def test_an_output_wrong_only_at_the_last_position_is_a_failure(monkeypatch):
    from expressivity.rasp.compiled import CompiledProgram
    from expressivity.rasp.verify import verify

    model, decode = _length_model(), CompiledProgram.decode

    def last_wrong(self, output, exact):
        return [row[:-1] + [-1] if len(row) == 5 else row for row in decode(self, output, exact)]

    monkeypatch.setattr(CompiledProgram, "decode", last_wrong)
    (check,), facts = verify(model)
    assert check.failures == 2**4 and facts["float64_disagreements"] == 2**4   # every input of 4 tokens


def test_float64_disagreements_are_re_run_exactly_first(monkeypatch):
    """The exact pass re-runs every input the float64 pass got wrong, before any other within its budget: with a
    budget of nothing, exactly those (a mutation that dropped them passed every test)."""
    import expressivity.rasp.verify as verify_module

    forward = verify_module.forward

    def wrong_on_three_tokens(network, X, **options):
        out = np.array(forward(network, X, **options), dtype=float)
        return out * 0 - 7 if X.shape[1] == 4 else out   # 8 inputs of 3 tokens (after BOS: 4 positions)

    model = _length_model()
    monkeypatch.setattr(verify_module, "forward", wrong_on_three_tokens)
    (check,), facts = verify_module.verify(model, exact_ops=0)
    assert facts["float64_disagreements"] == 8 and check.points == 8 and check.failures == 0
    assert facts["exhaustive_in_exact"] is False and check.details["float64_points"] == 30
