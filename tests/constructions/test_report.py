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
