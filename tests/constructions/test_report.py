"""A construction's report says what was verified: nothing, until a checker ran."""

from expressivity import build_fixed_memory, build_sum
from expressivity.constructions.report import Check, ConstructionReport, Size


def test_a_report_with_no_check_is_not_ok():
    """Every builder's report said ``ok = True`` with no check in it (a fresh audit, 2026-11-28)."""
    for net, report in (build_sum(4), build_fixed_memory((1, 3))):
        assert report.checks == () and report.ok is False
    from expressivity.constructions.wang_e.fixed import check_fixed_memory

    net, report = build_fixed_memory((1, 3))
    checked = check_fixed_memory(net, report, samples=8)
    assert checked.checks and checked.ok is True
    size = Size.of(net)
    assert ConstructionReport("c", "claim", size, (Check("p", 3, 0, "exact", 0.0),)).ok is True
    assert ConstructionReport("c", "claim", size, (Check("p", 3, 1, "exact", 0.0),)).ok is False


# ---- Mutation testing (2026-11-28) found each of these checks could be loosened, dropped or miscounted with no test
# failing; every expected value here is computed independently (by hand, exact fractions, or the documented formula).

def test_report_check_of_nothing_does_not_pass():
    from expressivity.constructions.report import Check
    assert Check("p", 0, 0, "exact").passed is False
    assert Check("p", 5, 1, "exact").passed is False
    assert Check("p", 5, 0, "exact").passed is True


def test_report_error_within_bound_edges():
    from expressivity.constructions.report import ErrorEstimate
    assert ErrorEstimate("e", 2.0, "m", bound=1.0).within_bound is False
    assert ErrorEstimate("e", 1.0, "m", bound=1.0).within_bound is True           # equal is within (<=)
    assert ErrorEstimate("e", 2.0, "m", ci95=(0.5, 3.0), bound=1.0).within_bound is True   # lower end decides
    assert ErrorEstimate("e", 0.5, "m", ci95=(1.5, 3.0), bound=1.0).within_bound is False
    assert ErrorEstimate("e", 9.0, "m").within_bound is True                       # no bound, nothing to break


def test_report_ok_needs_checks_and_errors_within_bounds():
    from expressivity import build_sum
    from expressivity.constructions.report import Check, ConstructionReport, ErrorEstimate, Size
    net, _ = build_sum(4)
    size = Size.of(net)
    good = (Check("p", 3, 0, "exact"),)
    assert ConstructionReport("c", "claim", size, ()).ok is False
    assert ConstructionReport("c", "claim", size, (), (ErrorEstimate("e", 0.0, "m", bound=1.0),)).ok is False
    assert ConstructionReport("c", "claim", size, good, (ErrorEstimate("e", 2.0, "m", bound=1.0),)).ok is False
    assert ConstructionReport("c", "claim", size, good, (ErrorEstimate("e", 1.0, "m", bound=1.0),)).ok is True
    assert ConstructionReport("c", "claim", size, good + (Check("q", 0, 0, "exact"),)).ok is False
