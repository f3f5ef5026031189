"""`run`'s checks (inspect/run.py): a float answer off the exact one refused, overflow refused, token ids checked.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import dataclasses
import numpy as np
import pytest
from expressivity.errors import ExpressivityError


def test_run_float64_answer_off_by_4e_9_relative_is_refused():
    """sum of 1e7, 1/8, -1e7 through the sum circuit in float64: 0.1250000005..., relative error ~4.4e-9 of
    the exact 1/8, above float64's allowance 1e-9 (EXACT_AGREEMENT), below 1e-8 and float32's 1e-4."""
    from expressivity import build_sum
    from expressivity.errors import NetworkError
    from expressivity.inspect.run import parse_input, run_network
    net, _ = build_sum(3)
    X = parse_input(net, "1e7,1/8,-1e7")
    with pytest.raises(NetworkError, match="differs from the exact one"):
        run_network(net, X, "float64")
    r = run_network(net, X, "float64", allow_outside=True)
    assert r["within_claim"] is False and 1e-9 < abs(r["output"][0, 0] - 0.125) / 0.125 < 1e-8
    ok = run_network(net, parse_input(net, "1e6,1/8,-1e6"), "float64")      # 4.4e-10: allowed
    assert ok["within_claim"] is True and ok["exact_agreement"]["relative"] < 1e-9


def test_run_overflow_is_refused_for_a_network_without_a_claim():
    import dataclasses
    from expressivity import build_sum
    from expressivity.inspect.run import parse_input, run_network
    net, _ = build_sum(3)
    bare = dataclasses.replace(net, input_domain=None, valid_lengths=None)   # a hand-built copy: no claim, no exact check
    X = parse_input(bare, "1e308,1e308,1")
    with pytest.raises(ExpressivityError, match="non-finite"):
        run_network(bare, X, "float64")


def test_run_token_id_equal_to_vocabulary_size_is_refused():
    import dataclasses
    from expressivity.constructions.wang_e.fixed import build_fixed_memory
    from expressivity.inspect.run import parse_input
    net, _ = build_fixed_memory((1, 3), readout="linear")
    tok = dataclasses.replace(net, metadata={**net.metadata, "input": "tokens"}, input_domain=None, valid_lengths=None)
    assert tok.d_in == 1
    parse_input(tok, "0,0")
    with pytest.raises(ExpressivityError, match="token id"):
        parse_input(tok, "0,1")


def test_run_exact_zero_answered_nonzero_in_float_is_refused_in_one_line():
    """An exact answer of 0 must be answered 0 (EXACT_AGREEMENT); the relative error of anything else is inf."""
    from expressivity import build_sum
    from expressivity.errors import NetworkError
    from expressivity.inspect.run import parse_input, run_network
    net, _ = build_sum(3)
    X = parse_input(net, "1e7,1/8,-10000000.125")            # exact sum 0
    r = run_network(net, X, "float64", allow_outside=True)
    assert not np.all(r["output"][:, 0] == 0)   # float64's sum is not the exact 0 here (a skip would test nothing)
    with pytest.raises(NetworkError, match="differs from the exact one"):
        run_network(net, X, "float64")
