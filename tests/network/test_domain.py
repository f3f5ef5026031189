"""Input domains as part of a network's contract: fields, rules, refusals, saving, composing."""

from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import ExpressivityError, NetworkError
from expressivity.network import AttentionLayer, Head, Network, evaluate
from expressivity.network.domain import Field, InputDomain, short, token_domain
from expressivity.network.sequence_rules import FirstOnly, PointersBack, rule_from_dict
from expressivity.network.serial import InlineArrays

LABELS = ("x", "out")


def _copy_net(domain: InputDomain | None, d: int = 2) -> Network:
    """A one-head uniform-attention network over ``x``, ``out`` carrying ``domain``."""
    W_V, W_O = np.zeros((d, 1)), np.zeros((1, d))
    W_V[0, 0] = W_O[0, 1] = 1.0
    head = Head(W_Q=np.zeros((d, 1)), W_K=np.zeros((d, 1)), W_V=W_V, W_O=W_O)
    return Network((AttentionLayer((head,), normalization="hardmax"),), LABELS, name="copy", input_domain=domain)


def _X(values, other=0.0):
    return np.array([[v, other] for v in values], dtype=object if any(isinstance(v, Fraction) for v in values) else float)


SPREAD = InputDomain((Field.real(["x"], spread=5),), built_for={"scale": 26.2}, fix="rebuild it with --input-range R")


@pytest.mark.parametrize("values, inside", [
    ([1, 2, 6], True),                       # spread exactly 5: the edge
    ([1, 2, 6.000001], False),               # just beyond
    ([1e12, 1e12 + 4], True),                # the spread, not the size, is the claim
    ([1e12, 1, 2], False),                   # the input
    ([Fraction(1, 3), Fraction(16, 3)], True),
    ([Fraction(1, 3), Fraction(16, 3) + Fraction(1, 10**30)], False),   # exact inputs are compared exactly
])
def test_a_spread_is_checked_at_its_edge_and_just_beyond(values, inside):
    reason = SPREAD.violation(_X(values), LABELS)
    assert (reason is None) == inside, reason


def test_an_interval_is_closed_or_half_open_as_recorded():
    closed = InputDomain((Field.real(["x"], -1, 1),))
    half = InputDomain((Field.real(["x"], 0, 1, hi_open=True),))
    assert closed.violation(_X([-1, 1]), LABELS) is None
    assert "outside [-1, 1]" in closed.violation(_X([-1, np.nextafter(1, 2)]), LABELS)
    assert half.violation(_X([0, np.nextafter(1, 0)]), LABELS) is None
    assert "outside [0, 1)" in half.violation(_X([0, 1]), LABELS)
    assert "outside [0, 1)" in half.violation(_X([np.nextafter(0, -1), 0.5]), LABELS)


def test_dimensions_no_field_names_must_be_zero():
    assert "out = 3" in SPREAD.violation(_X([1, 2], other=3.0), LABELS)


def test_sets_and_one_hot_tokens():
    signs = InputDomain((Field.one_of(["x"], (-1, 1)),))
    assert signs.violation(_X([1, -1, 1]), LABELS) is None
    assert "not one of {-1, 1}" in signs.violation(_X([1, 0]), LABELS)
    tokens = token_domain(["BOS", 1, 2], first="tokens:BOS", labels=("tokens:BOS", "tokens:1", "tokens:2"))
    labels = ("tokens:BOS", "tokens:1", "tokens:2")
    eye = np.eye(3)
    assert tokens.violation(eye[[0, 2, 1]], labels) is None
    assert "is not BOS" in tokens.violation(eye[[1, 2]], labels)
    assert "belongs to the first position only" in tokens.violation(eye[[0, 0, 1]], labels)
    assert "not 0 or 1" in tokens.violation(np.array([[1, 0, 0], [0, 0.5, 0.5]]), labels)
    assert "sets 2 of the one-hot" in tokens.violation(np.array([[1, 0, 0], [0, 1, 1]]), labels)


def test_pointers_stay_inside_the_sequence():
    P = ("p[1]", "p[2]")
    domain = InputDomain((Field.one_of(P, (0, 1)),), (PointersBack(P),))
    ok = np.array([[0, 0], [1, 0], [0, 1], [1, 0]])
    assert domain.violation(ok, P) is None
    assert "before the start" in domain.violation(np.array([[0, 0], [0, 1]]), P)
    assert "sets a pointer" in domain.violation(np.array([[1, 0], [1, 0]]), P)
    assert "not one" in domain.violation(np.array([[0, 0], [0, 0]]), P)


@pytest.mark.parametrize("domain, labels", [
    (SPREAD, LABELS),
    (InputDomain((Field.real(["x"], 0, 1, hi_open=True),)), LABELS),
    (InputDomain((Field.one_of(["x"], (-1, 1)),), claimed_from=3), LABELS),
    (InputDomain((Field.real(["x"], -5, 5),), arithmetic={"exact": None, "float64": 2 ** 52, "float32": 0.5}), LABELS),
    (token_domain(["BOS", 1, 2], first="tokens:BOS", labels=("tokens:BOS", "tokens:1", "tokens:2")),
     ("tokens:BOS", "tokens:1", "tokens:2")),
    (InputDomain((Field.real(["v"], -1, 1), Field.one_of(["start"], (0, 1)), Field.one_of(["p[1]", "p[2]"], (0, 1))),
                 (FirstOnly("start"), PointersBack(("p[1]", "p[2]")))), ("v", "start", "p[1]", "p[2]")),
])
def test_samples_lie_inside_and_the_json_form_reads_back(domain, labels):
    X = domain.sample(np.random.default_rng(0), 16, 7, labels)
    assert X.shape == (16, 7, len(labels)) and domain.violation(X, labels) is None
    back = InputDomain.from_dict(domain.to_dict())
    assert back == domain and back.describe(labels) == domain.describe(labels)


def test_evaluators_refuse_outside_the_domain_and_run_it_when_allowed():
    net = _copy_net(SPREAD)
    for dtype in ("exact", "float64", "float32"):
        with pytest.raises(NetworkError, match=r"above 5, outside the inputs network 'copy'.*allow_outside=True"):
            evaluate(net, _X([0, 10]), dtype)
        out = evaluate(net, _X([0, 10]), dtype, allow_outside=True)
        assert float(out[0, 1]) == 5.0
    assert net.outside_claim(_X([0, 10])).startswith("max - min of x")
    assert net.outside_claim(_X([0, 5])) is None


def test_the_refusal_is_one_short_line_even_for_huge_numbers():
    net = _copy_net(SPREAD)
    with pytest.raises(NetworkError) as caught:
        evaluate(net, np.array([[10 ** 999, 0], [1, 0]], dtype=object), "exact")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400 and "9.99999e+998" in message


def test_short_numbers():
    assert short(10 ** 999) == "1e+999" and short(-(10 ** 400) * 7) == "-7e+400"
    assert short(Fraction(1, 3)) == "1/3" and short(2 ** 70) == "1.18059e+21" and short(12) == "12"


def test_a_network_saves_and_loads_its_domain(tmp_path):
    from expressivity.export import load_network, save_network

    net = _copy_net(SPREAD)
    back = Network.from_dict(net.to_dict(InlineArrays()), InlineArrays())
    assert back.input_domain == SPREAD
    save_network(net, tmp_path / "n")
    assert load_network(tmp_path / "n").input_domain == SPREAD


def test_a_composition_reads_the_first_networks_input():
    first = _copy_net(SPREAD)
    second = _copy_net(InputDomain((Field.real(["x"], 0, 1),)))
    assert first.then(second).input_domain == SPREAD
    assert _copy_net(None).then(second).input_domain is None   # no claim on the input: none on the composition
    assert first.then(_copy_net(None)).no_claim is None       # the second states no claim: the first's holds


def test_a_composition_whose_second_network_has_a_narrower_claim_carries_none():
    # a fresh audit (2026-11-28): shift (hardmax, any real) then a reverse built for spread <= 1 was
    # "any real [exact]"; on a spread of 1e6 it answered 1.000005e6 where reverse(shift(X)) starts 5
    first = _copy_net(SPREAD)
    second = _copy_net(InputDomain((Field.real(["x"], 0, 1),)))
    both = first.then(second)
    X = np.array([[0.5, 0.0], [0.7, 0.0]])
    assert "whose claim covers only inputs in its domain" in both.no_claim and both.outside_claim(X) == both.no_claim
    with pytest.raises(NetworkError, match="carries no claim on any input"):
        evaluate(both, X)
    assert evaluate(both, X, allow_outside=True).shape == (2, both.d_out)
    assert both.then(_copy_net(None)).no_claim == both.no_claim   # kept through a further composition
    with pytest.raises(NetworkError, match="composes with a Network, got int"):
        first.then(3)


def test_malformed_domains_are_one_line_errors():
    with pytest.raises(NetworkError, match="not input dimensions"):
        _copy_net(InputDomain((Field.real(["y"]),)))
    with pytest.raises(NetworkError, match="InputDomain"):
        _copy_net({"fields": []})
    for bad in ({"fields": "x"}, {"fields": [{"dims": ["x"], "kind": "complex"}]}, None, [1]):
        with pytest.raises(ExpressivityError):
            InputDomain.from_dict(bad)
    with pytest.raises(NetworkError, match="empty"):
        Field.real(["x"], 1, 0)
    with pytest.raises(NetworkError, match="finite"):
        Field.real(["x"], float("nan"))
    with pytest.raises(NetworkError, match="rule"):
        rule_from_dict({"kind": "teleport"})


def test_answers_read_output_columns_as_values():
    from expressivity.network.answers import Answers

    sort = Answers("categorical", (1, 2, 3), first="BOS")
    out = np.array([[0, 0, 0], [1, 0, 0], [0, 0.9, 0.1], [0.2, 0.3, 0.4]])
    assert sort.decode(out) == (["BOS", 1, 2, None], [0, 0, 1, 2])      # no column reaches 1/2: None
    assert Answers("categorical", ()).decode(np.zeros((2, 0)))[0] == [None, None]   # always None: no column
    assert Answers("numerical").decode(np.array([[Fraction(1, 3)], [2.0]], dtype=object))[0] == [Fraction(1, 3), 2.0]
    answers, argmax = Answers("class").decode(np.array([[0.1, 0.7], [0.9, 0.1]]))
    assert answers == argmax == [1, 0] and all(type(v) is int for v in answers)
    assert Answers.from_dict(sort.to_dict()) == sort


def test_an_arithmetic_outside_the_claim_or_beyond_its_magnitude_is_a_violation():
    domain = InputDomain((Field.real(["x"]),), arithmetic={"exact": None, "float64": 100})
    X = np.array([[50.0, 0.0], [-101.0, 0.0]])
    assert domain.violation(X, LABELS) is None and domain.violation(X, LABELS, "exact") is None
    assert "magnitude 101 is beyond 100, the largest float64" in domain.violation(X, LABELS, "float64")
    assert domain.violation(X[:1], LABELS, "float64") is None
    assert "holds in exact, float64 arithmetic, not float32" in domain.violation(X, LABELS, "float32")
    assert InputDomain((Field.real(["x"]),)).violation(X, LABELS, "float32") is None   # no arithmetic recorded
    with pytest.raises(NetworkError, match="arithmetic names"):
        InputDomain((Field.real(["x"]),), arithmetic={"float16": None})


def test_the_spread_of_float_inputs_is_compared_exactly():
    """An audit: 5 - (-2^-60) rounds to 5 in float64, so an input spanning more than the recorded 5 was inside."""
    from expressivity.constructions.circuits.build import build_reverse, embed

    net, _ = build_reverse(2, "auto", input_range=5.0)
    assert net.outside_claim(embed(net, [5.0, 0.0])) is None
    reason = net.outside_claim(embed(net, [5.0, -2.0**-60]))
    assert reason is not None and "is 5 + 8.7e-19, above 5" in reason


def test_a_token_with_no_one_hot_dimension_set_is_outside_unless_the_field_is_optional():
    """Mutation testing (2026-11-28): the optional flag inverted passed every test; an all-zero token would then
    run, outside the claim, and exit 0."""
    labels = ("tokens:a", "tokens:b")
    required = InputDomain((Field.one_hot(labels),))
    optional = InputDomain((Field.one_hot(labels, optional=True),))
    empty = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert "sets 0 of the one-hot" in required.violation(empty, labels)
    assert optional.violation(empty, labels) is None
    assert "sets 2 of the one-hot" in optional.violation(np.array([[1.0, 1.0]]), labels)


def test_the_domains_own_edges_are_inside_it():
    """Mutation testing (2026-11-28): refusing a one-point interval, a zero spread or a magnitude exactly at the
    arithmetic's limit, or accepting a negative claimed_from, passed every test."""
    point = InputDomain((Field.real(["x"], 1, 1),))
    assert point.violation(_X([1, 1]), LABELS) is None and "outside [1, 1]" in point.violation(_X([1, 2]), LABELS)
    equal = InputDomain((Field.real(["x"], spread=0),))
    assert equal.violation(_X([3, 3]), LABELS) is None and equal.violation(_X([3, 4]), LABELS) is not None
    limit = InputDomain((Field.real(["x"]),), arithmetic={"exact": None, "float64": 100})
    assert limit.violation(_X([100, -100]), LABELS, "float64") is None
    assert limit.violation(_X([np.nextafter(100, 200)]), LABELS, "float64") is not None
    with pytest.raises(NetworkError, match="claimed_from must be an integer >= 0"):
        InputDomain((Field.real(["x"]),), claimed_from=-1)
    assert InputDomain((Field.real(["x"]),), arithmetic={"exact": None, "float32": 10}).exact_only
    assert not InputDomain((Field.real(["x"]),), arithmetic={"exact": None, "float64": 10}).exact_only


def test_off_ramps_refuses_entries_on_a_ramp_or_within_drift_above_a_breakpoint_and_keeps_grid_points():
    """Yun's softened quantizer ramps its steps just below each k/N; there (and within float64's drift above a
    breakpoint, whence rounding carries an entry down onto the ramp) the network is not the verified one."""
    from expressivity.network.sequence_rules import OffRamps

    rule = OffRamps(("x",), 4, 1e-3, 1e-6)
    domain = InputDomain((Field.real(("x",), 0, 1, hi_open=True),), (rule,))

    def why(*values):
        return domain.violation(np.array([[v] for v in values]), ("x",))

    assert why(0.0, 0.25, 0.5, 0.75) is None and why(Fraction(1, 4), 0.1, 0.3) is None
    assert "below the quantizer breakpoint 1/2: on the softened ramp" in why(0.1, 0.4995)
    assert "token 1" in why(0.1, 0.4995) and why(0.4989) is None            # just outside the ramp
    assert "above the quantizer breakpoint 1/4: within float64's drift" in why(0.25 + 1e-7)
    assert why(0.25 + 2e-6) is None
    # the float64 value is judged, which the network receives: 1/4 - 10^-30 is 0.25, on the breakpoint (a fuzz)
    assert why(Fraction(1, 4) - Fraction(1, 10 ** 30)) is None and "1/4" in why(Fraction(1, 4) - Fraction(1, 10 ** 9))
    assert why(1e-300) is None   # the first grid layer snaps an entry above 0 before any drift
    positional = OffRamps(("x",), 4, 1e-3, 0.0, positional=True)        # token j's entry is x + j
    said = positional.check(np.array([0.1, 0.9995]).reshape(1, 2, 1), ("x",), lambda b, t: f"token {t}")
    assert said.startswith("token 1 has x = 0.9995") and "below the quantizer breakpoint 2:" in said   # 1.9995
    assert "below the quantizer breakpoint 5/4:" in positional.check(np.array([0.1, 0.2495]).reshape(1, 2, 1), ("x",),
                                                                       lambda b, t: f"token {t}")   # 1.2495
    moved = np.array([0.1, 0.2495]).reshape(1, 2, 1)
    positional.impose(moved, ("x",), np.random.default_rng(0), None)
    assert moved[0, 1, 0] == 0.125   # token 1's cell [1, 1.25): its centre 1.125, less the token's index
    X = domain.sample(np.random.default_rng(0), 64, 3, ("x",))
    X[0, 0, 0], X[1, 2, 0] = 0.4999, 0.25 + 1e-8
    rule.impose(X, ("x",), np.random.default_rng(0), domain)
    assert domain.violation(X, ("x",)) is None and X[0, 0, 0] == 0.375
    assert rule_from_dict(rule.to_dict()) == rule and InputDomain.from_dict(domain.to_dict()) == domain
    for bad in ({"dims": ["x"], "N": 4, "left": 0.3, "right": 0}, {"dims": ["x"], "N": 0, "left": 0, "right": 0},
                {"dims": ["x"], "N": 4, "left": float("nan"), "right": 0}, {"dims": "x", "N": 4}):
        with pytest.raises(NetworkError, match="off-ramps"):
            rule_from_dict({"kind": "off-ramps", **bad})


def test_off_ramps_refuses_a_float64_breakpoint_when_delta_is_not_a_power_of_two():
    """An audit (2026-11-29): at N = 6 the breakpoint 1/2 is a float64 number, which float64 drift moves onto the
    ramp below it (the exemption of exact breakpoints holds for power-of-two N only): the softened network answered
    3,347 for a target in [0, 1] at (0, 1/2), "within the claim"."""
    from expressivity.network.sequence_rules import OffRamps

    def why(rule, *values):
        return InputDomain((Field.real(("x",), 0, 1, hi_open=True),), (rule,)).violation(
            np.array([[v] for v in values]), ("x",))

    six, eight = OffRamps(("x",), 6, 1e-3, 1e-6), OffRamps(("x",), 8, 1e-3, 1e-6)
    assert "on the quantizer breakpoint 1/2: with delta = 1/6 (not a power of two)" in why(six, 0.0, 0.5)
    assert why(six, 0.0, 0.51) is None and why(six, 0.0) is None           # the first cell's 0 is snapped first
    assert why(eight, 0.0, 0.5) is None                                     # a power of two passes exactly
    assert "or on one or within 1e-06 above it" in six.describe() and "on one" not in eight.describe()
    assert why(OffRamps(("x",), 6, 1e-3, 0.0), 0.5) is None                 # no drift band: nothing to move it
    X = np.array([[[0.0], [0.5]]])
    six.impose(X, ("x",), np.random.default_rng(0), None)
    assert X[0, 1, 0] == 3.5 / 6                                            # moved to its cell's centre


def test_off_ramps_names_the_float64_value_it_measured_where_it_is_not_the_typed_one():
    """An audit (2026-11-29): "x[0] = 1/3, 1.85e-17 below the quantizer breakpoint 1/3" read as a contradiction:
    the distance is the float64 value's, which the network receives."""
    from expressivity.network.sequence_rules import OffRamps

    domain = InputDomain((Field.real(("x",), 0, 1, hi_open=True),), (OffRamps(("x",), 3, 1e-7, 1e-8),))
    said = domain.violation(np.array([[Fraction(1, 3)], [Fraction(1, 2)]], dtype=object), ("x",))
    assert "x = 1/3 (float64 0.3333333333333333), 1.85e-17 below the quantizer breakpoint 1/3" in said
    assert "(float64" not in domain.violation(np.array([[0.3333333333]]), ("x",))


def test_a_listed_inputs_rule_reads_back_and_refuses_malformed_json():
    """The rule a RASP network lists the inputs where its program raises with (rasp/compiler.py)."""
    from expressivity.network.sequence_rules import NotListed, rule_from_dict

    rule = NotListed(("t0", "t1", "t2"), ((0, 2), (0, 1, 2), (0, 2)), "rasp.evaluate raises")
    assert rule.inputs == ((0, 1, 2), (0, 2)) and rule_from_dict(rule.to_dict()) == rule
    for bad in ({"kind": "not-listed", "dims": ["t0"], "inputs": "0,1"},
                {"kind": "not-listed", "dims": ["t0", "t1"], "inputs": [[0, 5]]},
                {"kind": "not-listed", "dims": "t0", "inputs": []},
                {"kind": "not-listed", "dims": ["t0", "t1"], "inputs": [[0, True]]}):
        with pytest.raises(NetworkError, match="not-listed"):
            rule_from_dict(bad)


def test_a_float_limit_is_shown_rounded_down_so_the_value_shown_is_accepted():
    # A fresh audit (2026-11-29): the reversal's domain said "holds in float64 for |value| up to 56295" for a limit of
    # 56294.995..., and 56295 typed back was refused
    import re

    import numpy as np

    from expressivity.constructions.circuits import CIRCUITS

    net, _ = CIRCUITS["reverse"].build(6, "auto", input_range=5.0)
    limit = net.input_domain.arithmetic["float64"]
    shown = float(re.search(r"float64 for \|value\| up to ([0-9.e+]+)", net.input_domain.describe()).group(1))
    assert shown <= limit and shown > limit * (1 - 1e-5)
    X = np.zeros((6, net.d_in))
    X[:, net.input_labels.index("x")] = shown - np.arange(6) * 0.5
    assert net.outside_claim(X, "float64") is None   # the value the text gives is inside the claim
    from expressivity.network.domain import _short_down
    assert _short_down(56294.995) == "56294.9" and _short_down(2.0) == "2" and _short_down(1e308) == "1e+308"
