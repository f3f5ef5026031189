"""``expressivity yun``: the Yun et al. (2020) compiler (Theorems 2 and 3) and its exact checks."""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import click

from expressivity.cli.common import console, emit_json, err_console, jsonable, run_record, typed_options, write_json
from expressivity.records import check_output_dir, staged_output
from expressivity.errors import ExpressivityError
MAX_SAMPLES = 10 ** 7          # = constructions.yun.build.MAX_SAMPLES (not imported here: startup time)
MIN_SAMPLES = 100              # = constructions.yun.build.MIN_SAMPLES
CONTEXTUAL_BUDGET = 2_000_000  # = constructions.yun.size.DEFAULT_CONTEXTUAL_BUDGET (about 20 s of exact arithmetic)

# ---- parsing -----------------------------------------------------------------------------------


def parse_delta(text: str) -> int:
    """``"1/K"`` -> ``K`` (integer >= 2)."""
    t = text.strip()
    num, sep, den = t.partition("/")
    try:   # ASCII digits only: int() took "1/٢" and "1/0_2" as 1/2 (a review, 2026-11-28)
        if not sep or not (num.isascii() and num.isdigit() and den.isascii() and den.isdigit()) \
                or int(num) != 1 or int(den) < 2:
            raise ValueError
        return int(den)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not of the form 1/K with integer K >= 2 (e.g. --delta 1/4)") from None


def parse_deltas(text: str) -> list[int]:
    """``"1/2,1/4"`` -> ``[2, 4]``; empty fields and repeated values are refused."""
    parts = text.split(",")
    if any(not part.strip() for part in parts):
        raise click.BadParameter(f"{text!r} has an empty field; separate values by single commas (e.g. --delta 1/2,1/4)")
    Ns = [parse_delta(part) for part in parts]
    dup = sorted({N for N in Ns if Ns.count(N) > 1})
    if dup:
        raise click.BadParameter(f"{text!r} repeats delta 1/{dup[0]}; give each delta once (e.g. --delta 1/2,1/4)")
    return Ns


def parse_input(text: str, n: int, d: int):
    """Tokens separated by ``;``, coordinates by ``,``; ints, decimals and ``p/q`` allowed."""
    import numpy as np

    from expressivity.network.numbers import TooManyDigits, exact_from_text

    tokens = [tok for tok in text.split(";")]
    if any(not tok.strip() for tok in tokens):
        raise click.BadParameter(f"{text!r} has an empty token; separate tokens by single ';' (e.g. \"0,1/2;1/4,0\")")
    if len(tokens) != n:
        raise click.BadParameter(f"got {len(tokens)} tokens, --n is {n}; separate tokens with ';' (e.g. \"0,1/2;1/4,0\")")
    X = np.empty((n, d), dtype=object)
    for j, tok in enumerate(tokens):
        coords = [c.strip() for c in tok.split(",")]
        if any(not c for c in coords):
            raise click.BadParameter(f"token {j} ({tok.strip()!r}) has an empty coordinate; separate coordinates by "
                                     "single ',' (e.g. \"0,1/2;1/4,0\")")
        if len(coords) != d:
            raise click.BadParameter(f"token {j} has {len(coords)} coordinates, --d is {d}; separate coordinates with ','")
        for i, c in enumerate(coords):
            try:
                X[j, i] = exact_from_text(c)
            except TooManyDigits as exc:
                raise click.BadParameter(f"token {j} coordinate {i}: {exc}") from None
            except (ValueError, ZeroDivisionError):
                raise click.BadParameter(f"token {j} coordinate {i}: {c!r} is not a number (use e.g. 3, 0.25 or 1/3)") from None
    return X


def _params(n: int, d: int, N: int, positional: bool, shift: str, constants: str = "B"):
    from expressivity.constructions.yun.constants import YunParams

    return YunParams(n, d, N, positional=positional, shift=shift, constants=constants)


def _given(name: str) -> bool:
    """Whether option ``name`` was set by the user (not left at its default)."""
    return bool(typed_options(click.get_current_context(), [name]))


def _check_mode_options(positional: bool, constants_option: bool = False) -> None:
    """Refuse options that the chosen theorem would silently ignore."""
    if not positional and _given("shift"):
        raise click.BadParameter("applies only with --positional (Theorem 3); drop --shift or add --positional",
                                 param_hint="--shift")
    if constants_option and positional and _given("constants"):
        raise click.BadParameter("the Theorem 2 constant sets do not apply with --positional; "
                                 "drop --constants or --positional", param_hint="--constants")


def _finite_positive(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"must be a finite number > 0, got {value}", param_hint=name)


@contextmanager
def _progress(label: str):
    """A rich progress bar on stderr (only on a terminal); yields a ``(done, total)`` callback."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=err_console, transient=True) as prog:
        task = prog.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update


_common = [
    click.option("--n", "n", type=int, required=True, help="sequence length (>= 2)"),
    click.option("--d", "d", type=int, required=True, help="token dimension (>= 1)"),
    click.option("--delta", "delta", required=True, help="grid step 1/K"),
    click.option("--positional", is_flag=True, help="Theorem 3: positional encoding rows 0..n-1"),
    click.option("--shift", type=click.Choice(["clean", "paper"]), default="clean", show_default=True,
                 help="PE shift scale: clean s=R/delta, or the paper's delta^-d"),
    click.option("--json", "as_json", is_flag=True, help="print one JSON object on stdout"),
]


def common(f):
    for opt in reversed(_common):
        f = opt(f)
    return f


@click.group()
def yun() -> None:
    """Yun et al. (2020): compile targets into Transformers and verify every lemma exactly."""


@yun.command()
@common
@click.option("--input", "input_text", required=True, help='tokens separated by ";", coordinates by ","')
@click.option("--budget", type=click.IntRange(min=1), default=CONTEXTUAL_BUDGET, show_default=True,
              help="max exact operations (layers x n^2 d), estimated before building")
def contextual(n, d, delta, positional, shift, as_json, input_text, budget):
    """Contextual values q = u . g_c(g_q(X)), one per token, in exact arithmetic."""
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.constructions.yun.quantize import quantizer
    from expressivity.network.exact import forward_exact
    from expressivity.constructions.yun.size import check_contextual_budget

    _check_mode_options(positional)
    p = _params(n, d, parse_delta(delta), positional, shift)
    check_contextual_budget(p, budget)  # refuse before building anything
    X = parse_input(input_text, n, d)
    g_c = contextual_map(p)
    p = g_c.metadata["params"]
    net = quantizer(p).then(g_c)
    H = forward_exact(net, X)
    q = [sum(ui * h for ui, h in zip(p.u, row)) for row in H]
    out = {"values": q, "t_l": p.t_l, "t_r": p.t_r, "in_range": [p.t_l <= v <= p.t_r for v in q],
           "arithmetic": "Fraction",
           "run": run_record("yun contextual", {"n": n, "d": d, "delta": delta, "positional": positional,
                                                "shift": shift, "input": input_text, "budget": budget})}
    if as_json:
        emit_json(out)
    else:
        click.echo("values: " + ", ".join(str(jsonable(v)) + ("" if ok else " (outside)") for v, ok in zip(q, out["in_range"])))
        click.echo(f"[t_l, t_r] = [{jsonable(p.t_l)}, {jsonable(p.t_r)}]")
        if not all(out["in_range"]):
            err_console.print("note: values outside [t_l, t_r]: Lemma 4.2 covers inputs of distinct tokens on the "
                              "delta-grid (after quantization); this input is off that domain", markup=False,
                              soft_wrap=True)


GRID_BYTES_A_POINT = 300   # measured peak of verify_contextual: 345 MB at 1.0M points, 1.14 GB at 4.0M (a fresh audit, 2026-11-28)


def _check_grid_memory(p) -> None:
    """Refuse, before anything is built, an exhaustive check whose grid would not fit the memory
    available (the default --budget of 20M points needs about 6 GB; it ran out at 16M under 3 GB)."""
    from expressivity.errors import BudgetError
    from expressivity.training.budget import GiB, device_budget

    need, budget = p.extended_grid_points * GRID_BYTES_A_POINT, device_budget("cpu")
    if need > budget.bytes:
        raise BudgetError(f"{p.describe()}: checking its {p.extended_grid_points:,} extended-grid points holds "
                                   f"about {need / GiB:.3g} GiB ({GRID_BYTES_A_POINT} bytes a point), above the budget of "
                                   f"{budget.line()}; use a larger delta or smaller n")


@yun.command()
@common
@click.option("--constants", type=click.Choice(["A", "B"]), default="B", show_default=True,
              help="Theorem 2 constant set (A fails P4; for checking the checker); not with --positional")
@click.option("--budget", type=click.IntRange(min=1), default=20_000_000, show_default=True,
              help="max extended-grid points")
def verify(n, d, delta, positional, shift, as_json, constants, budget):
    """Exhaustive exact check of Lemma 4.2's P1-P4 over the extended grid."""
    from expressivity.constructions.yun.contextual import contextual_map
    from expressivity.constructions.yun.size import check_grid_budget
    from expressivity.constructions.yun.checks.lemmas import verify_contextual

    _check_mode_options(positional, constants_option=True)
    p = _params(n, d, parse_delta(delta), positional, shift, constants)
    check_grid_budget(p, budget)  # before building: the window count grows like the grid
    _check_grid_memory(p)
    g_c = contextual_map(p)
    with _progress("verifying P1-P4") as cb:
        rep = verify_contextual(p, g_c, progress=cb)
    out = rep.as_dict() | {"run": run_record("yun verify", {
        "n": n, "d": d, "delta": delta, "positional": positional, "shift": shift, "constants": constants,
        "budget": budget})}
    if as_json:
        emit_json(out)
    else:
        status = "[green]0 failures[/]" if rep.failures == 0 else f"[red]{rep.failures} failures[/] {rep.failures_by_property}"
        console.print(f"{p.describe()}: {status} on {rep.grid_points:,} extended-grid points, {rep.classes:,} classes, "
                      f"min gap {jsonable(rep.min_gap)}, t_l={jsonable(rep.t_l)}, t_r={jsonable(rep.t_r)} "
                      f"({rep.seconds:.2f} s, {rep.arithmetic})", soft_wrap=True)
    if rep.classes == 0 and not p.positional:   # P1-P3 then hold of no cube: say so, not only "0 failures"
        err_console.print(f"note: no cube has {n} distinct tokens at delta={delta} (fewer grid cells per token than "
                          "tokens), so P1-P3 concern no cube here and Theorem 2 builds nothing; only P4 is checked",
                          markup=False, soft_wrap=True)
    if rep.failures:
        err_console.print(f"error: Lemma 4.2 fails on {rep.failures:,} extended-grid points "
                          f"({rep.failures_by_property})", markup=False, soft_wrap=True)
        sys.exit(1)


@yun.command()
@click.option("--target", "target_spec", required=True, help="built-in name or module:function")
@click.option("--n", "n", type=int, required=True, help="sequence length (>= 2)")
@click.option("--d", "d", type=int, required=True, help="token dimension (>= 1)")
@click.option("--delta", "deltas", required=True, help="1/K, or several: 1/2,1/4,1/8")
@click.option("--positional", is_flag=True, help="Theorem 3: positional encoding rows 0..n-1")
@click.option("--shift", type=click.Choice(["clean", "paper"]), default="clean", show_default=True,
              help="PE shift scale: clean s=R/delta, or the paper's delta^-d")
@click.option("--p", "p_norm", type=float, default=2.0, show_default=True, help="d_p exponent (>= 1)")
@click.option("--samples", type=int, default=2000, show_default=True, help=f"Monte-Carlo samples ({MIN_SAMPLES} to {MAX_SAMPLES:,})")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="seed of the d_p samples")
@click.option("--lambda", "lam", type=float, default=None, help="softmax inverse temperature (default: from margins)")
@click.option("--epsilon", type=float, default=None, help="quantizer ReLU ramp width, rounded down to a power of two (default: from margins)")
@click.option("--budget", type=click.IntRange(min=1), default=2_000_000, show_default=True, help="max parameters")
@click.option("--clamp/--no-clamp", default=True, show_default=True,
              help="end with two passes of d layers clamping each output to [min(0, f), max(0, f)] over the cube "
                   "centres (the identity on the grid; not in the paper): without it the quantizer ramps carry most of d_p(f, g) in "
                   "float64 from delta 1/8 on (docs/yun.md)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="folder for the networks (safetensors + JSON), figures, run.json and manifest.json; written whole or not "
                   "at all")
@click.option("--json", "as_json", is_flag=True,
              help="print JSON on stdout: one object, or a list of one per delta when --delta gives several")
def build(target_spec, n, d, deltas, positional, shift, p_norm, samples, seed, lam, epsilon, budget, clamp, out_dir,
          as_json):
    """Compile a target, verify it exactly, soften it, check the softened network and estimate its d_p error.

    Exits 1 when a check fails (the report says which), 2 on bad input."""
    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.size import check_budget
    from expressivity.constructions.yun.contextual import resolve_params
    from expressivity.constructions.yun.soften import SoftenConfig, check_epsilon, float64_limit
    from expressivity.targets import get_target

    if not (math.isfinite(p_norm) and p_norm >= 1):
        raise click.BadParameter(f"must be a finite number >= 1, got {p_norm}", param_hint="--p")
    if not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise click.BadParameter(f"must be between {MIN_SAMPLES} and {MAX_SAMPLES:,}, got {samples:,}; fewer give a 95% "
                                 "interval that covers far less (22% at 2 samples)", param_hint="--samples")
    _finite_positive("--lambda", lam)
    _finite_positive("--epsilon", epsilon)
    _check_mode_options(positional)
    Ns = parse_deltas(deltas)
    if out_dir is not None:
        check_output_dir(out_dir, "yun build", replaces=True)
    target = get_target(target_spec)
    config = BuildConfig(p=p_norm, samples=samples, seed=seed, budget=budget, soften=SoftenConfig(lam=lam, epsilon=epsilon),
                         clamp=clamp)
    params = [_params(n, d, N, positional, shift) for N in Ns]
    for prm in params:  # refuse every delta before building any
        prm.require_distinct_cubes()
        check_budget(prm, budget, clamp=clamp)
        _check_grid_memory(prm)   # building includes the exhaustive lemma check
        float64_limit(resolve_params(prm))
        check_epsilon(prm, epsilon)
    results = []
    for prm in params:
        with _progress(f"building delta=1/{prm.N}") as cb:
            results.append(build_and_check(target, prm, config, progress=cb))
        if not as_json:
            _print_build(prm.N, p_norm, results[-1].report)
    cfg = {"target": target_spec, "n": n, "d": d, "deltas": [f"1/{N}" for N in Ns], "positional": positional,
           "shift": shift, "p": p_norm, "samples": samples, "lambda": lam, "epsilon": epsilon, "budget": budget,
           "clamp": clamp, "out": None if out_dir is None else str(out_dir)}
    if target.source is not None:   # a module:function target: which code it ran (an audit, 2026-11-28)
        cfg |= {"target_source": target.source, "target_sha256": target.source_sha256}
    run = run_record("yun build", cfg, seed)
    objs = [{"delta": f"1/{prm.N}", **res.report.as_dict(), "run": run} for prm, res in zip(params, results)]
    if out_dir is not None:
        _save_build(out_dir, params, results, run, objs)
    if as_json:  # one object per delta, each with its run record; several deltas give a list
        emit_json(objs[0] if len(objs) == 1 else objs)
    failed = [f"delta=1/{prm.N}: {line}" for prm, res in zip(params, results) for line in res.report.failures()]
    if failed:
        err_console.print("error: verification failed: " + "; ".join(failed))
        sys.exit(1)


def _print_build(N: int, p_norm: float, report) -> None:
    from expressivity.constructions.yun.build import agreement_vacuous, ramps_share, vacuous_where, wide_ramps

    total, size = report.error("d_p(f, g)"), report.size
    checks = "all checks passed" if report.ok else "FAILED: " + "; ".join(report.failures())
    if wide_ramps(report.margins):   # a chosen --epsilon whose ramps cover more than the automatic width's
        checks += (f" (off the quantizer ramps, which cover up to {min(report.margins['quantizer_ramp_measure_bound'], 1.0):.3g} "
                   "of the cube at this --epsilon: g is unverified on them; see d_p(g_bar, g))")
    if agreement_vacuous(report.margins):   # a tiny target (or coordinate): the checks' absolute bound exceeds it
        checks += (f" (but the agreement checks' bound {report.margins['agreement_bound']:.3g} is not below half "
                   f"the target's largest value in {vacuous_where(report.margins)}: they cannot fail there; see the "
                   "notes)")
    interval = ("no 95% interval: see the report" if total.ci95 is None
                else f"95% CI {total.ci95[0]:.4g}-{total.ci95[1]:.4g}")
    ramps = ramps_share(total)
    if ramps is not None and ramps["share"] >= 0.5:   # the number is the ramps', not the approximation's (the notes)
        interval += (f"; {ramps['share']:.0%} of it from the quantizer ramps proper, measure {ramps['measure']:.2g}, "
                     "where g is not the verified network" + ("" if report.margins.get("output_clamp") is not None else
                                                             " (built with --no-clamp)"))
    console.print(f"delta=1/{N}: d_{p_norm:g}(f, g) {total.value:.4g} ({interval}), "
                  f"{size.parameters:,} params = {size.ratio:.3g} x lower bound, layers {size.extra['layers_by_stage']}; "
                  f"{checks}", soft_wrap=True)


def _save_build(out_dir: Path, params, results, run: dict, objs: list[dict]) -> None:
    """Networks, figures, run.json and manifest.json under ``out_dir``, staged so a failure leaves nothing behind."""
    from expressivity.figures.yun import contextual_values, dp_vs_delta
    from expressivity.export import save_network
    from expressivity.manifest import RUN_RECORD, NetworkEntry, network_files, write_manifest

    with staged_output(out_dir, "yun build") as stage:
        files, listing, networks = [], {}, []
        for k, (prm, res) in enumerate(zip(params, results)):
            sub = stage / f"delta_1_{prm.N}"
            files += save_network(res.build.network, sub / "modified", manifest=False)
            files += save_network(res.softened, sub / "softened", manifest=False)
            files.append(contextual_values(res.build, sub / "contextual_values.png"))
            listing |= {**network_files(f"{sub.name}/modified/"), **network_files(f"{sub.name}/softened/"),
                        f"{sub.name}/contextual_values.png": f"figure: contextual values, delta=1/{prm.N}"}
            networks += [NetworkEntry(f"{sub.name}/{form}", f"delta=1/{prm.N}, {what}", "network",
                                      f"run.json#/results/{k}")
                         for form, what in (("modified", "modified Transformer (hardmax, piecewise-linear)"),
                                            ("softened", "softened (softmax, ReLU)"))]
        files.append(dp_vs_delta([res.report for res in results], stage / "dp_vs_delta.png"))
        names = [str(Path(f).relative_to(stage)) for f in files]   # relative: the folder may move
        write_json(stage / "run.json", run | {"results": objs, "files": names})
        listing |= {"dp_vs_delta.png": "figure: d_p error against delta",
                    "run.json": RUN_RECORD + "; construction reports, one per delta, in 'results'"}
        write_manifest(stage, "yun build", "yun build", listing, networks)


def demo_section(out_dir: Path) -> dict:
    """Theorem 2 (smooth-rank, n=2, d=1, delta=1/2..1/8) and Theorem 3 (prefix-mean, n=2, d=1,
    delta=1/4): every exact check, softening and the d_2 error, with figures under ``out_dir``
    (a few seconds on 2 CPUs)."""
    from rich.table import Table

    from expressivity.cli.tables import print_table
    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.checks.dp import OFF_RAMPS, stratum
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.figures.yun import contextual_values, dp_vs_delta
    from expressivity.targets import get_target

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    config = BuildConfig(samples=1000, seed=0)
    thm2 = [build_and_check(get_target("smooth-rank"), YunParams(2, 1, N), config) for N in (2, 4, 8)]
    thm3 = build_and_check(get_target("prefix-mean"), YunParams(2, 1, 4, positional=True), config)
    figs = [dp_vs_delta([r.report for r in thm2], out_dir / "yun_dp_vs_delta.png"),
            contextual_values(thm2[-1].build, out_dir / "yun_contextual_values.png")]
    # Short headers so the table fits 80 columns; the caption is the legend.
    table = Table(title="Yun et al. 2020 compiler: exact checks and d_2 error of the softmax/ReLU network",
                  caption="thm: Theorem 2 (equivariant) or 3 (positional); grid: points of the exact P1-P4 check; "
                          "d₂: over the cube (stratified Monte Carlo); off ramps: restricted to inputs off the "
                          "softened quantizer's ramps, where g is the verified network (on them the output clamp "
                          "bounds g: see docs/yun.md); params/bound: parameters of the softened network "
                          "over the paper's counting lower bound")
    for col in ("thm", "target", "n,d,δ", "grid", "checks", "d₂ [95% CI]", "off ramps", "params/bound"):
        table.add_column(col, justify="right")
    rows = []
    for res in (*thm2, thm3):
        rep = res.report
        total, grid = rep.error("d_p(f, g)"), rep.check("Lemma 4.2 P1-P4 on the extended grid")
        row = {**{k: rep.constants[k] for k in ("target", "n", "d", "delta", "lambda", "epsilon")},
               "construction": rep.construction, "dp_error": total.value, "dp_ci": None if total.ci95 is None else list(total.ci95),
               "dp_error_off_ramps": (stratum(total, OFF_RAMPS) or {}).get("dp"),
               "params": rep.size.parameters, "ratio_to_lower_bound": rep.size.ratio,
               "layers": rep.size.extra["layers_by_stage"], "grid_points": grid.points, "arithmetic": grid.arithmetic,
               "ok": rep.ok, "failed_checks": rep.failures()}
        rows.append(row)
        table.add_row(row["construction"].removeprefix("yun theorem "), row["target"], f"{row['n']},{row['d']},{jsonable(row['delta'])}",
                      str(row["grid_points"]), "passed" if row["ok"] else "FAILED: " + "; ".join(row["failed_checks"]),
                      (f"{row['dp_error']:.3g} [{row['dp_ci'][0]:.3g}, {row['dp_ci'][1]:.3g}]" if row["dp_ci"]
                       else f"{row['dp_error']:.3g} (no CI)"),
                      "-" if row["dp_error_off_ramps"] is None else f"{row['dp_error_off_ramps']:.3g}",
                      f"{row['ratio_to_lower_bound']:.1f}")
    print_table(console, table)
    return {"theorem2": rows[:-1], "theorem3": rows[-1], "figures": [str(f) for f in figs],
            "ok": all(r["ok"] for r in rows)}


__all__ = ["yun", "demo_section", "parse_delta", "parse_input", "ExpressivityError"]
