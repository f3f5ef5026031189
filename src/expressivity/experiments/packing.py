"""Packing: runs that may share an ensemble (the rule is :func:`expressivity.training.ensemble.pack_key`:
they differ only in seed and learning rate) train together as one (:func:`expressivity.training.run_ensemble`).

Packs are sized for the device:

* **CPU**: as before this module knew devices, so a CPU sweep gives the records it gave. A group
  larger than ``max_pack`` (16) is split into near-equal packs, and packs are split further while
  the former fixed guard (:func:`former_guard_bytes`, an order-of-magnitude estimate that counted
  held-out passes as training steps) puts them above 4 GiB. The packs depend on the sweep alone
  (not on the backend, the workers or the machine), except where a pack so made is above the
  memory budget (a small machine, many workers, ``--memory-budget``): it is then split further
  until it fits, as on CUDA, rather than failing every run in it at start.
* **CUDA**: every seed and learning rate of a configuration in one pack (one process drives the
  GPU; many small processes time-slicing it were measured far slower), split into near-equal packs
  only where the calibrated estimate (:func:`expressivity.training.budget.estimate_run`) is above
  the budget.

Either way, a run whose single model does not fit the budget refuses the sweep up front, with
the estimate and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from expressivity.errors import BudgetError
from expressivity.training import RunConfig
from expressivity.training.budget import Budget, check_run_budget, estimate_run
from expressivity.training.ensemble import group_id, pack_key, pack_key_of_dict

DEFAULT_MAX_PACK = 16      # on the CPU
FORMER_GUARD = 4 * 2**30   # bytes: the fixed budget the CPU packs are still split by


@dataclass(frozen=True)
class Pack:
    """Runs trained together: one run, or an ensemble of runs differing only in seed and ``train.lr``."""

    configs: tuple[RunConfig, ...]

    @property
    def id(self) -> str:
        """Content hash of the member ids, in order (the ensemble checkpoint's identity)."""
        return group_id(list(self.configs))

    @property
    def size(self) -> int:
        return len(self.configs)

    def work(self) -> int:
        """Training steps times members: the unit the progress display counts."""
        return sum(c.train.steps for c in self.configs)


def pack_sizes(packs) -> dict[int, int]:
    """``{size: how many packs of that size}``, sizes ascending (of :class:`Pack` or anything with a ``size``)."""
    sizes: dict[int, int] = {}
    for pack in packs:
        sizes[pack.size] = sizes.get(pack.size, 0) + 1
    return dict(sorted(sizes.items()))


def plan_packs(configs, max_pack: int | None = DEFAULT_MAX_PACK, *, device: str = "cpu",
               budget: Budget | None = None, dicts: list[dict] | None = None) -> list[Pack]:
    """Group ``configs`` into packs for ``device`` (see the module docstring), in the order groups
    first appear. ``max_pack``: the most runs in a pack (``None``: no limit but memory; the CPU
    default is :data:`DEFAULT_MAX_PACK`). ``budget``: what a pack may use; with one, a run that does
    not fit alone refuses the sweep (without, runs are checked when they start). ``dicts``: the
    configurations' ``to_dict()`` where already made (:meth:`Sweep.config_dicts`)."""
    if max_pack is not None and (isinstance(max_pack, bool) or not isinstance(max_pack, int) or max_pack < 1):
        raise ValueError(f"max_pack must be a positive integer, got {max_pack!r}")
    groups: dict[str, list[RunConfig]] = {}
    for k, c in enumerate(configs):
        groups.setdefault(pack_key(c) if dicts is None else pack_key_of_dict(dicts[k]), []).append(c)
    packs = []
    for members in groups.values():
        task = members[0].build_task()
        if budget is not None:
            _check_alone(members[0], task, budget, device)
        # the CPU keeps its packs (and so its runs' bits) where the former guard made them, but a pack must
        # also fit the budget: a budget below the former guard's pack split it further (a fresh audit: with
        # --workers 8 a 3.1 GiB pack went past its 2.3 GiB budget, and every run in it failed at start)
        fits = _fits_cpu if device == "cpu" else _fits_budget
        parts = math.ceil(len(members) / (max_pack or len(members)))
        while parts < len(members) and not fits(members[0], task, math.ceil(len(members) / parts), budget, device):
            parts += 1
        for k in range(parts):  # near-equal chunks: 20 runs at max 16 -> 10 + 10, not 16 + 4
            chunk = members[k * len(members) // parts:(k + 1) * len(members) // parts]
            packs.append(Pack(tuple(chunk)))
    return packs


def _check_alone(config: RunConfig, task, budget: Budget, device: str) -> None:
    try:
        check_run_budget(config, task, 1, budget, device)
    except BudgetError as exc:
        raise BudgetError(f"run {config.id()} (seed {config.seed}): {exc}") from None


def _fits_budget(config: RunConfig, task, models: int, budget: Budget | None, device: str) -> bool:
    return budget is None or estimate_run(config, task, models, device).peak <= budget.bytes


def _fits_cpu(config: RunConfig, task, models: int, budget: Budget | None, device: str = "cpu") -> bool:
    return _fits_former_guard(config, task, models) and _fits_budget(config, task, models, budget, device)


def _fits_former_guard(config: RunConfig, task, models: int, budget=None, device: str = "cpu") -> bool:
    tc = config.train
    return former_guard_bytes(config.model, task.seq_len, tc.batch_size, tc.eval_size, models) <= FORMER_GUARD


def former_guard_bytes(cfg, n: int, batch_size: int, eval_size: int, models: int = 1) -> int:
    """The estimate the fixed 4 GiB guard used (kept verbatim as the CPU packing rule): float32
    activations ``8 d_model + 3 ffn_width`` per token and ``4 heads n^2`` per sequence and layer
    for the larger of the training and held-out batches, plus 16 bytes a parameter, per model."""
    from expressivity.nn.model import parameter_count

    batch = max(batch_size, eval_size)
    per_layer = batch * (n * (8 * cfg.d_model + 3 * cfg.ffn_width) + 4 * cfg.heads * n * n)
    return 4 * models * cfg.layers * per_layer + 16 * models * parameter_count(cfg)
