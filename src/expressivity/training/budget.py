"""Size estimate of a training run, made before anything is allocated.

Parameters are counted exactly from the configuration (:func:`expressivity.nn.model.parameter_count`:
each part declares its own count, and tests hold the declarations to built models), so a
``vocab=10^9`` embedding is counted, not allocated, and nothing is built: building even a ``meta``
model imported ``torch._dynamo``, 1.6 s of every run's start-up. Activations are estimated:
float32 values kept for the backward pass, per layer the residual stream and projections (about
``8 d_model + 3 ffn_width`` floats per token) and the attention scores, weights and their
gradients (about ``4 heads n^2`` floats per sequence), for the larger of the training batch and
the held-out batch, times the ensemble size. Parameters count four times (weights, gradient and
AdamW's two moments). It is an order-of-magnitude guard, not a profiler.
"""

from __future__ import annotations

from expressivity.errors import BudgetError
from expressivity.nn.model import ModelConfig, parameter_count

DEFAULT_MEMORY_BUDGET = 4 * 2**30  # bytes; the CI machines have 24 GiB shared by two workers


def activation_bytes(cfg: ModelConfig, n: int, batch_size: int, eval_size: int, models: int = 1) -> int:
    """Approximate activation bytes of a training step (no model is built: instant even for absurd sizes)."""
    batch = max(batch_size, eval_size)
    per_token = 8 * cfg.d_model + 3 * cfg.ffn_width
    per_layer = batch * (n * per_token + 4 * cfg.heads * n * n)
    return 4 * models * cfg.layers * per_layer


def estimate_training_bytes(cfg: ModelConfig, n: int, batch_size: int, eval_size: int, models: int = 1) -> int:
    """Approximate peak bytes of a training step for sequences of ``n`` tokens."""
    return activation_bytes(cfg, n, batch_size, eval_size, models) + 16 * models * parameter_count(cfg)


def check_training_budget(cfg: ModelConfig, n: int, batch_size: int, eval_size: int, models: int = 1,
                          budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """Return the estimate, or raise :class:`BudgetError` with it when it is above ``budget``."""
    activations = activation_bytes(cfg, n, batch_size, eval_size, models)
    if activations > budget:
        raise BudgetError(
            f"this run needs more than {activations / 2**30:.3g} GiB for activations alone ({n} tokens, batch "
            f"{batch_size}, eval batch {eval_size}, {cfg.layers} layers, {cfg.heads} heads, d_model {cfg.d_model}"
            f"{f', {models} models' if models > 1 else ''}), above the {budget / 2**30:.3g} GiB budget; use a "
            "shorter length, a smaller batch or model")
    need = activations + 16 * models * parameter_count(cfg)
    if need > budget:
        raise BudgetError(
            f"this run needs about {need / 2**30:.3g} GiB ({parameter_count(cfg):,} parameters, {n} tokens, batch "
            f"{batch_size}, eval batch {eval_size}, {cfg.layers} layers, {cfg.heads} heads, d_model {cfg.d_model}"
            f"{f', {models} models' if models > 1 else ''}), above the {budget / 2**30:.3g} GiB budget; use a "
            "shorter length, a smaller vocabulary, batch or model")
    return need


def check_run_budget(config, task, models: int = 1, budget: int = DEFAULT_MEMORY_BUDGET) -> int:
    """The largest estimate over the training length and every evaluation length of a
    :class:`~expressivity.training.config.RunConfig` (evaluation at a long length is where a
    small training run can run out of memory), refused above ``budget``."""
    tc = config.train
    need = check_training_budget(config.model, task.seq_len, tc.batch_size, tc.eval_size, models, budget)
    for length in config.eval_lengths:
        n = task.sequence_length(length)
        # evaluation keeps no activations for a backward pass, but scores are still n^2 per head
        need = max(need, check_training_budget(config.model, n, 1, tc.eval_size, models, budget))
    return need
