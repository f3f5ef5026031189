"""Size estimate of a training run, made before anything is allocated.

The estimate counts float32 activations kept for the backward pass: per layer the residual
stream and projections (about ``8 d_model + 3 ffn_width`` floats per token) and the attention
scores, weights and their gradients (about ``4 heads n^2`` floats per sequence), for the larger
of the training batch and the held-out evaluation batch, times the ensemble size, plus the
parameters with AdamW's two moments. It is an order-of-magnitude guard, not a profiler.
"""

from __future__ import annotations

from expressivity.errors import BudgetError
from expressivity.nn.model import ModelConfig

DEFAULT_MEMORY_BUDGET = 4 * 2**30  # bytes; the CI machines have 24 GiB shared by two workers


def estimate_training_bytes(cfg: ModelConfig, n: int, batch_size: int, eval_size: int, models: int = 1) -> int:
    """Approximate peak bytes of a training step for sequences of length ``n``."""
    batch = max(batch_size, eval_size)
    per_token = 8 * cfg.d_model + 3 * cfg.ffn_width
    per_layer = batch * (n * per_token + 4 * cfg.heads * n * n)
    params = cfg.layers * (4 * cfg.d_model**2 + 2 * cfg.d_model * cfg.ffn_width) + cfg.max_len * cfg.d_model
    if "bilinear" in cfg.layer_mixers():
        params += cfg.layers * cfg.max_len**2
    return 4 * models * (cfg.layers * per_layer + 3 * params)


def check_training_budget(cfg: ModelConfig, n: int, batch_size: int, eval_size: int, models: int = 1,
                          budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """Return the estimate, or raise :class:`BudgetError` with it when it is above ``budget``."""
    need = estimate_training_bytes(cfg, n, batch_size, eval_size, models)
    if need > budget:
        raise BudgetError(
            f"this run needs about {need / 2**30:.3g} GiB (length {n}, batch {batch_size}, eval batch {eval_size}, "
            f"{cfg.layers} layers, {cfg.heads} heads, d_model {cfg.d_model}), above the {budget / 2**30:.3g} GiB budget; "
            "use a shorter --length, a smaller --batch-size or a smaller model"
        )
    return need
