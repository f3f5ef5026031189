"""Training hyper-parameters and the learning-rate schedule."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from expressivity.errors import ExpressivityError

# Held-out data is the same for every run and seed, so seeds are compared on equal data. The
# validation split is what training watches (early stopping, best step, learning-rate selection
# in sweeps); the test split is drawn from another generator and is only ever reported.
EVAL_SEED = 987_654_321
TEST_SEED = 123_456_789
SPLIT_SEEDS = {"val": EVAL_SEED, "test": TEST_SEED}


MAX_COUNT = 10**9  # steps, batch sizes, intervals: far beyond any run on one machine, within int64
FLOAT32_MAX = 3.4028234663852886e38  # the largest float32: AdamW's step value must fit it
# AdamW moves a weight by about lr a step; float32 resolves about 6e-8 of a weight's size, so below this a
# step is lost on every weight above about 2e-5 in size (initial weights are around 0.02): nothing trains
MIN_LR = 1e-12


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warm-up then cosine decay to ``min_lr_ratio * lr``.

    ``warmup`` defaults to ``min(100, steps // 10)`` steps. Evaluation every ``eval_every`` steps
    on ``eval_size`` held-out samples; training stops early once the held-out metric reaches
    ``target_metric`` (higher is better). Checkpoints every ``checkpoint_every`` steps. The seed
    belongs to the run (:class:`~expressivity.training.config.RunConfig`), not to these settings.
    ``test_seed`` draws the test split from another generator than the default ``TEST_SEED``
    (``None``): deciding runs score on a test sample no development run has seen; it is left out
    of :meth:`to_dict` when unset, so configurations written before it keep their ids.
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
    test_seed: int | None = None

    def __post_init__(self) -> None:
        def bad(msg: str):
            raise ExpressivityError(msg)

        for name in ("steps", "batch_size", "eval_every", "eval_size", "log_every", "checkpoint_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                bad(f"{name.replace('_', '-')} must be a positive integer, got {value!r}")
            if value > MAX_COUNT:
                bad(f"{name.replace('_', '-')} {value:,} is beyond any run (at most {MAX_COUNT:,}); use a smaller value")
        for name in ("lr", "weight_decay", "beta1", "beta2", "eps", "min_lr_ratio", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                bad(f"{name.replace('_', '-')} must be a finite number, got {value!r}")
        if not self.lr > 0:
            bad(f"lr must be > 0, got {self.lr}")
        if self.lr < MIN_LR:
            bad(f"lr {self.lr:g} is below {MIN_LR:g}: AdamW moves a weight by about lr a step, which float32 "
                "loses on every weight above about 2e-5 in size, so nothing would train; give a larger --lr")
        if not (self.eps > 0 and self.grad_clip > 0 and self.weight_decay >= 0):
            bad("eps and grad-clip must be > 0 and weight-decay >= 0")
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1 and 0 <= self.min_lr_ratio <= 1):
            bad("beta1 and beta2 must be in [0, 1) and min-lr-ratio in [0, 1]")
        if self.lr / (1 - self.beta1) > FLOAT32_MAX:
            # AdamW's first step scales by lr / (1 - beta1) in float32: beyond its range torch raises mid-run
            bad(f"lr {self.lr:g} makes AdamW's first step lr / (1 - beta1) = {self.lr / (1 - self.beta1):.3g}, beyond "
                f"float32 ({FLOAT32_MAX:.3g}); a run diverges at far smaller rates: lower --lr")
        if self.warmup is not None and (isinstance(self.warmup, bool) or not isinstance(self.warmup, int)
                                        or not 0 <= self.warmup <= self.steps):
            bad(f"warmup must be an integer in [0, steps], got {self.warmup!r}")
        if self.test_seed is not None and (isinstance(self.test_seed, bool) or not isinstance(self.test_seed, int)
                                           or not 0 <= self.test_seed < 2**63 or self.test_seed == EVAL_SEED):
            bad(f"test-seed must be an integer in [0, 2^63) other than the validation seed, got {self.test_seed!r}")
        if self.target_metric is not None and (isinstance(self.target_metric, bool)
                                               or not isinstance(self.target_metric, (int, float))
                                               or not math.isfinite(self.target_metric)):
            bad(f"target-metric must be a finite number, got {self.target_metric!r}")

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
        d = asdict(self)
        if d["test_seed"] is None:
            del d["test_seed"]
        return d

    def split_seed(self, split: str) -> int:
        """The generator seed of the held-out ``split`` (``"val"`` or ``"test"``)."""
        return self.test_seed if split == "test" and self.test_seed is not None else SPLIT_SEEDS[split]

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        """Build from a dict; unknown keys are refused by name (a typo must not be dropped)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ExpressivityError(f"unknown training settings {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        return cls(**d)
