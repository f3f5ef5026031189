"""``expressivity export``: a saved network as a Network folder or a TransformerLens folder."""

from __future__ import annotations

from pathlib import Path

import click

from expressivity.cli.common import (PositiveNumber, console, emit_json, err_console, human_output_to_stderr,
                                     refuse_untaken, run_record, typed_options, warn)
from expressivity.errors import ExpressivityError
from expressivity.verify.size import counted

TARGETS = ("network", "transformer-lens")
TL_ONLY = ("n_ctx", "hardmax_lambda", "no_verify", "allow_length")


@click.command("export")
@click.argument("path", type=str)
@click.option("--to", "to", type=click.Choice(TARGETS), required=True,
              help="network: a trained run or TransformerLens folder as a saved Network; transformer-lens: any saved "
                   "network as a TransformerLens 4 folder (config.json + model.safetensors).")
@click.option("--out", type=str, required=True,
              help="New folder to write (written whole or not at all).")
@click.option("--n-ctx", "n_ctx", type=click.IntRange(1, 4096), default=None,
              help="transformer-lens: positions (default: the network's length, else the length its construction was "
                   "built for, else 64); a position bias costs this many residual dimensions.")
@click.option("--hardmax-lambda", "hardmax_lambda", type=PositiveNumber("30"), default=None,
              help="transformer-lens: export hardmax layers as softmax of this multiple of their scores.")
@click.option("--no-verify", "no_verify", is_flag=True,
              help="transformer-lens: skip running the folder in TransformerLens against the network.")
@click.option("--allow-length", "allow_length", is_flag=True,
              help="transformer-lens: accept an --n-ctx outside the lengths the network is built and verified for "
                   "(the export is then marked as outside the construction's claim).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def export(ctx, path, to, out, n_ctx, hardmax_lambda, no_verify, allow_length, as_json):
    """Export the saved network at PATH (a saved network, a construction's --out folder, a trained run folder or a
    TransformerLens folder) to a Network folder or a TransformerLens folder.

    Exit 1 if TransformerLens does not reproduce the network (nothing is written then), 2 on bad input."""
    from expressivity.export.convert import VerificationFailed, export_network, export_transformer_lens
    from expressivity.errors import NetworkError
    from expressivity.export.folders import load_saved

    if to == "network":
        refuse_untaken("--to network", sorted(typed_options(ctx, TL_ONLY)), " (they apply to --to transformer-lens)")
    if out.strip() in ("", "."):
        raise ExpressivityError("--out must name a new folder")
    out = Path(out)
    source, target = Path(path).resolve(), out.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise ExpressivityError(f"--out {out} overlaps the network being exported ({path}); choose a separate folder")
    config = {"path": str(path), "to": to, "out": str(out), "n_ctx": n_ctx, "hardmax_lambda": hardmax_lambda,
              "verify": not no_verify, "allow_length": allow_length}
    run = run_record("export", config)
    with human_output_to_stderr(as_json):
        saved = load_saved(path)
        warn(saved)
        # which network was exported: the record named only the path, which may hold another network later (an
        # audit, 2026-11-28: a replayed record wrote other weights, and the two records read the same)
        from expressivity.network.network import weights_digest

        run["config"] |= {"source_folder": str(source), "source_weights_digest": weights_digest(saved.network)}
        if allow_length:   # as run refuses it: a network without a narrower length claim has nothing to allow
            from expressivity.inspect.run import refuse_inapplicable

            refuse_inapplicable(saved.network, True, False)
        try:
            if to == "network":
                result = export_network(saved, out, run)
            else:
                result = export_transformer_lens(saved, out, run, n_ctx=n_ctx, hardmax_lambda=hardmax_lambda,
                                                 verify=not no_verify, allow_length=allow_length)
        except VerificationFailed as exc:
            err_console.print(f"error: {exc}", soft_wrap=True, markup=False, highlight=False)
            raise SystemExit(1)
        except NetworkError as exc:   # export has no --allow-outside: it exports a network with its claim or none
            raise NetworkError(str(exc).replace("pass allow_outside=True to run it anyway, its outputs marked as outside "
                                                "the claim", "export exports a network within its claim: build or "
                                                "save it again")) from None
    result |= {"source": saved.describe(), "run": run,
               **({"warnings": list(saved.warnings)} if saved.warnings else {})}   # stderr has them too
    if as_json:
        emit_json(result)
        return
    _print(result)


def _say(text: str) -> None:
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def _print(result: dict) -> None:
    _say(f"wrote {result['out']}: {', '.join(Path(f).name for f in result['files'])}")
    if result["to"] == "network":
        _say(result["summary"])
        return
    c, cost = result["config"], result["cost"]
    _say(f"TransformerLens: d_model={c['d_model']} ({cost['network_d']} network dims + {cost['position_dims']} one-hot "
         f"position dims), {counted(c['n_layers'], 'block')}, {counted(c['n_heads'], 'head')} of d_head={c['d_head']}, "
         f"d_mlp={c['d_mlp']}, "
         f"n_ctx={c['n_ctx']}, {c['attention_dir']}, norm={c['normalization_type']}; "
         f"{cost['exported_parameters']} parameters (network: {cost['network_parameters']})")
    for change in result["changes"]:
        _say(f"  - {change}")
    v = result["verified"]
    if v.get("status") != "run":
        _say(f"verification {v['status']}")
        return
    for dtype in [d for d in ("float32", "float64") if d in v]:
        d = v[dtype]
        ours = f" (our own float32 evaluator: {d['our_float32_relative']:.3g})" if "our_float32_relative" in d else ""
        if "within" in d:   # above the fixed tolerance, within our own float64 evaluators' spread
            ours = (f" (within ten times the spread of our own two float64 evaluators, residuals "
                    f"{d['our_float64']['residual_relative']:.3g}: this network's float64 rounding)")
        _say(f"TransformerLens {dtype}: output {d['output_relative']:.3g} relative, attention patterns "
             f"{d['pattern_abs']:.3g}, residual stream {d['residual_relative']:.3g} (tolerance {d['tolerance']:g}): "
             f"{d['status']}{ours}")
    if "target" in v:
        t = v["target"]
        _say(f"against the construction's target at n_ctx={c['n_ctx']}: max error {t['max_abs_error']:.3g} (bound "
             f"{t['bound']:.3g}): {t['status']}")
    if result.get("no_claim"):
        _say(f"WARNING: the exported network carries no claim on any input: {result['no_claim']}; run refuses it "
             "unless --allow-outside")
    elif result["within_claim"] is False:   # None: a trained model's export, with no claim to be within
        _say(f"WARNING: n_ctx={c['n_ctx']} is outside the lengths the network is built and verified for "
             f"({result['valid_lengths']}); the export is outside the construction's claim")
    if "hardmax_vs_softmax" in v:
        _say(f"softmax copy vs the hardmax network on these inputs: {v['hardmax_vs_softmax']:.3g} relative")
