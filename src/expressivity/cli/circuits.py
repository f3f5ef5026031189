"""``expressivity circuit``, ``circuits`` and ``equivariance``: parse, call the library, print."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import click

from expressivity.cli.common import (PositiveNumber, console, construction_out_option, emit_json, err_console, overflowed,
                                     run_record, typed_options)
from expressivity.errors import ExpressivityError
from expressivity.records import check_output_dir
from expressivity.verify.size import counted

MAX_PRINTED_ROWS = 16
# The library's limits, repeated here so that `expressivity --help` and `circuits` need not import the
# constructions (start-up time); tests/cli/test_help_and_tables.py checks that they agree.
MAX_LENGTH = 4096                            # = constructions.circuits.MAX_LENGTH
DEFAULT_TOLERANCE = 1e-10                    # = constructions.circuits.DEFAULT_TOLERANCE
DTYPES = ("exact", "float64", "float32")     # = constructions.circuits.check.DTYPES


class ScaleType(click.ParamType):
    """A positive number, ``inf`` (hardmax) or ``auto``."""

    name = "scale"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) or value == "auto":
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        try:
            number = float(text)
        except ValueError:
            self.fail(f"{value!r} is not a number; give a positive number, 'inf' (hardmax) or 'auto'", param, ctx)
        if math.isnan(number) or number <= 0:
            self.fail(f"{value!r} must be positive; give a positive number, 'inf' (hardmax) or 'auto'", param, ctx)
        if overflowed(text, number):
            self.fail(f"{value!r} is beyond float64; write 'inf' for hardmax or give a finite number", param, ctx)
        return number


def parse_values(text: str) -> list[Fraction]:
    """Comma-separated numbers (fractions such as ``1/3`` allowed) as exact values."""
    fields = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not f for f in fields):
        raise ExpressivityError(f"--input {text!r} has an empty field; give comma-separated numbers such as '1,2,3'")
    from expressivity.network.numbers import TooManyDigits, exact_from_text   # here: --help loads no library module

    try:
        values = [exact_from_text(f) for f in fields]
    except TooManyDigits as exc:
        raise ExpressivityError(f"--input: {exc}") from None
    except (ValueError, ZeroDivisionError):
        raise ExpressivityError(f"--input {text!r} is not a comma-separated list of finite numbers "
                                "(e.g. '1,2,3' or '1/2,0')") from None
    if len(values) > MAX_LENGTH:
        raise ExpressivityError(f"--input has {len(values)} values; at most {MAX_LENGTH} are allowed")
    return values


def _fmt(v) -> str:
    if isinstance(v, (Fraction, int)):
        return str(v)
    return f"{float(v):.10g}"


def _applicable(name: str, config: dict) -> dict:
    """``config`` with the options circuit ``name`` does not take set to ``None``: a record replayed as written
    must not pass an option the command refuses (``circuit reverse`` recorded ``"shift": 1``, and replaying it was
    refused "--shift applies only to the shift circuit": an audit, 2026-11-28)."""
    from expressivity.constructions.circuits import CIRCUITS

    circuit = CIRCUITS.get(name)
    if circuit is None:
        return config
    config = dict(config)
    if name != "shift":
        config["shift"] = None
    if not circuit.scaled:
        config["scale"] = config["tolerance"] = None
    elif config["scale"] != "auto":
        config["tolerance"] = None
    return config


def circuit_result(name: str, length: int | None = None, scale="auto", dtype: str = "float64",
                   seed: int | None = None, input_text: str | None = None, shift: int = 1,
                   tolerance: float = DEFAULT_TOLERANCE, with_network: bool = False, input_range: float | None = None,
                   measure_outside: bool = False):
    """The JSON object ``expressivity circuit`` prints (also used by the demo); with ``with_network``,
    the pair ``(object, network)``."""
    import numpy as np

    from expressivity.constructions.circuits.check import arithmetic_of, default_values, run_circuit
    from expressivity.inspect.run import input_rounding

    if input_text is not None:
        values = parse_values(input_text)
        if length is not None and length != len(values):
            raise ExpressivityError(f"--length {length} disagrees with the {len(values)} values of --input; "
                                    "drop one of them")
    else:
        values = default_values(length, seed)
    run = run_circuit(name, values, scale=scale, dtype=dtype, seed=0 if seed is None else seed, shift=shift,
                      tolerance=tolerance, input_range=input_range, measure_outside=measure_outside)
    squeeze = (lambda a: a[..., 0]) if run.output.shape[-1] == 1 else (lambda a: a)
    result = {
        "circuit": name, "length": len(values), "dtype": dtype, "arithmetic": arithmetic_of(dtype, run.network),
        "scale": run.report.constants["scale"], "input": run.values, "output": squeeze(run.output),
        "target": squeeze(run.target), "max_abs_error": run.max_abs_error,
        **({"max_abs_error_exact": run.max_abs_error_exact} if run.max_abs_error_exact is not None else {}),
        "ok": run.report.ok, "report": run.report.as_dict(),
        "input_domain": run.network.input_domain.describe(run.network.input_labels),
        "run": run_record("circuit", _applicable(name, {"name": name, "length": len(values), "scale": scale,
                                                        "dtype": dtype, "tolerance": tolerance, "shift": shift,
                                                        "input": input_text, "input_range": input_range}),
                          seed if input_text is None or name == "attention" else None),
    }
    rounding = input_rounding(np.asarray(values, dtype=object), dtype) if input_text is not None else None
    if rounding is not None:   # the network saw the nearest floats; the target is of the values as typed
        result["input_rounding"] = rounding
    return (result, run.network) if with_network else result


@click.command("circuit")
@click.argument("name")
@click.option("--length", "-L", type=click.IntRange(1, MAX_LENGTH), default=None,
              help="Sequence length (default 6, or the number of --input values).")
@click.option("--scale", type=ScaleType(), default="auto", show_default=True,
              help="Attention sharpness: a positive number, 'inf' for hardmax (exact), or 'auto' (from the margin).")
@click.option("--dtype", type=click.Choice(DTYPES), default="float64", show_default=True,
              help="Arithmetic: exact rationals (hardmax only), NumPy float64, or PyTorch float32.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=None,
              help="Random inputs in [-1, 1) from this seed (default input: 1..L).")
@click.option("--input", "input_text", default=None, help="Comma-separated input values, e.g. '3,1,2' or '1/2,1/3'.")
@click.option("--shift", type=click.IntRange(0, MAX_LENGTH), default=1, show_default=True,
              help="k for the shift circuit.")
@click.option("--tolerance", type=PositiveNumber("1e-10"), default=DEFAULT_TOLERANCE, show_default=True,
              help="Target error bound for --scale auto.")
@click.option("--input-range", "input_range", type=PositiveNumber("10"), default=None,
              help="reverse, reverse-dot, shift, previous: build for inputs whose max - min is at most this (the scale "
                   "and the error bound follow; recorded as the network's input domain). Default: the range of the "
                   "values it runs on.")
@construction_out_option()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def circuit(ctx, name, length, scale, dtype, seed, input_text, shift, tolerance, input_range, out_dir, as_json):
    """Run tutorial circuit NAME and check it against its exact target (see `expressivity circuits`)."""
    _refuse_inapplicable(ctx, name, scale, input_text, dtype)
    if out_dir is not None:
        check_output_dir(out_dir, "circuit", replaces=True)
    result, network = circuit_result(name, length, scale, dtype, seed, input_text, shift, tolerance, with_network=True,
                                     input_range=input_range)
    if out_dir is not None:
        result["run"]["config"]["out"] = str(out_dir)
        _save_circuit(out_dir, name, network, result)
    if as_json:
        emit_json(result)
    else:
        _print_circuit(name, dtype, result)
    if not result["ok"]:
        err_console.print("error: the circuit's output is outside its proven bound: "
                          + "; ".join(c["property"] for c in result["report"]["checks"] if not c["passed"]))
        raise SystemExit(1)


def _refuse_inapplicable(ctx: click.Context, name: str, scale, input_text, dtype: str = "float64") -> None:
    """Options the user typed that this circuit or combination does not read are errors, not ignored."""
    from expressivity.constructions.circuits import CIRCUITS

    given = set(typed_options(ctx, ("shift", "tolerance", "seed", "scale")))
    circuit = CIRCUITS.get(name)
    if circuit is None:
        return  # run_circuit names the unknown circuit
    problems = []
    if "scale" in given and not circuit.scaled and scale == "auto":   # any other value the builder refuses itself
        problems.append(f"--scale applies only to circuits with a scale, not {name!r}")
    if "shift" in given and name != "shift":
        problems.append(f"--shift applies only to the shift circuit, not {name!r}")
    if "tolerance" in given and not circuit.scaled:
        problems.append(f"--tolerance chooses the scale, and circuit {name!r} has none")
    elif "tolerance" in given and scale != "auto":
        problems.append("--tolerance chooses the scale only with --scale auto; drop one of them")
    if "seed" in given and input_text is not None and name != "attention":
        problems.append("--seed draws random inputs, and --input gives them; drop one of them")
    if dtype == "exact" and circuit.scaled and scale != float("inf"):
        # its softmax has no exact value; the builder's refusal spoke of "hardmax where its command offers it"
        problems.append(f"--dtype exact needs hardmax: circuit {name!r} at scale {scale} is a softmax, which has no "
                        "exact value; give --scale inf")
    if problems:
        raise click.UsageError("; ".join(problems))


def _save_circuit(out_dir: Path, name: str, network, result: dict) -> None:
    """``out_dir/network`` (the values go in dimension ``x``: saved as ``input_dims``), ``report.json``, ``run.json``."""
    from dataclasses import replace

    from expressivity.export.folders import save_construction

    # what building it again takes (export.folders reads them where no report is beside the network)
    report = result["report"]
    constants = {**report["constants"], "input_range": (report.get("bounds") or {}).get("input_range")}
    meta = {**network.metadata, "circuit": name, "input_dims": ["x"], "scale": result["scale"],
            "circuit_constants": constants}
    save_construction(out_dir, "circuit", replace(network, metadata=meta), result["report"], result["run"])


def _print_circuit(name: str, dtype: str, result: dict) -> None:
    import numpy as np
    from rich.table import Table

    from expressivity.cli.tables import print_table

    table = Table(title=f"circuit {name}: L={result['length']}, scale={result['scale']}, dtype={dtype}")
    for col in ("pos", "input", "output", "target"):
        table.add_column(col, justify="right")
    L = result["length"]
    rows = range(L) if L <= MAX_PRINTED_ROWS else [*range(MAX_PRINTED_ROWS // 2), None, *range(L - MAX_PRINTED_ROWS // 2, L)]
    out, tgt = np.asarray(result["output"], dtype=object), np.asarray(result["target"], dtype=object)
    for i in rows:
        if i is None:
            table.add_row("...", "", "", "")
            continue
        cell = lambda a: _fmt(a[i]) if a.ndim == 1 else "[" + ", ".join(_fmt(v) for v in a[i]) + "]"  # noqa: E731
        table.add_row(str(i), _fmt(result["input"][i]), cell(out), cell(tgt))
    print_table(console, table)
    report = result["report"]
    exact = f" (exactly {result['max_abs_error_exact']})" if "max_abs_error_exact" in result else ""
    console.print(f"max abs error: {result['max_abs_error']:.3e}{exact}   [{result['arithmetic']}]")
    rounding = result.get("input_rounding")
    if rounding is not None:
        console.print(f"note: {rounding['values']} input value(s) are not {dtype} numbers; the network received the "
                      f"nearest ones (largest change {rounding['largest_change']:.2g}), the target is of the values as "
                      "typed", soft_wrap=True, markup=False, highlight=False)
    margin = report["margins"].get("score_gap_per_unit_scale")
    if margin is not None:
        console.print(f"margin per unit scale: {margin:.6g}; proven error bound: {report['bounds']['max_abs_error']:.3e}")
    check = report["checks"][0]
    console.print(f"check: {check['property']}: {'passed' if check['passed'] else 'FAILED'} "
                  f"(bound with rounding {check['bound']:.3e})")
    size = report["size"]
    console.print(f"size: {counted(size['parameters'], 'parameter')}, {counted(size['layers'], 'layer')}, "
                  f"{counted(size['heads'], 'head')}, width {size['width']}")
    console.print(f"claim covers inputs: {result['input_domain']}", markup=False, highlight=False)


@click.command("circuits")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def circuits_list(as_json):
    """List the tutorial circuits."""
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.constructions.circuits import CIRCUITS

    rows = [{"name": c.name, "description": c.description, "scaled": c.scaled, "positional": c.positional}
            for c in CIRCUITS.values()]
    if as_json:
        emit_json({"circuits": rows, "run": run_record("circuits", {})})
        return
    table = Table(title="tutorial circuits")
    table.add_column("name")
    table.add_column("takes --scale")
    table.add_column("what it computes")
    for r in rows:
        table.add_row(r["name"], "yes" if r["scaled"] else "no", r["description"])
    print_table(console, table)


def equivariance_result(name: str, length: int = 6, samples: int = 16, permutations: int = 8, seed: int = 0,
                        dtype: str = "float64", scale="auto") -> dict:
    """The JSON object ``expressivity equivariance`` prints (also used by the demo)."""
    from expressivity.constructions.circuits.check import circuit_equivariance

    result, report = circuit_equivariance(name, length, samples, permutations, seed, dtype, scale)
    return {"circuit": name, "scale": report.constants["scale"], **result.as_dict(),
            "run": run_record("equivariance", {"name": name, "length": length, "samples": samples,
                                               "permutations": permutations, "dtype": dtype, "scale": scale}, seed)}


@click.command("equivariance")
@click.argument("name")
@click.option("--length", "-L", type=click.IntRange(1, MAX_LENGTH), default=6, show_default=True,
              help="Tokens per input (the circuit is built for this length).")
@click.option("--samples", type=click.IntRange(1, 10_000), default=16, show_default=True, help="Random inputs.")
@click.option("--permutations", type=click.IntRange(1, 1000), default=8, show_default=True, help="Permutations per input.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seed of the inputs and permutations.")
@click.option("--dtype", type=click.Choice(DTYPES), default="float64", show_default=True,
              help="Arithmetic of the evaluation (exact needs --scale inf).")
@click.option("--scale", type=ScaleType(), default="auto", show_default=True,
              help="Attention sharpness, as for `expressivity circuit`.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def equivariance(name, length, samples, permutations, seed, dtype, scale, as_json):
    """Check f(PX) = P f(X) (Yun et al. Claim 1) for circuit NAME on random inputs and permutations."""
    from expressivity.constructions.circuits import CIRCUITS

    circuit = CIRCUITS.get(name)
    if circuit is not None and not circuit.scaled and scale == "auto" and typed_options(click.get_current_context(),
                                                                                        ("scale",)):
        raise click.UsageError(f"--scale applies only to circuits with a scale, not {name!r}")
    if circuit is not None and dtype == "exact" and circuit.scaled and scale != float("inf"):
        raise click.UsageError(f"--dtype exact needs hardmax: circuit {name!r} at scale {scale} is a softmax, which has "
                               "no exact value; give --scale inf")
    result = equivariance_result(name, length, samples, permutations, seed, dtype, scale)
    if as_json:
        emit_json(result)
        return
    verdict = "[green]equivariant[/]" if result["equivariant"] else "[red]NOT equivariant[/]"
    # the tolerance is part of the verdict: reversal at scale 1e-10 read "equivariant" at 3.2e-11, 300,000 times
    # float64's rounding, while in exact arithmetic it breaks the law (an audit, 2026-11-29)
    within = "no tolerance: exact arithmetic" if dtype == "exact" else f"tolerance {result['tolerance']:.1e}"
    console.print(f"{name} (L={length}, {dtype}): {verdict}; max |f(PX) - P f(X)| = {result['max_deviation']:.3e} "
                  f"({within}) over {samples} inputs x {result['permutations_per_sample']} permutations")
    if result["uses_position"] and not result["equivariant"]:
        console.print("the network uses position information (encoding, bias or mask), which breaks the law")
    elif result["uses_position"] and dtype != "exact":
        console.print("the network uses position information (encoding, bias or mask): equivariant only to within the "
                      "tolerance, which is no proof that it keeps the law")
