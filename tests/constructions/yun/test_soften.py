"""Softening the modified network (yun/soften.py): epsilon, leakage and float64 rounding each refused past its
share of delta.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import pytest
from expressivity.errors import ExpressivityError


def test_soften_epsilon_at_or_above_a_quarter_delta_is_refused():
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import check_epsilon
    p = YunParams(2, 1, 4)                 # delta/4 = 1/16
    check_epsilon(p, 0.06)
    for eps in (0.0625, 0.07, 0.12):
        with pytest.raises(ExpressivityError):
            check_epsilon(p, eps)


def test_soften_leakage_above_an_eighth_delta_is_refused():
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import check_leakage
    p = YunParams(2, 1, 4)                 # delta/8 = 1/32
    m = {"attention_layers": 1, "head_scale": 1.0, "key_range": 1.0, "score_gap": 1.0}
    check_leakage(p, 10.0, {**m, "attention_leakage_bound": 1 / 32})
    with pytest.raises(ExpressivityError):
        check_leakage(p, 10.0, {**m, "attention_leakage_bound": 0.1})     # 3.2 delta/8


def test_soften_float64_limit_refuses_rounding_above_an_eighth_delta():
    # n=4, d=1, delta=1/5: the softened value map rounds by ~0.051 > delta/8 = 0.025 (value_map_rounding)
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import float64_limit, value_map_rounding
    p = YunParams(4, 1, 5)
    assert 1 / 40 < value_map_rounding(p) <= 1 / 10
    with pytest.raises(ExpressivityError, match="round"):
        float64_limit(p)


def _grid_inputs(N: int, n: int, d: int):
    import itertools

    import numpy as np

    return np.array(list(itertools.product(range(N), repeat=n * d)), dtype=float).reshape(-1, n, d) / N


@pytest.mark.parametrize("target, n, N, positional", [("smooth-rank", 2, 16, False), ("reverse", 2, 2, True),
                                                      ("mean-shift", 2, 4, False)])
def test_the_softened_network_equals_the_verified_one_on_every_grid_point_input(target, n, N, positional):
    """An audit (2026-11-28): at (0, 1/2) the softened network of smooth-rank at delta 1/16 answered 493,332 (the
    target lies in [0, 1]) with "all checks passed": float64 moved 1/2 about 2e-10 down through the grid layers
    below it, onto the ramp just left of its breakpoint, and the Monte-Carlo samples of the agreement check never
    land on a grid point. With a power-of-two ramp every sum at a grid point is exact. Checked here at every grid
    point input against g_bar, independently of the build's own check."""
    import numpy as np

    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.compile import f_bar
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.network.reference import forward
    from expressivity.targets import get_target

    result = build_and_check(get_target(target), YunParams(n, 2 if target == "mean-shift" else 1, N,
                                                           positional=positional), BuildConfig(samples=200))
    X = _grid_inputs(N, n, result.build.params.d)
    deviation = np.abs(forward(result.softened, X) - f_bar(result.build, X, distinct_only=True)).max()
    assert deviation <= result.report.margins["agreement_bound"], deviation
    check = result.report.check("softened g equals the verified g_bar on grid-point inputs (entries k/N)")
    assert check.points == len(X) and check.failures == 0 and result.report.ok


def test_the_build_s_grid_point_check_fails_where_the_ramp_is_not_a_power_of_two(monkeypatch):
    """The check the build adds can fail: with the ramp width as it was (not rounded to a power of two), the
    softened network misses at grid points and the build says so."""
    import importlib

    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.targets import get_target

    soften = importlib.import_module("expressivity.constructions.yun.soften")   # the package exports a function so named
    monkeypatch.setattr(soften, "dyadic_floor", lambda x: x)
    result = build_and_check(get_target("smooth-rank"), YunParams(2, 1, 16), BuildConfig(samples=200))
    check = result.report.check("softened g equals the verified g_bar on grid-point inputs (entries k/N)")
    # 0.5 of a target in [0, 0.75]: the output clamp bounds the miss by the target's range (above 1 before it)
    assert check.failures > 0 and check.details["max_deviation"] > 0.25 and not result.report.ok


def test_the_quantizer_ramp_is_a_power_of_two_at_most_the_width_asked_for():
    from expressivity.constructions.yun.soften import dyadic_floor

    for x, expected in ((1.5e-8, 2.0 ** -26), (0.25, 0.25), (0.3, 0.25), (1.0, 1.0), (3 * 2.0 ** -1074, 2.0 ** -1073)):
        assert dyadic_floor(x) == expected


def test_the_epsilon_range_starts_where_float64_drift_stays_within_a_quarter_delta():
    # the range message read [1e-300, delta/4) while the drift check refused anything below ~1e-13 (the seventeenth
    # audit): the lower end is now the narrowest dyadic ramp whose drift (quantizer_ramps) stays under delta/4
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import check_epsilon, quantizer_ramps, smallest_epsilon
    p = YunParams(2, 1, 4)
    low = smallest_epsilon(p)
    assert sum(quantizer_ramps(p, low)) < 1 / 16 <= sum(quantizer_ramps(p, low / 2))
    assert 1e-16 < low < 1e-10 and low == 2.0 ** round(__import__("math").log2(low))   # a power of two
    check_epsilon(p, low)
    with pytest.raises(ExpressivityError, match=rf"outside \[{low:g}, delta/4"):
        check_epsilon(p, low / 2)


@pytest.mark.parametrize("hi", [0.75, 0.7, 1e-10, 3.0])
def test_the_softened_output_clamp_ends_exactly_on_its_bounds_in_float64(hi):
    """One softened pass computes x - ReLU(x - hi), which float64 rounds by up to 2^-53 x: at 5e5 the output passed
    hi by 1.75e-11 (55% of hi for hi = 1e-10). The second pass lands on hi exactly (x - hi is exact on (hi, 2hi])."""
    from fractions import Fraction

    import numpy as np

    from expressivity.constructions.yun.soften import _soft_ff
    from expressivity.constructions.yun.value import clamp_layers
    from expressivity.network.network import Network
    from expressivity.network.reference import forward

    lo, top = Fraction(-0.3), Fraction(hi)
    rng = np.random.default_rng(0)
    big = np.concatenate([rng.uniform(1, 1e6, 4000), -rng.uniform(1, 1e6, 4000), [5e5 + 0.1, 1e15, -1e15, float(top)]])
    x = np.concatenate([big, [float(lo), 0.0, float(top) / 2]])[:, None]
    out = {}
    for passes in (1, 2):
        net = Network(tuple(_soft_ff(layer, 1e-6) for layer in clamp_layers(1, lo, top, passes=passes)), ("x",))
        out[passes] = forward(net, x)[:, 0]
    assert out[1].max() > hi or out[1].min() < float(lo)   # one pass rounds past an end somewhere
    assert out[2].max() == hi and out[2].min() == float(lo)   # two passes: exactly within [lo, hi]
    assert np.array_equal(out[2][-3:], x[-3:, 0])             # and the identity inside


def test_a_lambda_whose_scores_overflow_is_refused_and_the_largest_allowed_stays_finite():
    # A fresh audit (2026-11-29): a user's lambda of 8.98e303 overflowed the attention scores of the top contextual
    # class only (1.3% of the domain answered NaN); the sampled checks missed it and the build passed.
    import numpy as np

    from expressivity.constructions.yun.build import BuildConfig, build_and_check
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.soften import SCORE_LIMIT, SoftenConfig
    from expressivity.network.reference import forward
    from expressivity.targets import get_target

    target, p = get_target("smooth-rank"), YunParams(2, 1, 13)
    with pytest.raises(ExpressivityError, match="can overflow float64 in the attention scores") as refused:
        build_and_check(target, p, BuildConfig(samples=100, seed=35, soften=SoftenConfig(lam=8.983898542143235e+303)))
    # the largest lambda it allows: every contextual id is at most t_r (= 371,462 here) in size, b_Q no larger
    ids = float(max(abs(p.t_l), abs(p.t_r), abs(p.out_value)))
    most = float(str(refused.value).split("give a lambda of at most ")[1].split(" ")[0])
    assert SCORE_LIMIT / (2.01 * ids * ids) < most <= SCORE_LIMIT / (ids * ids)
    result = build_and_check(target, p, BuildConfig(samples=100, soften=SoftenConfig(lam=most)))
    # there every input in [0, 1) answers a finite value: the top class (both entries near 1), a grid point and
    # the quantizer ramps' inputs (outside the claim, so allow_outside) included
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.uniform(0, 1, (4000, 2, 1)), 1 - rng.uniform(0, 1 / 13, (1000, 2, 1)),
                        np.array([[[0.0], [0.0]], [[12 / 13], [1 - 1e-12]], [[1 - 1e-12], [12 / 13]]])])
    assert np.isfinite(forward(result.softened, X, allow_outside=True)).all()


@pytest.mark.parametrize("size", [1e6, 1e9])
def test_a_large_target_taking_both_signs_passes_its_agreement_check(size):
    # A fresh audit (2026-11-29): the output rescale's activation jumped by lo = min(sigma A) - 1 (about -3e5 here);
    # softened, its ramp's slopes lo/epsilon (5e6) multiplied float64's rounding past the agreement bound (1.28e-5
    # against 2.03e-6 at size 1e6), and a correct network failed with exit 1. Continuous now (constant lo below lo).
    from expressivity.constructions.yun.build import build_yun
    from expressivity.targets import Target, get_target

    smooth = get_target("smooth-rank")
    signed = Target(f"signed-{size:g}", lambda X: size * (smooth(X) - 0.5), True, "smooth-rank, centred and scaled")
    result = build_yun(signed, 2, 2, "1/4", samples=300)
    agreement = [c for c in result.report.checks if c.property.startswith("softened g equals")]
    assert agreement and all(c.failures == 0 for c in agreement) and result.report.ok
    assert result.report.constants["sigma"] != 1   # the rescale layer is there
    assert all(c.details["max_deviation"] <= c.details["bound"] / 10 for c in agreement)
