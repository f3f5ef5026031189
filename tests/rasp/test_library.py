"""Every library program compiles to a network whose decoded outputs equal rasp.evaluate (ALTA's habit)."""

import numpy as np
import pytest

from expressivity import rasp
from expressivity.rasp.library import PROGRAMS, get_program
from expressivity.rasp.language import RASPError


def compiled(name, L, **kwargs):
    entry = PROGRAMS[name]
    return rasp.compile(entry.build(L), vocab=list(entry.vocab), max_seq_len=L, **kwargs)


def _agrees_on_random_inputs(model, L, count, seed=1):
    rng = np.random.default_rng(seed)
    for n in [L] * count + [1]:
        tokens = [model.vocab[k] for k in rng.integers(0, len(model.vocab), size=n)]
        assert model.apply([model.bos] + tokens).decoded[1:] == list(rasp.evaluate(model.program, tokens)), tokens


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_exact_at_length_5(name):
    model = compiled(name, 5, exact_ops=1e6)
    check = model.report.checks[0]
    assert check.passed and check.arithmetic.startswith("exact")
    assert check.details["float64_disagreements"] == 0
    total = sum(len(PROGRAMS[name].vocab) ** n for n in range(1, 6))
    assert check.details["float64_points"] == min(total, 4096) or check.details["inputs"].startswith("256 random")
    _agrees_on_random_inputs(model, 5, 2)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_exact_at_length_10(name):
    model = compiled(name, 10, samples=12, exact_ops=2e6)
    assert model.report.ok and model.report.checks[0].points >= 1
    _agrees_on_random_inputs(model, 10, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in PROGRAMS if n not in ("sort_freq",)])
def test_exact_at_length_20(name):
    model = compiled(name, 20, samples=6, exact_ops=3e6)
    assert model.report.ok
    _agrees_on_random_inputs(model, 20, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["length", "reverse", "hist", "sort", "frac_prevs", "max", "previous_token"])
def test_exact_at_length_40(name):
    model = compiled(name, 40, samples=4, exact_ops=3e6)
    assert model.report.ok
    _agrees_on_random_inputs(model, 40, 1)


def test_width_grows_linearly_where_the_program_allows():
    for name in ("reverse", "sort", "hist"):
        d = [compiled(name, L, samples=2, exact_ops=1).network.d for L in (10, 20, 30)]
        assert d[2] - d[1] == d[1] - d[0], name          # the same number of dimensions per extra position
        assert d[1] - d[0] <= (len(PROGRAMS[name].vocab) + 3) * 10, name


def test_unknown_program_names_the_choices():
    with pytest.raises(RASPError, match="reverse"):
        get_program("revers")
