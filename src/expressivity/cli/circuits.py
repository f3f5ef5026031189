"""``expressivity circuit``, ``circuits`` and ``equivariance``: run the tutorial circuits."""

from __future__ import annotations

import math
from fractions import Fraction

import click
import numpy as np
from rich.table import Table

from expressivity.cli.common import console, emit_json, err_console, run_record
from expressivity.constructions.circuits import CIRCUITS, MAX_LENGTH, DEFAULT_TOLERANCE, embed, get_circuit
from expressivity.errors import ExpressivityError
from expressivity.network import evaluate
from expressivity.network.exact import to_exact
from expressivity.verify.equivariance import check_equivariance

CLI_DTYPES = ("exact", "float64", "float32")
MAX_PRINTED_ROWS = 16


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
        if math.isinf(number) and text not in ("inf", "+inf", "infinity", "+infinity"):
            self.fail(f"{value!r} is beyond float64; write 'inf' for hardmax or give a finite number", param, ctx)
        return number


def parse_values(text: str) -> list[Fraction]:
    """Comma-separated numbers (fractions such as ``1/3`` allowed) as exact values."""
    fields = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not f for f in fields):
        raise ExpressivityError(f"--input {text!r} has an empty field; give comma-separated numbers such as '1,2,3'")
    try:
        return [Fraction(f) for f in fields]
    except (ValueError, ZeroDivisionError):
        raise ExpressivityError(f"--input {text!r} is not a comma-separated list of numbers (e.g. '1,2,3' or '1/2,0')") from None


def _inputs(length: int | None, seed: int | None, input_text: str | None) -> list[Fraction] | np.ndarray:
    if input_text is not None:
        values = parse_values(input_text)
        if length is not None and length != len(values):
            raise ExpressivityError(f"--length {length} disagrees with the {len(values)} values of --input; drop one of them")
        return values
    length = 6 if length is None else length
    if seed is None:
        return np.arange(1, length + 1, dtype=np.float64)  # the tutorial's example input 1..L
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=length)


def _fmt(v) -> str:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, int):
        return str(v)
    return f"{float(v):.10g}"


def run_circuit(name: str, length: int | None = None, scale="auto", dtype: str = "float64", seed: int | None = None,
                input_text: str | None = None, shift: int = 1, tolerance: float = DEFAULT_TOLERANCE) -> dict:
    """Build circuit ``name``, run it on the input, compare with the exact target. Returns the result dict."""
    circuit = get_circuit(name)
    if dtype not in CLI_DTYPES:
        raise ExpressivityError(f"unknown dtype {dtype!r}; choose one of {', '.join(CLI_DTYPES)}")
    if length is not None and not 1 <= length <= MAX_LENGTH:
        raise ExpressivityError(f"length must be between 1 and {MAX_LENGTH}, got {length}")
    values = _inputs(length, seed, input_text)
    floats = np.array([float(v) for v in values])
    input_range = float(floats.max() - floats.min()) if len(floats) else 0.0
    if not circuit.scaled and scale not in ("auto", None):
        raise ExpressivityError(f"circuit {name!r} has no scale (it is exact by construction); drop --scale")
    net, report = circuit.build(len(values), scale if circuit.scaled else None, input_range=max(input_range, 1e-300),
                                tolerance=tolerance, seed=0 if seed is None else seed, shift=shift)
    exact_values = to_exact(np.asarray(values, dtype=object))
    X = embed(net, exact_values if dtype == "exact" else floats)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, as one line
        output = evaluate(net, X, "float32" if dtype == "float32" else dtype)
    if dtype != "exact" and not np.isfinite(output).all():
        raise ExpressivityError(
            f"circuit {name!r} produced non-finite outputs in {dtype}: scale {report.scale:.3g} times the inputs "
            f"overflows {dtype}; use a smaller --scale, --scale auto, or --scale inf (exact hardmax)")
    target = circuit.target(exact_values if dtype == "exact" else floats, seed=0 if seed is None else seed, shift=shift)
    if dtype == "exact":
        err = max((abs(a - b) for a, b in zip(output.flat, target.flat)), default=0)
        max_err, max_err_exact = float(err), Fraction(err)
    else:
        max_err, max_err_exact = float(np.max(np.abs(output - target))), None
    squeeze = (lambda a: a[..., 0]) if output.shape[-1] == 1 else (lambda a: a)
    return {
        "circuit": name,
        "length": len(values),
        "dtype": dtype,
        "arithmetic": {"exact": "exact rationals (Python int/Fraction)", "float64": "NumPy float64 reference pass",
                       "float32": "PyTorch float32, max-subtracted softmax"}[dtype],
        "scale": report.scale,
        "normalization": report.normalization,
        "margin": report.margin,
        "error_bound": report.error_bound,
        "input_range": input_range,
        "input": [v if dtype == "exact" else float(v) for v in (exact_values if dtype == "exact" else floats)],
        "output": squeeze(output),
        "target": squeeze(np.asarray(target)),
        "max_abs_error": max_err,
        **({"max_abs_error_exact": max_err_exact} if max_err_exact is not None else {}),
        "parameters": net.parameter_count(),
        "layers": net.layer_counts(),
        "notes": report.notes,
        "run": run_record("circuit", {"name": name, "length": len(values), "scale": scale, "dtype": dtype,
                                       "tolerance": tolerance, "shift": shift, "input": input_text}, seed),
    }


@click.command("circuit")
@click.argument("name")
@click.option("--length", "-L", type=click.IntRange(1, MAX_LENGTH), default=None,
              help="Sequence length (default 6, or the number of --input values).")
@click.option("--scale", type=ScaleType(), default="auto", show_default=True,
              help="Attention sharpness: a positive number, 'inf' for hardmax (exact), or 'auto' (from the margin).")
@click.option("--dtype", type=click.Choice(CLI_DTYPES), default="float64", show_default=True,
              help="Arithmetic: exact rationals (hardmax only), NumPy float64, or PyTorch float32.")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Random inputs in [-1, 1) from this seed (default input: 1..L).")
@click.option("--input", "input_text", default=None, help="Comma-separated input values, e.g. '3,1,2' or '1/2,1/3'.")
@click.option("--shift", type=click.IntRange(0, None), default=1, show_default=True, help="k for the shift circuit.")
@click.option("--tolerance", type=click.FloatRange(0, None, min_open=True), default=DEFAULT_TOLERANCE,
              show_default=True, help="Target error bound for --scale auto.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def circuit(name, length, scale, dtype, seed, input_text, shift, tolerance, as_json):
    """Run tutorial circuit NAME and compare it with its exact target (see `expressivity circuits`)."""
    result = run_circuit(name, length, scale, dtype, seed, input_text, shift, tolerance)
    if as_json:
        emit_json(result)
        return
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
    console.print(table)
    exact = f" (exactly {result['max_abs_error_exact']})" if "max_abs_error_exact" in result else ""
    console.print(f"max abs error: {result['max_abs_error']:.3e}{exact}   [{result['arithmetic']}]")
    if result["margin"] is not None:
        console.print(f"margin per unit scale: {result['margin']:.6g}; proven error bound: {result['error_bound']:.3e}")
    console.print(f"parameters: {result['parameters']}; layers: {result['layers']}")


@click.command("circuits")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def circuits_list(as_json):
    """List the tutorial circuits."""
    rows = [{"name": c.name, "description": c.description, "scaled": c.scaled, "positional": c.positional}
            for c in CIRCUITS.values()]
    if as_json:
        emit_json({"circuits": rows})
        return
    table = Table(title="tutorial circuits")
    table.add_column("name")
    table.add_column("takes --scale")
    table.add_column("what it computes")
    for r in rows:
        table.add_row(r["name"], "yes" if r["scaled"] else "no", r["description"])
    console.print(table)


def run_equivariance(name: str, length: int = 6, samples: int = 16, permutations: int = 8, seed: int = 0,
                     dtype: str = "float64", scale="auto") -> dict:
    circuit_ = get_circuit(name)
    if dtype not in CLI_DTYPES:
        raise ExpressivityError(f"unknown dtype {dtype!r}; choose one of {', '.join(CLI_DTYPES)}")
    net, report = circuit_.build(length, scale if circuit_.scaled else None, input_range=2.0, seed=seed)
    rng = np.random.default_rng(seed)
    values = rng.integers(-8, 9, size=(samples, length)) if dtype == "exact" else rng.uniform(-1, 1, size=(samples, length))
    X = embed(net, to_exact(values) if dtype == "exact" else values)
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite outputs are reported in the result
        result = check_equivariance(net, X, permutations=permutations, seed=seed, dtype=dtype)
    return {"circuit": name, "scale": report.scale, **result.as_dict(),
            "run": run_record("equivariance", {"name": name, "length": length, "samples": samples,
                                               "permutations": permutations, "dtype": dtype, "scale": scale}, seed)}


@click.command("equivariance")
@click.argument("name")
@click.option("--length", "-L", type=click.IntRange(1, MAX_LENGTH), default=6, show_default=True)
@click.option("--samples", type=click.IntRange(1, 10_000), default=16, show_default=True, help="Random inputs.")
@click.option("--permutations", type=click.IntRange(1, 1000), default=8, show_default=True, help="Permutations per input.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--dtype", type=click.Choice(CLI_DTYPES), default="float64", show_default=True)
@click.option("--scale", type=ScaleType(), default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def equivariance(name, length, samples, permutations, seed, dtype, scale, as_json):
    """Check f(PX) = P f(X) (Yun et al. Claim 1) for circuit NAME on random inputs and permutations."""
    result = run_equivariance(name, length, samples, permutations, seed, dtype, scale)
    if as_json:
        emit_json(result)
        return
    verdict = "[green]equivariant[/]" if result["equivariant"] else "[red]NOT equivariant[/]"
    console.print(f"{name} (L={length}, {dtype}): {verdict}; max |f(PX) - P f(X)| = {result['max_deviation']:.3e} "
                  f"over {samples} inputs x {result['permutations_per_sample']} permutations")
    if result["uses_position"] and not result["equivariant"]:
        err_console.print("the network uses position information (encoding, bias or mask), which breaks the law")
