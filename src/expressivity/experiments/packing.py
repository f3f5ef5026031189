"""Packing: runs that may share an ensemble (the rule is :func:`expressivity.training.ensemble.pack_key`:
they differ only in seed and learning rate) train together as one (:func:`expressivity.training.run_ensemble`).

The packs depend on the sweep alone (not on the backend or the number of workers), so a sweep
gives the same per-run results on a laptop, a process pool or a Ray cluster. A group larger than
``max_pack`` is split into near-equal packs, and packs are split further until they fit the
training memory budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from expressivity.errors import BudgetError
from expressivity.training import RunConfig
from expressivity.training.budget import check_training_budget
from expressivity.training.ensemble import group_id, pack_key

DEFAULT_MAX_PACK = 16


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


def plan_packs(configs, max_pack: int = DEFAULT_MAX_PACK) -> list[Pack]:
    """Group ``configs`` into packs of at most ``max_pack`` runs, in the order groups first appear."""
    if isinstance(max_pack, bool) or not isinstance(max_pack, int) or max_pack < 1:
        raise ValueError(f"max_pack must be a positive integer, got {max_pack!r}")
    groups: dict[str, list[RunConfig]] = {}
    for c in configs:
        groups.setdefault(pack_key(c), []).append(c)
    packs = []
    for members in groups.values():
        _fits(members[0], 1, strict=True)  # one model over the budget: refuse the sweep now, not at run time
        parts = math.ceil(len(members) / max_pack)
        while parts < len(members) and not _fits(members[0], math.ceil(len(members) / parts)):
            parts += 1
        for k in range(parts):  # near-equal chunks: 20 runs at max 16 -> 10 + 10, not 16 + 4
            chunk = members[k * len(members) // parts:(k + 1) * len(members) // parts]
            packs.append(Pack(tuple(chunk)))
    return packs


def _fits(config: RunConfig, models: int, strict: bool = False) -> bool:
    task, tc = config.build_task(), config.train
    try:
        check_training_budget(config.model, task.seq_len, tc.batch_size, tc.eval_size, models=models)
    except BudgetError as exc:
        if strict:
            raise BudgetError(f"run {config.id()} (seed {config.seed}): {exc}") from None
        return False
    return True
