"""Checking an export against TransformerLens: run the bridge and our own evaluators on one input.

:func:`compare` holds TransformerLens's outputs, attention patterns and residual stream to the
NumPy float64 reference pass; :func:`our_float32` measures what our own float32 evaluator (the
torch one) does on the same input, the yardstick for "float32 too coarse"; :func:`verify` boots
the export in each dtype and gives a status per dtype.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from expressivity.export.transformer_lens.bridge import boot, bridge_input, load_bridge
from expressivity.export.transformer_lens.export import TLExport
from expressivity.network.layers import rule_for
from expressivity.network.network import Network


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """``max|a - b| / max|b|`` (absolute when ``b`` is all zero)."""
    scale = float(np.max(np.abs(b), initial=0.0))
    diff = float(np.max(np.abs(a - b), initial=0.0))
    return diff / scale if scale > 0 else diff


def compare(net: Network, export: TLExport, bridge, X: np.ndarray) -> dict:
    """Run ``bridge.run_with_cache`` and our reference pass on ``X``; the largest differences.

    Returns relative output difference (``max|tl - ours| / max|ours|``), the largest absolute
    difference of any attention pattern, and the largest relative residual difference (over the
    network's own dimensions, at every hook that shows a layer's output).
    """
    import torch

    from expressivity.network.reference import attention_weights, forward

    X = np.asarray(X, dtype=np.float64)
    X = X[None] if X.ndim == 2 else X
    # two evaluations of the same weights, inside the claim or not (a hardmax copy carries none)
    ours, residuals = forward(net, X, return_residuals=True, allow_outside=True)
    with torch.no_grad():
        logits, cache = bridge.run_with_cache(bridge_input(bridge, X, export.input_bias))
    out = {"output_relative": _relative(logits.double().numpy(), ours), "pattern_abs": 0.0, "residual_relative": 0.0}
    first = cache["blocks.0.hook_resid_pre"].double().numpy()[..., :export.d]
    out["residual_relative"] = _relative(first, residuals[0])
    for entry in export.layers:
        k = entry["layer"]
        tl_res = cache[entry["hook_resid"]].double().numpy()[..., :export.d]
        out["residual_relative"] = max(out["residual_relative"], _relative(tl_res, residuals[k + 1]))
        if entry["kind"] == "attention":
            A = attention_weights(net.layers[k], residuals[k])
            tl_A = cache[entry["hook_pattern"]].double().numpy()[:, :entry["heads"]]
            out["pattern_abs"] = max(out["pattern_abs"], float(np.max(np.abs(tl_A - A), initial=0.0)))
    return out


def _attention_pattern(torch_layer, H):
    """Attention weights ``(batch, heads, n, n)`` of a torch attention layer on its input residual ``H``."""
    return torch_layer.weights(H)


def _no_pattern(torch_layer, H):
    return None   # feed-forward and mixing layers have no attention pattern to compare


# layer kind -> its attention pattern in the torch evaluator (None: nothing to compare)
_TORCH_PATTERN = {"attention": _attention_pattern, "feedforward": _no_pattern, "mixing": _no_pattern}


def our_float32(net: Network, X: np.ndarray) -> dict:
    """How far our own float32 evaluator (PyTorch) is from the float64 reference on ``X``
    ``(batch, n, d_in)``, in the terms of :func:`compare`: the yardstick for what float32 can do
    on this network. The residual stream comes from the torch evaluator itself (one forward pass)."""
    return our_float(net, X, "float32")


def our_float(net: Network, X: np.ndarray, dtype: str) -> dict:
    """:func:`our_float32` in ``dtype`` (``"float32"`` or ``"float64"``): in float64, how far two of our own float64
    evaluations (PyTorch's and the NumPy reference, summing in other orders) are apart on this network."""
    import torch

    from expressivity.network.reference import attention_weights, forward
    from expressivity.network.torch_eval import to_torch

    # two evaluations of the same weights, inside the claim or not (a hardmax copy carries none)
    ours, residuals = forward(net, X, return_residuals=True, allow_outside=True)
    module = to_torch(net, dtype)
    with torch.no_grad():
        y, stream = module(torch.as_tensor(X, dtype=getattr(torch, dtype)), return_residuals=True)
        out = {"output_relative": _relative(y.double().numpy(), ours), "pattern_abs": 0.0,
               "residual_relative": max(_relative(H.double().numpy(), R) for H, R in zip(stream, residuals))}
        for k, (layer, torch_layer) in enumerate(zip(net.layers, module.layers)):
            A = rule_for(_TORCH_PATTERN, layer, "float32 yardstick")(torch_layer, stream[k])
            if A is not None:
                gap = np.max(np.abs(A.double().numpy() - attention_weights(layer, residuals[k])))
                out["pattern_abs"] = max(out["pattern_abs"], float(gap))
    return out


METRICS = ("output_relative", "pattern_abs", "residual_relative")


def verify(net: Network, export: TLExport, X: np.ndarray, dtypes=("float32", "float64"),
           folder: Path | None = None) -> dict:
    """Boot the export in each TransformerLens dtype (from ``folder`` through TransformerLens's own
    API when given, else from memory) and :func:`compare` it on ``X`` with the network it computes.

    Per dtype: the differences, the ``tolerance`` and a ``status``: ``"ok"`` (every difference
    within the tolerance), ``"float32 too coarse"`` (float32 outside it, but within ten times what
    our own float32 evaluator does on the same input: the network asks more of float32 than it
    has, e.g. attention scores of 1e5 with gaps of 1/32; ``our_float32`` has those numbers), or
    ``"failed"``; in float64 a difference above the tolerance but within ten times the spread of our own two float64
    evaluators (``our_float64``) is ``"ok"``, saying so in ``within``. With ``hardmax_lambda``, ``hardmax_vs_softmax`` is how far the softmax copy is
    from the hardmax network on ``X`` (a property of ``lam`` and ``X``, not an export error).
    """
    from expressivity.network.evaluate import evaluate

    target = export.network or net
    X = np.asarray(X, dtype=np.float64)
    X = X[None] if X.ndim == 2 else X
    report = {}
    for dtype in dtypes:
        bridge = boot(export.config, export.state_dict, dtype) if folder is None else load_bridge(folder, dtype)
        with np.errstate(all="ignore"):
            diff = compare(target, export, bridge, X)
        tol = export.tolerance[dtype]
        diff["tolerance"] = tol
        status = "ok" if all(diff[m] <= tol for m in METRICS) else "failed"
        if status == "failed" and dtype == "float32":
            with np.errstate(all="ignore"):
                ours = our_float32(target, X)
            diff["our_float32"] = ours
            diff["our_float32_relative"] = ours["output_relative"]
            if all(diff[m] <= 10 * max(tol, ours[m]) for m in METRICS):
                status = "float32 too coarse"
        elif status == "failed":
            # a Yun network's residual stream (ReLU expansions with coefficients of 1e5) differed by 4.1e-10 relative
            # against a tolerance of 1e-10, "please report this", where our own two float64 evaluators differ by the
            # same 4.1e-10 (a review, 2026-11-29): within that spread, float64's rounding of this network, not an
            # export error
            with np.errstate(all="ignore"):
                ours = our_float(target, X, "float64")
            diff["our_float64"] = ours
            if all(diff[m] <= 10 * max(tol, ours[m]) for m in METRICS):
                status = "ok"
                diff["within"] = ("ten times the spread of our own two float64 evaluators on this input (its float64 "
                                  "rounding), above the fixed tolerance")
        diff["status"] = status
        report[dtype] = diff
    if target is not net:
        # the hardmax network in the arithmetic its claim holds in (exact only for Yun's and the pointer chains)
        reference = "exact" if net.input_domain is not None and net.input_domain.exact_only else "float64"
        report["hardmax_vs_softmax"] = _relative(evaluate(target, X, "float64", allow_outside=True),
                                                 np.asarray(evaluate(net, X, reference), dtype=np.float64))
    return report


def off_argmax_weight(net: Network, softened: Network, X: np.ndarray) -> float:
    """The largest attention weight ``softened`` (``net`` with its hardmax layers made softmax, as exported with
    ``--hardmax-lambda``) puts off the arg-max keys of ``net``'s hardmax layers, over every query of ``X``
    ``(batch, n, d_in)``, on ``net``'s own residual stream (where the construction's score gap holds): what the
    stated bound ``(n-1) exp(-lam g)`` bounds. A score gap read from an edited report.json stated 4.7e-13 where
    this is 0.25 (a fresh audit, 2026-11-29)."""
    from expressivity.network.reference import attention_weights, forward

    X = np.asarray(X, dtype=np.float64)
    with np.errstate(all="ignore"):
        _, residuals = forward(net, X[None] if X.ndim == 2 else X, return_residuals=True, allow_length=True,
                               allow_outside=True)
        worst = 0.0
        for k, layer in enumerate(net.layers):
            if layer.kind != "attention" or layer.normalization != "hardmax":
                continue
            hard = attention_weights(layer, residuals[k])
            soft = attention_weights(softened.layers[k], residuals[k])
            off = np.where(hard > 0, 0.0, soft).sum(axis=-1)
            worst = max(worst, float(np.nanmax(off, initial=0.0)))
    return worst
