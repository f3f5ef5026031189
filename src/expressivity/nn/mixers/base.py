"""What every token mixer is and declares (the facts other rooms read instead of keeping their own).

A mixer maps the residual stream ``(K, batch, n, d)`` (tokens as rows, ``K`` the ensemble axis of
:mod:`expressivity.nn.layers`) to the update it adds; the residual connection lives in
:class:`expressivity.nn.model.Block`. A mixer class declares, from a
:class:`~expressivity.nn.config.ModelConfig` alone (no model is built):

* ``layer_kind``: the :class:`~expressivity.network.Network` layer kind it becomes
  (``to_layer`` builds it, ``load_layer`` reads one back);
* ``parameter_count(cfg)``: its trained parameters (exact; tests hold it to the built module);
* ``flops_per_token(cfg, n)``: forward multiply-adds x 2 per token on ``n``-token sequences
  (matrix products only; position biases, norms and the softmax are lower order). ``c``, the
  keys a query sees on average, is ``(n + 1) / 2`` causal and ``n`` bidirectional;
* ``head_count(cfg)``: the heads of the network layer it becomes (:func:`expressivity.network.layers.head_count`);
* ``length_limited(cfg)``: whether it has no value beyond ``max_len`` positions;
* ``switches``: the :class:`~expressivity.nn.config.ModelConfig` fields it reads beyond the sizes
  every layer shares (``d_model``, ``causal``, ``max_len``): a switch set away from its neutral
  value (:data:`expressivity.nn.mixers.SWITCH_NEUTRAL`) that no layer of a stack reads is refused,
  and a task's default for it is dropped (:func:`expressivity.nn.mixers.switches_read`).

Adding a mixer is one module here defining such a class, plus its entry in
:data:`expressivity.nn.mixers.MIXERS`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from expressivity.nn.layers import EnsembleModule
from expressivity.nn.positional import bias_length_limited


class Mixer(EnsembleModule):
    """Base class of the token mixers (see the module docstring for what a subclass declares)."""

    layer_kind: ClassVar[str]
    switches: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def from_config(cls, cfg, members: int | None = None) -> "Mixer":  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def parameter_count(cfg) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def flops_per_token(cfg, n: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def head_count(cfg) -> int:
        return 1

    @staticmethod
    def length_limited(cfg) -> bool:
        return False

    def check_single(self) -> None:
        """Conversions read one model's weights: refuse an ensemble (take a member first)."""
        if self.members is not None:
            raise ValueError("convert one member of an ensemble (Model.member(k)), not the whole ensemble")


class HeadMixer(Mixer):
    """A mixer of ``cfg.heads`` heads, each with the position bias ``cfg.rpe`` (length-limited
    exactly when that bias is)."""

    switches: ClassVar[frozenset[str]] = frozenset({"heads", "d_head", "rpe", "learnable_slopes"})

    @staticmethod
    def head_count(cfg) -> int:
        return cfg.heads

    @staticmethod
    def length_limited(cfg) -> bool:
        return bias_length_limited(cfg)


def keys_seen(cfg, n: int) -> float:
    """Keys a query sees on average on ``n`` tokens: ``(n + 1) / 2`` causal, ``n`` bidirectional."""
    return (n + 1) / 2 if cfg.causal else n


# Rows shorter than this are normalised by the spelled-out softmax below. Measured on the CI
# machine's CPU (AVX-512, 2 threads), forward + backward: torch's fused kernel is about 3x slower
# than the spelled-out one on rows of 8 to 12 keys and about 3x faster from 16 keys up (one
# vector register per row), causal or not, for one model and for an ensemble of 8.
FUSED_SOFTMAX_FROM = 16


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis: torch's fused kernel on rows of at least
    :data:`FUSED_SOFTMAX_FROM` keys, else spelled out (max-subtracted), which is faster there."""
    if scores.shape[-1] >= FUSED_SOFTMAX_FROM:
        return torch.softmax(scores, dim=-1)
    e = (scores - scores.amax(-1, keepdim=True).detach()).exp()
    return e / e.sum(-1, keepdim=True)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def set_param(param: torch.Tensor, value, *index) -> None:
    """Copy ``value`` (NumPy, any exact or float dtype) into ``param[index]``."""
    param[index] = torch.as_tensor(np.asarray(value, dtype=np.float64), dtype=param.dtype)
