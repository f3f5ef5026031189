"""The argument checks the Wang & E builders and checkers share with their commands (with
:func:`~expressivity.errors.require_int` and :func:`~expressivity.errors.require_number`).

The CLI's options carry ranges (``--width 2..4096``, ``--heads 1..4096``, ...); a Python caller of the
builders had none: ``build_fixed_memory([1, 3], width=10**7)`` ran past 90 s at 15.6 GB, a report of
another construction passed to a checker raised a bare ``KeyError``, and ``np.int64(4)`` was refused as
"not an integer" (an audit, 2026-11-28). Each builder and checker states its ranges here, once.
"""

from __future__ import annotations

import math

from expressivity.constructions.report import ConstructionReport
from expressivity.errors import ExpressivityError, require_int
from expressivity.network.network import Network

# the CLI's ranges (cli/wang_e.py), which the builders and checkers keep too
MAX_HEADS = 4096
MAX_WIDTH = 4096
MAX_GRID = 64
MAX_CHECK_LENGTH = 4096
MAX_SAMPLES = 100_000
MAX_SEED = 2 ** 32 - 1


def seed(value) -> int:
    return require_int(value, "seed", 0, MAX_SEED)


def construction(net, report, prefix: str, checker: str) -> dict:
    """``report``'s constants, where ``net`` is a network and ``report`` a report of the construction ``prefix``
    names (the builder's own); a one-line error otherwise."""
    if not isinstance(net, Network):
        raise ExpressivityError(f"{checker} checks a network its builder returned, got {type(net).__name__}")
    if not isinstance(report, ConstructionReport) or not str(report.construction).startswith(prefix):
        got = report.construction if isinstance(report, ConstructionReport) else type(report).__name__
        raise ExpressivityError(f"{checker} checks the report of a {prefix!r} construction, got {got!r}; pass the "
                                "report its builder returned with the network")
    return report.constants


def beta(value) -> float:
    """An inverse temperature > 0, ``math.inf`` for hardmax."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not value > 0:
        raise ExpressivityError(f"beta must be > 0 (inf for hardmax), got {value!r}")
    return float(value)
