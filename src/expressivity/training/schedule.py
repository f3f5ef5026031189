"""Training hyper-parameters and the learning-rate schedule."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from expressivity.errors import ExpressivityError

# The held-out set is the same for every run and seed, so seeds are compared on equal data.
EVAL_SEED = 987_654_321


@dataclass
class TrainConfig:
    """AdamW with linear warm-up then cosine decay to ``min_lr_ratio * lr``.

    ``warmup`` defaults to ``min(100, steps // 10)`` steps. Evaluation every ``eval_every`` steps
    on ``eval_size`` held-out samples; training stops early once the held-out metric reaches
    ``target_metric`` (higher is better). Checkpoints every ``checkpoint_every`` steps.
    """

    steps: int = 2000
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    warmup: int | None = None
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 100
    eval_size: int = 512
    log_every: int = 10
    target_metric: float | None = None
    checkpoint_every: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "eval_size", "log_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ExpressivityError(f"{name.replace('_', '-')} must be a positive integer, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ExpressivityError(f"lr must be > 0, got {self.lr}")

    @property
    def warmup_steps(self) -> int:
        return min(100, self.steps // 10) if self.warmup is None else self.warmup

    def lr_at(self, step: int, base: float | None = None) -> float:
        """Learning rate for (0-based) ``step``."""
        base = self.lr if base is None else base
        w = self.warmup_steps
        if step < w:
            return base * (step + 1) / w
        progress = (step - w) / max(1, self.steps - w)
        return base * (self.min_lr_ratio + (1 - self.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
