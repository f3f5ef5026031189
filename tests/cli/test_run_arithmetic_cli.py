"""Float answers of constructions whose claim is exact or bounded: ``run`` checks a float answer of an
exact claim against exact arithmetic on the input as typed (refusing where they differ), picks exact
arithmetic by default where the claim holds only there, and the circuits' float claims stop where
rounding could exceed the proven bound (a fresh audit, 2026-11-28: each case answered wrongly with
``within_claim`` true before)."""

import json
from fractions import Fraction
from pathlib import Path

import pytest

from tests.cli_runner import cli_run as run
from tests.cli_runner import one_line_error as _one_line


@pytest.fixture(scope="module")
def yun_sort(tmp_path_factory) -> Path:
    """Theorem 3's modified network for sort, n = 2, d = 1, delta = 1/2 (cells [0, 1/2) and [1/2, 1))."""
    root = tmp_path_factory.mktemp("yun")
    code, _, err = run("yun", "build", "--target", "sort", "--positional", "--n", "2", "--d", "1", "--delta", "1/2",
                       "--samples", "100", "--out", root / "out")
    assert code == 0, err
    return root / "out" / "delta_1_2" / "modified"


def test_a_yun_modified_network_runs_in_exact_arithmetic_by_default(yun_sort):
    code, out, err = run("run", yun_sort, "--input", "0.49999999999,0.3", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["dtype"] == "exact" and result["output"] == [["1/4"], ["1/4"]] and result["within_claim"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_float_yun_answer_is_refused_outside_its_exact_claim(yun_sort, dtype):
    """float32 rounded 0.49999999999 to 0.5, the next cell, and answered 0.75 for 1/4 within the claim."""
    _one_line(*run("run", yun_sort, "--input", "0.49999999999,0.3", "--dtype", dtype)[::2],
              f"the claim holds in exact arithmetic, not {dtype}")


@pytest.fixture(scope="module")
def hard_sum(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sum") / "sum"
    code, _, err = run("circuit", "sum", "--length", "3", "--out", folder)
    assert code == 0, err
    return folder


def test_a_float_answer_of_an_exact_claim_is_checked_against_exact_arithmetic(hard_sum):
    code, out, err = run("run", hard_sum, "--input", "0.1,0.2,0.4", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["checked_against_exact"] is True and result["within_claim"]
    assert result["input_rounding"]["values"] == 3 and result["input_rounding"]["dtype"] == "float64"
    assert result["exact_agreement"]["equal"] is False and 0 < result["exact_agreement"]["relative"] < 1e-15
    code, out, _ = run("run", hard_sum, "--input", "0.1,0.2,0.4")
    # 0.1 + 0.2 + 0.4 as typed is 7/10, which no double is: "the same answer" was said of it
    assert "gives the same answer" not in out
    assert "gives an answer within float64 rounding of this one (largest difference" in " ".join(out.split())
    code, out, _ = run("run", hard_sum, "--input", "0,0,0")
    assert "checked: exact arithmetic on the input as typed gives the same answer" in out


def test_an_exact_claims_float_answer_says_how_far_it_is_from_the_exact_one(hard_sum):
    """An audit: 1e17 + 1 + 0 is 100000000000000001; float64 answered 1e17 and `run` said exact arithmetic
    "gives the same answer"."""
    code, out, err = run("run", hard_sum, "--input", "100000000000000000,1,0", "--json")
    assert code == 0, err
    agreement = json.loads(out)["exact_agreement"]
    assert agreement["equal"] is False and agreement["largest_difference"] == 1.0
    assert "against 100000000000000001" in agreement["where"]


def test_a_float_answer_that_differs_from_the_exact_one_is_refused_then_marked(hard_sum):
    """The sum of 1e30, 1, -1e30 is 1; float64 answered -1.49e13 within the claim."""
    code, _, err = run("run", hard_sum, "--input", "1e30,1,-1e30")
    _one_line(code, err, "the float64 answer differs from the exact answer for the typed input")
    assert "1e+30 becomes 1e+30, 2e+13 away" in err
    assert "--dtype exact" in err
    code, out, err = run("run", hard_sum, "--input", "1e30,1,-1e30", "--allow-outside", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["within_claim"] is False and result["checked_against_exact"] is False
    assert "differs from the exact answer" in result["outside_claim"]
    code, out, err = run("run", hard_sum, "--input", "1e30,1,-1e30", "--dtype", "exact", "--json")
    assert code == 0 and json.loads(out)["output"] == [[1], [1], [1]], err


def test_show_checks_a_float_answer_of_an_exact_claim_as_run_does(hard_sum, tmp_path):
    """`show` drew the float64 sum of 1e30, 1, -1e30 (-1.49e13 for the exact 1) under "within the claim", which `run`
    refuses (a fresh audit, 2026-11-29)."""
    page = tmp_path / "p.html"
    code, _, err = run("show", hard_sum, "--input", "1e30,1,-1e30", "--out", page)
    _one_line(code, err, "the float64 answer differs from the exact answer for the typed input")
    assert "--allow-outside" in err and not page.exists()
    code, out, err = run("show", hard_sum, "--input", "1e30,1,-1e30", "--out", page, "--allow-outside", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False, err
    assert "differs from the exact answer" in json.loads(out)["outside_claim"] and 'id="outside-claim"' in page.read_text()
    code, out, err = run("show", hard_sum, "--input", "1,2,3", "--out", tmp_path / "q.html", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is True, err


def test_the_circuit_check_compares_with_the_target_of_the_values_as_given():
    """The target of 1e30, 1, -1e30 was computed in float64 (0, not 1). Then (an audit) the float64 answer,
    -1.5e13, "passed" within a rounding allowance of 5.3e15: an exact claim's float answer must now also be the
    exact one up to the answer's own rounding (as `run` checks), so it is refused, and exact arithmetic gives 1."""
    code, out, err = run("circuit", "sum", "--input", "1e30,1,-1e30", "--dtype", "exact", "--json")
    assert code == 0, err
    assert json.loads(out)["target"] == [1, 1, 1] and json.loads(out)["output"] == [1, 1, 1]
    for circuit, dtype in (("sum", "float64"), ("mean", "float64"), ("sum", "float32")):
        values = "1e30,1,-1e30" if dtype == "float64" else "1e9,1,-1e9"   # float32 answered 0 for 1
        code, out, err = run("circuit", circuit, "--input", values, "--dtype", dtype)
        _one_line(code, err, f"the {dtype} answer differs from the exact one")
        assert "use --dtype exact" in err and out == ""
    code, out, err = run("circuit", "sum", "--input", "1e3,1,-1e3", "--json")   # float64 carries this one
    assert code == 0 and max(abs(v - 1) for v in json.loads(out)["output"]) < 1e-12, err
    code, out, err = run("circuit", "mean", "--input", "1e17,1,-1e17", "--dtype", "exact", "--json")
    assert code == 0 and json.loads(out)["target"] == ["1/3"] * 3, err


def test_a_softmax_circuit_s_float_claim_stops_where_rounding_could_exceed_its_bound(tmp_path):
    """reverse of values near 1e15 answered 999999999999998.6 (outside the inputs) within a 1e-10 claim."""
    folder = tmp_path / "rev"
    code, _, err = run("circuit", "reverse", "--length", "6", "--out", folder)
    assert code == 0, err
    domain = json.loads((folder / "network" / "network.json").read_text())["input_domain"]
    limit = float(domain["arithmetic"]["float64"])
    assert 1e4 < limit < 1e5 and "float32" not in domain["arithmetic"]   # 1e-10 / (16 * 2^-53)
    near = ",".join(str(10 ** 15 + k % 2) for k in range(6))
    _one_line(*run("run", folder, "--input", near)[::2], "the largest float64 carries through this network")
    _one_line(*run("run", folder, "--input", "1,2,3,4,5,6", "--dtype", "float32")[::2],
              "the claim holds in float64 arithmetic, not float32")
    code, out, err = run("run", folder, "--input", "1,2,3,4,5,6", "--json")
    assert code == 0 and json.loads(out)["within_claim"], err
    # the circuit's own check refuses the arithmetic it would check vacuously, and runs where the bound allows it
    _one_line(*run("circuit", "reverse", "--dtype", "float32")[::2], "float32 rounding can exceed")
    code, out, err = run("circuit", "reverse", "--dtype", "float32", "--tolerance", "1e-3", "--json")
    assert code == 0 and json.loads(out)["ok"], err


@pytest.mark.parametrize("args, inputs, exact_only", [
    (["--memory", "fixed", "--readout", "linear"], "0.5,-0.25,1,0", False),
    (["--memory", "adaptive", "--length", "12"], '[[0.5, 1, 0, 0, 0, 0, 0, 0, 0, 0], [-1, 0, 1, 0, 0, 0, 0, 0, 0, 0], [0.25, 0, 0, 1, 0, 0, 0, 0, 0, 0]]', True),
])
def test_wang_e_claims_name_the_arithmetic_they_are_checked_in(tmp_path, args, inputs, exact_only):
    """In float32 a fixed memory answered -6.8 for +1 (bound 0.009) and the hardmax pointer chain -1 for 3/4."""
    code, _, err = run("wang-e", "build", *args, "--out", tmp_path / "net")
    assert code == 0, err
    domain = json.loads((tmp_path / "net" / "network" / "network.json").read_text())["input_domain"]
    assert set(domain["arithmetic"]) == ({"exact"} if exact_only else {"float64"})
    _one_line(*run("run", tmp_path / "net", "--input", inputs, "--dtype", "float32")[::2], "not float32")
    code, out, err = run("run", tmp_path / "net", "--input", inputs, "--json")
    assert code == 0, err
    assert json.loads(out)["dtype"] == ("exact" if exact_only else "float64")


def test_show_draws_an_exact_only_network_from_its_exact_pass(tmp_path):
    """A breakpoint at 1/3 is stored rounded: float64 put 0.3333333333333333 in the next cell (0.26722 where the
    exact answer is 0.25064), and show drew the float64 pass within the claim."""
    code, _, err = run("yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/3",
                       "--samples", "100", "--out", tmp_path / "y3")
    assert code == 0, err
    folder = tmp_path / "y3" / "delta_1_3" / "modified"
    code, out, err = run("run", folder, "--input", "0.3333333333333333; 0.9", "--json")
    assert code == 0, err
    result = json.loads(out)   # exact by default: the outputs are "p/q"
    assert result["dtype"] == "exact" and [round(float(Fraction(y)), 5) for (y,) in result["output"]] == [0.25064, 0.74936]
    code, out, err = run("show", folder, "--input", "0.3333333333333333; 0.9", "--out", tmp_path / "page.html")
    assert code == 0, err
    page = (tmp_path / "page.html").read_text()
    assert "0.2506" in page and "0.2672" not in page


def test_the_circuit_command_names_its_arithmetic_and_the_inputs_float32_rounded():
    """An audit: a hardmax reversal in float32 was labelled "max-subtracted softmax", and 16777217 (no float32 number)
    reached the network as 16777216 with nothing said."""
    code, out, err = run("circuit", "reverse", "--scale", "inf", "--dtype", "float32", "--input", "16777217,1,2", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["arithmetic"] == "PyTorch float32" and result["report"]["checks"][0]["arithmetic"] == "PyTorch float32"
    assert result["input_rounding"]["examples"] == [[16777217, 16777216.0]]
    code, out, err = run("circuit", "reverse", "--scale", "inf", "--dtype", "float32", "--input", "16777217,1,2")
    assert "note: 1 input value(s) are not float32 numbers" in " ".join(out.split())
    code, out, err = run("circuit", "reverse", "--dtype", "float32", "--tolerance", "1e-3", "--input", "1,2,3", "--json")
    assert code == 0 and json.loads(out)["arithmetic"] == "PyTorch float32, max-subtracted softmax", err
    assert "input_rounding" not in json.loads(out)


def test_a_typed_value_that_float64_rounds_out_of_the_domain_is_said_so(yun_sort):
    """An audit: 0.99999999999999999999 is inside [0, 1) but float64 reads it as 1; the refusal said "x[0] = 1,
    outside [0, 1)" with no word of the rounding."""
    softened = yun_sort.parent / "softened"   # softmax: float64 over [0, 1)
    code, _, err = run("run", softened, "--input", "0.99999999999999999999,0.3")
    _one_line(code, err, "--input: 2 value(s) are not float64 numbers (0.99999999999999999999 becomes 1.0), and the "
                         "rounded input is refused: token 0 has x[0] = 1, outside [0, 1)")
    assert "--dtype exact" not in err   # a softmax network has no exact pass
    # a domain [0, 1) with no ramps: the typed value is inside, its float64 rounding is not
    from dataclasses import replace
    from fractions import Fraction

    import numpy as np

    from expressivity.constructions.circuits.build import build_reverse_dot, embed
    from expressivity.errors import NetworkError
    from expressivity.inspect.run import run_network
    from expressivity.network.domain import Field, InputDomain

    net, _ = build_reverse_dot(2, "auto", input_range=1.0)
    net = replace(net, input_domain=InputDomain((Field.real(("x",), 0, 1, hi_open=True),)))
    X = embed(net, np.array([0.5, 0.3])).astype(object)
    X[0, net.input_labels.index("x")] = Fraction("0.99999999999999999999")
    with pytest.raises(NetworkError) as refused:
        run_network(net, X)
    assert str(refused.value).startswith("--input: 1 value(s) are not float64 numbers (0.99999999999999999999 becomes "
                                         "1.0), and the rounded input is refused: token 0 has x = 1, outside [0, 1)")
    code, _, err = run("run", yun_sort, "--input", "0.99999999999999999999,0.3")   # the modified one: exact
    assert code == 0, err


def test_an_answer_near_zero_left_by_cancelling_inputs_is_not_within_rounding(tmp_path):
    """A review: the agreement was 1e-4 of max(1, |exact|), so float32 answering 0 for -1/50000 (every digit wrong)
    was "within float32 rounding". It is now a fraction of the exact answer itself; an exact 0 must be answered 0."""
    code, out, err = run("circuit", "sum", "--input", "-1000,0.00002,1000,-0.00003", "--dtype", "float32")
    _one_line(code, err, "the float32 answer differs from the exact one")
    code, out, err = run("circuit", "sum", "--input", "0.1,0.2,-0.3")   # 4.4e-17 in float64, exactly 0
    _one_line(code, err, "against 0")
    folder = tmp_path / "sum"
    assert run("circuit", "sum", "--input", "1,2,3", "--out", folder)[0] == 0
    code, _, err = run("run", folder, "--input", "1000,-0.00002,-1000", "--dtype", "float32")
    _one_line(code, err, "the float32 answer differs from the exact")
    code, out, err = run("run", folder, "--input", "1,2,3", "--dtype", "float32", "--json")
    assert code == 0 and json.loads(out)["exact_agreement"]["relative"] <= 1e-4, err


def test_an_exact_claim_with_no_exact_pass_is_not_shown_as_checked(tmp_path):
    """A fuzz pass: the TransformerLens export of the sum circuit (its uniform hardmax became a softmax) answered
    -1.5e13 for 1e30 + 1 - 1e30 with exit 0 under "[exact]", unchecked; the saved network refuses it."""
    pytest.importorskip("transformer_lens")
    folder, tl = tmp_path / "sum", tmp_path / "sum_tl"
    assert run("circuit", "sum", "--length", "3", "--out", folder)[0] == 0
    code, _, err = run("export", folder, "--to", "transformer-lens", "--out", tl)
    assert code == 0, err
    for values in ("1e30,1,-1e30", "1,2,3"):
        code, out, err = run("run", tl, "--input", values)
        _one_line(code, err, "the network's claim is exact, but a float64 answer cannot be checked")
    code, out, err = run("run", tl, "--input", "1,2,3", "--allow-outside", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False, err
    assert "Arithmetic: its claim is exact" in " ".join((tl / "README.md").read_text().split())


def test_a_value_below_float64s_range_is_said_to_move_by_what_it_is_not_by_0(hard_sum):
    """1e-330 rounds to 0.0 in float64; the message said "1e-330 becomes 0.0, 0 away" (the difference
    underflowed when formatted: a fuzz pass, 2026-11-28)."""
    code, _, err = run("run", hard_sum, "--input", "1e-330,1,-1")
    _one_line(code, err, "1e-330 becomes 0.0, 1.0e-330 away")


@pytest.mark.parametrize("typed", ["1e4400", "1e-4400", "1e100000000", "1" * 4001])
def test_a_typed_number_past_four_thousand_digits_is_refused_in_one_line(hard_sum, typed):
    """Python will not print an int past 4,300 digits: `run --dtype exact --input 1e-4400,1,2` and
    `circuit sum --dtype exact --input 1e4400,1,2` ended in tracebacks, and 1e100000000 ran for minutes
    (a fuzz pass, 2026-11-28)."""
    for args in (("run", hard_sum, "--dtype", "exact", "--input", f"{typed},1,2"),
                 ("run", hard_sum, "--input", f"{typed},1,2"),
                 ("circuit", "sum", "--dtype", "exact", "--input", f"{typed},1,2")):
        code, _, err = run(*args)
        _one_line(code, err, "exact numbers are limited to that")
    code, out, err = run("circuit", "sum", "--dtype", "exact", "--input", "1e3999,1,2", "--json")
    assert code == 0, err
    assert [Fraction(v) for v in json.loads(out)["output"]] == [10**3999 + 3] * 3


@pytest.mark.parametrize("typed", ["1_000", "\u0661\u0662", "1 / 3", "0x10"])
def test_a_number_python_reads_but_nobody_types_is_refused(hard_sum, typed):
    """`Fraction("1_000")` is 1000 and `Fraction("١٢")` (Arabic-Indic digits) is 12, so `--input 1_000,1,2`
    ran as 1000 (a fuzz pass, 2026-11-28): typed numbers are plain ASCII decimals or p/q."""
    for args in (("run", hard_sum, "--input", f"{typed},1,2"),
                 ("circuit", "sum", "--dtype", "exact", "--input", f"{typed},1,2")):
        code, _, err = run(*args)
        _one_line(code, err, "not a")


@pytest.mark.parametrize("typed", ["1e100000000", "1_0", "\u0661"])
def test_yun_inputs_are_read_as_every_typed_number_is(typed):
    """`yun contextual --input` read coordinates with `Fraction` directly: `1e100000000` took minutes to
    expand and `1_0` was 10 (2026-11-28)."""
    code, _, err = run("yun", "contextual", "--n", "2", "--d", "1", "--delta", "1/2", "--input", f"{typed};0")
    _one_line(code, err, "token 0 coordinate 0")
