"""The Yun checks' work budgets (yun/size.py) are exact thresholds.

Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula)."""

import pytest
from expressivity.errors import ExpressivityError


def test_size_grid_and_contextual_budgets_are_exact_thresholds():
    from expressivity.constructions.yun.constants import YunParams
    from expressivity.constructions.yun.size import check_contextual_budget, check_grid_budget, contextual_work
    p = YunParams(2, 2, 3)
    pts = p.extended_grid_points
    assert pts == 4 ** 4
    check_grid_budget(p, pts)
    with pytest.raises(ExpressivityError):
        check_grid_budget(p, pts - 1)
    w = contextual_work(p)
    assert check_contextual_budget(p, w) == w
    with pytest.raises(ExpressivityError):
        check_contextual_budget(p, w - 1)


def test_the_python_api_refuses_a_huge_size_before_the_float64_limit_s_exact_powers():
    """An audit (2026-11-28): build_yun('smooth-rank', 10**9, 1, '1/4') ran for minutes at 3.4 GB (the float64
    limit's exact powers came before the size check); d = 10**6 raised a bare OverflowError. The CLI refused both."""
    from expressivity.constructions.yun.build import build_yun
    from expressivity.errors import BudgetError

    for n, d in ((2, 10 ** 6), (10 ** 9, 32)):
        with pytest.raises(BudgetError, match="exhaustive verification would enumerate"):
            build_yun("smooth-rank", n, d, "1/4", samples=200)
