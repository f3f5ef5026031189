"""The network representation and its evaluators.

* :mod:`~expressivity.network.layers`: heads, attention, feed-forward and mixing layers, layer norm.
* :mod:`~expressivity.network.activations` / :mod:`~expressivity.network.biases`: activations
  and position biases, each describing and serialising itself.
* :mod:`~expressivity.network.network`: :class:`Network`, the ordered list of residual layers
  with its input and output maps.
* :mod:`~expressivity.network.reference`: the NumPy float64 forward pass that *is* the spec.
* :mod:`~expressivity.network.exact`: the same semantics in exact rational arithmetic.
* :mod:`~expressivity.network.torch_eval`: the same semantics as a batched ``torch.nn.Module``.
"""

from expressivity.network.activations import GELU, PiecewiseLinear, ReLU
from expressivity.network.biases import MatrixBias, RelativeBias, SlopeBias
from expressivity.network.evaluate import DTYPES, evaluate
from expressivity.network.inputs import one_hot
from expressivity.network.layers import AttentionLayer, FeedForwardLayer, Head, LayerNorm, MixingHead, MixingLayer
from expressivity.network.network import Network

__all__ = [
    "DTYPES",
    "GELU",
    "AttentionLayer",
    "FeedForwardLayer",
    "Head",
    "LayerNorm",
    "MatrixBias",
    "MixingHead",
    "MixingLayer",
    "Network",
    "PiecewiseLinear",
    "RelativeBias",
    "ReLU",
    "SlopeBias",
    "evaluate",
    "one_hot",
]
