"""Property-based fuzzing of input domains: ``run`` never prints a wrong number with ``within_claim: true``.

For saved circuits (softmax ones built for the range of their default values or a given
``--input-range``, the hardmax limit, the uniform and sharp-max ones), hypothesis draws ``--input``
texts mixing ordinary, huge, tiny, fractional and malformed numbers, sometimes of the wrong length,
and runs ``expressivity run --json`` in-process. What must hold:

* the exit code is 0 or 2; exit 2 prints one short ``error:`` line (numbers shortened);
* exit 0 inside the claim (``within_claim: true``): every output is within the construction's
  proven bound of the exact target, plus the rounding allowance of the arithmetic it ran in
  (:func:`~expressivity.constructions.circuits.check.rounding_allowance`'s formula, computed here in
  exact arithmetic so that it cannot overflow);
* exit 0 outside it happens only with ``--allow-outside`` / ``--allow-length``, and says why.

Profiles (``EXPRESSIVITY_FUZZ``): ``ci`` (default) and ``long``, as in :mod:`tests.fuzz.test_cli_fuzz`.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expressivity.cli.main import cli
from expressivity.constructions.circuits import CIRCUITS

EXAMPLES = {"ci": 25, "long": 400}[os.environ.get("EXPRESSIVITY_FUZZ", "ci")]
L = 5
EPS = {"float64": Fraction(1, 2 ** 53), "float32": Fraction(1, 2 ** 24), "exact": Fraction(0)}
FOLDERS = {   # name -> (circuit, extra build options, dtypes to run in)
    "reverse": ("reverse", [], ("float64", "float32")),
    "reverse-wide": ("reverse", ["--input-range", "1e6"], ("float64",)),
    "reverse-dot": ("reverse-dot", [], ("float64",)),
    "shift": ("shift", [], ("float64",)),
    "shift-hard": ("shift", ["--scale", "inf"], ("exact", "float64")),
    "max": ("max", [], ("float64",)),
    "mean": ("mean", [], ("exact", "float64")),
    "sum": ("sum", [], ("exact", "float64", "float32")),
}


def _cli(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("domain_fuzz")
    for name, (circuit, extra, _) in FOLDERS.items():
        code, _, err = _cli("circuit", circuit, "--length", L, *extra, "--out", root / name)
        assert code == 0, err
    return root


NUMBER = st.one_of(
    st.integers(-9, 9).map(str), st.integers(-10 ** 20, 10 ** 20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-10.0, 10.0).map(repr),
    st.tuples(st.integers(-50, 50), st.integers(1, 9)).map(lambda t: f"{t[0]}/{t[1]}"),
    st.sampled_from(["1e308", "-1e308", "1e999", "1e-320", "1e12", "1e15", "0", "nan", "inf", "", "x", "1/0", "9" * 60]),
)


@st.composite
def inputs(draw):
    n = draw(st.sampled_from([L, L, L, L, L - 1, L + 1]))
    values = draw(st.lists(NUMBER, min_size=n, max_size=n))
    if draw(st.booleans()):   # ordinary inputs, near the built range, most of the time
        values = [str(v) for v in draw(st.lists(st.integers(-3, 6), min_size=n, max_size=n))]
    flags = draw(st.sampled_from([[], [], ["--allow-outside"], ["--allow-length"], ["--allow-outside", "--allow-length"]]))
    return ",".join(values), flags


def _exact_values(text: str) -> list[Fraction]:
    return [Fraction(v.strip()) for v in text.split(",")]


def _within_claim(name: str, dtype: str, values: list[Fraction], output: list, report: dict) -> tuple[bool, str]:
    """``|output - target| <= bound + 8 eps L (1 + sum|v| + max|target|)``, all in exact arithmetic."""
    circuit = CIRCUITS[FOLDERS[name][0]]
    target = [row[0] for row in circuit.target(np.array(values, dtype=object))]
    if circuit.name == "mean":
        target = [sum(values) / len(values)] * len(values)   # the registry's float mean, exactly
    bound = Fraction(report["bounds"]["max_abs_error"])
    allowance = 8 * EPS[dtype] * len(values) * (1 + sum(abs(v) for v in values) + max(abs(t) for t in target))
    for y, t in zip(output, target):
        got = Fraction(y[0]) if not isinstance(y[0], str) else Fraction(y[0])
        if abs(got - t) > bound + allowance:
            return False, f"output {float(got):.6g} is {float(abs(got - t)):.3g} from {float(t):.6g} (allowed {float(bound + allowance):.3g})"
    return True, ""


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_run_never_prints_a_wrong_number_inside_the_claim(saved, name):
    report = json.loads((saved / name / "report.json").read_text())
    dtypes = FOLDERS[name][2]

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=inputs(), dtype=st.sampled_from(dtypes))
    def check(case, dtype):
        text, flags = case
        code, out, err = _cli("run", saved / name, "--input", text, "--dtype", dtype, "--json", *flags)
        assert code in (0, 2), (text, code, err)
        if code == 2:
            lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
            assert len(lines) == 1 and len(lines[0]) < 800 and "Traceback" not in err, (text, err)
            return
        result = json.loads(out)
        if not result["within_claim"]:
            assert flags and result["outside_claim"], (text, flags)
            return
        ok, why = _within_claim(name, dtype, _exact_values(text), result["output"], report)
        assert ok, f"{text!r} in {dtype}: {why}, with within_claim true"

    check()
