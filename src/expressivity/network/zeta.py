"""The Riemann zeta function for real ``s > 1``: the infinite mass of a log-type position bias.

A DP-free head with bias ``B(s) = -beta log(1 + s)`` over an infinite past has mass
``sum_{s >= 0} (1 + s)^(-beta) = zeta(beta)`` (Wang & E 2024, §1.3 and §7).

Euler-Maclaurin summation with ``N = 10`` explicit terms and eight Bernoulli corrections:

``zeta(s) = sum_{k<N} k^-s + N^(1-s)/(s-1) + N^-s/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) N^(-s-2j+1)``.

The first omitted correction is below ``1e-17`` relative for every ``s > 1``. The function
uses only arithmetic and powers, so it takes floats, NumPy arrays or torch tensors, and is
differentiable in torch.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

_N = 10
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510))   # B_2, B_4, ..., B_16
_COEFFS = tuple(float(b / factorial(2 * j)) for j, b in enumerate(_BERNOULLI, 1))


def zeta(s):
    """``zeta(s)`` for real ``s > 1`` (float, NumPy array or torch tensor; same type back).

    Values at ``s <= 1`` are meaningless (the series diverges); callers check ``s > 1``.
    """
    n = float(_N)
    total = n ** (1 - s) / (s - 1) + 0.5 * n ** (-s)
    for k in range(_N - 1, 0, -1):   # smallest terms first
        total = total + float(k) ** (-s)
    rising = s                       # s (s+1) ... (s+2j-2)
    for j, c in enumerate(_COEFFS, 1):
        total = total + c * rising * n ** (-s - 2 * j + 1)
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
    return total
