"""Permutation-equivariance checker (Yun et al. 2020, Claim 1).

A network without positional information satisfies ``f(P X) = P f(X)`` for every permutation
``P`` of the tokens (tokens are rows here, so the paper's ``XP`` is our ``P X``). Positional
encodings, position biases and causal masks break the law; the checker reports by how much.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass

import numpy as np

from expressivity.errors import ExpressivityError
from expressivity.network import Network, evaluate


@dataclass(frozen=True)
class EquivarianceReport:
    """Result of :func:`check_equivariance`.

    Attributes:
        equivariant: every sampled pair satisfied the law (exactly, or within ``tolerance``).
        max_deviation: largest ``|f(PX) - P f(X)|`` seen, as a float.
        worst_permutation: the permutation (as a list of source positions) that produced it.
        arithmetic: evaluator used; ``exact`` means equality was tested without rounding.
        uses_position: whether the network has positional information at all.
        finite_outputs: false if any output was NaN or infinite (then the law is reported as
            failing: a network that overflows does not satisfy it in any useful sense).
    """

    equivariant: bool
    max_deviation: float
    worst_permutation: list[int]
    samples: int
    permutations_per_sample: int
    length: int
    tolerance: float
    arithmetic: str
    uses_position: bool
    finite_outputs: bool = True

    def as_dict(self) -> dict:
        return asdict(self)


# Score entries (samples x n^2 per head) one evaluation may hold at once: 2^25 float64 entries is
# 256 MiB; long sequences are evaluated a few samples at a time instead of all together.
CHUNK_SCORE_ENTRIES = 2 ** 25


def _evaluate_in_chunks(network: Network, inputs: np.ndarray, dtype: str) -> np.ndarray:
    """``evaluate`` over the sample axis in pieces small enough to keep the scores in memory."""
    samples, n = inputs.shape[0], inputs.shape[1]
    per_chunk = max(1, CHUNK_SCORE_ENTRIES // max(n * n, 1))
    if samples <= per_chunk:   # non-finite outputs fail the check below: they are not refused here
        return evaluate(network, inputs, dtype, check_finite=False)
    return np.concatenate([evaluate(network, inputs[i:i + per_chunk], dtype, check_finite=False)
                           for i in range(0, samples, per_chunk)])


MAX_PERMUTATIONS = 10_000   # permutations per sample (the CLI allows 1,000)


def check_equivariance(
    network: Network,
    inputs: np.ndarray,
    *,
    permutations: int = 8,
    seed: int = 0,
    dtype: str = "float64",
    tolerance: float | None = None,
) -> EquivarianceReport:
    """Test ``f(P X) == P f(X)`` on ``inputs`` (``(samples, n, d)``) for random permutations ``P``.

    Args:
        inputs: sample inputs, tokens as rows.
        permutations: distinct permutations tried per sample, other than the identity (the reversal
            is always one of them when ``n >= 2``, so a position-dependent network cannot slip
            through by luck); every one of them where ``n! - 1`` is no more (the report counts
            those tried: ``--permutations 1000`` at 2 tokens said 1,000 where one exists).
        dtype: evaluator (see :func:`expressivity.network.evaluate`); ``exact`` tests equality.
        tolerance: allowed deviation for float evaluators; default ``1e-9`` x output scale
            (``1e-4`` x for float32).
    """
    if isinstance(permutations, bool) or not isinstance(permutations, int) or not 1 <= permutations <= MAX_PERMUTATIONS:
        # each one is a pass over every input, and at most n! - 1 distinct ones are listed up front
        raise ExpressivityError(f"permutations must be an integer in [1, {MAX_PERMUTATIONS:,}], got {permutations!r}")
    inputs = np.asarray(inputs) if dtype == "exact" else np.asarray(inputs, dtype=np.float64)
    if inputs.ndim != 3:
        raise ExpressivityError(f"inputs must be (samples, n, d), got shape {inputs.shape}")
    network.check_input(inputs)
    samples, n, _ = inputs.shape
    rng = np.random.default_rng(seed)
    perms = _distinct_permutations(n, permutations, rng)
    base = _evaluate_in_chunks(network, inputs, dtype)
    finite = dtype == "exact" or bool(np.isfinite(base).all())
    scale = float(np.max(np.abs(np.asarray(base, dtype=np.float64)))) if base.size and finite else 0.0
    if tolerance is None:
        tolerance = 0.0 if dtype == "exact" else (1e-4 if dtype == "float32" else 1e-9) * max(scale, 1.0)
    # the first permutation tried, not the identity (never tried), where every deviation is 0 (a review)
    worst, worst_perm = 0.0, (perms[0].tolist() if perms else list(range(n)))
    for perm in perms:
        permuted = _evaluate_in_chunks(network, inputs[:, perm, :], dtype)
        if dtype == "exact":
            diff = np.vectorize(lambda a, b: abs(a - b), otypes=[object])(permuted, base[:, perm, :])
            dev = float(max(diff.flat)) if diff.size else 0.0
        elif not (finite and np.isfinite(permuted).all()):
            # NaN compares false with everything; without this a network whose output overflowed
            # would look perfectly equivariant.
            dev, finite = math.inf, False
        else:
            dev = float(np.max(np.abs(permuted - base[:, perm, :]))) if permuted.size else 0.0
        if dev > worst:
            worst, worst_perm = dev, perm.tolist()
    return EquivarianceReport(
        equivariant=finite and worst <= tolerance,
        max_deviation=worst,
        worst_permutation=worst_perm,
        samples=samples,
        permutations_per_sample=len(perms),
        length=n,
        tolerance=tolerance,
        arithmetic=dtype,
        uses_position=network.uses_position,
        finite_outputs=finite,
    )


def _distinct_permutations(n: int, wanted: int, rng) -> list[np.ndarray]:
    """``wanted`` distinct non-identity permutations of ``n`` positions (the reversal first), or all of
    them where there are no more than ``wanted``."""
    others = math.factorial(n) - 1 if n <= 20 else math.inf
    if others <= wanted:
        identity = tuple(range(n))
        return [np.array(p) for p in sorted(itertools.permutations(range(n)), reverse=True) if p != identity]
    perms, seen = [np.arange(n)[::-1]], {tuple(range(n)), tuple(range(n))[::-1]}
    while len(perms) < wanted:
        p = rng.permutation(n)
        if tuple(p) not in seen:
            seen.add(tuple(p))
            perms.append(p)
    return perms
