"""Regression on a Yun et al. target (see :mod:`expressivity.targets`): ``X ~ U[0,1]^{n x d}``,
``Y = target(X)``, scored at every position. Bidirectional by default (targets are
sequence-to-sequence maps, usually permutation equivariant)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from expressivity.errors import ExpressivityError
from expressivity.targets import evaluate_target, get_target, list_targets
from expressivity.tasks.base import Batch, Task


MAX_DIM = 256


@dataclass
class YunTarget(Task):
    name = "yun-target"
    kind = "regression"
    metric_name = "r2"
    target: str = "mean-shift"   # the first of expressivity.targets.list_targets()
    length: int = 4
    dim: int = 1
    # a user target's module (module:function): the SHA-256 of its file, filled in when left empty, so a run's
    # configuration (and so its id) names the code it trained on; a sweep run again after the module changed kept
    # the old code's results under the same ids (an audit, 2026-11-28). Given (a stored configuration, a resumed
    # run), it must match the file, or the task refuses to build.
    target_sha256: str = ""

    def __post_init__(self):
        if not self.target:
            self.target = list_targets()[0].name
        if not isinstance(self.target_sha256, str):
            raise ExpressivityError(f"task {self.name!r}: target_sha256 must be a string, got {self.target_sha256!r}")
        self._target = get_target(self.target)
        found = self._target.source_sha256 or ""
        if self.target_sha256 and self.target_sha256 != found:
            raise ExpressivityError(
                f"task {self.name!r}: this configuration was made with other code for target {self.target!r} "
                f"(target_sha256 {self.target_sha256[:16]}..., here {found[:16] or 'none'}...: "
                f"{self._target.source or 'a built-in target'} changed); put the code back, or drop target_sha256 "
                "(a new sweep folder) to train on the code as it is")
        self.target_sha256 = found
        if self.dim > MAX_DIM:
            raise ExpressivityError(f"dim {self.dim} is above {MAX_DIM}: the Yun targets are sequence maps of "
                                    "low-dimensional tokens (pairwise ones cost n^2 dim per sample); use a smaller dim")
        super().__post_init__()

    def kwargs(self) -> dict:
        """The task's arguments; ``target_sha256`` only for a user target, so a built-in target's configurations
        (and their run ids, and sweep folders started before the hash was recorded) stay as they were."""
        args = super().kwargs()
        if not args["target_sha256"]:
            del args["target_sha256"]
        return args

    @property
    def d_in(self):
        return self.dim

    @property
    def d_out(self):
        return self.dim

    def model_defaults(self):
        return {"causal": False, "layers": 2, "heads": 4, "d_model": 64, "ffn_width": 128}

    def train_defaults(self):
        return {"steps": 2000, "batch_size": 64, "lr": 3e-3, "target_metric": None}

    def generate(self, batch_size, length, generator):
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        X = np.random.default_rng(seed).random((batch_size, length, self.dim))
        Y = evaluate_target(self._target, X)
        return Batch(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(Y, dtype=torch.float32),
                     torch.ones(batch_size, length, dtype=torch.bool))
