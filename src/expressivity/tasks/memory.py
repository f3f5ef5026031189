"""Wang & E (2024) memory tasks on finite sequences (spec ``wang_e_2024.md`` §2).

All are regression tasks with one output per position, scored by MSE and R^2.

* ``fixed-memory`` (Task I): ``y_t = f(x_{t-T_1}, ..., x_{t-T_M})`` for fixed lags, scored
  at ``t >= T_M`` (so every argument exists). Readouts: ``linear`` (mean of the arguments),
  ``boolean`` (product of +-1 tokens: a sparse parity), ``smooth`` (``sin(pi * mean)``) and
  ``sin-product`` (``sin(4 pi x_1 x_2)``, two lags: the hard readout of the spec's claim 4) and
  ``sin-product-diff`` (``sin(4 pi x_1 x_2) + (x_1 - x_2) / 2``: the same hard part plus a linear
  part that gradient descent can use to find the two lags). ``sin(4 pi x_1 x_2)`` alone correlates
  with no low-degree polynomial of the tokens (``corr(y, x_1 x_2) = 0.04``), so a model that must
  also locate the lags sees no gradient signal and stays at R^2 ~ 0; a symmetric linear part
  (``x_1 + x_2``) is fitted by one head spread over both lags and leaves the same saddle, while
  ``x_1 - x_2`` (positive attention weights cannot subtract) needs one head per lag.
* ``adaptive-memory`` (Task II-a) and ``nested-memory`` (II-b). The spec leaves the exact
  definition open; we choose: token ``t`` carries a value ``v_t ~ U[-1, 1]`` and a pointer
  ``p_t ~ U{1..min(T, t)}`` (one-hot, ``T = max_lag``); position 0 is a start token (flag 1,
  value 0, pointer 0, so chains stop there). Lags are measured from the token *read*: a chain of
  depth ``k`` is ``t_0 = t``, ``t_{i+1} = t_i - p_{t_i}``, and ``y_t = v_{t_k}``. Depth 1 is
  adaptive memory ``y_t = v_{t - p_t}``. Input features ``[v_t, start_t, onehot(p_t)]``.
* ``kernel-memory`` (Task III): ``y_t = sum_{s=0}^{t} rho(s) x_{t-s}`` with ``x_t ~ N(0, 1)`` and
  the past before the start zero; ``rho(s) = (1 - e^-a) e^{-a s}`` (``exp``) or
  ``(1 + s)^{-(1+a)} / zeta(1 + a)`` (``power``, heavy-tailed). Both sum to 1 over ``s >= 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks.base import Batch, Task, each_member, normal, uniform, uniform_ints

READOUTS = ("linear", "boolean", "smooth", "sin-product", "sin-product-diff")
_REG_TRAIN = {"steps": 2000, "batch_size": 64, "lr": 3e-3, "target_metric": None}


def _lags(spec: str) -> list[int]:
    try:
        lags = sorted(int(v) for v in str(spec).split(","))
    except ValueError:
        raise ExpressivityError(f"lags must be comma-separated positive integers like 1,3,7; got {spec!r}") from None
    if not lags or lags[0] < 1 or len(set(lags)) != len(lags):
        raise ExpressivityError(f"lags must be distinct positive integers like 1,3,7; got {spec!r}")
    return lags


@dataclass
class FixedMemory(Task):
    name = "fixed-memory"
    draws_members_at_once = True
    kind = "regression"
    metric_name = "r2"
    length: int = 32
    lags: str = "1,3,7"
    readout: str = "linear"

    def __post_init__(self):
        self.lag_list = _lags(self.lags)
        # one spelling, so one data set has one run id: "7,3,1", "1, 3,7" and "01,3,7" drew the same batches
        # under four ids (a fresh audit, 2026-11-29)
        self.lags = ",".join(map(str, self.lag_list))
        if self.readout not in READOUTS:
            raise ExpressivityError(f"readout must be one of {', '.join(READOUTS)}; got {self.readout!r}")
        if self.readout.startswith("sin-product") and len(self.lag_list) != 2:
            raise ExpressivityError(f"readout {self.readout} takes two lags, got {self.lags!r}; give e.g. lags=1,3")
        super().__post_init__()

    def check_length(self, length):
        super().check_length(length)
        if self.lag_list[-1] >= length:
            raise ExpressivityError(f"largest lag {self.lag_list[-1]} must be < length {length}; raise length")

    @property
    def d_out(self):
        return 1

    def model_defaults(self):
        return {"causal": True, "mixer": "dpfree", "rpe": "free", "layers": 1, "heads": 4, "d_model": 32, "ffn_width": 128}

    def train_defaults(self):
        return dict(_REG_TRAIN)

    def readout_fn(self, args: torch.Tensor, generator=None) -> torch.Tensor:
        """``args`` ``(..., M)`` -> ``(...)``. With :class:`~expressivity.tasks.base.MemberGenerators`
        (a leading members axis) the sines and means run member by member (:func:`each_member`)."""
        def each(fn, t):
            return each_member(fn, t, generator)

        if self.readout == "linear":
            return each(lambda a: a.mean(-1), args)
        if self.readout == "boolean":
            return args.prod(-1)   # a product of +-1: exact in any order
        if self.readout == "sin-product":
            return each(torch.sin, 4 * math.pi * args[..., 0] * args[..., 1])
        if self.readout == "sin-product-diff":
            return each(torch.sin, 4 * math.pi * args[..., 0] * args[..., 1]) + (args[..., 0] - args[..., 1]) / 2
        return each(lambda a: torch.sin(math.pi * a.mean(-1)), args)

    def generate(self, batch_size, n, generator):
        T = self.lag_list
        if self.readout == "boolean":
            x = 2.0 * uniform_ints((batch_size, n), 2, generator).float() - 1.0
        else:
            x = 2.0 * uniform((batch_size, n), generator) - 1.0
        t = torch.arange(n)
        args = torch.stack([x[..., (t - lag).clamp(min=0)] for lag in T], -1)
        y = self.readout_fn(args, generator)
        mask = (t >= T[-1]).expand(x.shape)
        y = torch.where(mask, y, torch.zeros_like(y))
        return Batch(x.unsqueeze(-1), y.unsqueeze(-1), mask)


@dataclass
class NestedMemory(Task):
    name = "nested-memory"
    draws_members_at_once = True
    kind = "regression"
    metric_name = "r2"
    length: int = 32
    max_lag: int = 8
    depth: int = 2

    def __post_init__(self):
        if self.depth < 1 or self.max_lag < 1:
            raise ExpressivityError("depth and max_lag must be >= 1")
        super().__post_init__()

    def check_length(self, length):
        super().check_length(length)
        if self.max_lag >= length:
            raise ExpressivityError(f"max_lag {self.max_lag} must be < length {length} (a pointer reaches back at "
                                    f"most to the start); raise length or lower max_lag")

    @property
    def d_in(self):
        return 2 + self.max_lag

    @property
    def d_out(self):
        return 1

    def model_defaults(self):
        return {"causal": True, "ape": "learned", "layers": self.depth + 1, "heads": 4, "d_model": 64, "ffn_width": 128}

    def train_defaults(self):
        return dict(_REG_TRAIN)

    def generate(self, batch_size, n, generator):
        T = self.max_lag
        t = torch.arange(n)
        v = 2.0 * uniform((batch_size, n), generator) - 1.0   # (batch, n), or (members, batch, n)
        v[..., 0] = 0.0
        p = 1 + uniform_ints((batch_size, n), t.clamp(min=1, max=T), generator)
        p[..., 0] = 0
        pos = t.expand(p.shape)
        for _ in range(self.depth):
            pos = pos - p.gather(-1, pos)
        y = v.gather(-1, pos)
        feats = torch.zeros(*p.shape, 2 + T)
        feats[..., 0] = v
        feats[..., 0, 1] = 1.0
        # the pointer one-hot in columns 2.. (none at the start token), written in place: a
        # one_hot tensor of int64 converted to float cost 48 of the 104 ms of claim 7's
        # 20-member batch at T = 64 on the CPU
        feats.scatter_(-1, (p.clamp(min=1) + 1).unsqueeze(-1), 1.0)
        feats[..., 0, 2:] = 0.0
        mask = (t >= 1).expand(p.shape)
        return Batch(feats, y.unsqueeze(-1), mask)


@dataclass
class AdaptiveMemory(NestedMemory):
    name = "adaptive-memory"
    depth: int = 1


MIN_KERNEL_ALPHA = 1e-6   # 1 + alpha and 1 - e^-alpha then keep ten significant digits in float64


@dataclass
class KernelMemory(Task):
    name = "kernel-memory"
    draws_members_at_once = True
    kind = "regression"
    metric_name = "r2"
    length: int = 64
    kernel: str = "power"
    alpha: float = 0.5

    def __post_init__(self):
        if self.kernel not in ("power", "exp"):
            raise ExpressivityError(f"kernel must be power or exp; got {self.kernel!r}")
        if not (isinstance(self.alpha, (int, float)) and not isinstance(self.alpha, bool)
                and MIN_KERNEL_ALPHA <= self.alpha < math.inf):   # NaN too
            # below it 1 + alpha rounds away in float64: zeta(1) = inf made the power kernel 0, 1 - e^-alpha cancelled
            # to 0 for exp, and a run trained on an all-zero target (an audit, 2026-11-29)
            raise ExpressivityError(f"alpha must be a finite number >= {MIN_KERNEL_ALPHA:g} (below it float64 loses "
                                    f"the kernel's normalisation and the targets vanish); got {self.alpha!r}")
        self.alpha = float(self.alpha)   # alpha=1 and alpha=1.0 drew the same data under two run ids (an audit)
        super().__post_init__()

    @property
    def d_out(self):
        return 1

    def rho(self, s: torch.Tensor) -> torch.Tensor:
        """Kernel ``rho(s)`` at integer distances ``s >= 0`` (float64)."""
        s = s.double()
        a = self.alpha
        if self.kernel == "exp":
            return (1 - math.exp(-a)) * torch.exp(-a * s)
        zeta = torch.special.zeta(torch.tensor(1.0 + a, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
        return (1 + s) ** (-(1 + a)) / zeta

    def drawing_bytes(self, n, sequences):
        # the (n, n) float64 kernel is built through int64 lags, a mask and float64 temporaries of its size: 12,000
        # tokens peaked at 4.4 GiB where 2.1 GiB was estimated (a fresh audit, 2026-11-29); a review measured the
        # build at about 33 bytes an entry. The kernel itself stays (cached_bytes).
        return 4 * 8 * n * n

    def cached_bytes(self, n):
        return 8 * n * n   # one (n, n) float64 kernel kept per length the run evaluates

    def kernel_matrix(self, length: int | None = None, device=None) -> torch.Tensor:
        """``(n, n)`` float64 matrix ``K[t, t'] = rho(t - t')`` for ``t' <= t``, else 0 (computed on
        the CPU, cached per length and per device it is asked on)."""
        n = self.length if length is None else length
        device = torch.device("cpu") if device is None else torch.device(device)
        key = (n, self.kernel, self.alpha, str(device))
        cache = self.__dict__.setdefault("_kernels", {})
        if key not in cache:
            with torch.device("cpu"):
                t = torch.arange(n)
                lag = t[:, None] - t[None, :]
                matrix = torch.where(lag >= 0, self.rho(lag.clamp(min=0)), torch.zeros((), dtype=torch.float64))
            cache[key] = matrix.to(device)
        return cache[key]

    def model_defaults(self):
        # The target's past before t = 0 is zero and rho sums to 1 over s >= 0: the infinite-past
        # normaliser makes one matched head exact (spec §3.3), as in the theory.
        return {"causal": True, "mixer": "dpfree", "rpe": "log", "learnable_slopes": True, "layers": 1, "heads": 1,
                "d_model": 8, "ffn_width": 0, "dpfree_normaliser": "infinite"}

    def train_defaults(self):
        return dict(_REG_TRAIN)

    def generate(self, batch_size, n, generator):
        x = normal((batch_size, n), generator, torch.float64)
        kernel = self.kernel_matrix(n, x.device).T
        y = each_member(lambda rows: rows @ kernel, x, generator)   # a product's sums: member by member
        return Batch(x.float().unsqueeze(-1), y.float().unsqueeze(-1), torch.ones(x.shape, dtype=torch.bool))
