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
* ``activations(cfg, n)``: the values it holds during a training step and a held-out pass
  (a :class:`Footprint`; the memory guard, :mod:`expressivity.training.budget`, sums them);
* ``head_count(cfg)``: the heads of the network layer it becomes (:func:`expressivity.network.layers.head_count`);
* ``length_limited(cfg)``: whether it has no value beyond ``max_len`` positions;
* ``switches``: the :class:`~expressivity.nn.config.ModelConfig` fields it reads beyond the sizes
  every layer shares (``d_model``, ``causal``, ``max_len``): a switch set away from its neutral
  value (:data:`expressivity.nn.mixers.SWITCH_NEUTRAL`) that no layer of a stack reads is refused,
  and a task's default for it is dropped (:func:`expressivity.nn.mixers.switches_read`).

and, for :func:`expressivity.nn.convert.from_network`, which network layers it holds and the
switches they fix:

* ``holds(layer)`` for a layer of kind ``layer_kind``: whether ``load_layer(layer)`` copies it
  in exactly (so ``holds`` claims only what ``load_layer`` can represent; the model-wide settings,
  such as causal padding, are ``check_loadable``'s). A mixer that holds none does not load. The
  family's mixers hold disjoint sets of the layers they build (tested); a layer two mixers both
  represent is loaded by the first in :data:`expressivity.nn.mixers.MIXERS`. ``holds_what`` says
  those layers in words, for the refusal of a layer none holds;
* ``load_switches(placed)``: the config fields its layers fix, from ``placed``, every mixer layer
  of the network by mixer class (so mixers that share fields, such as the head mixers' ``heads``,
  compute them from all their layers and agree);
* ``looks_causal(layer)``, asked only when no layer fixes ``causal``, and
  ``check_loadable(layer, causal, where)``, which refuses a layer that does not fit the model.

Adding a mixer is one module here defining such a class, plus its entry in
:data:`expressivity.nn.mixers.MIXERS`.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import numpy as np
import torch

from expressivity.errors import NetworkError
from expressivity.nn.layers import EnsembleModule
from expressivity.nn.positional import bias_length_limited, simplest_bias
from expressivity.mixer_switches import HEAD_SWITCHES

# {mixer class: [(network layer index, layer), ...]}: every mixer layer of a network being loaded
Placed = dict[type, list[tuple[int, object]]]


class Footprint(NamedTuple):
    """The float32 values a layer holds, per member of an ensemble, for sequences of ``n`` tokens:
    ``saved`` per sequence kept for the backward pass of a training step; ``working`` per sequence
    alive at once at the layer's busiest moment of a forward pass without gradients (a held-out
    pass), beyond its input; ``fixed`` whatever the batch (input-independent position kernels and
    biases, with their gradients). Read by the memory estimate (:mod:`expressivity.training.budget`),
    which is calibrated against measured peaks."""

    saved: float
    working: float
    fixed: float


class Mixer(EnsembleModule):
    """Base class of the token mixers (see the module docstring for what a subclass declares)."""

    layer_kind: ClassVar[str]
    switches: ClassVar[frozenset[str]] = frozenset()
    holds_what: ClassVar[str] = "no network layer"

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

    @staticmethod
    def activations(cfg, n: int) -> Footprint:  # pragma: no cover - abstract
        """What this mixer holds on ``n``-token sequences (see :class:`Footprint`)."""
        raise NotImplementedError

    def check_single(self) -> None:
        """Conversions read one model's weights: refuse an ensemble (take a member first)."""
        if self.members is not None:
            raise ValueError("convert one member of an ensemble (Model.member(k)), not the whole ensemble")

    # -- loading network layers (expressivity.nn.convert.from_network) --

    @classmethod
    def holds(cls, layer) -> bool:
        """Whether this mixer's ``load_layer`` copies in ``layer``, a network layer of kind
        ``layer_kind``, exactly (none unless the mixer says which: it then also defines ``load_layer``)."""
        return False

    @classmethod
    def load_switches(cls, placed: Placed) -> dict:
        """The config fields this mixer's layers fix (``placed``: every mixer layer, by mixer class)."""
        return {}

    @classmethod
    def looks_causal(cls, layer) -> bool:
        """Whether ``layer`` reads no later token (asked only when no layer fixes ``causal``)."""
        return True

    @classmethod
    def check_loadable(cls, layer, causal: bool, where: str) -> None:
        """:class:`NetworkError` naming ``where`` and the fix if ``layer`` does not fit a model with this ``causal``."""


class HeadMixer(Mixer):
    """A mixer of ``cfg.heads`` heads, each with the position bias ``cfg.rpe`` (length-limited
    exactly when that bias is)."""

    switches: ClassVar[frozenset[str]] = HEAD_SWITCHES

    @staticmethod
    def head_count(cfg) -> int:
        return cfg.heads

    @staticmethod
    def length_limited(cfg) -> bool:
        return bias_length_limited(cfg)

    @classmethod
    def load_switches(cls, placed: Placed) -> dict:
        """The fields every head mixer shares, from the layers of all of them: ``causal``, the most
        ``heads`` of a layer, ``d_head`` wide enough for every head, and the simplest ``rpe`` that
        holds every head's bias."""
        layers = sorted((pair for mixer, pairs in placed.items() if issubclass(mixer, HeadMixer) for pair in pairs),
                        key=lambda pair: pair[0])
        heads = [h for _, layer in layers for h in layer.heads]
        return dict(causal=agreed([(k, layer.causal) for k, layer in layers], lambda c: "is causal" if c else "is bidirectional"),
                    heads=max(len(layer.heads) for _, layer in layers),
                    d_head=max(max(h.size, h.W_V.shape[1]) for h in heads) or 1,
                    rpe=simplest_bias([h.position_bias for h in heads if h.position_bias is not None]))


def agreed(pairs: list[tuple[int, object]], says) -> object:
    """The one value of ``(layer index, value)`` pairs (``None`` if there are none), or
    :class:`NetworkError` naming two layers that differ; ``says(value)`` words a value (``"is causal"``)."""
    for k, value in pairs[1:]:
        if value != pairs[0][1]:
            k0, v0 = pairs[0]
            raise NetworkError(f"layer {k} {says(value)} but layer {k0} {says(v0)}; the trained family has one choice "
                               "for the whole model")
    return pairs[0][1] if pairs else None


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
    param[index] = torch.tensor(np.asarray(value, dtype=np.float64), dtype=param.dtype)
