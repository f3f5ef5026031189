"""Figures of the tutorial circuits: attention patterns and error against scale."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from expressivity.constructions.circuits import embed, get_circuit, naive_softmax
from expressivity.network import evaluate
from expressivity.figures import pyplot
from expressivity.network.reference import attention_weights, forward


def error_vs_scale(name: str, length: int, scales, seed: int = 0) -> list[dict]:
    """Max abs error of circuit ``name`` against its target for each scale, in float64, float32
    (PyTorch, max-subtracted softmax) and a naive float32 softmax (no max subtraction).

    Inputs are uniform in [-1, 1) from ``seed``. Returns one row per scale; a naive-softmax
    error of ``nan`` marks the overflow the tutorial warns about.
    """
    circuit = get_circuit(name)
    values = np.random.default_rng(seed).uniform(-1.0, 1.0, size=length)
    target = circuit.target(values)
    rows = []
    # the bound is proven for inputs spanning the input range: [-1, 1) spans (less than) 2
    ranged = {"input_range": 2.0} if circuit.ranged else {}
    for s in scales:
        net, report = circuit.make(length, float(s), **ranged)
        X = embed(net, values)
        row = {"scale": float(s), "error_bound": report.bounds["max_abs_error"]}
        for dtype in ("float64", "float32"):
            # a measurement of rounding, also where it exceeds the bound (outside the claim's arithmetic)
            row[dtype] = float(np.max(np.abs(evaluate(net, X, dtype, allow_outside=True) - target)))
        # The same network with a naive float32 softmax: recompute the single layer by hand.
        layer = net.layers[0]
        H = (X + (0 if net.positional_encoding is None else net.positional_encoding))[None]
        head = layer.heads[0]
        scores = float(layer.inverse_temperature) * (H @ head.W_Q + head.b_Q) @ (H @ head.W_K).transpose(0, 2, 1)
        if head.position_bias is not None:
            scores = scores + head.position_bias.matrix(length)
        A = naive_softmax(scores.astype(np.float32))
        update = (A @ (H @ head.W_V).astype(np.float32)) @ head.W_O.astype(np.float32)
        naive_out = ((H + update) @ net.readout)[0]
        with np.errstate(invalid="ignore"):
            row["float32_naive"] = float(np.max(np.abs(naive_out - target)))
        rows.append(row)
    return rows


def plot_error_vs_scale(rows: list[dict], path: Path, title: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    scales = np.array([r["scale"] for r in rows])
    floor = 1e-17  # exact zeros cannot sit on a log axis; they are drawn at this floor
    for key, style, label in (("float64", "o-", "float64"), ("float32", "s-", "float32 (max-subtracted softmax)"),
                              ("error_bound", "k--", "proven bound (L-1)e^{-scale*margin}*range")):
        vals = np.array([r[key] for r in rows])
        ax.loglog(scales, np.maximum(vals, floor), style, label=label, markersize=4)
    naive = np.array([r["float32_naive"] for r in rows])
    bad = ~np.isfinite(naive)
    if bad.any():
        ax.scatter(scales[bad], np.full(bad.sum(), 1.0), marker="x", color="red",
                   label="naive float32 softmax: NaN (exp overflow)")
    ax.set_xlabel("scale (inverse temperature)")
    ax.set_ylabel("max |output - target|")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_attention_pattern(name: str, length: int, scale, path: Path) -> Path:
    """Heat map of the first head's attention weights (query rows, key columns)."""
    plt = pyplot()
    circuit = get_circuit(name)
    values = np.arange(length, dtype=float)
    net, report = circuit.make(length, scale, **({"input_range": max(length - 1.0, 1.0)} if circuit.ranged else {}))
    _, residuals = forward(net, embed(net, values), return_residuals=True)
    A = attention_weights(net.layers[0], residuals[0][None])[0, 0]
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    im = ax.imshow(A, cmap="viridis", vmin=0, vmax=1)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    scale = report.constants["scale"]
    scale_text = "hardmax" if scale is not None and math.isinf(scale) else f"scale {scale:.3g}"
    ax.set_title(f"{name}: attention weights (L={length}, {scale_text})", fontsize=9)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
