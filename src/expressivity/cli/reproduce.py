"""``expressivity reproduce NAME [--scale quick|medium|full]``: state a claim's criterion, run it, print
the table, the regime and the verdict; ``expressivity reproduce --summary DIR...``: one table of the
verdicts of several runs (across scales)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from expressivity.cli.common import (interrupted_by, interrupted_exit_code, EXECUTION_PARAMS, SweepProgress, check_memory_budget, console, emit_json,
                                     err_console, execution_choices, execution_options, human_output_to_stderr,
                                     option_flag, run_record, typed_options)


@click.command("reproduce")
@click.argument("names", nargs=-1)
@click.option("--scale", type=click.Choice(["quick", "medium", "full"]), default=None,
              help="quick: CI and a first look (seconds to about an hour of 2 cores); medium: minutes to a few hours "
                   "of 2 cores (--list gives each claim's, --plan estimates it here); "
                   "full: the paper's regime, sized for one GPU  [default: quick]")
@click.option("--quick", is_flag=True, help="the same as --scale quick")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="output folder (default repro_out/NAME-SCALE); run the same command again to resume")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="where claims that train run their sweeps")
@click.option("--workers", type=click.IntRange(min=1), help="parallel packs (default: one per core)")
@click.option("--threads", type=click.IntRange(min=1), help="PyTorch threads per pack (default: cores / workers)")
@click.option("--ray-address", "ray_address", help="Ray cluster address (with --backend ray)")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="where the runs train (auto: CUDA when PyTorch sees a GPU, else the CPU)")
@execution_options
@click.option("--plan", "plan_only", is_flag=True,
              help="print the runs, packs, memory per pack and estimated time here (a few steps are timed), run nothing")
@click.option("--yes", is_flag=True, help="start a run estimated above one hour without asking")
@click.option("--retry-failed", "retry_failed", is_flag=True,
              help="when resuming, run again the runs recorded as failed by an error (a worker that died, out of "
                   "memory), not those that diverged to NaN")
@click.option("--amend", metavar="REASON",
              help="resume a folder whose claim's criterion changed: append the change to its criterion.md as a "
                   "dated amendment with REASON (a criterion is never rewritten)")
@click.option("--list", "list_claims", is_flag=True, help="list the claims: tag, source, title and cost per scale")
@click.option("--summary", "summarise", is_flag=True,
              help="NAMES are reproduce output folders (or folders of them): print one table of their verdicts, "
                   "across scales; runs nothing")
@click.option("--markdown", is_flag=True,
              help="with --summary: print the verdicts and every run's results table as Markdown (the README's tables)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
def reproduce(**options):
    """Reproduce claim NAME of the papers (see --list): criterion first, then the run, table, regime and verdict.

    Verdicts: reproduced, not reproduced, refuted (only from a run that passes its regime check and
    a decided comparison), or undecided with its reason (out of regime, underpowered, lr on grid edge).
    """
    from expressivity.cli.sweep import warnings_as_lines

    with warnings_as_lines():   # a torn record line is one "warning:" line, as in sweep run (it was Python's two)
        _reproduce(**options)


def _reproduce(names, scale, quick, out, backend, workers, threads, ray_address, device, precision, attention_kernel,
               capture, sampler, memory_budget, plan_only, yes, retry_failed, amend, list_claims, summarise, markdown,
               as_json):
    from expressivity.experiments.claims import all_claims, get_claim
    from expressivity.experiments.claims import reproduce as run_claim
    from expressivity.progress import progress_bar

    ctx = click.get_current_context()

    def given(*names):
        return [option_flag(ctx, name) for name in typed_options(ctx, names)]

    if markdown and not summarise:
        raise click.UsageError("--markdown applies with --summary DIR...")
    if summarise:
        extra = given(*(p.name for p in ctx.command.params if p.name not in ("summarise", "as_json", "names",
                                                                            "markdown")))
        _summary_command(names, extra, as_json, markdown)
        return
    if len(names) > 1:
        raise click.UsageError(f"give one claim name, got {len(names)} ({' '.join(names)}); --summary reads several folders")
    name = names[0] if names else None
    if list_claims:
        extra = given(*(p.name for p in ctx.command.params if p.name not in ("list_claims", "as_json", "names")))
        if name is not None or extra:
            raise click.UsageError(f"--list takes no claim name and no other option (got {name or ', '.join(extra)})")
        rows = [{"name": c.name, "title": c.title, "source": c.source, "tag": c.tag, "proxy": c.proxy,
                 "paper_claim": c.paper_claim,
                 "criterion": c.criterion, "quick": c.quick_budget, "medium": c.medium, "full": c.full}
                for c in all_claims().values()]
        if as_json:
            emit_json({"claims": rows, "run": run_record("reproduce --list", {})})
        else:
            _print_list(rows)
        return
    if name is None:
        raise click.UsageError("give a claim name (see 'expressivity reproduce --list'), or --summary DIR...")
    if quick and scale not in (None, "quick"):
        raise click.UsageError(f"--quick is --scale quick; it contradicts --scale {scale}")
    scale = "quick" if quick else scale or "quick"
    claim = get_claim(name)
    if plan_only:   # --amend records a changed criterion when the run starts; a plan starts nothing
        _refuse_with_plan(given("yes", "retry_failed", "ray_address", "amend"))
    if not claim.trains:   # --yes confirms a long plan; numerics have none
        sweep_options = given("backend", "workers", "threads", "ray_address", "device", "retry_failed", "yes",
                              *EXECUTION_PARAMS)
        if sweep_options:
            raise click.UsageError(f"claim {name} is numerics, not training: the sweep options "
                                   f"{', '.join(sweep_options)} do not apply")
    if backend != "ray" and ray_address is not None:
        raise click.UsageError("--ray-address applies with --backend ray")
    out = out or Path("repro_out") / f"{name}-{scale}"
    from expressivity.experiments.claims import check_same_run
    from expressivity.records import check_output_dir

    check_output_dir(out, f"reproduce {name}")  # a folder of this claim resumes; any other is refused
    check_same_run(out, name, scale)
    from expressivity.experiments.claims import criterion

    if plan_only:   # a plan starts nothing, so a changed criterion is said, not refused (--amend is given to the run)
        from expressivity.errors import ExpressivityError

        try:
            criterion.check(out, claim, scale)
        except ExpressivityError as exc:
            if "states another criterion" not in str(exc):
                raise
            err_console.print(f"note: the run will need --amend: {exc}", markup=False, soft_wrap=True)
    else:
        criterion.check(out, claim, scale, amend)  # a changed criterion needs --amend; refused before anything runs
    check_memory_budget(memory_budget)
    execution = execution_choices(ctx.params)
    if not plan_only:   # before the plan times a few steps (reproduce itself checks again)
        from expressivity.figures import require_plots

        require_plots()
        if out.is_dir():   # another reproduce holding the folder: one line before the banner and the plan's timing
            from expressivity.records import folder_in_use

            with folder_in_use(out, f"reproduce {name}"):
                pass
    if backend == "ray" and not plan_only:
        from expressivity.experiments.ray_backend import check_address

        # an unreachable cluster fails in seconds, before the plan trains a few steps and the folder is made
        check_address(ray_address)
    plan = _plan_first(name, scale, out, device, execution, workers, threads, backend, memory_budget, plan_only,
                       yes, as_json) if claim.trains else None
    if plan_only:
        if plan is None:  # a numerics claim trains nothing: say so rather than print nothing
            _no_plan(name, scale, out, as_json)
        elif plan.note.startswith("refused"):
            # the plan is printed (or is the JSON object); the exit status says the run would not start
            raise click.UsageError(plan.note)
        return
    with human_output_to_stderr(as_json):
        console.print(f"[bold]{claim.title}[/] ({claim.source}), scale {scale}\nthe paper's claim {claim.tag}: "
                      f"{claim.paper_claim or claim.title}\ncriterion, stated before the run: {claim.criterion}",
                      soft_wrap=True)
        try:
            with progress_bar(name, None, enabled=not as_json) as bar:
                show = SweepProgress(name, bar, log=not as_json)
                result = run_claim(name, out, scale, amend=amend, workers=workers, threads=threads, backend=backend,
                                   device=device, ray_address=ray_address, retry_failed=retry_failed, on_progress=show,
                                   **({"execution": execution, "memory_budget": memory_budget} if claim.trains else {}))
        except KeyboardInterrupt:
            err_console.print(f"error: interrupted{interrupted_by()}; run the same command again to continue from {out}"
                              if Path(out).exists() else f"error: interrupted{interrupted_by()} before anything was written", markup=False, soft_wrap=True)
            sys.exit(interrupted_exit_code())
        _print_table(result.rows)
        console.print(f"regime: {result.regime.line()}", soft_wrap=True)
        console.print(f"verdict ({scale}): [bold]{result.verdict}[/] — {result.reason}", soft_wrap=True)
        for line in result.notes.splitlines():
            if line.startswith("warning:"):
                console.print(line, soft_wrap=True)
        console.print(f"table, figure and verdict in {out}/ (results.csv, {Path(str(result.figure)).name if result.figure else 'no figure'}, verdict.json)")
    if as_json:
        emit_json({"claim": name, "scale": scale, "tag": claim.tag, "verdict": result.verdict, "reason": result.reason,
                   "regime": result.regime.as_dict(), "numbers": result.numbers, "rows": result.rows,
                   "figure": None if result.figure is None else str(result.figure), "out": str(out),
                   "plan": None if plan is None else plan.as_dict(),
                   "run": run_record(f"reproduce {name}", {"scale": scale, "out": str(out)})})


def _no_plan(name, scale, out, as_json):
    note = f"{name} trains nothing: it is computed, not trained (numerics), so there are no packs to plan"
    if as_json:
        emit_json({"claim": name, "scale": scale, "plan": None, "note": note,
                   "run": run_record(f"reproduce {name} --plan", {"scale": scale, "out": str(out)})})
    else:
        console.print(f"plan: {note}", soft_wrap=True, markup=False)


def _plan_first(name, scale, out, device, execution, workers, threads, backend, memory_budget, plan_only, yes,
                as_json):
    """Print the claim's plan (:mod:`expressivity.experiments.plan`); with ``--plan`` that is all
    (and ``--json`` prints it as the one object); a plan estimated above an hour needs ``--yes``
    (asked at a terminal, refused elsewhere)."""
    from expressivity.experiments.plan import ASK_ABOVE, check_affordable, format_seconds, plan_claim

    plan = plan_claim(name, scale, out, device=device, execution=execution, workers=workers, threads=threads,
                      backend=backend, memory_budget=memory_budget)
    if plan_only and as_json:
        emit_json({"claim": name, "scale": scale, "plan": plan.as_dict(),
                   "run": run_record(f"reproduce {name} --plan", {"scale": scale, "out": str(out)})})
        return plan
    (err_console if as_json else console).print("\n".join(plan.lines()), soft_wrap=True, markup=False)
    if plan_only:
        return plan
    if plan.note.startswith("refused"):
        raise click.UsageError(plan.note)
    if plan.seconds > ASK_ABOVE and not yes and sys.stdin.isatty() and not as_json:
        yes = click.confirm(f"estimated {format_seconds(plan.seconds)}: start?", default=False, err=True)
        if not yes:
            err_console.print("not started (answered no); nothing was written", markup=False)
            sys.exit(1)
    check_affordable(plan, yes)
    return plan


def _print_list(rows: list[dict]) -> None:
    """Each claim: its name, tag, title and source, then what each scale runs and costs (the
    claim's own estimates, as ``--json`` gives them), wrapped under an indent."""
    from rich.markup import escape
    from rich.padding import Padding
    from rich.table import Table

    for r in rows:
        proxy = " proxy" if r["proxy"] else ""
        console.print(f"[bold]{escape(r['name'])}[/] {escape(r['tag'])}{proxy}: {escape(r['title'])} "
                      f"({escape(r['source'])})")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column()
        for scale in ("quick", "medium", "full"):
            if r[scale]:
                grid.add_row(f"{scale}:", escape(r[scale]))
        console.print(Padding(grid, (0, 0, 0, 4)))


def _summary_command(names, extra: list[str], as_json: bool, markdown: bool) -> None:
    """``reproduce --summary DIR...``: refuse what does not apply, then print the table."""
    if markdown and as_json:
        raise click.UsageError("--markdown and --json are two formats; give one")
    if extra:
        raise click.UsageError(f"--summary reads finished runs and takes no other option (got {', '.join(extra)})")
    if not names:
        raise click.UsageError("--summary needs folders written by 'expressivity reproduce', e.g. --summary repro_out/*")
    for folder in names:
        if not Path(folder).is_dir():
            raise click.UsageError(f"--summary takes folders; {folder!r} is not one")
    folders = [Path(f) for f in names]
    from expressivity.experiments.claims.verdict_file import check_folders

    check_folders(folders, markdown)
    _print_summary(folders, as_json, markdown)


def _refuse_with_plan(flags: list[str]) -> None:
    """Refuse, in one line, the options ``--plan`` would ignore (``flags``, as typed): it runs
    nothing, so there is no start to confirm (``--yes``), no failed run to train again
    (``--retry-failed``) and no cluster to reach (``--ray-address``)."""
    if flags:
        verb, it = ("does", "it") if len(flags) == 1 else ("do", "them")
        raise click.UsageError(f"--plan runs nothing, so {', '.join(flags)} {verb} not apply; leave {it} out (give "
                               f"{it} when you start the run, without --plan)")


def _print_summary(folders, as_json: bool, markdown: bool = False) -> None:
    """One row per verdict found: claim, scale, verdict, regime; sorted along the scale ladder."""
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.experiments.claims import summary

    _say_unfinished(folders)   # first: a folder holding only an unfinished run is refused by summary()
    rows = summary(folders)
    _refuse_edited_words(rows)   # before any note: nothing is said of a folder that is refused
    _say_other_rules(rows)
    if markdown:
        from expressivity.experiments.claims.tables import markdown as as_markdown

        click.echo(as_markdown(rows))
        return
    if as_json:
        emit_json({"verdicts": rows, "run": run_record("reproduce --summary", {"folders": [str(f) for f in folders]})})
        return
    table = Table("claim", "scale", "verdict", "regime", "criterion amended", "folder")
    for r in rows:
        amended = "; ".join(f"{a['number']}: {a['time']}: {a['reason']}" for a in r["amendments"]) or "no"
        table.add_row(r["claim"] + (f" {r['tag']}" if r["tag"] else ""), r["scale"], _verdict_cell(r), r["regime"],
                      amended, r["folder"])
    print_table(console, table)


def _unfinished_runs(folders) -> list[Path]:
    """The reproduce output folders among ``folders`` and one level down that a run began (its ``criterion.md``, which
    reproduce writes first; other commands write a ``run.json`` too) and did not finish (no ``verdict.json``): the
    summary leaves them out (an interrupted wang-e-4 vanished from a summary of its parent folder: an audit,
    2026-11-29). Here, not in expressivity.experiments.claims, whose every module the verdicts' rules_sha256 hashes."""
    out = []
    for folder in map(Path, folders):
        for candidate in [folder, *sorted(p for p in folder.iterdir() if p.is_dir())] if folder.is_dir() else []:
            if (candidate / "criterion.md").is_file() and not (candidate / "verdict.json").is_file():
                out.append(candidate)
    return out


def _say_unfinished(folders) -> None:
    """One line on stderr naming the runs begun in ``folders`` and not finished, which the table leaves out."""
    from expressivity.cli.common import err_console

    left = _unfinished_runs(folders)
    if left:
        shown = ", ".join(str(p) for p in left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
        err_console.print(f"note: {len(left)} run(s) began and did not finish (no verdict.json), left out: {shown}; "
                          "resume each with 'expressivity reproduce CLAIM --out FOLDER' (its criterion.md names the "
                          "claim)", soft_wrap=True, markup=False)


def _refuse_edited_words(rows: list[dict]) -> None:
    """Refuse a verdict with no readable run.json, and a verdict word that is not the one the folder's run.json
    records: "reproduced" edited to "refuted" in verdict.json was shown, exit 0, beside a reason saying the
    opposite (a fresh audit, 2026-11-29). Here, not in
    expressivity.experiments.claims, whose every module the verdicts' rules_sha256 hashes."""
    import json

    from expressivity.errors import ExpressivityError

    for row in rows:
        # Every reproduce run writes its run.json (config, seed, version, data identity) before its verdict.json;
        # a verdict without one cannot be traced to what made it, so it is not shown as a result (a folder whose
        # run.json was deleted was listed, exit 0, until 2026-11-29).
        path = Path(row["folder"]) / "run.json"
        try:
            record = json.loads(path.read_text())
            recorded = record.get("verdict")
            if not isinstance(record.get("config"), dict) or not isinstance(recorded, str):
                # "{}" traces nothing either (a review, 2026-11-29)
                raise ValueError("no config or verdict in it")
        except (OSError, ValueError, UnicodeDecodeError, AttributeError) as exc:
            what = "is missing" if isinstance(exc, FileNotFoundError) else f"is not readable ({type(exc).__name__})"
            raise ExpressivityError(f"{path} {what}: this verdict cannot be traced to the config, seed and version "
                                    f"that made it; run the claim again (expressivity reproduce {row['claim']} "
                                    f"--scale {row['scale']} --out FOLDER)") from None
        if recorded != row["verdict"]:
            raise ExpressivityError(f"{row['folder']}/verdict.json says {row['verdict']!r} but its run.json records "
                                    f"{recorded!r}: one was edited after the run; run the claim again "
                                    f"(expressivity reproduce {row['claim']} --scale {row['scale']} --out FOLDER)")


def _say_other_rules(rows: list[dict]) -> None:
    """One line on stderr naming the folders judged under decision rules other than the installed ones (or before
    verdicts recorded them): their words may not be what these rules would say of the same numbers."""
    from expressivity.experiments.claims.criterion import rules_sha256

    here = rules_sha256()
    other = [r for r in rows if r.get("rules_sha256") != here]
    if other:
        named = ", ".join(f"{r['claim']} ({r['scale']})" for r in other[:4]) + (", ..." if len(other) > 4 else "")
        unrecorded = sum(r.get("rules_sha256") is None for r in other)
        err_console.print(f"note: {len(other)} of {len(rows)} verdicts were reached under other decision rules than "
                          f"this version's ({named}"
                          f"{f'; {unrecorded} from before verdicts recorded them' if unrecorded else ''}); their "
                          "source.commit in run.json names the code; run a claim again to judge it under these",
                          markup=False, soft_wrap=True)


def _verdict_cell(row: dict) -> str:
    """The verdict word of a summary row; an undecided one with its reason word (``undecided:
    underpowered``), as the start of its reason gives it."""
    from expressivity.experiments.claims import UNDECIDED_REASONS

    if row["verdict"] != "undecided":
        return row["verdict"]
    why = next((w for w in UNDECIDED_REASONS if row["reason"].startswith(w)), None)
    return f"undecided: {why}" if why else "undecided"


def _print_table(rows: list[dict]) -> None:
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.experiments.query import format_number

    if not rows:
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    table = Table(*columns)
    for row in rows:
        table.add_row(*(format_number(row.get(c)) if isinstance(row.get(c), float) else str(row.get(c, ""))
                        for c in columns))
    print_table(console, table)
