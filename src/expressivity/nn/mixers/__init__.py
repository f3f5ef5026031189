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

# switch -> the value that leaves it off (ModelConfig's default). Only the mixers that list a
# switch in their ``switches`` read it; heads, d_head, learnable_slopes and conv_kernel have no
# value that reads as "off", so only a command that sees what was typed can refuse them.
SWITCH_NEUTRAL = {"rpe": "none", "rotary": False, "normalization": "softmax", "q_bias": False, "qk_scale": None,
                  "dpfree_normaliser": "visible"}


def switches_read(mixers) -> frozenset[str]:
    """The switches some layer of a stack of ``mixers`` (names; unknown names are skipped, the
    configuration refuses them) reads."""
    classes = [MIXERS.get(m) for m in mixers]
    return frozenset().union(*(c.switches for c in classes if c is not None))


def readers(switch: str) -> str:
    """The mixers that read ``switch``, in words (``"attention and dpfree"``)."""
    return " and ".join(name for name, c in MIXERS.items() if c is not None and switch in c.switches)


__all__ = ["Attention", "Bilinear", "DPFree", "MIXERS", "MIXER_NAMES", "Mixer", "SWITCH_NEUTRAL", "SepConv", "readers",
           "switches_read"]
