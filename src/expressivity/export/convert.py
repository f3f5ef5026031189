"""Write a saved network in another form: a :class:`Network` folder, or a TransformerLens folder.

Both functions take a :class:`~expressivity.export.folders.Saved` (any kind of saved network),
write their output folder whole or not at all (:class:`~expressivity.records.staged_output`),
and return what they wrote and measured, as JSON-ready values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.export.folders import Saved
from expressivity.network.network import Network
from expressivity.records import check_output_dir, jsonable, staged_output, write_json

VERIFY_BATCH = 4


class VerificationFailed(ExpressivityError):
    """TransformerLens computed something other than the network; nothing was written."""


def export_network(saved: Saved, out: Path, run: dict) -> dict:
    """Save ``saved.network`` (a trained run or a TransformerLens folder) as ``out/network.json`` + weights."""
    from expressivity.export.safetensors_io import save_network

    if saved.kind in ("network", "construction"):
        raise ExpressivityError(f"{saved.folder} is already a saved network; --to network converts trained runs and "
                                "TransformerLens folders (use --to transformer-lens to export it)")
    check_output_dir(out, "export")
    with staged_output(out, "export") as stage:
        files = [str(Path(out) / p.name) for p in save_network(saved.network, stage)]
        write_json(stage / "run.json", run | {"source": saved.describe(), "files": files})
    return {"to": "network", "out": str(out), "files": files + [str(Path(out) / "run.json")],
            "network": saved.network.name, "summary": saved.network.summary(max_layers=12)}


def verification_input(net: Network, n: int, batch: int = VERIFY_BATCH, seed: int = 0) -> np.ndarray:
    """Inputs ``(batch, n, d_in)`` to check an export on: token ids for token networks, values in
    [-1, 1) in the named input dimensions (all dimensions when none are named; [0, 1) for Yun's)."""
    from expressivity.export.run import input_dims, takes_tokens

    rng = np.random.default_rng(seed)
    X = np.zeros((batch, n, net.d_in))
    if takes_tokens(net):
        ids = rng.integers(0, net.d_in, size=(batch, n))
        X[np.arange(batch)[:, None], np.arange(n)[None, :], ids] = 1.0
        return X
    cols = input_dims(net) or list(range(net.d_in))
    low = 0.0 if net.name.startswith("yun[") else -1.0
    X[..., cols] = rng.uniform(low, 1.0, size=(batch, n, len(cols)))
    return X


def _check(net: Network, export, folder: Path, n: int, verify: bool, seed: int) -> dict:
    """Load the written folder through TransformerLens's API and compare it with the network."""
    from expressivity.export import transformer_lens as tl

    if not verify:
        return {"status": "not run (--no-verify)"}
    try:
        import transformer_lens  # noqa: F401
    except ImportError:
        return {"status": f"not run: TransformerLens is not installed; {tl.INSTALL}"}
    X = verification_input(net, n, seed=seed)
    float32_ok = "float32" if all(not c.startswith("a weight of magnitude") for c in export.changes) else None
    checked = {"status": "run", "input": f"{VERIFY_BATCH} random inputs of {n} tokens (seed {seed})",
               **tl.verify(net, export, X, tuple(d for d in (float32_ok, "float64") if d), folder=folder)}
    failed = [d for d in ("float32", "float64") if d in checked and checked[d]["status"] == "failed"]
    if failed:
        worst = ", ".join(f"{d}: output {checked[d]['output_relative']:.3g} relative, patterns "
                          f"{checked[d]['pattern_abs']:.3g}, residuals {checked[d]['residual_relative']:.3g} "
                          f"(tolerance {checked[d]['tolerance']:g})" for d in failed)
        raise VerificationFailed(f"TransformerLens does not reproduce the network ({worst}); nothing was written. "
                                 "Please report this with the network folder")
    return checked


def _margin(report: dict | None) -> tuple[str, float] | None:
    margins = (report or {}).get("margins") or {}
    for key in ("score_gap_per_unit_scale", "score_gap"):
        value = margins.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return key, float(value)
    return None


def export_transformer_lens(saved: Saved, out: Path, run: dict, *, n_ctx: int | None = None,
                            hardmax_lambda: float | None = None, verify: bool = True, seed: int = 0) -> dict:
    """Write ``saved.network`` as a TransformerLens folder and, when TransformerLens is installed,
    check it: the written folder, loaded through TransformerLens's API in float32 and float64, run
    against the network on :func:`verification_input`. A failed check raises
    :class:`VerificationFailed` and writes nothing. ``n_ctx`` defaults to the network's length,
    else the length its construction was built and checked for (its report), else
    :data:`~expressivity.export.transformer_lens.DEFAULT_N_CTX`.
    """
    from expressivity.export import transformer_lens as tl

    check_output_dir(out, "export")
    net = saved.network
    source = {"kind": saved.kind, "folder": str(saved.folder), "name": net.name}
    if n_ctx is None and net.max_length is None and net.length is None:
        n_ctx = saved.typical_length()   # the length the construction was built and checked for
    export = tl.to_transformer_lens(net, n_ctx=n_ctx, hardmax_lambda=hardmax_lambda, margin=_margin(saved.report),
                                    source=source)
    n = net.length or min(saved.typical_length() or 16, export.config["n_ctx"])
    from expressivity.export.run import default_input

    with staged_output(out, "export") as stage:
        paths = tl.save_transformer_lens(export, stage, name=net.name or "network", folder=Path(out).name,
                                         example=default_input(net, net.length or min(n, 4)))
        checked = _check(net, export, stage, n, verify, seed)
        write_json(stage / "expressivity.json", export.description() | {"verified": jsonable(checked)})
        files = [str(Path(out) / p.name) for p in paths]
        write_json(stage / "run.json", run | {"source": saved.describe(), "files": files})
    return {"to": "transformer-lens", "out": str(out), "files": files + [str(Path(out) / "run.json")],
            "network": net.name, "config": export.config, "cost": export.cost, "changes": list(export.changes),
            "tolerance": export.tolerance, "verified": checked}
