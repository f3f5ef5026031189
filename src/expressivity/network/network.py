"""The one network representation: an ordered list of residual layers with explicit weights."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.layers import (
    AttentionLayer,
    FeedForwardLayer,
    Layer,
    MatrixBias,
    PiecewiseLinear,
    _fmt,
    as_weight,
)


@dataclass(frozen=True)
class Network:
    """An explicitly weighted Transformer (tokens as rows).

    ``forward(X) = (g_L o ... o g_1)(X + E) @ readout``, each ``g`` a residual
    :class:`AttentionLayer` or :class:`FeedForwardLayer`.

    Attributes:
        layers: the residual layers, applied in order.
        labels: one human name per residual dimension (``len(labels) == d``).
        positional_encoding: optional ``(n, d)`` array added to the input; fixes the length.
        readout: optional ``(d, d_out)`` matrix applied at the end (identity if ``None``).
        output_labels: names of the readout's output dimensions.
        name: what the network computes, for printing.
        metadata: free-form facts a construction wants to record (constants, margins).
    """

    layers: tuple[Layer, ...]
    labels: tuple[str, ...]
    positional_encoding: np.ndarray | None = None
    readout: np.ndarray | None = None
    output_labels: tuple[str, ...] | None = None
    name: str = ""
    metadata: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "labels", tuple(self.labels))
        d = len(self.labels)
        if d == 0:
            raise NetworkError("a network needs at least one residual dimension")
        for k, layer in enumerate(self.layers):
            if not isinstance(layer, (AttentionLayer, FeedForwardLayer)):
                raise NetworkError(f"layer {k} is {type(layer).__name__}; expected AttentionLayer or FeedForwardLayer")
            if layer.d != d:
                raise NetworkError(f"layer {k} ({layer.name or type(layer).__name__}) has width {layer.d}, the network has {d} labelled dimensions")
        if self.positional_encoding is not None:
            pe = as_weight(self.positional_encoding, name="positional encoding")
            if pe.ndim != 2 or pe.shape[1] != d:
                raise NetworkError(f"positional encoding must be (n, {d}), got {pe.shape}")
            object.__setattr__(self, "positional_encoding", pe)
        if self.readout is not None:
            ro = as_weight(self.readout, name="readout")
            if ro.ndim != 2 or ro.shape[0] != d:
                raise NetworkError(f"readout must be ({d}, d_out), got {ro.shape}")
            object.__setattr__(self, "readout", ro)
        if self.output_labels is not None:
            object.__setattr__(self, "output_labels", tuple(self.output_labels))
            if len(self.output_labels) != self.d_out:
                raise NetworkError(f"{len(self.output_labels)} output labels for {self.d_out} outputs")
        lengths = self._fixed_lengths()
        if len(lengths) > 1:
            raise NetworkError(f"network parts are built for different lengths: {sorted(lengths)}")

    # ---- shape facts -------------------------------------------------------------------
    @property
    def d(self) -> int:
        """Residual width."""
        return len(self.labels)

    @property
    def d_out(self) -> int:
        return self.d if self.readout is None else int(self.readout.shape[1])

    @property
    def length(self) -> int | None:
        """The sequence length this network is built for, or ``None`` if any length works."""
        lengths = self._fixed_lengths()
        return next(iter(lengths)) if lengths else None

    def _fixed_lengths(self) -> set[int]:
        out: set[int] = set()
        if self.positional_encoding is not None:
            out.add(int(self.positional_encoding.shape[0]))
        for layer in self.layers:
            if isinstance(layer, AttentionLayer):
                for h in layer.heads:
                    if isinstance(h.position_bias, MatrixBias):
                        out.add(h.position_bias.length)
        return out

    def check_input(self, X: np.ndarray) -> None:
        """Raise :class:`NetworkError` unless ``X`` is ``(n, d)`` or ``(batch, n, d)`` of the right sizes."""
        if X.ndim not in (2, 3) or X.shape[-1] != self.d:
            raise NetworkError(f"input must be (n, {self.d}) or (batch, n, {self.d}); got shape {X.shape}")
        n = X.shape[-2]
        if n < 1:
            raise NetworkError("input has no tokens")
        if self.length is not None and n != self.length:
            raise NetworkError(f"network {self.name!r} is built for length {self.length}, got {n}; rebuild it for length {n}")

    @property
    def uses_position(self) -> bool:
        """True when the network sees token positions (encoding, position bias or causal mask)."""
        if self.positional_encoding is not None:
            return True
        return any(
            isinstance(layer, AttentionLayer)
            and (layer.causal or any(h.position_bias is not None for h in layer.heads))
            for layer in self.layers
        )

    # ---- size --------------------------------------------------------------------------
    def layer_counts(self) -> dict[str, int]:
        attn = sum(isinstance(layer, AttentionLayer) for layer in self.layers)
        return {"attention": attn, "feedforward": len(self.layers) - attn, "total": len(self.layers)}

    def parameter_count(self) -> int:
        """Number of weight entries, counting every stored array (zeros included)."""
        n = sum(layer.parameter_count() for layer in self.layers)
        if self.positional_encoding is not None:
            n += self.positional_encoding.size
        if self.readout is not None:
            n += self.readout.size
        return int(n)

    @property
    def is_exact_weighted(self) -> bool:
        """True if any weight is stored as an exact Python number (object array)."""
        arrays = [self.positional_encoding, self.readout]
        for layer in self.layers:
            if isinstance(layer, AttentionLayer):
                for h in layer.heads:
                    arrays += [h.W_Q, h.W_K, h.W_V, h.W_O, h.b_Q]
            else:
                arrays += [layer.W_1, layer.b_1, layer.W_2, layer.b_2]
        return any(a is not None and a.dtype == object for a in arrays)

    # ---- derived networks --------------------------------------------------------------
    def then(self, other: "Network") -> "Network":
        """Compose: run ``self``'s layers, then ``other``'s (readouts must be absent except the last)."""
        if self.readout is not None:
            raise NetworkError("cannot compose after a network that has a readout")
        if other.positional_encoding is not None:
            raise NetworkError("the second network of a composition cannot add a positional encoding")
        if other.d != self.d:
            raise NetworkError(f"cannot compose widths {self.d} and {other.d}")
        return replace(self, layers=self.layers + other.layers, readout=other.readout,
                       output_labels=other.output_labels, name=f"{other.name} o {self.name}".strip(" o"),
                       metadata={**self.metadata, **other.metadata})

    # ---- printing ----------------------------------------------------------------------
    def summary(self, max_layers: int = 40) -> str:
        """A readable multi-line description: dimensions, then one line per layer."""
        counts = self.layer_counts()
        lines = [
            f"Network {self.name!r}: d={self.d}, length={self.length or 'any'}, "
            f"layers={counts['total']} ({counts['attention']} attention, {counts['feedforward']} feed-forward), "
            f"parameters={self.parameter_count()}",
            "  residual: " + ", ".join(f"{k}:{lab}" for k, lab in enumerate(self.labels)),
        ]
        if self.positional_encoding is not None:
            lines.append(f"  input: + positional encoding {self.positional_encoding.shape}")
        shown = self.layers if len(self.layers) <= max_layers else self.layers[: max_layers // 2]
        for k, layer in enumerate(shown):
            lines.append(f"  [{k}] " + _describe_layer(layer, self.labels))
        if len(shown) < len(self.layers):
            lines.append(f"  ... {len(self.layers) - len(shown) - max_layers // 2} layers omitted ...")
            for k in range(len(self.layers) - max_layers // 2, len(self.layers)):
                lines.append(f"  [{k}] " + _describe_layer(self.layers[k], self.labels))
        if self.readout is not None:
            outs = self.output_labels or tuple(f"y[{k}]" for k in range(self.d_out))
            lines.append(f"  readout -> {', '.join(outs)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def _support(vec: np.ndarray, labels: Sequence[str]) -> str:
    nz = [labels[k] for k in range(len(labels)) if vec[k] != 0]
    return "{" + ",".join(nz) + "}" if nz else "{}"


def _describe_layer(layer: Layer, labels: Sequence[str]) -> str:
    if isinstance(layer, AttentionLayer):
        norm = "hardmax" if layer.normalization == "hardmax" else f"softmax(lam={_fmt(layer.inverse_temperature)})"
        heads = []
        for h in layer.heads:
            reads = _support(np.any(np.concatenate([h.W_Q, h.W_K, h.W_V], axis=1) != 0, axis=1), labels)
            writes = _support(np.any(h.W_O != 0, axis=0), labels)
            bias = "" if h.position_bias is None else f" +{h.position_bias.kind}-bias"
            heads.append(f"m={h.size} reads {reads} writes {writes}{bias}")
        causal = " causal" if layer.causal else ""
        return f"attn{causal} {norm} {layer.name}: " + " | ".join(heads)
    act = layer.activation.describe() if isinstance(layer.activation, PiecewiseLinear) else "ReLU"
    reads = _support(np.any(layer.W_1 != 0, axis=1), labels)
    writes = _support(np.any(layer.W_2 != 0, axis=0) | (layer.b_2 != 0), labels)
    return f"ffn r={layer.width} {act} {layer.name}: reads {reads} writes {writes}"
