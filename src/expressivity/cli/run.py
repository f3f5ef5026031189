"""``expressivity run``: a saved network on your input, with the residual stream under its labels."""

from __future__ import annotations


import click

from expressivity.cli.common import console, emit_json, human_output_to_stderr, run_record, warn

DTYPES = ("exact", "float64", "float32", "torch-float64")   # = network.evaluate.DTYPES (not imported: start-up time)

MAX_COLUMNS = 16   # tables printed for people show at most this many dimensions (--json has all), fewer on narrow terminals


@click.command("run")
@click.argument("path", type=str)
@click.option("--input", "input_text", required=True,
              help="The input, tokens as rows: '1,2,3' (one value per token), '1,0; 0,1' (several), token ids for "
                   "token models, or a JSON list of tokens. Fractions such as 1/3 are kept exact.")
@click.option("--dtype", type=click.Choice(DTYPES), default=None,
              help="Arithmetic: exact rationals (hardmax/ReLU/piecewise networks), NumPy float64 (the reference), "
                   "PyTorch float32 or float64. Default: float64, or exact where the network's claim holds in exact "
                   "arithmetic only. A float answer of a network whose claim is exact is checked against exact "
                   "arithmetic, and refused where they differ.")
@click.option("--residuals", is_flag=True, help="Also print the residual stream after every layer, under its labels.")
@click.option("--allow-length", "allow_length", is_flag=True,
              help="Run on a length outside the lengths the network is built and verified for; the output is then "
                   "marked as outside the construction's claim.")
@click.option("--allow-outside", "allow_outside", is_flag=True,
              help="Run on values outside the input domain the network is built and verified for; the output is "
                   "then marked as outside the construction's claim.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def run(path, input_text, dtype, residuals, allow_length, allow_outside, as_json):
    """Run the saved network at PATH (a saved network, a construction's --out folder, a trained run folder or a
    TransformerLens folder) on --input and print its output; token networks also print the answer per position."""
    from expressivity.export.folders import load_saved
    from expressivity.inspect.run import default_dtype, parse_input, run_network

    with human_output_to_stderr(as_json):
        saved = load_saved(path)
        warn(saved)
        dtype = dtype or default_dtype(saved.network)
        record = run_record("run", {"path": str(path), "input": input_text, "dtype": dtype, "residuals": residuals,
                                    "allow_length": allow_length, "allow_outside": allow_outside})
        X = parse_input(saved.network, input_text, allow_length, allow_outside)
        result = run_network(saved.network, X, dtype, residuals, allow_length, allow_outside)
    result |= {"source": saved.describe(), "run": record,
               **({"warnings": list(saved.warnings)} if saved.warnings else {})}   # stderr has them too
    if as_json:
        emit_json(result)
        return
    _print(result)


def _table(title: str, values, columns, rows):
    """A table of ``values`` ``(n, len(columns))``, one row per position, cut to the terminal's width."""
    import numpy as np
    from rich.markup import escape
    from rich.table import Table

    from expressivity.inspect.run import fmt

    values = np.asarray(values, dtype=object)
    shown = list(range(len(columns)))
    limit = max(3, min(MAX_COLUMNS, (console.width - 8) // 11))
    if len(columns) > limit:
        shown = shown[: limit - 1] + [len(columns) - 1]
    table = Table(title=escape(title))
    table.add_column("position", justify="right")
    for k in shown:
        if k == shown[-1] and len(shown) < len(columns):
            table.add_column("...")
        table.add_column(escape(str(columns[k])), justify="right")
    for r, row in zip(rows, values):
        cells = []
        for k in shown:
            if k == shown[-1] and len(shown) < len(columns):
                cells.append("")
            cells.append(fmt(row[k]))
        table.add_row(str(r), *cells)
    return table


def _answers_table(result: dict):
    """Per position of a token network: the input token's value and the answer (the decoded output)."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="answers")
    for column in ("position", "input", "answer"):
        table.add_column(column, justify="right")
    answers = result.get("answers", [None] * result["length"])
    for i, (value, answer) in enumerate(zip(result["input_values"], answers)):
        table.add_row(str(i), escape(_value(value)), escape(_value(answer)))
    return table


def _value(v) -> str:
    from expressivity.inspect.run import fmt

    if v is None:
        return "None"
    return v if isinstance(v, str) else fmt(v)


def _print(result: dict) -> None:
    from expressivity.cli.tables import print_table

    n = result["length"]
    rows = list(range(n))
    console.print(f"{result['network']} on {n} tokens [{result['arithmetic']}]", markup=False, highlight=False)
    console.print(f"input domain: {result['input_domain']}", markup=False, highlight=False)
    if "outside_claim" in result:
        from expressivity.inspect.run import dtype_flags   # "run it with --dtype float64", not "evaluate in ..."

        console.print(f"WARNING: {dtype_flags(result['outside_claim'])}", soft_wrap=True, markup=False,
                      style="bold red")
    if "claim" in result:
        console.print(f"claim: {result['claim']}", soft_wrap=True, markup=False, highlight=False)
    rounding = result.get("input_rounding")
    if rounding is not None:
        console.print(f"note: {rounding['values']} input value(s) are not {rounding['dtype']} numbers; the network "
                      f"received the nearest ones (largest change {rounding['largest_change']:.2g})",
                      soft_wrap=True, markup=False, highlight=False)
    if result.get("checked_against_exact"):
        agreement = result["exact_agreement"]
        console.print("checked: exact arithmetic on the input as typed gives the same answer" if agreement["equal"] else
                      f"checked: exact arithmetic on the input as typed gives an answer within {result['dtype']} "
                      f"rounding of this one (largest difference {agreement['largest_difference']:.3g}, relative "
                      f"{agreement['relative']:.2g}, allowed {agreement['allowed']:g}: {agreement['where']})",
                      soft_wrap=True, markup=False, highlight=False)
    if result.get("unclaimed_positions"):
        first = result["claimed_from"]
        tail = ("; none of these is" if first >= n else "; those before it are not") + " covered by any check"
        console.print(f"note: the claim covers outputs from position {first} on{tail}", markup=False, highlight=False)
    if "input_values" in result:
        print_table(console, _answers_table(result))
    print_table(console, _table("output", result["output"], result["output_labels"], rows))
    for entry in result.get("residuals", []):
        print_table(console, _table(f"residual stream {entry['where']}", entry["values"], result["residual_labels"], rows))
    if max(len(result["output_labels"]), len(result.get("residual_labels", ()))) > max(3, (console.width - 8) // 11):
        console.print("(wide tables are cut to fit the terminal; --json prints every dimension)", markup=False)
