"""The one report every construction returns beside its :class:`~expressivity.network.Network`.

A construction is done when a verifier has checked it against its mathematical claim; the
report says what was checked, in which arithmetic, how big the network is next to the paper's
bound, what errors remain (with how they were computed), the margins the proof relies on, and
the constants that were chosen. Parts:

* :class:`Size`: layers, heads, width, parameters, and the paper's bound with the ratio.
* :class:`Check`: one verified property: how many points, how many failures, which arithmetic.
* :class:`ErrorEstimate`: a measured or estimated error with its 95% interval (when statistical),
  the method, and the bound it must respect (when one is proven).
* ``bounds``: proven bounds the construction guarantees before anything is measured (e.g. the
  largest output error a softmax circuit can have), by name; checks compare measurements to them.
* ``margins`` and ``constants``: named numbers (exact ones stay ``Fraction``).

:meth:`ConstructionReport.as_dict` is the JSON form every command prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from expressivity.network.layers import AttentionLayer, head_count
from expressivity.network.network import Network
from expressivity.records import jsonable


@dataclass(frozen=True)
class Size:
    """Size of a built network, next to the paper's bound where there is one.

    ``parameters`` counts every stored weight entry of the network that runs (zeros included);
    ``ratio = parameters / paper_bound``.
    """

    layers: int
    attention_layers: int
    heads: int
    width: int
    parameters: int
    paper_bound: float | None = None
    bound: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.paper_bound is None or self.paper_bound == 0:
            return None
        return self.parameters / self.paper_bound

    @classmethod
    def of(cls, network: Network, paper_bound: float | None = None, bound: str | None = None, **extra) -> "Size":
        """The size of ``network``; ``bound`` names the paper's bound (e.g. a formula)."""
        attn = [layer for layer in network.layers if isinstance(layer, AttentionLayer)]
        return cls(layers=len(network.layers), attention_layers=len(attn),
                   heads=head_count(network.layers), width=network.d,
                   parameters=network.parameter_count(), paper_bound=paper_bound, bound=bound, extra=dict(extra))

    def as_dict(self) -> dict:
        return {"layers": self.layers, "attention_layers": self.attention_layers, "heads": self.heads,
                "width": self.width, "parameters": self.parameters, "paper_bound": self.paper_bound,
                "bound": self.bound, "ratio": self.ratio, **self.extra}


@dataclass(frozen=True)
class Check:
    """One verified property: ``failures`` of ``points`` checked, in ``arithmetic``."""

    property: str
    points: int
    failures: int
    arithmetic: str
    seconds: float = 0.0
    details: dict = field(default_factory=dict)
    examples: tuple = ()

    @property
    def passed(self) -> bool:
        """No failures among at least one checked point (a check of nothing proves nothing)."""
        return self.failures == 0 and self.points > 0

    def as_dict(self) -> dict:
        return {"property": self.property, "points": self.points, "failures": self.failures, "passed": self.passed,
                "arithmetic": self.arithmetic, "seconds": round(self.seconds, 4), **self.details,
                "examples": list(self.examples)}


def _plain(x):
    """``x`` as a plain Python number when it is a NumPy scalar (its ``.item()``), else unchanged."""
    return x.item() if hasattr(x, "item") and type(x) not in (int, float, bool) else x


@dataclass(frozen=True)
class ErrorEstimate:
    """An error of the construction: a value, its 95% interval where it is statistical, the
    method that produced it, and the proven ``bound`` it must not exceed (``None`` if none)."""

    name: str
    value: float
    method: str
    ci95: tuple[float, float] | None = None
    bound: float | None = None
    samples: int | None = None
    # a stratified estimate's strata (name, measure, samples, the error restricted to it, its share of the whole):
    # where a small set carries most of the error, as Yun's quantizer ramps do
    strata: tuple[dict, ...] | None = None

    def __post_init__(self) -> None:
        # NumPy scalars become plain Python numbers (they would print as ``np.float64(...)``);
        # exact values (int, Fraction) are kept as they are.
        object.__setattr__(self, "value", _plain(self.value))
        object.__setattr__(self, "bound", _plain(self.bound))
        if self.ci95 is not None:
            object.__setattr__(self, "ci95", (_plain(self.ci95[0]), _plain(self.ci95[1])))

    @property
    def within_bound(self) -> bool:
        if self.bound is None:
            return True
        low = self.value if self.ci95 is None else self.ci95[0]
        return low <= self.bound

    def as_dict(self) -> dict:
        return {"name": self.name, "value": self.value, "ci95": None if self.ci95 is None else list(self.ci95),
                "bound": self.bound, "within_bound": self.within_bound, "samples": self.samples, "method": self.method,
                **({"strata": [dict(x) for x in self.strata]} if self.strata else {})}


@dataclass(frozen=True)
class ConstructionReport:
    """What a construction built and what was verified about it.

    ``ok`` is true when at least one check ran, every check passed and every error respects its
    bound: a command that built a network whose report is not ``ok`` must not exit 0. A report
    straight from a builder, before its checker ran (``build_sum``, ``build_fixed_memory``), has
    no checks and is not ``ok``: nothing was verified yet (it said ``True``: a fresh audit,
    2026-11-28).
    """

    construction: str
    claim: str
    size: Size
    checks: tuple[Check, ...] = ()
    errors: tuple[ErrorEstimate, ...] = ()
    bounds: dict = field(default_factory=dict)
    margins: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    notes: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks) and all(e.within_bound for e in self.errors)

    def check(self, name: str) -> Check:
        """The check whose property is ``name`` (KeyError if absent)."""
        for c in self.checks:
            if c.property == name:
                return c
        raise KeyError(name)

    def error(self, name: str) -> ErrorEstimate:
        """The error estimate called ``name`` (KeyError if absent)."""
        for e in self.errors:
            if e.name == name:
                return e
        raise KeyError(name)

    def with_results(self, checks=(), errors=()) -> "ConstructionReport":
        """A copy with more checks and error estimates appended (reports are immutable)."""
        return replace(self, checks=self.checks + tuple(checks), errors=self.errors + tuple(errors))

    def failures(self) -> list[str]:
        """One line per failed check or error above its bound."""
        out = [f"{c.property}: {c.failures} of {c.points} points fail ({c.arithmetic})" if c.points
               else f"{c.property}: no point could be checked" for c in self.checks if not c.passed]
        out += [f"{e.name} = {e.value:.3g} exceeds its bound {e.bound:.3g} ({e.method})" for e in self.errors
                if not e.within_bound]
        return out

    def as_dict(self) -> dict[str, Any]:
        return jsonable({"construction": self.construction, "claim": self.claim, "ok": self.ok,
                         "size": self.size.as_dict(), "checks": [c.as_dict() for c in self.checks],
                         "errors": [e.as_dict() for e in self.errors], "bounds": self.bounds,
                         "margins": self.margins,
                         "constants": self.constants, "notes": self.notes})
