"""The network representation and its evaluators.

* :mod:`~expressivity.network.layers`: heads, attention and feed-forward layers, activations,
  position biases.
* :mod:`~expressivity.network.network`: :class:`Network`, the ordered list of residual layers.
* :mod:`~expressivity.network.reference`: the NumPy float64 forward pass that *is* the spec.
* :mod:`~expressivity.network.exact`: the same semantics in exact rational arithmetic.
* :mod:`~expressivity.network.torch_eval`: the same semantics as a batched ``torch.nn.Module``.
"""

from expressivity.network.evaluate import DTYPES, evaluate
from expressivity.network.layers import (
    AttentionLayer,
    FeedForwardLayer,
    Head,
    MatrixBias,
    PiecewiseLinear,
    RelativeBias,
    ReLU,
)
from expressivity.network.network import Network

__all__ = [
    "DTYPES",
    "AttentionLayer",
    "FeedForwardLayer",
    "Head",
    "MatrixBias",
    "Network",
    "PiecewiseLinear",
    "RelativeBias",
    "ReLU",
    "evaluate",
]
