"""Memory kernels of DP-free heads and the two constructions that combine them into a delta.

Wang & E 2024 (spec ``wang_e_2024.md`` §3.1, §7). A DP-free head with relative bias ``p(s)``,
normalised over an infinite zero-padded past, puts weight ``w(s)`` on lag ``s >= 0``:

* lin-type, ``p(s) = -beta s``: ``w(s) = (1 - e^-beta) e^{-beta s}`` (``beta > 0``);
* log-type, ``p(s) = -beta log(1 + s)``: ``w(s) = (1 + s)^-beta / zeta(beta)`` (``beta > 1``).

(The paper writes ``-beta log s`` for ``s >= 1``; we use the KERPLE convention ``log(1 + s)``, so
lag 0 is defined, as the trained family does.) Heads writing ``c_h x`` into one residual block
realise the kernel ``rho_hat(s) = sum_h c_h w_h(s)``; extracting ``x_{t-T}`` means
``rho_hat ~ delta_T``, and the block's error is at most ``||rho_hat - delta_T||_1 sup|x|``.

Two constructions of the coefficients ``c_h`` [D: derived in the spec, not the paper's proof]:

* :func:`interpolation_heads`: ``H`` heads with ``beta_k = k b`` (lin) or ``1 + k b`` (log),
  ``k = 1..H``, default ``H = T + 2``; the ``c_k`` solve ``rho_hat(s) = delta_{s,T}`` exactly for
  ``s = 0..H-1``. Solved in mpmath at enough digits (the system is ill-conditioned); the
  coefficients grow like ``e^{b (T+1)^2 / 2}``.
* :func:`chebyshev_kernel`: ``beta_k = eps k`` (lin) or ``1 + eps k`` (log). In ``u = e^{-eps s}``
  (lin) or ``u = (1 + s)^-eps`` (log) the kernel is ``u P(u)`` (times ``(1+s)^-1`` for log) with
  ``P`` a polynomial of degree ``H - 1``; ``P`` interpolates a C-infinity bump of the right height
  at ``u_T`` on Chebyshev points of ``[0, 1]``, evaluated in the Chebyshev basis (stable for ``H``
  in the thousands). The monomial coefficients, which are the heads' output weights, blow up;
  they are computed exactly in mpmath only up to a size budget.

Every ``l1_error`` is a sum over all ``s >= 0``: a direct sum up to a cut-off plus the remainder
in closed form (:func:`interpolation_heads`) or by the Euler-Maclaurin integral in ``u``
(:func:`chebyshev_kernel`); ``method`` says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import mpmath
import numpy as np
from numpy.polynomial import chebyshev as C

from expressivity.errors import ExpressivityError

RPE_TYPES = ("lin", "log")


def head_weights(rpe: str, beta, s) -> np.ndarray:
    """``w(s)`` of a DP-free head (float64), ``s`` integer lags >= 0."""
    s = np.asarray(s, dtype=np.float64)
    if rpe == "lin":
        return -math.expm1(-beta) * np.exp(-beta * s)
    if beta <= 1:
        raise ExpressivityError(f"a log-type head needs beta > 1 for its weights to sum, got {beta}")
    return (1.0 + s) ** (-beta) / float(mpmath.zeta(beta))


# Time estimates, measured on the project's 2-core CPU (2026-11-28): 40 interpolation heads at b = 2 solve in
# 3.5 s (80: over 2 minutes; the LU solve grows as H^3 times the digits' multiplication cost). A Chebyshev fit
# evaluates every head at each lag below the cutoff twice and at each point of the tail's grid: 10,000 log heads at
# eps 0.1 (2.0e9 head-points) took 1.2 s, 100,000 at eps 0.001 (1.9e11) 192 s under load: about 1e-9 s a
# head-point, estimated at twice that. Above the budget a fit is refused with its estimate.
INTERPOLATION_SECONDS = 3.5
CHEBYSHEV_SECONDS_PER_TERM = 2e-9
KERNEL_BUDGET_S = 120


def _check(rpe: str, lag: int, heads: int | None = None) -> None:
    if rpe not in RPE_TYPES:
        raise ExpressivityError(f"unknown RPE type {rpe!r}; use lin or log")
    if isinstance(lag, bool) or not isinstance(lag, int) or lag < 0:
        raise ExpressivityError(f"lag must be an integer >= 0, got {lag!r}")
    if heads is not None and (isinstance(heads, bool) or not isinstance(heads, int) or heads < 1):
        raise ExpressivityError(f"heads must be an integer >= 1, got {heads!r}")


@dataclass(frozen=True)
class KernelFit:
    """Heads combined into an approximate delta at ``lag``.

    ``betas`` and ``coefficients`` (``c_h``, the output weights) are floats when they fit in
    float64, else ``None`` (see ``max_abs_coefficient``); ``l1_error`` is
    ``||rho_hat - delta_lag||_1`` over all lags ``s >= 0``: computed as ``arithmetic`` and ``method`` say. A
    Chebyshev fit's is float64, its terms' rounding at most ``extra["rounding"]`` (a worst-case bound, reported
    beside it: an l1 below it is below what float64 resolves here); :meth:`l1_bound` adds it.
    """

    construction: str
    rpe: str
    lag: int
    heads: int
    betas: tuple[float, ...]
    coefficients: tuple[float, ...] | None
    l1_error: float
    max_abs_coefficient: float | None
    arithmetic: str
    method: str
    extra: dict = field(default_factory=dict)

    def l1_bound(self) -> float:
        """An upper bound on the l1 error: ``l1_error`` plus the bound on its float64 rounding (0 where exact)."""
        return self.l1_error + float(self.extra.get("rounding", 0.0))

    def kernel(self, s) -> np.ndarray:
        """``rho_hat(s)`` in float64 (only where the coefficients fit in float64)."""
        if self.coefficients is None:
            raise ExpressivityError("these coefficients exceed float64; evaluate the kernel at kernel level only")
        s = np.asarray(s)
        return sum(c * head_weights(self.rpe, b, s) for c, b in zip(self.coefficients, self.betas))

    def as_dict(self) -> dict:
        return {"construction": self.construction, "rpe": self.rpe, "lag": self.lag, "heads": self.heads,
                "l1_error": self.l1_error, "max_abs_coefficient": self.max_abs_coefficient,
                "arithmetic": self.arithmetic, "method": self.method, "betas": list(self.betas),
                "coefficients": None if self.coefficients is None else list(self.coefficients), **self.extra}


# ---- the few-heads interpolation construction ---------------------------------------------------


def interpolation_heads(rpe: str, lag: int, b: float, heads: int | None = None, digits: int | None = None) -> KernelFit:
    """``H`` heads (default ``lag + 2``) whose kernel equals ``delta_lag`` exactly on ``s = 0..H-1``.

    Solved in mpmath with ``digits`` significant digits (default: enough for the conditioning,
    estimated from ``b`` and ``H``). The l1 error sums ``|rho_hat(s) - delta|`` directly up to the
    lag from which the slowest head dominates every other (so ``rho_hat`` keeps its sign), then adds
    the remainder in closed form: ``sum_k c_k e^{-beta_k S}`` (lin) or
    ``sum_k c_k zeta(beta_k, S+1)/zeta(beta_k)`` (log).
    """
    _check(rpe, lag, heads)
    if not (isinstance(b, (int, float)) and math.isfinite(b) and b > 0):
        raise ExpressivityError(f"b must be a finite number > 0, got {b!r}")
    H = lag + 2 if heads is None else heads
    if H <= lag:
        raise ExpressivityError(f"{H} heads cannot interpolate a delta at lag {lag}: the nodes are s = 0..H-1; use "
                                f"at least {lag + 1} heads")
    if H > 200:
        raise ExpressivityError(f"{H} interpolation heads is beyond this exact solver's budget (200); the "
                                "coefficients would need thousands of digits; give at most 200 heads (the "
                                "Chebyshev construction, `wang-e kernel --construction chebyshev`, reaches thousands "
                                "at kernel level)")
    digits = digits or int(30 + b * (H + 1) ** 2 / (2 * math.log(10)) + 3 * H)
    seconds = INTERPOLATION_SECONDS * (H / 40) ** 3 * (digits / 881) ** 1.6
    if seconds > KERNEL_BUDGET_S:
        raise ExpressivityError(f"{H} interpolation heads at b = {b:g} need {digits} digits: about {seconds:,.0f} s "
                                f"of LU solve here (40 heads at b = 2: {INTERPOLATION_SECONDS:g} s), over the budget of "
                                f"{KERNEL_BUDGET_S} s; use fewer heads, a smaller b, or the chebyshev construction")
    with mpmath.workdps(digits):
        betas = [mpmath.mpf(k) * b + (1 if rpe == "log" else 0) for k in range(1, H + 1)]
        weights = _mp_weights(rpe, betas)
        M = mpmath.matrix(H, H)
        for s in range(H):
            for k in range(H):
                M[s, k] = weights[k](s)
        rhs = mpmath.matrix([1 if s == lag else 0 for s in range(H)])
        c = mpmath.lu_solve(M, rhs)
        coeffs = [c[k] for k in range(H)]
        l1, cutoff = _l1_with_tail(rpe, betas, coeffs, weights, lag)
        max_c = max(abs(x) for x in coeffs)
        fits = max_c < mpmath.mpf(2) ** 1000
        return KernelFit(
            "interpolation", rpe, lag, H, tuple(float(x) for x in betas),
            tuple(float(x) for x in coeffs) if fits else None, _float_above(l1), float(max_c) if fits else math.inf,
            f"mpmath, {digits} significant digits",
            f"direct sum over s < {cutoff} plus the closed-form remainder beyond (exact up to the working precision)",
            {"b": b, "cutoff": cutoff, "max_abs_coefficient_log10": float(mpmath.log10(max_c))})


def _float_above(x) -> float:
    """``x >= 0`` (mpmath) as a float no smaller than it: one below the float range would print as 0, an "exact" kernel,
    where the l1 was 1.19e-529 (an audit, 2026-11-28); it is the smallest positive float instead, an upper bound."""
    value = float(x)
    return math.ulp(0.0) if x > 0 and value == 0.0 else value


def _mp_weights(rpe: str, betas):
    """Per head, ``s -> w(s)`` in mpmath."""
    if rpe == "lin":
        return [(lambda s, b=b: -mpmath.expm1(-b) * mpmath.exp(-b * s)) for b in betas]
    return [(lambda s, b=b, z=mpmath.zeta(b): (1 + mpmath.mpf(s)) ** (-b) / z) for b in betas]


def _l1_with_tail(rpe: str, betas, coeffs, weights, lag: int):
    """``sum_s |rho_hat(s) - delta_lag(s)|`` over all ``s >= 0`` (see :func:`interpolation_heads`)."""
    settles = _dominance_lag(rpe, betas, coeffs)
    if settles > 100_000:
        # summed one lag at a time that would be minutes of mpmath before the refusal below (log heads at b = 0.5,
        # 40 heads: 170 s, a bounds audit, 2026-11-28); the lag is known from the coefficients beforehand
        raise ExpressivityError(f"the kernel's tail settles (its slowest head outweighing the rest) only beyond lag "
                                f"{float(settles):.3g}, too far to sum; use fewer heads or a larger b")
    total, s = mpmath.mpf(0), 0
    while True:
        terms = [c * w(s) for c, w in zip(coeffs, weights)]
        dominated = s > lag and abs(terms[0]) > sum(abs(t) for t in terms[1:])
        if dominated:
            # From here on head 1 (the slowest) outweighs all others together, and the ratio only
            # grows with s, so rho_hat has the sign of c_1 and the remainder sums in closed form.
            if rpe == "lin":
                tail = sum(c * mpmath.exp(-b * s) for c, b in zip(coeffs, betas))
            else:
                tail = sum(c * mpmath.zeta(b, s + 1) / mpmath.zeta(b) for c, b in zip(coeffs, betas))
            return total + abs(tail), s
        total += abs(sum(terms) - (1 if s == lag else 0))
        s += 1
        if s > 100_000:  # pragma: no cover - the dominance point is reached long before
            raise ExpressivityError("the kernel's tail did not settle; use fewer heads or a larger b")


def _dominance_lag(rpe: str, betas, coeffs):
    """A lag from which ``|c_1 w_1(s)|`` exceeds ``sum_{k>1} |c_k w_k(s)|`` (each ratio below ``1/(H-1)``; the ratios
    only fall with ``s``), in mpmath: where :func:`_l1_with_tail`'s direct sum stops at the latest."""
    c1 = abs(coeffs[0])
    if len(coeffs) == 1:
        return mpmath.mpf(0)
    if c1 == 0:
        return mpmath.inf
    latest = mpmath.mpf(0)
    for c, beta in zip(coeffs[1:], betas[1:]):
        if c == 0:
            continue
        gap = mpmath.mpf(beta) - mpmath.mpf(betas[0])
        if rpe == "lin":   # w_k(s) / w_1(s) = (1 - e^-beta_k) / (1 - e^-beta_1) e^{-gap s}
            scale = mpmath.log(abs(c) / c1) + mpmath.log(-mpmath.expm1(-beta) / -mpmath.expm1(-betas[0]))
            lag = (scale + mpmath.log(len(coeffs) - 1)) / gap
        else:              # w_k(s) / w_1(s) = zeta(beta_1) / zeta(beta_k) (1 + s)^-gap
            scale = mpmath.log(abs(c) / c1) + mpmath.log(mpmath.zeta(betas[0]) / mpmath.zeta(beta))
            lag = mpmath.exp((scale + mpmath.log(len(coeffs) - 1)) / gap) - 1
        latest = max(latest, lag)
    return latest


# ---- the Chebyshev (Jackson) construction ---------------------------------------------------------


def _bump(x: np.ndarray) -> np.ndarray:
    """``exp(1 - 1/(1 - x^2))`` on ``|x| < 1`` (1 at 0), 0 elsewhere: a C-infinity bump."""
    out = np.zeros_like(x)
    inside = np.abs(x) < 1
    out[inside] = np.exp(1.0 - 1.0 / (1.0 - x[inside] ** 2))
    return out


def chebyshev_interpolant(F, n: int) -> np.ndarray:
    """Coefficients ``a_j`` of the degree ``n-1`` interpolant ``sum_j a_j T_j(2u - 1)`` of ``F`` at the
    ``n`` Chebyshev points of ``[0, 1]``: ``a_j = (2/n) sum_k F(u_k) cos(j theta_k)``, a DCT-II
    computed with one FFT (Makhoul's reordering), so ``n`` in the tens of thousands is cheap."""
    theta = np.pi * (np.arange(n) + 0.5) / n
    values = np.asarray(F(0.5 * (1.0 + np.cos(theta))), dtype=np.float64)
    reordered = np.concatenate([values[::2], values[1::2][::-1]])
    spectrum = np.fft.fft(reordered) * np.exp(-1j * np.pi * np.arange(n) / (2 * n))
    a = (2.0 / n) * spectrum.real
    a[0] /= 2
    return a


# Monomial coefficients are exact (mpmath) only up to this many heads: beyond, the conversion
# from the Chebyshev basis needs ~0.8 H digits and O(H^2) of them.
MONOMIAL_BUDGET = 512


def _variable(rpe: str, eps: float):
    """``u(s)`` and ``s(u)`` of the head family, and ``g(s)`` with ``rho_hat(s) = g(s) u P(u)``."""
    if rpe == "lin":
        return (lambda s: np.exp(-eps * np.asarray(s, float)), lambda u: -np.log(u) / eps,
                lambda s: np.ones_like(np.asarray(s, float)))
    return (lambda s: (1.0 + np.asarray(s, float)) ** (-eps), lambda u: u ** (-1.0 / eps) - 1.0,
            lambda s: 1.0 / (1.0 + np.asarray(s, float)))


def chebyshev_construction(rpe: str, heads: int, eps: float, G, rho, name: str, cutoff: int,
                           lag: int = 0, extra: dict | None = None, target_tail=None) -> KernelFit:
    """Heads ``beta_k = eps k`` (lin) or ``1 + eps k`` (log) whose kernel ``g(s) u P(u)`` has ``P`` the
    Chebyshev interpolant of ``G`` (the target transformed to ``u``: ``rho = g(s) u G(u)``).

    l1 error ``sum_s |rho_hat - rho|``: lags below ``cutoff`` summed directly, the rest bounded by
    :func:`_tail_bound` (an integral plus half the first term and half the total variation). With
    ``target_tail(S)`` (``sum_{s >= S} |rho(s)|`` in closed form) and lin heads, the rest is bounded
    instead by ``target_tail(S) + max |P| u_S / (1 - e^-eps)`` (the heads' own tail): lin heads put
    ``u_S = e^{-eps S}`` at the cutoff, which underflows to 0 at S = 20,000, so the integral ran over an
    empty grid and a power-law target's tail beyond the cutoff (0.0054 of l1 at 8 heads, a fresh audit,
    2026-11-28) was left out, and inputs of length 25,000 broke the reported bound.
    """
    u_of, _, g = _variable(rpe, eps)
    cheb = chebyshev_interpolant(G, heads)

    def P(x):
        return C.chebval(2 * np.asarray(x) - 1, cheb)

    s = np.arange(cutoff)
    us = u_of(s)
    weight = g(s) * us
    values, target = weight * P(us), rho(s)
    direct = math.fsum(np.abs(values - target))     # correctly rounded: the sum adds no error of its own
    # Each term is float64: at an l1 near float64's resolution the computed sum fell below the true one (6.40e-16
    # against 6.71e-16 summed in 40 digits, 8,192 lin heads: an audit, 2026-11-28). ``rounding`` bounds the terms'
    # rounding in the worst case: Clenshaw's (4 H eps sum |a_k| per unit weight), the point u's (|dP/du| eps u) and
    # the products' and difference's (4 eps of each term); it is typically 10^4 times the actual rounding, so it
    # is reported beside l1, not added to it, and added where a bound needs it (a network's sup error).
    eps64 = float(np.finfo(np.float64).eps)
    slope = np.abs(C.chebval(2 * us - 1, C.chebder(cheb)) * 2)
    rounding = math.fsum(weight * (4 * heads * eps64 * float(np.abs(cheb).sum()) + 4 * eps64 * slope * us)
                         + 4 * eps64 * (np.abs(values) + np.abs(target)))
    u_cut = float(u_of(cutoff))
    if target_tail is not None and rpe == "lin":
        grid = np.linspace(0.0, u_cut, 20 * heads + 20_001)
        heads_tail = float(np.max(np.abs(P(grid)))) * u_cut / -math.expm1(-eps)
        remainder = float(target_tail(cutoff)) + heads_tail
        how = (f"direct sum over s < {cutoff}; remainder bounded by the target's tail beyond it (closed form) plus "
               "the heads' (max |P| u_S / (1 - e^-eps))")
    else:
        remainder, how = _tail_bound(rpe, eps, heads, P, G, u_cut, cutoff, target_tail)
    betas = tuple(eps * k + (1.0 if rpe == "log" else 0.0) for k in range(1, heads + 1))
    max_c, c_floats, max_c_log10 = _monomial_coefficients(rpe, cheb, betas, eps)
    return KernelFit(name, rpe, lag, heads, betas, c_floats, direct + remainder, max_c,
                     f"float64 in the Chebyshev basis, each term's rounding at most {rounding:.2g} in all (worst case)"
                     + ("; monomial coefficients exact in mpmath" if max_c is not None else ""),
                     how,
                     {"eps": eps, "cutoff": cutoff, "remainder": remainder, "rounding": rounding,
                      "max_abs_coefficient_log10": max_c_log10,
                      **(extra or {})})


def _tail_grid(heads: int, u_cut: float) -> tuple[float, int]:
    """``(theta_S, points)`` of :func:`_tail_bound`'s grid on ``u = sin^2(theta / 2)`` in ``[0, u_S]``: 40 points to
    each oscillation of a degree ``H - 1`` cosine polynomial (``2 pi / (H - 1)``), plus 20,001. In ``theta``, not
    ``(1 - cos theta) / 2``: that rounds to 0 below ``u`` = 1e-16, and so did the whole grid, every lin fit's bound
    at its default cutoff (an audit, 2026-11-28)."""
    theta_cut = 2.0 * math.asin(math.sqrt(min(1.0, max(0.0, u_cut))))
    return theta_cut, int(math.ceil(20 * heads * theta_cut / math.pi)) + 20_001


def _tail_bound(rpe: str, eps: float, heads: int, P, G, u_cut: float, cutoff: int,
                target_tail=None) -> tuple[float, str]:
    """An upper bound on ``sum_{s >= S} |h(s)|``, ``h(x) = g(x) u (P(u) - G(u))`` at ``u = u(x)``, ``S = cutoff``.

    Cell by cell, ``(|h(s)| + |h(s+1)|) / 2 <= int_s^{s+1} |h| + V_{[s, s+1]}(h) / 2`` (``V`` the total
    variation), so with ``h -> 0`` the sum is at most ``int_S^inf |h| dx + |h(S)| / 2 + V_{[S, inf)}(h) / 2``:
    an inequality, where the Euler-Maclaurin estimate this replaces (the first two terms) fell short of the
    sum (0.99 of the l1 summed over 10^7 lags at ``cutoff`` 3, log heads, eps 0.5: an audit, 2026-11-28). In
    ``u`` the integral is ``(1/eps) int_0^{u_S} |P - G| du`` (``g u dx = -du / eps`` for both families) and
    ``V`` is the variation of ``phi(u) = g u (P - G)`` on ``(0, u_S]`` (``g = u^{1/eps}`` for log heads, 1 for
    lin), which tends to 0 at ``u = 0``. Both are computed on a grid uniform in the Chebyshev angle
    ``theta`` (``u = sin^2(theta / 2)``), where ``P`` is a cosine polynomial of degree ``H - 1``: at least
    40 grid points to its shortest oscillation. The trapezoid rule's own error on a cell is at most its width
    times half the variation of ``|P - G|`` there, and that is added too. ``G`` may be singular at ``u = 0``
    (a power-law target under log heads), so the grid starts one step in, at ``u_1``; that first cell adds
    ``u_1 max |P| / eps`` and the target's own tail beyond ``s(u_1)`` (``target_tail``, a sum over integer
    lags, at least the integral of a decreasing target). What remains approximate is the grid's reading of a
    variation between its points.
    """
    theta_cut, points = _tail_grid(heads, u_cut)
    grid = np.sin(np.linspace(0.0, theta_cut, points) / 2)[1:] ** 2     # G may be singular at u = 0: start one step in
    diff = P(grid) - G(grid)
    weight = grid ** (1.0 / eps) if rpe == "log" else np.ones_like(grid)
    with np.errstate(under="ignore"):
        phi = np.concatenate([[0.0], weight * grid * diff])   # phi(0) = 0: the limit of h(x) as x -> inf
    widths = np.diff(grid)
    absdiff = np.abs(diff)
    integral = float(np.sum(widths * (absdiff[1:] + absdiff[:-1]) / 2 + widths * np.abs(np.diff(absdiff)) / 2)) / eps
    first = abs(float(phi[-1]))                   # |h(S)|: the grid ends at u_S
    variation = float(np.sum(np.abs(np.diff(phi))))
    u_1 = float(grid[0]) if len(grid) else 0.0
    first_cell = u_1 * max(abs(float(P(0.0))), abs(float(P(u_1)))) / eps
    if target_tail is not None and u_1 > 0:   # u_1 = 0 (u_S underflowed): the first cell is empty, and so is its tail
        # the lag at u_1, capped where it would overflow (u_1^(-1/eps) at eps 0.02 did: an audit, 2026-11-28)
        if rpe == "log":   # u = (1 + s)^-eps
            exponent = -math.log(u_1) / eps
            s_1 = math.expm1(exponent) if exponent < 690 else 1e300
        else:              # u = e^(-eps s)
            s_1 = -math.log(u_1) / eps
        first_cell += float(target_tail(int(min(s_1, 1e300))))
    how = (f"direct sum over s < {cutoff}; remainder bounded by int_S^inf |h| + |h(S)|/2 + TV(h)/2 (an inequality), "
           f"the integral (trapezoid, plus its error bound) and the variation on {points:,} points uniform in the "
           "Chebyshev angle")
    return integral + first_cell + first / 2 + variation / 2, how


def chebyshev_kernel(rpe: str, lag: int, heads: int, eps: float, cutoff: int | None = None,
                     allow_zero_fit: bool = False) -> KernelFit:
    """A delta at ``lag``: ``G`` is a C-infinity bump of height ``1/(g(T) u_T)`` at ``u_T`` whose
    support reaches the neighbouring lags' ``u`` (the spec's Jackson construction, §3.1).

    Too few heads to put a Chebyshev point inside the bump make the fit 0 (l1 error 1): refused,
    with the heads it needs, unless ``allow_zero_fit`` (a search over ``heads`` wants that point)."""
    _check(rpe, lag, heads)
    _check_eps(eps)
    if heads > 100_000:
        raise ExpressivityError(f"{heads} heads is above the budget of 100,000; use fewer heads")
    if lag == 0:   # u(0) = 1 is the end of the interval: the bump would have no width and the fit no term
        raise ExpressivityError("the chebyshev construction needs a lag of at least 1 (at lag 0 its bump has no "
                                "width); use --construction interpolation for lag 0")
    u_of, _, g = _variable(rpe, eps)
    u_T, g_T = float(u_of(lag)), float(g(lag))
    height = 1.0 / (g_T * u_T) if g_T * u_T > 0 else math.inf   # 1 / 5e-324 is inf too: one refusal for both
    if not math.isfinite(height):
        raise ExpressivityError(f"at lag {lag} with eps {eps:g}, u_T = {u_T:.3g} and g(T) = {g_T:.3g}: the "
                                "bump's height 1/(g(T) u_T) is beyond float64 (the chebyshev construction works in "
                                "float64); use a smaller lag or eps, or --rpe log")
    width = min(abs(float(u_of(lag + 1)) - u_T), abs(float(u_of(lag - 1)) - u_T))   # lag >= 1 here
    if not allow_zero_fit:
        _check_resolved(rpe, lag, heads, eps, u_T, width)
    if cutoff is None:
        # lin: until u < 1e-17. log: until P(u_s) varies slowly from one lag to the next (its
        # oscillations in u are ~1/H apart, du/ds = eps u/(1+s)), so the integral replaces the sum.
        cutoff = lag + 1 + (int(math.ceil(17 * math.log(10) / eps)) if rpe == "lin"
                            else max(10 * (lag + 1), int(math.ceil(50 * eps * heads)), 1000))
    # every head at every lag below the cutoff (twice: the sum and its rounding's slope), and at every point of the
    # tail's grid (:func:`_tail_bound`), which at a small eps outnumbers the lags (a review, 2026-11-28: 100,000 log
    # heads at eps 0.001 were estimated at 7 s and ran 192 s)
    _, points = _tail_grid(heads, float(u_of(cutoff)))
    seconds = CHEBYSHEV_SECONDS_PER_TERM * heads * (2 * cutoff + points)
    if seconds > KERNEL_BUDGET_S:
        raise ExpressivityError(f"{heads} chebyshev heads at eps {eps:g} (summed over {cutoff:,} lags and a tail grid of "
                                f"{points:,} points) take about {seconds:,.0f} s here (10,000 log heads at eps 0.1: "
                                f"about 1 s), over the budget of {KERNEL_BUDGET_S} s; use fewer heads (the time grows "
                                "as heads squared)")
    return chebyshev_construction(rpe, heads, eps, lambda x: height * _bump((x - u_T) / width),
                                  lambda s: (np.asarray(s) == lag).astype(float), "chebyshev", cutoff, lag,
                                  {"bump_width": width, "bump_height": height})


def _check_resolved(rpe: str, lag: int, heads: int, eps: float, u_T: float, width: float) -> None:
    """Refuse a fit none of whose ``heads`` Chebyshev points lies inside the bump: its interpolant is
    0, a true "l1 error 1" of a fit that extracts nothing (lin heads at lags 20..2,000 printed it with
    exit 0: an audit, 2026-11-28). Near ``u`` the points are about ``pi sqrt(u (1 - u)) / H`` apart.
    (Claim 1's search over H takes those fits as what they are: ``allow_zero_fit``.)"""
    theta = np.pi * (np.arange(heads) + 0.5) / heads
    # the bump's values at the points, not only where they lie: a point just inside its edge (|x| / width
    # 0.9999) has exp(1 - 1/(1 - x^2)) = 0 in float64, and the fit was 0 all the same (a review, 2026-11-28)
    if np.any(_bump((0.5 * (1.0 + np.cos(theta)) - u_T) / width) > 0):
        return
    needed = math.ceil(math.pi * math.sqrt(u_T * (1.0 - u_T)) / width)
    advice = (f"use about {needed:,} heads or more (more resolve it better)" if needed <= 100_000 else
              "that takes more than 100,000 heads; " + (
                  "use a smaller --eps or --rpe log" if rpe == "lin" else
                  # log heads: both ends are worse (lag 1,000 resolves at 0.05, not at 0.2 nor 0.001, where this
                  # said "use a smaller --eps" at the smallest allowed: a fresh audit, 2026-11-29)
                  "try another --eps: for log heads a smaller one is not always better (lag 1,000 resolves at 0.05, "
                  "not at 0.001 nor 0.2)"))
    raise ExpressivityError(f"none of the {heads} heads' Chebyshev points samples the bump at lag {lag} (u_T = "
                            f"{u_T:.3g}, half-width {width:.3g}), so the fit would be 0 and extract nothing; {advice}")


def _check_eps(eps) -> None:
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and 0 < eps <= 10):
        raise ExpressivityError(f"eps must be a finite number in (0, 10], got {eps!r}")


def _monomial_coefficients(rpe: str, cheb: np.ndarray, betas, eps: float):
    """``max |c_k|`` and the float coefficients (``None`` beyond float64) of the heads.

    ``u P(u) = sum_k a_k u^k`` and ``c_k = a_k / (1 - e^{-beta_k})`` (lin) or
    ``a_k zeta(beta_k)`` (log). Exact in mpmath for ``H <= MONOMIAL_BUDGET``, else ``(None, None)``.
    """
    H = len(cheb)
    if H > MONOMIAL_BUDGET:
        return None, None, None
    with mpmath.workdps(int(0.8 * H) + 40):
        # T_j(2u - 1) expanded in powers of u by T_{j+1} = 2 (2u - 1) T_j - T_{j-1}.
        poly = [mpmath.mpf(0)] * H
        prev, cur = [mpmath.mpf(1)], [mpmath.mpf(-1), mpmath.mpf(2)]
        for j in range(H):
            if j >= 2:
                nxt = [-2 * v for v in cur] + [mpmath.mpf(0)]
                for i, v in enumerate(cur):
                    nxt[i + 1] += 4 * v
                for i, v in enumerate(prev):
                    nxt[i] -= v
                prev, cur = cur, nxt
            term = prev if j == 0 else cur
            for i, v in enumerate(term):
                poly[i] += mpmath.mpf(float(cheb[j])) * v
        # a_k is the coefficient of u^k in u P(u): a_k = poly[k-1].
        cs = []
        for k, beta in enumerate(betas, start=1):
            scale = 1 / -mpmath.expm1(-beta) if rpe == "lin" else mpmath.zeta(beta)
            cs.append(poly[k - 1] * scale)
        max_c = max(abs(c) for c in cs)
        fits = max_c < mpmath.mpf(2) ** 1000
        log10 = float(mpmath.log10(max_c)) if max_c > 0 else -math.inf
        return (float(max_c) if fits else math.inf), (tuple(float(c) for c in cs) if fits else None), log10


# ---- Task III: kernels that are not deltas --------------------------------------------------------

KERNELS = ("power", "exp")


def target_kernel(kernel: str, alpha: float, s) -> np.ndarray:
    """The memory kernels of the ``kernel-memory`` task: ``(1 - e^-a) e^{-a s}`` (``exp``) or
    ``(1 + s)^-(1+a) / zeta(1 + a)`` (``power``), both summing to 1 over ``s >= 0``."""
    if kernel not in KERNELS:
        raise ExpressivityError(f"unknown kernel {kernel!r}; use power or exp")
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and math.isfinite(alpha) and alpha > 0):
        raise ExpressivityError(f"alpha must be a finite number > 0, got {alpha!r}")
    return head_weights("lin", alpha, s) if kernel == "exp" else head_weights("log", 1.0 + alpha, s)


def matched_head(kernel: str, alpha: float) -> tuple[str, float]:
    """The one head that realises the kernel exactly: ``(rpe, beta)`` (spec §3.3)."""
    target_kernel(kernel, alpha, [0])
    return ("lin", float(alpha)) if kernel == "exp" else ("log", 1.0 + float(alpha))


def kernel_fit(rpe: str, kernel: str, alpha: float, heads: int, eps: float = 0.1, cutoff: int = 20_000) -> KernelFit:
    """``H`` heads of type ``rpe`` realising the ``kernel`` of the ``kernel-memory`` task.

    One head of the kernel's own family (:func:`matched_head`) is exact. Otherwise heads
    ``beta_k = eps k`` (lin) or ``1 + eps k`` (log) with ``P`` interpolating the transformed
    target ``G(u) = rho(s(u)) / (g(s(u)) u)`` at Chebyshev points (spec §3.3: the rate follows
    the smoothness of ``G``; a mismatched family makes ``G`` singular at ``u = 0``).
    """
    _check(rpe, 0, heads)

    def rho(s):
        return target_kernel(kernel, alpha, s)

    if (rpe, kernel) in (("lin", "exp"), ("log", "power")) and heads == 1:
        _, beta = matched_head(kernel, alpha)
        s = np.arange(cutoff)
        l1 = float(np.abs(head_weights(rpe, beta, s) - rho(s)).sum())
        return KernelFit("matched", rpe, 0, 1, (beta,), (1.0,), l1, 1.0, "float64",
                         f"one head of the kernel's own family, w_beta = rho: summed over s < {cutoff} (the tails "
                         "are equal term by term)", {"kernel": kernel, "alpha": alpha})
    _check_eps(eps)
    u_of, s_of, g = _variable(rpe, eps)

    def G(u):
        u = np.asarray(u, float)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            sv = s_of(u)
            out = rho(sv) / (g(sv) * u)
        return np.where(np.isfinite(out), out, 0.0)

    return chebyshev_construction(rpe, heads, eps, G, rho, "chebyshev", cutoff, 0, {"kernel": kernel, "alpha": alpha},
                                  lambda S: target_tail(kernel, alpha, S))


def target_tail(kernel: str, alpha: float, S: int) -> float:
    """``sum_{s >= S} rho(s)`` of :func:`target_kernel`, in closed form: ``e^{-a S}`` (``exp``) or
    ``zeta(1 + a, S + 1) / zeta(1 + a)`` (``power``, Hurwitz zeta in mpmath)."""
    if kernel == "exp":
        return math.exp(-alpha * S)
    return float(mpmath.zeta(1 + alpha, S + 1) / mpmath.zeta(1 + alpha))
