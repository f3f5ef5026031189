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
