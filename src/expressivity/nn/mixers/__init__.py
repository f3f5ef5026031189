"""Token mixers, one module each (:mod:`.base` says what a mixer declares).

:data:`MIXERS` maps each name to its class (``None`` for ``"none"``, a block with no token
mixing); a class builds itself with ``from_config(cfg, members)``.
"""

from expressivity.nn.mixers.attention import Attention
from expressivity.nn.mixers.base import Mixer
from expressivity.nn.mixers.bilinear import Bilinear
from expressivity.nn.mixers.dpfree import DPFree
from expressivity.nn.mixers.sepconv import SepConv

# name -> mixer class (None: a block with no token mixing): the one table a new mixer joins
MIXERS: dict[str, type[Mixer] | None] = {"attention": Attention, "dpfree": DPFree, "bilinear": Bilinear,
                                         "sepconv": SepConv, "none": None}
MIXER_NAMES = tuple(MIXERS)

__all__ = ["Attention", "Bilinear", "DPFree", "MIXERS", "MIXER_NAMES", "Mixer", "SepConv"]
