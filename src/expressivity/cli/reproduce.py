"""``expressivity reproduce NAME``: state a claim's criterion, run it, print the table and verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from expressivity.cli.common import console, emit_json, err_console, human_output_to_stderr, run_record


@click.command("reproduce")
@click.argument("name", required=False)
@click.option("--quick", is_flag=True, help="the small version (about 10 CPU-minutes on 2 cores or less)")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="output folder (default repro_out/NAME[-quick]); run the same command again to resume")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="where claims that train run their sweeps")
@click.option("--workers", type=click.IntRange(min=1), help="parallel packs (default: one per core)")
@click.option("--threads", type=click.IntRange(min=1), help="PyTorch threads per pack (default: cores / workers)")
@click.option("--ray-address", "ray_address", help="Ray cluster address (with --backend ray)")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--list", "list_claims", is_flag=True, help="list the claims and their criteria")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def reproduce(name, quick, out, backend, workers, threads, ray_address, device, list_claims, as_json):
    """Reproduce claim NAME of the papers (see --list): criterion first, then the run, table, figure and verdict."""
    from expressivity.experiments.claims import all_claims, get_claim
    from expressivity.experiments.claims import reproduce as run_claim
    from expressivity.progress import progress_bar

    if list_claims:
        from click.core import ParameterSource

        ctx = click.get_current_context()
        extra = [p.opts[0] for p in ctx.command.params if p.name not in ("list_claims", "as_json", "name")
                 and ctx.get_parameter_source(p.name) not in (ParameterSource.DEFAULT, None)]
        if name is not None or extra:
            raise click.UsageError(f"--list takes no claim name and no other option (got {name or ', '.join(extra)})")
        rows = [{"name": c.name, "title": c.title, "source": c.source, "criterion": c.criterion}
                for c in all_claims().values()]
        if as_json:
            emit_json({"claims": rows, "run": run_record("reproduce --list", {})})
        else:
            for r in rows:
                console.print(f"[bold]{r['name']}[/]: {r['title']} ({r['source']})")
        return
    if name is None:
        raise click.UsageError("give a claim name (see 'expressivity reproduce --list')")
    claim = get_claim(name)
    if not claim.trains:
        from click.core import ParameterSource

        ctx = click.get_current_context()
        sweep_options = [p.opts[0] for p in ctx.command.params if p.name in ("backend", "workers", "threads",
                                                                               "ray_address", "device")
                         and ctx.get_parameter_source(p.name) not in (ParameterSource.DEFAULT, None)]
        if sweep_options:
            raise click.UsageError(f"claim {name} is numerics, not training: the sweep options "
                                   f"{', '.join(sweep_options)} do not apply")
    if backend != "ray" and ray_address is not None:
        raise click.UsageError("--ray-address applies with --backend ray")
    out = out or Path("repro_out") / (name + ("-quick" if quick else ""))
    from expressivity.records import check_output_dir

    check_output_dir(out, f"reproduce {name}")  # a folder of this claim resumes; any other is refused
    if backend == "ray":
        from expressivity.experiments.ray_backend import check_address

        check_address(ray_address)  # an unreachable cluster fails in seconds, before the claim's folder is made
    with human_output_to_stderr(as_json):
        console.print(f"[bold]{claim.title}[/] ({claim.source})\ncriterion, stated before the run: {claim.criterion}",
                      soft_wrap=True)
        try:
            with progress_bar(name, None, enabled=not as_json) as bar:
                def show(p):
                    if bar is not None:
                        bar(total=p.total, completed=p.done + p.failed,
                            description=f"{name}: done {p.done}, failed {p.failed}, running {p.running}")
                result = run_claim(name, out, quick, workers=workers, threads=threads, backend=backend, device=device,
                                   ray_address=ray_address, on_progress=show)
        except KeyboardInterrupt:
            err_console.print(f"interrupted; run the same command again to continue from {out}")
            sys.exit(130)
        _print_table(result.rows)
        console.print(f"verdict: [bold]{result.verdict}[/] — {result.reason}", soft_wrap=True)
        for line in result.notes.splitlines():
            if line.startswith("warning:"):
                console.print(line, soft_wrap=True)
        console.print(f"table, figure and verdict in {out}/ (results.csv, {Path(str(result.figure)).name if result.figure else 'no figure'}, verdict.json)")
    if as_json:
        emit_json({"claim": name, "verdict": result.verdict, "reason": result.reason, "numbers": result.numbers,
                   "rows": result.rows, "figure": None if result.figure is None else str(result.figure),
                   "out": str(out), "run": run_record(f"reproduce {name}", {"quick": quick, "out": str(out)})})


def _print_table(rows: list[dict]) -> None:
    from rich.table import Table

    from expressivity.experiments.query import format_number

    if not rows:
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    table = Table(*columns)
    for row in rows:
        table.add_row(*(format_number(row.get(c)) if isinstance(row.get(c), float) else str(row.get(c, ""))
                        for c in columns))
    console.print(table)
