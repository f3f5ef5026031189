"""Input domains for constructions saved before networks recorded them, from their saved report.

Every construction now records its :class:`~expressivity.network.domain.InputDomain` with the
network. A folder saved earlier has the construction's report beside it, whose constants name
what the domain was built from (a circuit's scale and input range, a pointer task's lags): this
module rebuilds the domain from them, through the same functions the constructions call.
:data:`FROM_REPORT` is the table, by the report's ``construction`` text.
"""

from __future__ import annotations

import math
from dataclasses import replace

from expressivity.constructions.circuits.build import circuit_domain
from expressivity.constructions.wang_e.domains import parity_domain, pointer_domain, signal_domain
from expressivity.network.domain import Field, InputDomain
from expressivity.network.network import Network


def _number(value) -> float | None:
    """A report number (floats, and ``"inf"`` as JSON writes it) as a float; ``None`` otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("inf", "-inf"):
        return float(value)
    return None


def _circuit(report: dict, net: Network) -> InputDomain | None:
    name = (net.metadata or {}).get("circuit") or report.get("construction", "").removeprefix("circuit ")
    constants, bounds = report.get("constants") or {}, report.get("bounds") or {}
    scale, spread = _number(constants.get("scale")), _number(bounds.get("input_range"))
    if "x" not in net.input_labels:
        return None
    ranged = spread is not None and math.isfinite(spread) and name in ("reverse", "reverse-dot", "shift", "previous")
    pe_dim = _number(constants.get("pe_dim")) if name == "reverse-dot" else None
    # the same score rounding as the builders count (max: scores scale * x; reverse-dot: dot products of pe_dim terms)
    return circuit_domain(name, constants.get("length"), scale, input_range=spread if ranged else None,
                          margin=_number((report.get("margins") or {}).get("score_gap_per_unit_scale")),
                          tolerance=_number(constants.get("tolerance")), error_bound=_number(bounds.get("max_abs_error")),
                          scores_scale_x=name == "max", score_size=None if pe_dim is None else pe_dim / 2,
                          score_terms=int(pe_dim or 1))


def _yun(report: dict, net: Network) -> InputDomain:
    """The softened network's domain, ``[0, 1)`` (the report describes the softened network; a
    modified network saved beside it is given the same, the narrower of its two claims)."""
    return InputDomain((Field.real(net.input_labels, 0, 1, hi_open=True),),
                       built_for={"delta": (report.get("constants") or {}).get("delta")},
                       fix="rescale the inputs into [0, 1), the domain of Theorems 2 and 3")


def _pointers(report: dict, net: Network) -> InputDomain:
    constants = report.get("constants") or {}
    beta = _number(constants.get("beta"))
    hard = beta is None or math.isinf(beta)
    dpfree = "DP-free" in report.get("construction", "")
    return pointer_domain(int(constants.get("max_lag")), bounded_values=dpfree or not hard, exact=dpfree or hard)


# report "construction" prefix -> the domain its constants describe
FROM_REPORT = {
    "circuit ": _circuit,
    "yun theorem": _yun,
    "wang-e fixed memories": lambda report, net: signal_domain("Theorem 1"),
    "wang-e essentially sparse memory": lambda report, net: signal_domain("Task III"),
    "wang-e adaptive memory": _pointers,
    "wang-e nested memory": _pointers,
    "wang-e DP-free pointer": _pointers,
    "wang-e DP-free sparse Boolean": lambda report, net: parity_domain((report.get("constants") or {}).get("lags")),
}


def domain_from_report(report: dict | None, net: Network) -> InputDomain | None:
    """The domain of ``net`` rebuilt from its construction ``report``, marked as derived; ``None``
    where the report names no construction of the table, or its constants are missing or malformed."""
    construction = (report or {}).get("construction")
    if not isinstance(construction, str):
        return None
    for prefix, derive in FROM_REPORT.items():
        if construction.startswith(prefix):
            try:
                domain = derive(report, net)
                if domain is not None:
                    domain.check_labels(net.input_labels)
            except (TypeError, ValueError, KeyError):   # a report of another version: no domain rather than a wrong one
                return None
            return None if domain is None else replace(domain, origin=f"derived from {construction!r}'s report")
    return None
