"""The inputs each Wang & E construction's claim covers (see :mod:`expressivity.network.domain`).

Theorem 1 and Task III state their sup error for sequences in ``[-1, 1]``; the pointer tasks
(Task II, the DP-free pointer) for a value, a start flag at position 0 and a one-hot pointer
``p_t <= t`` per token; the DP-free parity for ``+-1`` tokens, at positions from its largest lag on.
"""

from __future__ import annotations

from expressivity.network.domain import Field, InputDomain
from expressivity.network.sequence_rules import FirstOnly, PointersBack


def signal_domain(what: str) -> InputDomain:
    """Scalar tokens ``x`` in ``[-1, 1]``: the sequences ``what``'s sup-error bound is stated for."""
    # the bound is checked in float64 (its rounding included where it matters); in float32 the fixed
    # memories' coefficients near 1e8 round by about 6, and a product readout answered -6.8 for +1
    return InputDomain((Field.real(("x",), -1, 1),), arithmetic=SIGNAL_ARITHMETIC,
                       fix=f"scale the sequence into [-1, 1] ({what} states its sup error for sup|x| <= 1)")


SIGNAL_ARITHMETIC = {"float64": None}   # softmax heads: no exact pass


def pointer_domain(max_lag: int, *, bounded_values: bool, exact: bool) -> InputDomain:
    """Tokens ``[v, start, p[1..T]]``: ``v`` in ``[-1, 1]`` (any real when ``bounded_values`` is false:
    a hardmax copy is exact for every value), the start flag at position 0 only, one pointer per
    later position pointing at most ``t`` back."""
    pointers = tuple(f"p[{j}]" for j in range(1, max_lag + 1))
    value = Field.real(("v",), -1, 1) if bounded_values else Field.real(("v",))
    # hardmax: checked in exact arithmetic (in float32 positions are decoded from 1/(t+1) by slopes of order
    # length^4, and 520 of 6144 outputs of the length-512 check were wrong); softmax: checked in float64
    return InputDomain((value, Field.one_of(("start",), (0, 1)), Field.one_of(pointers, (0, 1))),
                       (FirstOnly("start"), PointersBack(pointers)), exact=exact,
                       arithmetic={"exact": None} if exact else {"float64": None},
                       fix="give start = 1 at position 0 only and one pointer 1..T with p_t <= t at every later "
                           "position" + (", values in [-1, 1]" if bounded_values else ""))


def parity_domain(lags) -> InputDomain:
    """Tokens ``x`` in ``{-1, 1}``; outputs claimed from the largest lag on (earlier ones reach before the start)."""
    return InputDomain((Field.one_of(("x",), (-1, 1)),), exact=True, claimed_from=max(lags),
                       fix="give tokens -1 or 1")
