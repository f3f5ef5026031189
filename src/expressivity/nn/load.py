"""Load a constructed :class:`~expressivity.network.Network` into the trained model family.

Fits when: every attention layer is softmax with heads whose biases are absent or
:class:`~expressivity.network.layers.RelativeBias`, all attention layers share one causality,
every feed-forward layer is ReLU, and weights are floats. The stack is regrouped into blocks
``(attention, FFN)``; a missing half becomes zeros (a zero update). Heads of different sizes or
counts are zero-padded, the inverse temperature and the ``1/sqrt(d_head)`` scale are folded
into ``W_Q``, relative biases become a ``free`` per-offset table, an ``(n, d)`` positional
encoding becomes a ``learned`` absolute encoding, and the input embedding is the identity.
"""

from __future__ import annotations

import numpy as np
import torch

from expressivity.errors import NetworkError
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, MatrixBias, ReLU, RelativeBias
from expressivity.network.network import Network
from expressivity.nn.model import Model, ModelConfig


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def from_network(net: Network, max_len: int | None = None, dtype: torch.dtype = torch.float64) -> Model:
    """A :class:`Model` computing exactly ``reference.forward(net, X)`` for ``X`` ``(batch, n, d)``.

    ``max_len`` bounds the relative-bias table (default: the network's length, else 64).
    Raises :class:`NetworkError` naming the first feature outside the family.
    """
    blocks: list[list] = []
    causal = None
    for k, layer in enumerate(net.layers):
        if isinstance(layer, AttentionLayer):
            if layer.normalization != "softmax":
                raise NetworkError(f"layer {k} uses hardmax; only softmax attention loads into the trained family (soften it first)")
            if causal is not None and layer.causal != causal:
                raise NetworkError(f"layer {k}: attention layers mix causal and bidirectional; the trained family needs one")
            causal = layer.causal
            for h in layer.heads:
                if isinstance(h.position_bias, MatrixBias):
                    raise NetworkError(f"layer {k}: a full-matrix position bias does not load; only relative (offset) biases do")
            blocks.append([layer, None])
        else:
            if not isinstance(layer.activation, ReLU):
                raise NetworkError(f"layer {k} has a piecewise-linear activation; only ReLU feed-forward layers load")
            if blocks and blocks[-1][1] is None:
                blocks[-1][1] = layer
            else:
                blocks.append([None, layer])
    attns = [a for a, _ in blocks if a is not None]
    heads = max((len(a.heads) for a in attns), default=1)
    m = max((max(max(h.size, h.W_V.shape[1]) for h in a.heads) for a in attns), default=1)
    ffns = [f for _, f in blocks if f is not None]
    width = max((f.width for f in ffns), default=0)
    n_len = net.length if getattr(net, "length", None) else None
    max_len = max_len or n_len or 64
    has_rel = any(h.position_bias is not None for a in attns for h in a.heads)
    d = net.d
    cfg = ModelConfig(
        vocab_size=0, d_in=d, d_out=net.d_out, max_len=max_len, mixer="attention", layers=max(len(blocks), 1),
        heads=heads, d_model=d, d_head=m, ffn_width=width, rpe="free" if has_rel else "none",
        ape="learned" if net.positional_encoding is not None else "none", norm="none",
        causal=bool(causal), q_bias=True, qk_scale=1.0,
    )
    model = Model(cfg).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.embed.weight.copy_(torch.eye(d, dtype=dtype))
        if net.positional_encoding is not None:
            pe = _f(net.positional_encoding)
            model.ape.table[: pe.shape[0]] = torch.as_tensor(pe, dtype=dtype)
        ro = np.eye(d) if net.readout is None else _f(net.readout)
        model.readout.weight.copy_(torch.as_tensor(ro.T, dtype=dtype))
        for block, (attn, ffn) in zip(model.blocks, blocks):
            if attn is not None:
                _load_attention(block.mixer, attn, m, max_len)
            if ffn is not None:
                w = ffn.width
                block.ffn.w1.weight[:w] = torch.as_tensor(_f(ffn.W_1).T, dtype=dtype)
                block.ffn.w1.bias[:w] = torch.as_tensor(_f(ffn.b_1), dtype=dtype)
                block.ffn.w2.weight[:, :w] = torch.as_tensor(_f(ffn.W_2).T, dtype=dtype)
                block.ffn.w2.bias.copy_(torch.as_tensor(_f(ffn.b_2), dtype=dtype))
    return model


def _load_attention(mod, layer: AttentionLayer, m: int, max_len: int) -> None:
    lam = float(layer.inverse_temperature)
    dt = mod.q.weight.dtype
    for k, h in enumerate(layer.heads):
        rows = slice(k * m, k * m + h.size)
        mod.q.weight[rows] = torch.as_tensor(lam * _f(h.W_Q).T, dtype=dt)
        mod.q.bias[rows] = torch.as_tensor(lam * _f(h.b_Q), dtype=dt)
        mod.k.weight[rows] = torch.as_tensor(_f(h.W_K).T, dtype=dt)
        mv = h.W_V.shape[1]
        mod.v.weight[k * m: k * m + mv] = torch.as_tensor(_f(h.W_V).T, dtype=dt)
        mod.o.weight[:, k * m: k * m + mv] = torch.as_tensor(_f(h.W_O).T, dtype=dt)
        if isinstance(h.position_bias, RelativeBias):
            table = dict(h.position_bias.table)
            offsets = range(-(max_len - 1), max_len)
            mod.bias.table[k] = torch.tensor([float(table.get(o, h.position_bias.default)) for o in offsets], dtype=dt)
    # Heads padded beyond len(layer.heads) keep zero W_O: they add nothing.
