"""The Wang & E builders and checkers keep the command's ranges (constructions/wang_e/arguments.py)."""

import numpy as np
import pytest

from expressivity.constructions.wang_e.adaptive import build_adaptive_memory, check_adaptive_memory
from expressivity.constructions.wang_e.dpfree import build_dpfree_boolean, build_dpfree_pointer
from expressivity.constructions.wang_e.essential import build_kernel_memory, check_kernel_memory
from expressivity.constructions.wang_e.fixed import build_fixed_memory, check_fixed_memory
from expressivity.errors import ExpressivityError


@pytest.mark.parametrize("call, needle", [
    (lambda: build_fixed_memory([1, 3], width=10 ** 7), "width must be between 2 and 4096"),   # ran 90 s at 15.6 GB
    (lambda: build_fixed_memory(None), "lags must be distinct positive integers"),
    (lambda: build_fixed_memory(["1"]), "'1' among them"),
    (lambda: build_kernel_memory(heads=10 ** 6), "heads must be between 1 and 4096"),
    (lambda: build_kernel_memory(eps=float("nan")), "eps must be a finite number"),
    (lambda: build_adaptive_memory(depth=0), "depth must be between 1 and 8"),
])
def test_a_builder_refuses_what_its_command_refuses(call, needle):
    """An audit (2026-11-28): the builders had none of the CLI's ranges (width 10^7 ran past 90 s at 15.6 GB,
    heads 10^6 past 90 s) and raised bare TypeErrors on None or strings."""
    with pytest.raises(ExpressivityError, match=needle):
        call()


def test_a_checker_refuses_sizes_past_its_range_and_a_report_of_another_construction():
    """An audit (2026-11-28): length 10^9 or samples 10^9 asked numpy for terabytes, length 0 divided by zero, and
    a report of another construction raised a bare KeyError."""
    net, report = build_kernel_memory()
    fixed, fixed_report = build_fixed_memory([1, 3])
    for call, needle in ((lambda: check_kernel_memory(net, report, length=0), "length must be between 1 and 4096"),
                         (lambda: check_kernel_memory(net, report, length=10 ** 9), "length must be between"),
                         (lambda: check_kernel_memory(net, report, seed=-1), "seed must be between"),
                         (lambda: check_fixed_memory(fixed, fixed_report, samples=10 ** 9), "samples must be between"),
                         (lambda: check_fixed_memory(fixed, report), "checks the report of a 'wang-e fixed memories'"),
                         (lambda: check_adaptive_memory(None, None), "checks a network its builder returned")):
        with pytest.raises(ExpressivityError, match=needle):
            call()


def test_numpy_integers_are_integers():
    """An audit (2026-11-28): max_lag=np.int64(4) was refused as "must be an integer in [1, 64], got np.int64(4)"."""
    net, report = build_adaptive_memory(max_lag=np.int64(4), length=8)
    assert report.constants["max_lag"] == 4 and type(report.constants["max_lag"]) is int
    assert build_dpfree_pointer(np.int64(4), np.int64(8))[1].constants["length"] == 8
    assert tuple(build_dpfree_boolean(np.array([2, 5]), 8)[1].constants["lags"]) == (2, 5)
    assert tuple(build_fixed_memory(np.array([1, 3]), readout="linear")[1].constants["lags"]) == (1, 3)
