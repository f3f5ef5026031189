"""rasp.compile end to end: tracr's interface, refusals, verification that catches miscompiles."""

import math
from dataclasses import replace
from fractions import Fraction as F

import numpy as np
import pytest

from expressivity import rasp
from expressivity.network import FeedForwardLayer
from expressivity.network.exact import forward_exact
from expressivity.rasp import library as lib
from expressivity.network.exact_scaled import forward_scaled
from expressivity.rasp.language import RASPError
from expressivity.rasp.layout import BOS
from expressivity.rasp.verify import verify


def test_a_tracr_script_ports_by_its_import():
    # as in tracr's README, with `from tracr.rasp import rasp` replaced
    all_true = rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE)
    length = rasp.SelectorWidth(all_true).named("length")
    program = rasp.Aggregate(rasp.Select(rasp.indices, (length - rasp.indices - 1).named("opp"), rasp.Comparison.EQ),
                             rasp.tokens).named("reverse")
    model = rasp.compile(program, vocab={1, 2, 3}, max_seq_len=5, bos="BOS")
    out = model.apply(["BOS", 1, 2, 3])
    assert out.decoded == ["BOS", 3, 2, 1]
    assert len(out.residuals) == len(model.network.layers) + 1 and out.residuals[0].shape == (4, model.network.d)
    assert "length:3" in model.residual_labels and "reverse:1" in model.residual_labels
    assert model.report.ok and model.report.check("outputs equal rasp.evaluate").arithmetic.startswith("exact")


def test_numerical_outputs_decode_exactly():
    model = rasp.compile(lib.make_frac_prevs(rasp.tokens == "x"), vocab={"a", "x"}, max_seq_len=4)
    assert model.apply(["BOS", "x", "a", "x"]).decoded == ["BOS", 1, F(1, 2), F(2, 3)]


def test_the_bos_position_stays_zero_in_every_sop_dimension():
    model = rasp.compile(lib.make_sort_freq(4), vocab={1, 2, 3}, max_seq_len=4)
    residuals = model.apply(["BOS", 3, 1, 3]).residuals
    net = model.network
    sop_dims = [k for k, lab in enumerate(net.labels) if lab not in ("one", BOS) and not lab.endswith("1/(w+1)")]
    for H in residuals:
        assert all(H[0, k] == 0 for k in sop_dims)


def test_verification_is_exhaustive_when_it_fits_and_counts_the_inputs():
    model = rasp.compile(lib.make_hist(), vocab={1, 2}, max_seq_len=4)
    check = model.report.checks[0]
    assert check.details["inputs"] == "exhaustive" and check.points == 2 + 4 + 8 + 16
    sampled = rasp.compile(lib.make_hist(), vocab={1, 2, 3}, max_seq_len=6, exhaustive_limit=10, samples=20, seed=3)
    assert sampled.report.checks[0].details["float64_points"] == 20


@pytest.mark.parametrize("vocab, L", [({"a", "b"}, 5), ({"a", "b", "c", "d"}, 6)])
def test_inputs_where_evaluate_fails_are_left_out_of_the_witness_as_of_the_claim(vocab, L):
    # before: refused at L = 5 (its exhaustive witness met the all-'a' input) and compiled at L = 6 (the
    # random sample missed it): whether a program compiled depended on the sample
    T = rasp.tokens
    hist = rasp.SelectorWidth(rasp.Select(T, T, rasp.Comparison.EQ)).named("hist")
    length = rasp.SelectorWidth(rasp.Select(T, T, rasp.Comparison.TRUE)).named("length")
    g = rasp.SequenceMap(lambda h, n: 12 // (h - 5) if n == 5 else 0, hist, length).named("g")
    model = rasp.compile(g, vocab=vocab, max_seq_len=L, samples=64)
    check = model.report.check("outputs equal rasp.evaluate")
    assert check.passed and check.points > 0
    if len(vocab) == 2:   # exhaustive: 62 inputs, of which the two of five equal tokens fail
        assert check.details["inputs"] == "exhaustive, less 2 where rasp.evaluate fails" and check.points == 60
    with pytest.raises(RASPError, match=r"fails on every one of the 6 inputs checked .*fix the program"):
        rasp.compile(rasp.Map(lambda x: 1 // 0, T).named("bad"), vocab={1, 2}, max_seq_len=2)


def test_verification_catches_a_broken_weight():
    model = rasp.compile(lib.make_reverse(), vocab={1, 2, 3}, max_seq_len=3)
    layers = list(model.network.layers)
    k = next(i for i, layer in enumerate(layers) if isinstance(layer, FeedForwardLayer))
    W_2 = np.array(layers[k].W_2, dtype=float)
    W_2[np.nonzero(W_2)[0][0]] *= -1
    layers[k] = replace(layers[k], W_2=W_2)
    broken = replace(model, network=replace(model.network, layers=tuple(layers), claimed_weights=None))
    checks, _ = verify(broken)
    assert checks[0].failures > 0 and not checks[0].passed and checks[0].examples


def test_a_categorical_mean_of_different_values_is_refused_not_miscompiled():
    # tracr compiles this (silently wrong); the interpreter averages 1 and 3 to 2
    mean_token = rasp.Aggregate(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.TRUE), rasp.tokens)
    with pytest.raises(RASPError, match=r"refused: Aggregate .* is categorical.*on the input \[1, 2\] query 0 selects"):
        rasp.compile(mean_token, vocab={1, 2, 3}, max_seq_len=3)
    with pytest.raises(RASPError, match="over the limit"):       # too many inputs to check: refused by rule
        rasp.compile(mean_token, vocab={1, 2, 3}, max_seq_len=3, exhaustive_limit=10)


def test_causal_compilation_is_proven_against_the_bidirectional_meaning():
    with pytest.raises(RASPError, match="refused: causal=True.*'length'.*query 0 selects key 1"):
        rasp.compile(lib.make_reverse(), vocab={1, 2}, max_seq_len=3, causal=True)      # tracr#19
    causal = rasp.compile(lib.make_frac_prevs(rasp.tokens == "x"), vocab={"a", "x"}, max_seq_len=4, causal=True)
    assert all(layer.causal for layer in causal.network.layers if layer.kind == "attention") and causal.report.ok


@pytest.mark.parametrize("kwargs, words", [
    ({"vocab": {1}, "max_seq_len": 0}, "max_seq_len"),
    ({"vocab": {1}, "max_seq_len": 10**6}, "max_seq_len"),
    ({"vocab": set(), "max_seq_len": 3}, "empty"),
    ({"vocab": {1, "BOS"}, "max_seq_len": 3}, "BOS"),
    ({"vocab": {1, math.nan}, "max_seq_len": 3}, "finite"),
    ({"vocab": "abc", "max_seq_len": 3}, "set or list"),
    ({"vocab": {1}, "max_seq_len": 3, "attention": "linear"}, "hardmax"),
    ({"vocab": {1}, "max_seq_len": 3, "attention": "softmax", "arithmetic": "exact"}, "does not apply"),
])
def test_bad_arguments_are_refused_in_one_line(kwargs, words):
    with pytest.raises(RASPError, match=words) as info:
        rasp.compile(lib.make_hist(), **kwargs)
    assert "\n" not in str(info.value)


def test_apply_refuses_inputs_it_was_not_built_for():
    model = rasp.compile(lib.make_hist(), vocab={1, 2}, max_seq_len=2)
    for bad in ([1, 2], ["BOS", 7], ["BOS", 1, 1, 1]):
        with pytest.raises(RASPError):
            model.apply(bad)


def test_softmax_scale_comes_from_the_margin_and_meets_its_bound():
    model = rasp.compile(lib.make_sort(rasp.tokens, rasp.tokens, max_seq_len=4, min_key=1), vocab={1, 2, 3},
                         max_seq_len=4, attention="softmax")
    report = model.report
    lam = report.constants["scale"]
    assert math.isfinite(lam) and all(layer.inverse_temperature == lam for layer in model.network.layers
                                      if layer.kind == "attention")
    assert report.bounds["softmax_weight_off_selected_max"] == pytest.approx(4 * math.exp(-lam))
    assert report.bounds["softmax_weight_off_selected_max"] <= report.bounds["delta"] * (1 + 1e-12)
    assert report.checks[0].arithmetic.startswith("float64") and report.ok
    assert model.apply(["BOS", 3, 1, 2, 1]).decoded == ["BOS", 1, 1, 2, 3]


def test_the_scaled_integer_evaluator_equals_the_exact_reference():
    model = rasp.compile(lib.make_pair_balance(rasp.tokens, "(", ")"), vocab={"(", ")"}, max_seq_len=4)
    rng = np.random.default_rng(0)
    ids = np.concatenate([np.zeros((6, 1), int), rng.integers(1, 3, size=(6, 4))], axis=1)
    X = model.one_hot(ids).astype(int)
    assert (forward_scaled(model.network, X) == forward_exact(model.network, X, fast=False)).all()
    soft = rasp.compile(lib.make_hist(), vocab={1, 2}, max_seq_len=2, attention="softmax")
    with pytest.raises(Exception, match="hardmax"):
        forward_scaled(soft.network, X[:, :3, :3])


def test_float64_agrees_with_exact_on_ties_thanks_to_the_snap_constant():
    model = rasp.compile(lib.make_sort_freq(4), vocab={1, 2, 3}, max_seq_len=4)
    check = model.report.checks[0]
    assert check.details["float64_disagreements"] == 0 and check.details["float64_points"] > 0
    assert model.apply(["BOS", 1, 3, 3, 2], dtype="float64").decoded == ["BOS", 3, 3, 1, 2]


def test_full_numerical_tokens_and_a_program_with_no_layers():
    shifted = rasp.numerical(rasp.SequenceMap(lambda t, c: t + c, rasp.numerical(rasp.tokens),
                                              rasp.numerical(rasp.Full(2)))).named("plus_two")
    model = rasp.compile(shifted, vocab={1, 3}, max_seq_len=3)
    assert model.apply(["BOS", 3, 1]).decoded == ["BOS", 5, 3]
    identity = rasp.compile(rasp.indices, vocab={"a"}, max_seq_len=3)
    assert identity.network.layers == () and identity.apply(["BOS", "a", "a"]).decoded == ["BOS", 0, 1]


def test_a_numerical_selector_width_and_a_fused_map_on_it():
    width = rasp.numerical(rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.LEQ)))
    doubled = rasp.numerical(rasp.Map(lambda w: 2 * w + 1, rasp.SelectorWidth(
        rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.LT)))).named("doubled")
    assert rasp.compile(width.named("w"), vocab={1, 2, 3}, max_seq_len=4).apply(["BOS", 2, 1, 3]).decoded == \
        ["BOS", 2, 1, 3]
    model = rasp.compile(doubled, vocab={1, 2, 3}, max_seq_len=4)
    assert [b["sop"] for b in model.report.constants["blocks"]] == ["doubled", "doubled"]   # width + map: one MLP
    assert model.apply(["BOS", 2, 1, 3]).decoded == ["BOS", 3, 1, 5]


@pytest.mark.parametrize("numerical", [False, True])
def test_a_sequence_map_of_one_sop_with_itself(numerical):
    x = rasp.numerical(rasp.tokens) if numerical else rasp.tokens
    doubled = rasp.SequenceMap(lambda a, b: a + b, x, x).named("doubled")
    doubled = rasp.numerical(doubled) if numerical else doubled
    model = rasp.compile(doubled, vocab={1, 2, 5}, max_seq_len=3)
    assert model.apply(["BOS", 5, 1, 2]).decoded == ["BOS", 10, 2, 4]


def _random_program(rng, depth):
    """A random RASP program over tokens in {0, 1, 2}: maps, sequence maps, selects, widths, aggregates."""
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([rasp.tokens, rasp.indices, rasp.numerical(rasp.tokens), rasp.Full(rng.randint(0, 2))])
    kind = rng.randrange(5)
    a = _random_program(rng, depth - 1)
    if kind == 0:
        out = rasp.Map(rng.choice([lambda x: x + 1, lambda x: x > 1, lambda x: -x, lambda x: x % 2]), a)
        return rasp.numerical(out) if rng.random() < 0.3 else out
    b = _random_program(rng, depth - 1)
    if kind == 1:
        out = rasp.SequenceMap(rng.choice([lambda x, y: x + y, lambda x, y: x * y, lambda x, y: max(x, y)]), a, b)
        return rasp.numerical(out) if rng.random() < 0.3 else out
    select = rasp.Select(rasp.categorical(a), rasp.categorical(b), rng.choice(list(rasp.Comparison)))
    if kind == 2:
        return rasp.SelectorWidth(select)
    values = _random_program(rng, depth - 1)
    if kind == 3:
        return rasp.numerical(rasp.Aggregate(select, rasp.numerical(rasp.Map(lambda x: x == 1, values)), default=0))
    return rasp.Aggregate(select, rasp.categorical(values))


def test_random_programs_compile_exactly_or_are_refused_in_one_line():
    import itertools
    import random

    rng = random.Random(7)
    compiled = 0
    for _ in range(40):
        program = _random_program(rng, 3)
        try:
            model = rasp.compile(program, vocab={0, 1, 2}, max_seq_len=3)
        except RASPError as exc:
            assert "\n" not in str(exc)
            continue
        compiled += 1
        for n in (1, 2, 3):
            for seq in itertools.product((0, 1, 2), repeat=n):
                assert model.apply(["BOS", *seq]).decoded[1:] == list(rasp.evaluate(program, list(seq)))
    assert compiled >= 10


@pytest.mark.parametrize("options, needle", [({"samples": 0, "exhaustive_limit": 0}, "samples must be between 1"),
                                             ({"samples": -1}, "samples"), ({"exact_ops": float("nan")}, "exact_ops"),
                                             ({"exhaustive_limit": -5}, "exhaustive_limit"), ({"seed": -1}, "seed")])
def test_the_checks_arguments_are_refused_outside_the_commands_ranges(options, needle):
    """An audit (2026-11-28): samples=0 with exhaustive_limit=0 checked no input and blamed the program ("fails on
    every one of the 0 inputs checked"); samples=-1 and exact_ops=nan were taken."""
    from expressivity import rasp

    program = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)).named("same")
    with pytest.raises(rasp.RASPError, match=needle):
        rasp.compile(program, [1, 2], 3, **options)


def _division_by(token):
    return rasp.Map(lambda x: 12 // (x - token), rasp.tokens).named("q")


def test_the_inputs_where_evaluate_raises_are_listed_in_the_domain_and_refused(tmp_path):
    """An audit (2026-11-29): ``12 // (x - 2)`` compiled and verified "on every input where evaluate returns", and
    `run` answered [BOS, -12, None, 12] on BOS 1 2 3 "within the claim", where the program has no output. Checked
    on every input, those inputs are listed in the network's domain: refused, or marked outside the claim."""
    from expressivity.export import load_network, save_network
    from expressivity.network import evaluate

    model = rasp.compile(_division_by(2), vocab={1, 2, 3}, max_seq_len=3)
    net = model.network
    every = [s for n in range(1, 4) for s in __import__("itertools").product((1, 2, 3), repeat=n)]
    failing = [s for s in every if 2 in s]
    assert len(failing) == 25 and net.no_claim is None
    assert "the 25 inputs where it raises are listed" in model.report.claim
    for loaded in (net, (save_network(net, tmp_path / "q"), load_network(tmp_path / "q"))[1]):
        for seq in every:
            X = model.one_hot([[0, *seq]])
            reason = loaded.outside_claim(X[0])
            assert (reason is not None) == (2 in seq), seq
            if 2 in seq:
                assert "where rasp.evaluate raises (e.g. q: its function fails on (2,))" in reason
                with pytest.raises(Exception, match="the claim leaves them out"):
                    evaluate(loaded, X[0], "exact")
            else:
                assert model.apply(["BOS", *seq]).decoded[1:] == rasp.evaluate(model.program, list(seq))
    sample = net.input_domain.sample(np.random.default_rng(0), 200, 3, net.input_labels)
    assert net.input_domain.violation(sample, net.input_labels) is None   # examples drawn inside the claim


def test_a_partial_function_checked_on_samples_leaves_the_network_without_a_claim():
    """Where the inputs are sampled, those where evaluate raises are not all known: the network claims none."""
    sampled = rasp.compile(_division_by(2), vocab=set(range(1, 10)), max_seq_len=4)
    assert sampled.report.checks[0].details["inputs"].startswith("64 random inputs")
    assert sampled.network.no_claim.startswith("q's function raises on (2,), so the program has no output on some")
    assert sampled.report.claim.startswith("none on any one input")
    total = rasp.compile(rasp.Map(lambda x: 12 // (x + 1), rasp.tokens).named("q"), vocab=set(range(1, 10)),
                         max_seq_len=4)
    assert total.network.no_claim is None   # a function that raises on no value keeps the claim


@pytest.mark.parametrize("make", [
    lambda: rasp.numerical(rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ),
                                          rasp.numerical(rasp.Map(lambda x: 1, rasp.tokens)).named("one"),
                                          default=0)).named("frac"),
    lambda: rasp.Map(lambda i: "BOS" if i == 0 else "x", rasp.indices).named("tokens"),
    lambda: rasp.SequenceMap(lambda a, b: f"{a}{b}", rasp.Map(lambda x: x, rasp.tokens).named("a"),
                             rasp.Map(lambda x: x + "!", rasp.tokens).named("a#1")).named("a"),
])
def test_sops_named_like_the_residual_stream_s_own_labels_compile(make):
    """An audit (2026-11-29): a SOp named "one" (the constant dimension), a Map named "tokens" with the value "BOS"
    (the BOS dimension), or names that the "#k" suffixes met again, raised an AssertionError traceback."""
    program = make()
    model = rasp.compile(program, vocab={"a", "b"}, max_seq_len=3)
    assert len(set(model.network.labels)) == len(model.network.labels)
    for seq in (["a"], ["b", "a"], ["a", "b", "b"]):
        assert model.apply(["BOS", *seq]).decoded[1:] == rasp.evaluate(program, seq)


def test_a_function_that_raises_only_on_values_never_reached_keeps_a_verified_claim():
    """A review (2026-11-29): 12 // x on a selector width (never 0, but 0 is in its value set) lost its claim although
    every input was checked, none failing, and the reason said "checked on samples"."""
    width = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)).named("w")
    model = rasp.compile(rasp.Map(lambda x: 12 // x, width).named("q"), vocab={1, 2, 3}, max_seq_len=3)
    assert model.network.no_claim is None and model.report.checks[0].details["inputs"] == "exhaustive"


def test_examples_drawn_from_a_densely_listed_domain_are_inside_the_claim():
    """A review (2026-11-29): where most inputs make evaluate raise, random redraws left listed inputs in the
    examples, and `show` refused its own default input."""
    program = rasp.Map(lambda x: 12 // (1 - min(x - 1, 1)), rasp.tokens).named("q")   # only token 1 returns
    net = rasp.compile(program, vocab={1, 2, 3, 4, 5}, max_seq_len=4).network
    listed = next(r for r in net.input_domain.rules if r.kind == "not-listed")
    assert len(listed.inputs) == 780 - 4
    for n in (2, 3, 4, 5):
        sample = net.input_domain.sample(np.random.default_rng(n), 200, n, net.input_labels)
        assert net.input_domain.violation(sample, net.input_labels) is None, n
    assert "an input not among the 776 where rasp.evaluate raises" in net.input_domain.fix


def test_a_linear_sequence_map_with_float_coefficients_is_refused_for_what_it_is():
    """A fresh audit (2026-11-29): LinearSequenceMap(a, b, 0.1, 0.2) was refused with "use a linear function"; the
    cause is evaluate's float64 a*x + b*y, which is not exactly linear. Fractions (or dyadic floats) compile."""
    from fractions import Fraction

    a = rasp.numerical(rasp.Map(lambda t: t, rasp.tokens)).named("a")
    b = rasp.numerical(rasp.Map(lambda i: i, rasp.indices)).named("b")
    with pytest.raises(RASPError, match=r"float coefficients \(0.1, 0.2\).*Fraction\(1, 10\)"):
        rasp.compile(rasp.numerical(rasp.LinearSequenceMap(a, b, 0.1, 0.2)), vocab={1, 2, 3}, max_seq_len=3)
    for fst, snd in ((Fraction(1, 10), Fraction(1, 5)), (0.5, 0.25)):
        assert rasp.compile(rasp.numerical(rasp.LinearSequenceMap(a, b, fst, snd)), vocab={1, 2, 3},
                            max_seq_len=3).report.ok
