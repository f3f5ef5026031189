"""The trained model family: one residual stack with independent switches (tokens as rows).

``forward(x)``: ``x`` is ``(batch, n)`` token ids (``vocab_size > 0``) or ``(batch, n, d_in)``
floats; output ``(batch, n, d_out)``. Per layer ``l``:
``h <- h + mixer_l(norm(h))``, then, if ``ffn_width > 0``, ``h <- h + W_2 act(W_1 norm(h) + b_1) + b_2``;
finally ``y = readout(norm(h))``. ``norm`` is the identity (``"none"``, the Network semantics)
or LayerNorm (``"pre"``, with a final LayerNorm).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import torch
import torch.nn.functional as F
from torch import nn

from expressivity.errors import ExpressivityError
from expressivity.nn.mixers import MIXER_NAMES, Attention, Bilinear, DPFree, SepConv
from expressivity.nn.positional import APE_NAMES, RPE_NAMES, LearnedEncoding, SinusoidalEncoding, make_relative_bias


@dataclass
class ModelConfig:
    """Architecture switches; every field is independent of the others.

    ``mixer`` is one name from :data:`MIXER_NAMES` or one per layer (a hybrid stack).
    ``d_head`` defaults to ``d_model // heads``; ``qk_scale`` to ``1/sqrt(d_head)``.
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
    activation: str = "relu"
    rpe: str = "none"
    learnable_slopes: bool = False
    ape: str = "none"
    rotary: bool = False
    norm: str = "none"
    causal: bool = True
    q_bias: bool = False
    qk_scale: float | None = None
    conv_kernel: int = 5

    def __post_init__(self) -> None:
        if isinstance(self.mixer, list):
            self.mixer = tuple(self.mixer)
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.d_head or self.d_model // self.heads

    def layer_mixers(self) -> tuple[str, ...]:
        return (self.mixer,) * self.layers if isinstance(self.mixer, str) else tuple(self.mixer)

    def validate(self) -> None:
        def bad(msg):
            raise ExpressivityError(msg)

        mixers = (self.mixer,) if isinstance(self.mixer, str) else self.mixer
        for m in mixers:
            if m not in MIXER_NAMES:
                bad(f"unknown mixer {m!r}; use one of {', '.join(MIXER_NAMES)} (or a comma-separated list, one per layer)")
        if not isinstance(self.mixer, str) and len(self.mixer) != self.layers:
            bad(f"{len(self.mixer)} mixers given for {self.layers} layers; give one name or exactly one per layer")
        if self.rpe not in RPE_NAMES:
            bad(f"unknown rpe {self.rpe!r}; use one of {', '.join(RPE_NAMES)}")
        if self.ape not in APE_NAMES:
            bad(f"unknown ape {self.ape!r}; use one of {', '.join(APE_NAMES)}")
        if self.norm not in ("none", "pre"):
            bad(f"unknown norm {self.norm!r}; use none or pre")
        if self.activation not in ("relu", "gelu"):
            bad(f"unknown activation {self.activation!r}; use relu or gelu")
        for name in ("layers", "heads", "d_model", "max_len", "d_out", "conv_kernel"):
            if getattr(self, name) < 1:
                bad(f"{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.ffn_width < 0:
            bad(f"ffn-width must be >= 0 (0 = no FFN), got {self.ffn_width}")
        if self.d_head is None and self.d_model % self.heads:
            bad(f"d-model {self.d_model} is not divisible by heads {self.heads}; pick d-model a multiple of heads")
        if self.rotary and self.head_dim % 2:
            bad(f"rotary needs an even head width, got {self.head_dim}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in names})


class FeedForward(nn.Module):
    def __init__(self, d: int, width: int, activation: str):
        super().__init__()
        self.w1, self.w2 = nn.Linear(d, width), nn.Linear(width, d)
        self.act = F.relu if activation == "relu" else F.gelu

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, mixer: str):
        super().__init__()
        d, H, m = cfg.d_model, cfg.heads, cfg.head_dim
        bias = make_relative_bias(cfg.rpe, H, cfg.causal, cfg.max_len, cfg.learnable_slopes) if mixer in ("attention", "dpfree") else None
        if mixer == "attention":
            self.mixer = Attention(d, H, m, cfg.causal, bias, cfg.rotary, cfg.q_bias, cfg.qk_scale)
        elif mixer == "dpfree":
            self.mixer = DPFree(d, H, m, cfg.causal, bias)
        elif mixer == "bilinear":
            self.mixer = Bilinear(d, cfg.max_len, cfg.causal)
        else:
            self.mixer = SepConv(d, cfg.conv_kernel, cfg.causal)
        pre = cfg.norm == "pre"
        self.norm1 = nn.LayerNorm(d) if pre else nn.Identity()
        self.ffn = FeedForward(d, cfg.ffn_width, cfg.activation) if cfg.ffn_width > 0 else None
        self.norm2 = nn.LayerNorm(d) if pre and self.ffn is not None else nn.Identity()

    def forward(self, h):
        h = h + self.mixer(self.norm1(h))
        if self.ffn is not None:
            h = h + self.ffn(self.norm2(h))
        return h


class Model(nn.Module):
    """The model family of :class:`ModelConfig`. Input ``(batch, n)`` ids or ``(batch, n, d_in)``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d) if cfg.vocab_size > 0 else nn.Linear(cfg.d_in, d)
        self.ape = {"none": None, "sinusoidal": SinusoidalEncoding, "learned": LearnedEncoding}[cfg.ape]
        self.ape = self.ape(cfg.max_len, d) if self.ape is not None else None
        self.blocks = nn.ModuleList(Block(cfg, m) for m in cfg.layer_mixers())
        self.norm = nn.LayerNorm(d) if cfg.norm == "pre" else nn.Identity()
        self.readout = nn.Linear(d, cfg.d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        if n > self.cfg.max_len and (self.ape is not None or "bilinear" in self.cfg.layer_mixers()):
            raise ExpressivityError(f"input length {n} exceeds max_len {self.cfg.max_len} of this model")
        h = self.embed(x)
        if self.ape is not None:
            h = h + self.ape(n)
        for block in self.blocks:
            h = block(h)
        return self.readout(self.norm(h))

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())
