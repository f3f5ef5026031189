"""The configuration of the trained model family: one dataclass of architecture switches.

Every field is a JSON value, so a config round-trips through ``to_dict`` / ``from_dict``.
Validation refuses options that do not apply to the chosen layers, naming them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from expressivity.errors import ExpressivityError
from expressivity.network.activations import GELU, Activation, PiecewiseLinear, ReLU, activation_from_dict
from expressivity.nn.mixers import MIXERS, SWITCH_NEUTRAL, readers, switches_read
from expressivity.nn.positional import APE_NAMES, RPE_NAMES, RPES

ACTIVATION_NAMES = {"relu": ReLU(), "gelu": GELU()}


def activation_spec(spec):
    """The config form of an activation (a network activation, a name or a description):
    ``"relu"``, ``"gelu"`` or a piecewise-linear description with float entries."""
    if isinstance(spec, (ReLU, GELU, PiecewiseLinear)):
        spec = spec.to_dict()
    if isinstance(spec, dict):
        act = activation_from_dict(spec)
        if not isinstance(act, PiecewiseLinear):
            return act.kind
        return {"kind": act.kind, **{k: [float(v) for v in getattr(act, k)] for k in ("breakpoints", "slopes", "intercepts")}}
    if spec not in ACTIVATION_NAMES:
        raise ExpressivityError(f"unknown activation {spec!r}; use relu, gelu or a piecewise-linear description "
                                "(PiecewiseLinear(...).to_dict())")
    return spec



# Sizes beyond these cannot fit any machine (and would overflow PyTorch's index types before a
# memory estimate could refuse them); the training budget refuses far smaller ones with an estimate.
MAX_SIZE = 10**9
SIZE_LIMITS = {"layers": 4096, "heads": 10**6, "conv_kernel": 10**6}

@dataclass
class ModelConfig:
    """Architecture switches of :class:`~expressivity.nn.model.Model`.

    ``mixer`` is one name from :data:`~expressivity.nn.mixers.MIXERS` or one per layer (a hybrid stack; ``"none"``
    is a block with a feed-forward layer only). ``activation`` is ``"relu"``, ``"gelu"``, a
    piecewise-linear description (``PiecewiseLinear.to_dict()``), or one per layer.
    ``d_head`` defaults to ``d_model // heads``; ``qk_scale`` to ``1/sqrt(d_head)``.
    ``normalization``: attention over keys by ``"softmax"`` or ``"hardmax"`` (arg-max of the
    whole score, ties split evenly: for constructed networks). ``dpfree_normaliser``: DP-free
    heads normalise over the ``"visible"`` keys or over an ``"infinite"`` zero-padded past
    (causal, rpe lin/log; see :class:`~expressivity.nn.mixers.DPFree`).
    """

    vocab_size: int = 0
    d_in: int = 1
    d_out: int = 1
    max_len: int = 64
    mixer: str | tuple[str, ...] = "attention"
    layers: int = 1
    heads: int = 4
    d_model: int = 64
    d_head: int | None = None
    ffn_width: int = 256
    activation: str | dict | tuple = "relu"
    rpe: str = "none"
    learnable_slopes: bool = False
    ape: str = "none"
    rotary: bool = False
    norm: str = "none"
    causal: bool = True
    q_bias: bool = False
    qk_scale: float | None = None
    conv_kernel: int = 5
    normalization: str = "softmax"
    dpfree_normaliser: str = "visible"

    def __post_init__(self) -> None:
        if isinstance(self.mixer, list):
            self.mixer = tuple(self.mixer)
        if isinstance(self.activation, (list, tuple)):
            self.activation = tuple(activation_spec(a) for a in self.activation)
        else:
            self.activation = activation_spec(self.activation)
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.d_head or self.d_model // self.heads

    def layer_mixers(self) -> tuple[str, ...]:
        return (self.mixer,) * self.layers if isinstance(self.mixer, str) else tuple(self.mixer)

    def layer_activations(self) -> tuple[Activation, ...]:
        """The network activation of each layer's feed-forward block."""
        specs = self.activation if isinstance(self.activation, tuple) else (self.activation,) * self.layers
        return tuple(ACTIVATION_NAMES[s] if isinstance(s, str) else activation_from_dict(s) for s in specs)

    def validate(self) -> None:
        def bad(msg):
            raise ExpressivityError(msg)

        mixers = (self.mixer,) if isinstance(self.mixer, str) else self.mixer
        for m in mixers:
            if m not in MIXERS:
                bad(f"unknown mixer {m!r}; use one of {', '.join(MIXERS)} (or a comma-separated list, one per layer)")
        for name, given in (("mixers", self.mixer), ("activations", self.activation)):
            if isinstance(given, tuple) and len(given) != self.layers:
                bad(f"{len(given)} {name} given for {self.layers} layers; give one or exactly one per layer")
        for name, value, allowed in (("rpe", self.rpe, RPE_NAMES), ("ape", self.ape, APE_NAMES), ("norm", self.norm, ("none", "pre")),
                                     ("normalization", self.normalization, ("softmax", "hardmax")),
                                     ("dpfree-normaliser", self.dpfree_normaliser, ("visible", "infinite"))):
            if value not in allowed:
                bad(f"unknown {name} {value!r}; use one of {', '.join(allowed)}")
        for name in ("layers", "heads", "d_model", "max_len", "d_out", "conv_kernel", "ffn_width", "vocab_size", "d_in",
                     "d_head"):
            value = getattr(self, name)
            if value is None and name == "d_head":
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                bad(f"{name.replace('_', '-')} must be an integer, got {value!r}")
            if value > SIZE_LIMITS.get(name, MAX_SIZE):
                # never :.3g of an int: 10**309 has no float (a traceback: a fuzz pass, 2026-11-29)
                shown = f"{value:,}" if value < 10 ** 15 else f"about 10^{len(str(value)) - 1}"
                bad(f"{name.replace('_', '-')} {shown} is beyond any memory budget (limit "
                    f"{SIZE_LIMITS.get(name, MAX_SIZE):,}); use a smaller value")
        for name in ("layers", "heads", "d_model", "max_len", "d_out", "conv_kernel"):
            if getattr(self, name) < 1:
                bad(f"{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        for name in ("ffn_width", "vocab_size", "d_in"):
            if getattr(self, name) < 0:
                bad(f"{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        self._validate_applicability(set(self.layer_mixers()))

    def _validate_applicability(self, used: set[str]) -> None:
        """Refuse switches that no layer of this stack would read."""
        def bad(option, needs):
            raise ExpressivityError(f"{option} applies only to {needs}, but the mixers are {', '.join(sorted(used))}; "
                                    f"drop it or change the mixers")

        read = switches_read(used)
        for switch, neutral in SWITCH_NEUTRAL.items():
            value = getattr(self, switch)
            if value != neutral and switch not in read:
                name = switch.replace("_", "-")
                bad(name if isinstance(value, bool) else f"{name} {value!r}", f"{readers(switch)} layers")
        if self.learnable_slopes and self.rpe not in ("lin", "log"):
            raise ExpressivityError(f"learnable slopes (--learn-slopes) apply only to rpe lin or log, not {self.rpe!r}; "
                                   "drop it or pick --rpe lin/log")
        if "none" in used and self.ffn_width == 0:
            raise ExpressivityError("mixer 'none' with ffn-width 0 makes a block that does nothing; give ffn-width > 0 or another mixer")
        if self.dpfree_normaliser == "infinite":
            if not self.causal:
                raise ExpressivityError("dpfree-normaliser 'infinite' needs a causal model (a past to extend); set causal or use visible")
            if not getattr(RPES[self.rpe], "has_infinite_mass", False):
                raise ExpressivityError(f"dpfree-normaliser 'infinite' needs rpe lin or log (a bias with a finite infinite mass), "
                                        f"not {self.rpe!r}")
        if "heads" in read and self.d_head is None and self.d_model % self.heads:   # the head-based mixers
            raise ExpressivityError(f"d-model {self.d_model} is not divisible by heads {self.heads}; pick d-model a multiple of heads")
        if self.rotary and self.head_dim % 2:
            raise ExpressivityError(f"rotary needs an even head width, got {self.head_dim}")

    def unread_settings(self) -> tuple[str, ...]:
        """Settings with a default that no layer of this stack reads (``heads`` and ``d_head`` without a
        head-based mixer, ``conv_kernel`` without sepconv, ``causal`` in a stack of feed-forward blocks
        only): two configurations that differ only in them train the same model. (The switches with a
        neutral value are refused by :meth:`validate` instead.)"""
        from expressivity.mixer_switches import unread_settings

        return unread_settings(self.layer_mixers())

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """Inverse of :meth:`to_dict` (JSON lists become tuples); unknown keys are refused."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ExpressivityError(f"unknown model config keys {', '.join(map(repr, unknown))}; "
                                    f"known keys are {', '.join(sorted(names))}")
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items()})
