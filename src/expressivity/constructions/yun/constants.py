"""Parameters and constants of the Yun et al. (2020) construction (spec yun_2020.md §3.4, §6).

All constants are exact (``int`` / ``Fraction``), in the paper's units. With ``delta = 1/N``
every quantity after quantization is a multiple of ``delta/2``; verifiers multiply by
``2N`` ("scaled units") to work with integers.

Two modes:

* Theorem 2 (no positional encoding): grid ``[0:delta:1-delta]``, out-of-range value
  ``-delta^{-nd}``, ``delta^{-d}`` windows, shift ``delta^{-d}``, global scale and
  ``t_l, t_r`` from the verified constant set B.
* Theorem 3 (positional encoding rows ``0..n-1``): token ``j`` lives on ``[j:delta:j+1-delta]``,
  windows over all ``n delta^{-d}`` ids. Default shift is the clean ``s = R/delta`` of §6;
  ``shift="paper"`` uses ``delta^{-d}``, for which ``UB`` (one past the largest cascaded id)
  is found by enumerating the grid rather than by a formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from math import comb
from typing import Literal

from expressivity.errors import ExpressivityError

# The output clamp runs twice: float64 rounds the first pass by up to 2^-53 of the value clamped, the second
# lands on the clamp's end (see expressivity.constructions.yun.value, step 5).
CLAMP_PASSES = 2


@dataclass(frozen=True)
class YunParams:
    """Sizes and mode of one construction.

    Attributes:
        n: sequence length (>= 2).
        d: token dimension (>= 1).
        N: grid resolution, ``delta = 1/N`` (>= 2).
        positional: Theorem 3 mode (positional encoding) instead of Theorem 2.
        shift: ``"clean"`` (s = R/delta, default) or ``"paper"`` (s = delta^{-d}); PE mode only.
        constants: ``"B"`` (verified) or ``"A"`` (the alternative that fails P4; for testing the
            verifier only). Theorem 2 mode only.
    """

    n: int
    d: int
    N: int
    positional: bool = False
    shift: Literal["clean", "paper"] = "clean"
    constants: Literal["A", "B"] = "B"
    paper_ub: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("n", "d", "N"):
            value = getattr(self, name)
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise ExpressivityError(f"YunParams.{name} must be an integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if not isinstance(self.positional, bool):
            raise ExpressivityError(f"YunParams.positional must be True or False, got {self.positional!r}")
        if self.n < 2:
            raise ExpressivityError(f"the construction needs n >= 2 tokens, got n={self.n}")
        if self.d < 1:
            raise ExpressivityError(f"the construction needs d >= 1, got d={self.d}")
        if self.N < 2:
            raise ExpressivityError(f"delta must be 1/K with integer K >= 2, got K={self.N}")
        if self.shift not in ("clean", "paper"):
            raise ExpressivityError(f"shift must be 'clean' or 'paper', got {self.shift!r}")
        if self.constants not in ("A", "B"):
            raise ExpressivityError(f"constants must be 'A' or 'B', got {self.constants!r}")

    def require_distinct_cubes(self) -> None:
        """Refuse a Theorem 2 build with fewer grid cells per token than tokens: no cube has ``n`` distinct tokens,
        so the value map has nothing to map (the build exited 1, "no point could be checked": an audit,
        2026-11-28). ``N^d`` is compared only where it is small (a large ``d`` has cells to spare)."""
        from math import log2

        if not self.positional and self.d * log2(self.N) < 64 and self.N ** self.d < self.n:
            raise ExpressivityError(
                f"delta=1/{self.N} gives {self.N ** self.d} grid cells per token, fewer than n={self.n} tokens: no "
                f"cube has {self.n} distinct tokens, so Theorem 2's construction is empty; use a smaller delta "
                f"(1/K with K^d >= n) or --positional (Theorem 3)")

    # ---- grid ------------------------------------------------------------------------------
    @property
    def delta(self) -> Fraction:
        return Fraction(1, self.N)

    @property
    def u(self) -> tuple[int, ...]:
        """Column-id weights ``(1, N, ..., N^{d-1})``: ``id = u . column``."""
        return tuple(self.N ** i for i in range(self.d))

    @property
    def range_hi(self) -> int:
        """Quantized entries live in ``[0, range_hi)``: 1 without PE, n with PE."""
        return self.n if self.positional else 1

    @property
    def levels(self) -> int:
        """Grid levels per entry inside the range: ``N`` or ``nN``."""
        return self.N * self.range_hi

    @property
    def extended_grid_points(self) -> int:
        """Size of the extended grid: each entry in ``{out} u (N levels of its token)``."""
        return (self.N + 1) ** (self.d * self.n)

    @property
    def id_span(self) -> int:
        """``sum_i N^i``: the id of the all-ones column, so token ``j``'s ids start at ``j * id_span``."""
        return sum(self.u)

    def token_offset(self, j: int) -> int:
        """``delta_j`` of §6: the id of column ``j * 1_d`` (0 without PE)."""
        return j * self.id_span if self.positional else 0

    @cached_property
    def window_centers(self) -> tuple[Fraction, ...]:
        """Ids at which selective-shift windows sit, increasing (paper units)."""
        tokens = range(self.n) if self.positional else range(1)
        return tuple(self.token_offset(j) + Fraction(m, self.N) for j in tokens for m in range(self.N ** self.d))

    @property
    def R(self) -> int:
        """One past the largest in-range id (an integer)."""
        return self.token_offset(self.n - 1 if self.positional else 0) + self.N ** (self.d - 1)

    # ---- constants ---------------------------------------------------------------------------
    @property
    def s(self) -> int:
        """Selective-shift scale."""
        if self.positional and self.shift == "clean":
            return self.R * self.N
        return self.N ** self.d

    @property
    def UB(self) -> Fraction:
        """Strict upper bound on the cascaded maximum id on the (in-range) grid (PE mode)."""
        if self.shift == "paper":
            if self.paper_ub is None:
                raise ExpressivityError("paper-shift constants need the enumerated bound; build through contextual_map()")
            return Fraction(self.paper_ub)
        return (1 + self.s ** self.n) * self.R

    @property
    def c(self) -> Fraction:
        """Global-shift scale."""
        n, d, N = self.n, self.d, self.N
        if self.positional:
            return self.UB * N
        return Fraction(N ** ((n + 1) * d + (1 if self.constants == "A" else 0)))

    @property
    def t_l(self) -> Fraction:
        n, d, N = self.n, self.d, self.N
        if self.positional:
            if self.shift == "paper":
                return self.c * self.paper_lb
            return self.c * self.delta * (self.s ** n - self.s ** (n - 1))
        if self.constants == "A":
            return Fraction(N ** (2 * n * d) * (N ** d - 1))
        return Fraction(N ** (2 * n * d - 1) * (N ** d - 1))

    @property
    def t_r(self) -> Fraction:
        n, d, N = self.n, self.d, self.N
        if self.positional:
            return self.c * self.UB + self.UB
        if self.constants == "A":
            return Fraction(N ** (2 * (n + 1) * d + 1) + N ** ((n + 1) * d))
        return Fraction(N ** (2 * (n + 1) * d - 1) + N ** ((n + 1) * d - 1))

    @property
    def paper_lb(self) -> Fraction:
        # In paper-shift PE mode the smallest cascaded maximum is at least one shift of delta.
        return self.delta * self.s

    @property
    def out_value(self) -> Fraction:
        """Value the quantizer writes for out-of-range entries."""
        if self.positional:
            # P4 needs shifted in-range columns to clear t_r: J >= UB/s + R suffices; UB + R is simpler.
            return -(self.UB + self.R)
        return -Fraction(self.N ** (self.n * self.d))

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def classes(self) -> int:
        """Permutation classes of distinct-column grid points (Thm 2), or grid points (Thm 3)."""
        if self.positional:
            return self.N ** (self.d * self.n)
        return comb(self.N ** self.d, self.n)

    def layer_counts(self, rescale: bool = False, clamp: bool = True) -> dict[str, int]:
        """Layers per stage (spec §7): quantizer, contextual map, value map (with the output rescale where
        ``rescale``, and the ``CLAMP_PASSES * d`` output clamp layers where ``clamp``, see :mod:`~.value`)."""
        q = self.d * self.levels + self.d
        c = (self.n if self.positional else 1) * self.N ** self.d + 1  # len(window_centers) + 1, not built
        v = 1 + self.d + self.n * self.classes + (1 if rescale else 0) + (CLAMP_PASSES * self.d if clamp else 0)
        return {"quantize": q, "contextual": c, "value": v, "total": q + c + v}

    def describe(self) -> str:
        mode = f"Theorem 3 (positional, {self.shift} shift)" if self.positional else f"Theorem 2 (set {self.constants})"
        return f"n={self.n}, d={self.d}, delta=1/{self.N}, {mode}"
