"""Yun et al. (2020): any continuous sequence-to-sequence target as a Transformer.

Stages (each a pure function returning a :class:`~expressivity.network.network.Network`):

* :func:`~.quantize.quantizer` (Lemma 4.1): ``d/delta + d`` width-1 FF layers;
* :func:`~.contextual.contextual_map` (Lemma 4.2): ``delta^{-d} + 1`` hardmax attention layers
  of two size-1 heads (``n delta^{-d} + 1`` with positional encoding);
* :func:`~.value.value_map` (Lemma 4.3): ``1 + d + n C(delta^{-d}, n)`` width-1 FF layers;
* :func:`~.compile.compile_modified` chains them (with the exhaustive P1-P4 check between);
* :func:`~.soften.soften` (Step 3): softmax(lambda) / ReLU(epsilon) in float64.

Tokens are rows throughout; constants live in :class:`~.constants.YunParams`.
"""

from expressivity.constructions.yun.compile import YunBuild, compile_modified, f_bar
from expressivity.constructions.yun.constants import YunParams
from expressivity.constructions.yun.contextual import contextual_map
from expressivity.constructions.yun.quantize import quantizer
from expressivity.constructions.yun.soften import SoftenConfig, soften
from expressivity.constructions.yun.value import value_map

__all__ = ["SoftenConfig", "YunBuild", "YunParams", "compile_modified", "contextual_map", "f_bar", "quantizer",
           "soften", "value_map"]
