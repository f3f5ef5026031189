"""Write a saved network in another form: a :class:`Network` folder, or a TransformerLens folder.

Both functions take a :class:`~expressivity.export.folders.Saved` (any kind of saved network),
write their output folder whole or not at all (:class:`~expressivity.records.staged_output`),
and return what they wrote and measured, as JSON-ready values.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from expressivity.errors import ExpressivityError, NetworkError
from expressivity.export.folders import Saved
from expressivity.manifest import RUN_RECORD, NetworkEntry, network_files, with_own_digest, write_manifest
from expressivity.network.answers import answers_of
from expressivity.network.inputs import default_input, input_dims, takes_tokens
from expressivity.network.network import Network
from expressivity.records import check_output_dir, jsonable, staged_output, write_json

VERIFY_BATCH = 4
BOUND_BATCH = 64       # inputs the stated hardmax bound is measured on (NumPy only, no TransformerLens)


class VerificationFailed(ExpressivityError):
    """TransformerLens computed something other than the network; nothing was written."""


def export_network(saved: Saved, out: Path, run: dict) -> dict:
    """Save ``saved.network`` (a trained run or a TransformerLens folder) as ``out/network.json`` + weights."""
    from expressivity.export.safetensors_io import save_network

    if saved.kind in ("network", "construction"):
        raise ExpressivityError(f"{saved.folder} is already a saved network; --to network converts trained runs and "
                                "TransformerLens folders (use --to transformer-lens to export it)")
    check_output_dir(out, "export", replaces=True)
    with staged_output(out, "export") as stage:
        names = [p.name for p in save_network(saved.network, stage, manifest=False)]
        # "source": the commit; "files" relative to the folder (it may move)
        write_json(stage / "run.json", run | {"exported": saved.describe(), "files": names})
        files = [str(Path(out) / n) for n in names]
        write_manifest(stage, "network", "export", {**network_files(), "run.json": RUN_RECORD},
                       [NetworkEntry(".", saved.network.name or "network", "network")])
    return {"to": "network", "out": str(out), "files": files + [str(Path(out) / n) for n in ("run.json", "manifest.json")],
            "network": saved.network.name, "summary": saved.network.summary(max_layers=12)}


def verification_input(net: Network, n: int, batch: int = VERIFY_BATCH, seed: int = 0) -> np.ndarray:
    """Inputs ``(batch, n, d_in)`` to check an export on: a sample of the network's input domain where
    it records one (so the check is within its claim), else token ids for token networks, values in
    [-1, 1) in the named input dimensions (all dimensions when none are named; [0, 1) for Yun's)."""
    rng = np.random.default_rng(seed)
    if net.input_domain is not None:
        return net.input_domain.sample(rng, batch, n, net.input_labels)
    X = np.zeros((batch, n, net.d_in))
    if takes_tokens(net):
        ids = rng.integers(0, net.d_in, size=(batch, n))
        X[np.arange(batch)[:, None], np.arange(n)[None, :], ids] = 1.0
        return X
    cols = input_dims(net) or list(range(net.d_in))
    low = 0.0 if net.name.startswith("yun[") else -1.0
    X[..., cols] = rng.uniform(low, 1.0, size=(batch, n, len(cols)))
    return X


def construction_target(saved: Saved):
    """``(target, bound, input_range)`` of the construction ``saved`` holds, where we can compute its exact target.

    ``target`` maps network inputs ``(batch, n, d_in)`` to the outputs ``(batch, n, d_out)`` the
    construction claims; ``bound`` is its proven error bound (``report.bounds['max_abs_error']``)
    for inputs within ``input_range``. ``None`` for networks without such a target (trained runs,
    Yun's networks, whose claim is a d_p bound, and Wang & E's, checked on their own sequences).
    """
    from expressivity.constructions.circuits import CIRCUITS

    net, report = saved.network, saved.report or {}
    name = net.metadata.get("circuit")
    circuit = CIRCUITS.get(name) if isinstance(name, str) else None
    bounds, constants = report.get("bounds") or {}, report.get("constants") or {}
    bound = bounds.get("max_abs_error")
    if circuit is None or "x" not in net.input_labels or not isinstance(bound, (int, float)):
        return None
    column = net.input_labels.index("x")
    options = {"seed": constants.get("seed", 0), "shift": constants.get("shift", 1)}

    def target(X: np.ndarray) -> np.ndarray:
        return np.asarray(circuit.target(np.asarray(X, dtype=np.float64)[..., column], **options), dtype=np.float64)

    input_range = bounds.get("input_range")
    return target, float(bound), float(input_range) if isinstance(input_range, (int, float)) else 1.0


def _target_check(saved: Saved, export, folder: Path, n: int, seed: int) -> dict | None:
    """Run the written TransformerLens folder (float64) against the construction's exact target at ``n`` tokens.

    TransformerLens agreeing with our own evaluation proves nothing where our evaluation is itself
    outside the construction's claim (a shift circuit built for 8 tokens, exported at 16): this
    check compares with what the construction promises. ``None`` where no exact target is known.
    """
    import torch

    from expressivity.constructions.circuits.check import rounding_allowance
    from expressivity.export import transformer_lens as tl

    found = construction_target(saved)
    if found is None or export.hardmax_lambda is not None:   # a softmax copy of a hardmax network: no proven bound here
        return None
    target_fn, bound, input_range = found
    X = verification_input(saved.network, n, seed=seed + 1) * min(1.0, input_range / 2)   # [-1, 1): spread 2
    bridge = tl.load_bridge(folder, "float64")
    with torch.no_grad():
        logits, _ = bridge.run_with_cache(tl.bridge_input(bridge, X, export.input_bias))
    output, target = logits.double().numpy(), target_fn(X)
    allowance = max(rounding_allowance("float64", x[..., 0], t) for x, t in zip(X, target))
    error = float(np.max(np.abs(output - target), initial=0.0))
    return {"input": f"{len(X)} random inputs of {n} tokens (seed {seed + 1})", "max_abs_error": error,
            "bound": bound + allowance, "status": "ok" if error <= bound + allowance else "failed",
            "compared": "TransformerLens float64 output against the construction's exact target"}


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


def _check_stated_bound(net: Network, export, margin, n: int, seed: int, checked: dict) -> None:
    """Measure the weight off the arg-max keys that a ``--hardmax-lambda`` export's stated bound ``(n-1) exp(-lam g)``
    bounds, ``g`` the report's score gap, on :func:`verification_input`; refuse (nothing written) where it is above:
    report.json is not digested, and a gap edited from 1 to 10 stated 4.7e-13 of a weight of 0.25 (a fresh audit,
    2026-11-29). Recorded in ``checked["off_argmax"]``."""
    if export.hardmax_lambda is None or margin is None or export.network is None or export.network is net:
        return
    from expressivity.export.transformer_lens.check import off_argmax_weight
    from expressivity.export.transformer_lens.export import off_argmax_bound

    key, gap = margin
    bound = off_argmax_bound(n, export.hardmax_lambda, gap)
    measured = off_argmax_weight(net, export.network, verification_input(net, n, batch=BOUND_BATCH, seed=seed))
    checked["off_argmax"] = {"measured": measured, "bound": bound, "score_gap": gap, "margin": key,
                             "input": f"{BOUND_BATCH} random inputs of {n} tokens (seed {seed}), on the hardmax "
                                      "network's residual stream"}
    if measured > bound * (1 + 1e-9):
        raise VerificationFailed(
            f"the softmax copy puts weight {measured:.3g} off the arg-max keys, above the bound {bound:.3g} that the "
            f"report's score gap ({key} = {gap:g}) gives at --hardmax-lambda {export.hardmax_lambda:g}: the report's "
            "margin is not this network's (report.json edited, or another network's); nothing was written. Build "
            "the network again")


def _margin(report: dict | None) -> tuple[str, float] | None:
    margins = (report or {}).get("margins") or {}
    for key in ("score_gap_per_unit_scale", "score_gap", "attention_score_gap_per_unit_scale"):   # the last: RASP
        value = margins.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return key, float(value)
    return None


def _claimed_n_ctx(saved: Saved, n_ctx: int | None, allow_length: bool) -> tuple[int | None, bool]:
    """``(n_ctx, within_claim)``: the length to export at (``None``: the exporter's default) and
    whether it is one the construction is built and verified for; refused outside them unless ``allow_length``."""
    from expressivity.export.transformer_lens import DEFAULT_N_CTX

    net = saved.network
    valid = net.valid_lengths
    fixed = net.max_length or net.length
    given = n_ctx is not None
    if n_ctx is None and fixed is None:
        # the longest length the construction was built and checked for
        n_ctx = valid.longest if valid is not None and valid.longest is not None else saved.typical_length()
    elif (n_ctx is None and net.length is None and valid is not None and not valid.contains(fixed)
          and valid.longest is not None and valid.longest <= fixed):
        # a network that takes more tokens than its claim covers (an export made with --allow-length): the default is
        # the longest claimed length, not the network's (it was exported again at 10 tokens "within its claim" of
        # lengths 1..6, where --n-ctx 10 was refused: a fresh audit, 2026-11-29)
        n_ctx = valid.longest
    length = n_ctx if n_ctx is not None else fixed or DEFAULT_N_CTX   # what the exporter will use
    if (valid is not None and not valid.contains(length) and not allow_length
            and net.structural_lengths().contains(length)):   # else the exporter names the structural limit
        raise ExpressivityError(f"--n-ctx {length}{'' if given else ' (the default: the length the network takes)'} is "
                                f"outside the lengths {net.name!r} is built and verified for ({valid.describe()}); give "
                                "one of them, or --allow-length to export it outside its construction's claim")
    return n_ctx, valid is None or valid.contains(length)


def _target_verdict(saved: Saved, export, folder: Path, n: int, seed: int, within_claim: bool) -> dict | None:
    """:func:`_target_check`, raising :class:`VerificationFailed` on a failure within the claim (outside it, reported)."""
    target = _target_check(saved, export, folder, n, seed)
    if target is None or target["status"] != "failed":
        return target
    if within_claim:
        raise VerificationFailed(f"TransformerLens output is {target['max_abs_error']:.3g} from the "
                                 f"construction's target at {n} tokens (bound {target['bound']:.3g}); "
                                 "nothing was written. If the folder came from elsewhere it may have been edited (build it "
                                 "again); otherwise please report this with the network folder")
    target["status"] = "differs from the target (outside the construction's claim)"
    return target


def export_transformer_lens(saved: Saved, out: Path, run: dict, *, n_ctx: int | None = None,
                            hardmax_lambda: float | None = None, verify: bool = True, seed: int = 0,
                            allow_length: bool = False) -> dict:
    """Write ``saved.network`` as a TransformerLens folder and, when TransformerLens is installed,
    check it: the written folder, loaded through TransformerLens's API in float32 and float64, run
    against the network on :func:`verification_input`. A failed check raises
    :class:`VerificationFailed` and writes nothing. ``n_ctx`` defaults to the network's length,
    else the length its construction was built and checked for (its report), else
    :data:`~expressivity.export.transformer_lens.DEFAULT_N_CTX`.

    A network that records its valid lengths is exported at its longest one by default; an
    ``n_ctx`` outside them is refused unless ``allow_length`` (then ``within_claim`` is false).
    Where the construction has an exact target (the circuits), the written folder is also run
    against that target at ``n_ctx`` tokens: a failure there within the claim raises
    :class:`VerificationFailed`; outside it, it is reported.
    """
    from dataclasses import replace

    from expressivity.network.lengths import ValidLengths, common_lengths
    from expressivity.export import transformer_lens as tl

    check_output_dir(out, "export", replaces=True)
    net = saved.network
    source = {"kind": saved.kind, "folder": str(saved.folder), "name": net.name}
    valid = net.valid_lengths
    n_ctx, within_claim = _claimed_n_ctx(saved, n_ctx, allow_length)
    # The comparison with TransformerLens checks two evaluations of the same weights, at any length.
    net = replace(net, valid_lengths=None)
    export = tl.to_transformer_lens(net, n_ctx=n_ctx, hardmax_lambda=hardmax_lambda, margin=_margin(saved.report),
                                    source=source)
    n = net.length or min(saved.typical_length() or 16, export.config["n_ctx"])
    if valid is not None:
        n = export.config["n_ctx"]       # check at the exported length itself
    try:
        exported_valid = (common_lengths(valid, ValidLengths.range(1, export.config["n_ctx"])) if valid is not None
                          else None)
    except NetworkError:   # no claimed length fits: it named the clash, not what to give (an audit, 2026-11-29)
        raise ExpressivityError(f"--n-ctx {export.config['n_ctx']} is below every length the network is built for "
                                f"({valid.describe()}): an export of it would hold no input of its claim; give "
                                f"--n-ctx {valid.lo} or more") from None
    example_length = net.length or min(n, 4)
    if exported_valid is not None and not exported_valid.contains(example_length):
        example_length = exported_valid.lo
    # the README states the exported lengths (the check below runs on the network without them): it said
    # "verified for lengths 1..8" of a sum circuit valid at 8 only, and named none for the rest (an audit, 2026-11-28)
    described = export if export.network is None or exported_valid is None else \
        replace(export, network=replace(export.network, valid_lengths=exported_valid))
    with staged_output(out, "export") as stage:
        paths = tl.save_transformer_lens(described, stage, name=net.name or "network", folder=Path(out).name,
                                         example=default_input(net, example_length), manifest=False)
        checked = _check(net, export, stage, n, verify, seed)
        _check_stated_bound(net, export, _margin(saved.report), n, seed, checked)
        if checked.get("status") == "run":
            target = _target_verdict(saved, export, stage, n, seed, within_claim)
            if target is not None:
                checked["target"] = target
        answers = answers_of(saved.network)
        no_claim = None if export.network is None else export.network.no_claim
        within_claim = within_claim and no_claim is None
        if within_claim and (saved.network.trained or saved.network.input_domain is None
                             or not saved.network.input_domain.is_claim):
            # no claim to be within (as run and show answer): a trained model's, also exported a second time (its
            # kind then "network" or "transformer-lens": that said true, an audit, 2026-11-29), or no domain's
            within_claim = None
        # the input domain and no_claim come with export.description(); the valid lengths are the exported ones
        claim = {"valid_lengths": None if exported_valid is None else exported_valid.to_dict(),
                 "answers": None if answers is None else answers.to_dict(), "within_claim": within_claim,
                 # what reading the source had to say (a Yun network whose agreement checks cannot fail for a
                 # coordinate): said again on every read of the export, which lost it (a review, 2026-11-29)
                 "source_warnings": list(saved.warnings),
                 "trained": saved.network.trained}   # read back by folders.load: a trained model stays one
        circuit = saved.network.metadata.get("circuit")
        if within_claim and hardmax_lambda is None and isinstance(circuit, str):
            # what building it again takes: its claim then rests on the rebuild, not on digests anyone can rewrite
            from expressivity.export.folders import circuit_constants

            claim |= {"circuit": circuit, "circuit_constants": circuit_constants(saved)}
        # what save_transformer_lens wrote (the description and its files' digests), with the verification
        written = json.loads((stage / "expressivity.json").read_text())
        write_json(stage / "expressivity.json",   # its own digest again, over what it now says
                   with_own_digest(jsonable(written | {"verified": checked} | claim), "expressivity.json"))
        # "source": the commit; "files" relative to the folder (it may move)
        write_json(stage / "run.json", run | {"exported": saved.describe(), "files": [p.name for p in paths]})
        files = [str(Path(out) / p.name) for p in paths]
        write_manifest(stage, "transformer-lens", "export", {**tl.FOLDER_FILES, "run.json": RUN_RECORD},
                       [NetworkEntry(".", net.name or "network", "transformer-lens")])
    return {"to": "transformer-lens", "out": str(out),
            "files": files + [str(Path(out) / n) for n in ("run.json", "manifest.json")],
            "network": net.name, "config": export.config, "cost": export.cost, "changes": list(export.changes),
            "tolerance": export.tolerance, "verified": checked, "within_claim": within_claim, "no_claim": no_claim,
            "valid_lengths": None if exported_valid is None else exported_valid.describe(),   # the exported ones
            "input_domain": None if net.input_domain is None else net.input_domain.describe(net.input_labels)}
