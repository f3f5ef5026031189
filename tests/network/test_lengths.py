"""Valid input lengths: the type, the Network field, its evaluators, saving, composing, and each construction's claim."""

import json

import numpy as np
import pytest

from expressivity.constructions.circuits import CIRCUITS, embed
from expressivity.errors import ExpressivityError, NetworkError
from expressivity.export import load_network, save_network
from expressivity.network import AttentionLayer, Head, Network, evaluate
from expressivity.network.lengths import ValidLengths, common_lengths
from expressivity.network.reference import forward


def test_the_three_shapes_contain_what_they_say():
    assert all(ValidLengths.any().contains(n) for n in (1, 7, 10**9))
    r = ValidLengths.range(2, 8)
    assert [n for n in range(12) if r.contains(n)] == list(range(2, 9))
    s = ValidLengths.of([16, 4, 8, 4])
    assert s.values == (4, 8, 16) and not s.contains(5) and s.contains(16)
    assert not ValidLengths.any().contains(0) and not r.contains(3.0) and not r.contains(True)


@pytest.mark.parametrize("bad", [lambda: ValidLengths.range(0, 4), lambda: ValidLengths.range(5, 4),
                                 lambda: ValidLengths.of([]), lambda: ValidLengths.of("8"),
                                 lambda: ValidLengths.of([2.5]), lambda: ValidLengths.range(True, 3),
                                 lambda: ValidLengths.from_dict({"kind": "set"}),
                                 lambda: ValidLengths.from_dict({"kind": "tuple", "values": [1]}),
                                 lambda: ValidLengths.from_dict([1, 2])])
def test_nonsense_is_refused_in_one_line(bad):
    with pytest.raises(NetworkError) as info:
        bad()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("valid, text", [(ValidLengths.any(), "any length"), (ValidLengths.range(1, 8), "lengths 1..8"),
                                         (ValidLengths.of([8]), "length 8"), (ValidLengths.range(3, None), "lengths >= 3"),
                                         (ValidLengths.of([4, 8, 16]), "lengths 4, 8, 16")])
def test_describe_and_round_trip(valid, text):
    assert valid.describe() == text
    assert ValidLengths.from_dict(json.loads(json.dumps(valid.to_dict()))) == valid


def test_closest_stays_inside_and_common_lengths_intersects():
    assert ValidLengths.range(1, 5).closest(6) == 5 and ValidLengths.of([8, 16]).closest(6) == 8
    assert ValidLengths.any().closest(6) == 6
    assert common_lengths(ValidLengths.range(1, 8), ValidLengths.range(4, None)) == ValidLengths.range(4, 8)
    assert common_lengths(ValidLengths.of([2, 8, 9]), ValidLengths.range(1, 8)) == ValidLengths.of([2, 8])
    assert common_lengths(None, ValidLengths.of([3])) == ValidLengths.of([3])
    with pytest.raises(NetworkError, match="no length"):
        common_lengths(ValidLengths.of([9]), ValidLengths.range(1, 8))


def _copy_net(**kwargs) -> Network:
    head = Head(np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    return Network((AttentionLayer((head,), normalization="hardmax"),), ("x",), name="avg", **kwargs)


def test_every_evaluator_refuses_other_lengths_unless_asked():
    net = _copy_net(valid_lengths=ValidLengths.range(1, 4))
    X = np.ones((5, 1))
    for dtype in ("exact", "float64", "float32", "torch-float64"):
        with pytest.raises(NetworkError, match=r"built and verified for lengths 1\.\.4, got 5 tokens.*allow_length"):
            evaluate(net, X, dtype)
        assert np.asarray(evaluate(net, X, dtype, allow_length=True), dtype=float).shape == (5, 1)
    with pytest.raises(NetworkError):
        forward(net, X)
    assert evaluate(net, X[:4]).shape == (4, 1)


def test_valid_lengths_must_agree_with_the_parts():
    with pytest.raises(NetworkError, match="beyond max_length"):
        _copy_net(max_length=4, valid_lengths=ValidLengths.any())
    with pytest.raises(NetworkError, match="ValidLengths"):
        _copy_net(valid_lengths=[1, 2])
    assert _copy_net(max_length=4, valid_lengths=ValidLengths.of([2, 4])).lengths.describe() == "lengths 2, 4"
    assert _copy_net(max_length=4).lengths == ValidLengths.range(1, 4) and _copy_net().lengths.is_any


def test_saving_keeps_them_and_composing_intersects_them(tmp_path):
    net = _copy_net(valid_lengths=ValidLengths.of([3, 6]))
    save_network(net, tmp_path / "n")
    assert load_network(tmp_path / "n").valid_lengths == ValidLengths.of([3, 6])
    both = net.then(_copy_net(valid_lengths=ValidLengths.range(1, 4)))
    assert both.valid_lengths == ValidLengths.of([3])
    assert "valid: length 3" in both.summary()


LENGTH = 8


@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_each_circuit_meets_its_target_at_every_length_it_claims_and_refuses_the_next(name):
    """The claim is checked, not asserted: at every valid length up to 2L the output meets the target within the
    build's proven bound (plus float64 rounding); the first invalid length is refused."""
    circuit = CIRCUITS[name]
    net, report = circuit.make(LENGTH, "auto") if circuit.scaled else circuit.make(LENGTH)
    valid = net.valid_lengths
    assert valid is not None and valid.contains(LENGTH)
    rng = np.random.default_rng(0)
    checked = 0
    for n in range(1, 2 * LENGTH + 1):
        values = rng.uniform(-0.5, 0.5, size=(3, n))   # spread 1: the input_range the bound is built for
        if not valid.contains(n):
            with pytest.raises(NetworkError, match="built (and verified )?for"):
                evaluate(net, embed(net, values))
            continue
        target = circuit.target(values, seed=report.constants.get("seed", 0), shift=1)
        bound = report.bounds["max_abs_error"] + 1e-12
        assert np.max(np.abs(evaluate(net, embed(net, values)) - target)) <= bound, n
        checked += 1
    assert checked >= 1


def test_the_shift_circuit_outside_its_claim_is_what_the_issue_saw():
    """Built for 8, run on 9 with allow_length: the last output is 4.5, not v_7 (why the length is refused)."""
    net, _ = CIRCUITS["shift"].build(8, "auto", input_range=8.0)   # values 1..9 span 8: inside the input domain
    y = evaluate(net, embed(net, np.arange(1.0, 10.0)), allow_length=True)
    assert abs(y[-1, 0] - 4.5) < 1e-6 and abs(y[-1, 0] - 8.0) > 1


def test_constructions_record_the_lengths_they_check():
    from expressivity.constructions.wang_e.adaptive import build_adaptive_memory
    from expressivity.constructions.wang_e.essential import build_kernel_memory

    net, _ = build_adaptive_memory(max_lag=2, length=6, beta=float("inf"))
    assert net.valid_lengths == ValidLengths.range(1, 6)
    kernel, _ = build_kernel_memory("exp")
    assert kernel.valid_lengths.is_any


def test_bad_lengths_to_the_python_api_are_expressivity_errors():
    with pytest.raises(ExpressivityError):
        ValidLengths.range(-1, 3)


@pytest.mark.parametrize("args, kwargs, match", [((5, 2), {}, "are empty"), ((0,), {}, "positive integer"),
                                                 ((1.5,), {}, "positive integer"), ((), {"values": ()}, "at least one"),
                                                 ((), {"values": (-1,)}, "positive integer"),
                                                 ((), {"values": "12"}, "collection")])
def test_the_constructor_checks_what_range_and_of_check(args, kwargs, match):
    """An audit (2026-11-28): ValidLengths(5, 2), (0), (1.5) and (values=()) were accepted (it is exported at the
    package top), a network carried them and saved, and loading it was refused."""
    from expressivity.errors import NetworkError
    from expressivity.network.lengths import ValidLengths

    with pytest.raises(NetworkError, match=match):
        ValidLengths(*args, **kwargs)
    assert ValidLengths(values=(3, 1, 3)) == ValidLengths.of([1, 3]) and ValidLengths(2, None) == ValidLengths.range(2, None)
