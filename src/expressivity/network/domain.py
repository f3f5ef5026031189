"""Which inputs a network's claim covers: part of its contract, like its valid lengths.

A construction's claim holds on the inputs it was built and checked for, not on every input its
weights accept: a reversal circuit whose softmax sharpness was chosen for inputs spanning 5 runs
on ``1e12, 1, 2, 3, 4, 5`` and returns 9 where the reversal is 5. :class:`InputDomain` records
those inputs; :class:`~expressivity.network.network.Network` carries one
(``Network.input_domain``) and its evaluators refuse inputs outside it unless asked explicitly
(``allow_outside=True``; ``--allow-outside`` on the command line), in which case results are
marked as outside the construction's claim.

A domain is a list of :class:`Field` (what some input dimensions hold at every token: real values
in an interval and within a spread, one of a few exact values, or a one-hot token over named
values) plus sequence rules (:mod:`~expressivity.network.sequence_rules`: a BOS token first, a
start flag, pointers that stay inside the sequence). Input dimensions no field names must be 0.
Tokens are rows: inputs are ``(n, d_in)`` or ``(batch, n, d_in)``.

``built_for`` keeps the facts the claim was built for (scale, margin, tolerance, error bound) and
``fix`` how to rebuild for other inputs; both go into refusals. ``origin`` says whether the
construction recorded the domain or a loader derived it for a folder saved before domains were
recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from expressivity.errors import NetworkError
from expressivity.network.numbers import fmt, round_down
from expressivity.records import jsonable
from expressivity.network.sequence_rules import RULES, rule_from_dict
from expressivity.network.serial import number_from_json, number_to_json

KINDS = ("real", "set", "one-hot")
ARITHMETICS = ("exact", "float64", "float32")   # what InputDomain.arithmetic may name (torch float64 is float64)
# A float answer of an exact claim agrees with the exact answer when within this fraction of |exact answer|
# (an exact 0 must be answered 0): the rounding of the output itself, reported as "within", never as equal.
# Relative to the answer, not to max(1, |answer|): an answer near 0 left by cancelling large inputs is
# rounding noise (float32 answered 0 for -1/50000, a review), not an answer within rounding
EXACT_AGREEMENT = {"float64": 1e-9, "float32": 1e-4}
MAX_NAMES = 8        # describe() lists at most this many names of a one-hot field
SHORT_DIGITS = 16    # an exact number longer than this is shown as a float (or a power of ten) in messages


def _short_down(limit) -> str:
    """An upper limit for a message, as :func:`short` gives it but never rounded up past itself: "up to 56295" was
    shown for 56294.995, and 56295 typed back was refused (a fresh audit, 2026-11-29)."""
    text = short(limit)
    try:
        shown, value = float(text), float(limit)
    except (ValueError, OverflowError):
        return text
    if not (math.isfinite(value) and value > 0 and shown > value):
        return text
    return f"{round_down(value, 6):.6g}"   # six significant digits, as .6g shows them


def short(v) -> str:
    """A number for a one-line message: exact numbers as themselves when short, else ``1.5e+40`` or ``about 10^999``."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer, Fraction)):
        text = fmt(Fraction(v)) if isinstance(v, Fraction) else str(int(v))
        if len(text) <= SHORT_DIGITS:
            return text
        try:
            return f"{float(v):.6g}"
        except OverflowError:   # beyond float64: a mantissa and the exponent of its integer part
            digits = str(abs(int(v)))
            fraction = digits[1:6].rstrip("0")
            return f"{'-' if v < 0 else ''}{digits[0]}{'.' + fraction if fraction else ''}e+{len(digits) - 1}"
    try:
        return f"{float(v):.6g}"
    except (TypeError, ValueError):
        return repr(v)[:SHORT_DIGITS]


def _apart(a, b) -> tuple[str, str]:
    """``a`` and ``b`` with the fewest significant digits (7 to 17) that write them differently; exact text past
    that (a float's 17 digits tell any two floats apart, so only exact numbers get that far)."""
    for digits in range(7, 18):
        try:
            left, right = f"{float(a):.{digits}g}", f"{float(b):.{digits}g}"
        except OverflowError:
            break
        if left != right:
            return left, right
    return str(a), str(b)


def _bound(value, what: str):
    """A domain bound: ``None``, an int or ``Fraction`` (kept exact) or a finite float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, np.integer, np.floating)):
        raise NetworkError(f"{what} must be a number or None, got {value!r}")
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        raise NetworkError(f"{what} must be finite (leave it None for no limit), got {value!r}")
    return value


@dataclass(frozen=True)
class Field:
    """What the input dimensions ``dims`` (input labels) hold at every token.

    Build one with :meth:`real`, :meth:`one_of` or :meth:`one_hot`:

    * ``real``: every value in ``[lo, hi]`` (``hi`` excluded when ``hi_open``; ``None``: no limit),
      and ``max - min`` over one input's tokens (all dimensions of the field) at most ``spread``;
    * ``set``: every value one of ``values`` (exact numbers);
    * ``one-hot``: exactly one dimension is 1 and the others 0 (none when ``optional``);
      ``names[k]`` is the value dimension ``dims[k]`` stands for (a token's decoded value).
    """

    dims: tuple[str, ...]
    kind: str
    lo: object = None
    hi: object = None
    hi_open: bool = False
    spread: object = None
    values: tuple | None = None
    names: tuple | None = None
    optional: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.dims, str) or not self.dims or not all(isinstance(d, str) for d in self.dims):
            raise NetworkError(f"a domain field names its input dimensions (a tuple of labels), got {self.dims!r}")
        object.__setattr__(self, "dims", tuple(self.dims))
        if self.kind not in KINDS:
            raise NetworkError(f"a domain field's kind is one of {', '.join(KINDS)}, got {self.kind!r}")
        for name in ("lo", "hi", "spread"):
            object.__setattr__(self, name, _bound(getattr(self, name), f"a domain field's {name}"))
        if self.lo is not None and self.hi is not None and self.hi < self.lo:
            raise NetworkError(f"a domain field's interval [{short(self.lo)}, {short(self.hi)}] is empty")
        if self.spread is not None and self.spread < 0:
            raise NetworkError(f"a domain field's spread must be >= 0, got {short(self.spread)}")
        if self.kind == "set":
            if not self.values:
                raise NetworkError("a 'set' domain field lists at least one value")
            object.__setattr__(self, "values", tuple(_bound(v, "a domain value") for v in self.values))
        if self.kind == "one-hot":
            names = tuple(self.names) if self.names is not None else tuple(str(k) for k in range(len(self.dims)))
            if len(names) != len(self.dims):
                raise NetworkError(f"a one-hot domain field has {len(self.dims)} dimensions and {len(names)} names")
            object.__setattr__(self, "names", names)

    @classmethod
    def real(cls, dims, lo=None, hi=None, *, spread=None, hi_open: bool = False) -> "Field":
        return cls(tuple(dims), "real", lo=lo, hi=hi, hi_open=hi_open, spread=spread)

    @classmethod
    def one_of(cls, dims, values) -> "Field":
        return cls(tuple(dims), "set", values=tuple(values))

    @classmethod
    def one_hot(cls, dims, names=None, *, optional: bool = False) -> "Field":
        return cls(tuple(dims), "one-hot", names=None if names is None else tuple(names), optional=optional)

    # ---- questions ---------------------------------------------------------------------
    def interval(self) -> str:
        """``[0, 1)``, ``[-1, 1]``, ``>= 0``; empty when there is no limit."""
        if self.lo is None and self.hi is None:
            return ""
        if self.hi is None:
            return f">= {short(self.lo)}"
        close = ")" if self.hi_open else "]"
        if self.lo is None:
            return f"{'<' if self.hi_open else '<='} {short(self.hi)}"
        return f"[{short(self.lo)}, {short(self.hi)}{close}"

    def describe(self) -> str:
        """For messages: ``x real with max - min <= 5``, ``v in [-1, 1]``, ``token ids 0..3 (BOS, 1, 2, 3)``."""
        what = ", ".join(self.dims) if len(self.dims) <= 3 else f"{self.dims[0]}..{self.dims[-1]}"
        if self.kind == "one-hot":
            names = ", ".join(str(n) for n in self.names[:MAX_NAMES]) + (", ..." if len(self.names) > MAX_NAMES else "")
            none = " or none" if self.optional else ""
            return f"token ids 0..{len(self.dims) - 1}{none} ({names})"
        if self.kind == "set":
            return f"{what} in {{{', '.join(short(v) for v in self.values)}}}"
        parts = [p for p in (self.interval() and f"in {self.interval()}",
                             self.spread is not None and f"with max - min <= {short(self.spread)}") if p]
        return f"{what} " + (" ".join(parts) if parts else "any real")

    def check(self, values: np.ndarray, where) -> str | None:
        """Why ``values`` (``(batch, n, len(dims))``) break this field, or ``None``; ``where(b, t)`` names a token."""
        exact = values.dtype == object
        if self.kind == "real":
            return self._check_real(values, where, exact)
        if self.kind == "set":
            bad = ~_member(values, self.values, exact)
            return _first(bad, lambda b, t, k: f"{where(b, t)} has {self.dims[k]} = {short(values[b, t, k])}, "
                                               f"not one of {{{', '.join(short(v) for v in self.values)}}}")
        bad = ~_member(values, (0, 1), exact)
        message = _first(bad, lambda b, t, k: f"{where(b, t)} has {self.dims[k]} = {short(values[b, t, k])}, not 0 or 1")
        if message:
            return message
        count = np.asarray(values.sum(axis=-1), dtype=np.float64)
        bad = (count > 1) | ((count < 1) if not self.optional else False)
        return _first(bad[..., None], lambda b, t, k: f"{where(b, t)} sets {int(count[b, t])} of the one-hot "
                                                         f"dimensions {self.describe_dims()}, not {'at most ' if self.optional else ''}one")

    def describe_dims(self) -> str:
        return ", ".join(self.dims) if len(self.dims) <= 3 else f"{self.dims[0]}..{self.dims[-1]}"

    def _check_real(self, values: np.ndarray, where, exact: bool) -> str | None:
        def bound(b):
            return b if exact else float(b)

        if self.lo is not None or self.hi is not None:
            bad = np.zeros(values.shape, dtype=bool)
            if self.lo is not None:
                bad |= np.asarray(values < bound(self.lo), dtype=bool)
            if self.hi is not None:
                bad |= np.asarray(values >= bound(self.hi) if self.hi_open else values > bound(self.hi), dtype=bool)
            message = _first(bad, lambda b, t, k: f"{where(b, t)} has {self.dims[k]} = {short(values[b, t, k])}, "
                                                   f"outside {self.interval()}")
            if message:
                return message
        if self.spread is not None and values.size:
            flat = values.reshape(values.shape[0], -1)
            # exactly, floats too: a float difference rounds, and 5 - (-2^-60) is 5 in float64 (above a spread of 5)
            spans = [max(row) - min(row) for row in flat] if exact else \
                [Fraction(float(row.max())) - Fraction(float(row.min())) if np.isfinite(row).all() else row.max() - row.min()
                 for row in flat]
            for b, span in enumerate(spans):
                if span > bound(self.spread):
                    label = "the input" if values.shape[0] == 1 else f"input {b}"
                    shown = short(span if exact else float(span))   # a float input's span as a float (exact above)
                    if shown == short(self.spread):   # ... unless that shows it as the bound itself: show the excess
                        shown = f"{short(self.spread)} + {float(Fraction(span) - Fraction(self.spread)):.2g}"
                    return f"max - min of {self.describe_dims()} in {label} is {shown}, above {short(self.spread)}"
        return None

    def sample(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        """Values ``shape + (len(dims),)`` inside the field (float64): an example input or a test of an export."""
        batch, n = shape
        k = len(self.dims)
        if self.kind == "set":
            return rng.choice(np.array([float(v) for v in self.values]), size=(batch, n, k))
        if self.kind == "one-hot":
            out = np.zeros((batch, n, k))
            ids = rng.integers(0, k, size=(batch, n))
            np.put_along_axis(out, ids[..., None], 1.0, axis=-1)
            return out
        lo = -1.0 if self.lo is None else float(self.lo)
        hi = (lo + 2.0 if self.lo is not None else 1.0) if self.hi is None else float(self.hi)
        if self.lo is None and self.hi is not None:
            lo = hi - 2.0
        width = hi - lo if self.spread is None else min(hi - lo, float(self.spread))
        start = rng.uniform(lo, hi - width, size=(batch, 1, 1)) if hi - width > lo else np.full((batch, 1, 1), lo)
        values = start + rng.uniform(0.0, 1.0, size=(batch, n, k)) * width
        return np.minimum(values, np.nextafter(hi, -np.inf)) if self.hi_open else values

    # ---- serialisation -----------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {"dims": list(self.dims), "kind": self.kind}
        if self.kind == "real":
            out |= {name: None if getattr(self, name) is None else number_to_json(getattr(self, name))
                    for name in ("lo", "hi", "spread")} | {"hi_open": self.hi_open}
        elif self.kind == "set":
            out["values"] = [number_to_json(v) for v in self.values]
        else:
            out |= {"names": jsonable(list(self.names)), "optional": self.optional}
        return out

    @classmethod
    def from_dict(cls, d) -> "Field":
        if not isinstance(d, dict) or d.get("kind") not in KINDS or not isinstance(d.get("dims"), list):
            raise NetworkError(f"a domain field must be {{'dims': [...], 'kind': {' | '.join(KINDS)}, ...}}, got "
                               f"{str(d)[:80]!r}")
        number = (lambda v: None if v is None else number_from_json(v))  # noqa: E731
        if d["kind"] == "real":
            return cls.real(d["dims"], number(d.get("lo")), number(d.get("hi")), spread=number(d.get("spread")),
                            hi_open=bool(d.get("hi_open")))
        if d["kind"] == "set":
            return cls.one_of(d["dims"], [number_from_json(v) for v in d.get("values") or ()])
        return cls.one_hot(d["dims"], d.get("names"), optional=bool(d.get("optional")))


def _member(values: np.ndarray, allowed, exact: bool) -> np.ndarray:
    """Which entries of ``values`` are one of ``allowed`` (exactly, for exact arrays)."""
    if not exact:
        return np.isin(values, [float(v) for v in allowed])
    found = np.zeros(values.shape, dtype=bool)
    for v in allowed:                     # elementwise == on Python numbers: exact
        found |= np.asarray(values == v, dtype=bool)
    return found


def _first(bad: np.ndarray, message) -> str | None:
    """``message(b, t, k)`` at the first true entry of ``bad`` ``(batch, n, k)``, or ``None``."""
    if not bad.any():
        return None
    b, t, k = np.argwhere(bad)[0]
    return message(int(b), int(t), int(k))


@dataclass(frozen=True)
class InputDomain:
    """The inputs a network's claim covers (see the module notes).

    Attributes:
        fields: what named input dimensions hold at every token; every other input dimension is 0.
        rules: sequence rules (:data:`~expressivity.network.sequence_rules.RULES`).
        exact: the claim is exact (no error bound) on the whole domain.
        built_for: facts the claim was built for, JSON scalars (``scale``, ``margin``, ``tolerance``,
            ``max_abs_error``): refusals name them.
        fix: what to do for inputs outside the domain (``rebuild it with --input-range R ...``).
        claimed_from: outputs at positions ``< claimed_from`` are outside the claim (a lag that
            reaches before the start); 0: every position.
        origin: ``"recorded"`` (by the construction) or ``"derived: ..."`` (by a loader, for a folder
            saved before domains were recorded).
        arithmetic: where float evaluation is inside the claim: ``{dtype: largest |value|}`` over
            :data:`ARITHMETICS` (``None``: any value in the domain); a dtype not listed is outside the
            claim (its rounding is not shown to keep the answer). Empty: every arithmetic (the
            default; the claim's checks say in which).
    """

    fields: tuple[Field, ...]
    rules: tuple = ()
    exact: bool = False
    built_for: dict = field(default_factory=dict, compare=False)
    fix: str = ""
    claimed_from: int = 0
    origin: str = "recorded"
    arithmetic: dict = field(default_factory=dict)

    @property
    def is_claim(self) -> bool:
        """Whether this domain states where a claim holds: recorded by a construction, or derived from its report
        or vocabulary; not one a loader derived from a token model's embedding alone (:data:`TAKES_ORIGIN`), which
        says what the model takes."""
        return self.origin != TAKES_ORIGIN

    def __post_init__(self) -> None:
        unknown = set(self.arithmetic) - set(ARITHMETICS)
        if unknown:
            raise NetworkError(f"an input domain's arithmetic names {sorted(unknown)}; known: {', '.join(ARITHMETICS)}")
        object.__setattr__(self, "arithmetic", {name: _bound(limit, f"the {name} limit")
                                                for name, limit in dict(self.arithmetic).items()})
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "rules", tuple(self.rules))
        if not all(isinstance(f, Field) for f in self.fields):
            raise NetworkError("an input domain's fields must be Field objects (expressivity.network.domain.Field)")
        if not all(type(r) in RULES.values() for r in self.rules):
            raise NetworkError(f"an input domain's rules must come from the rule table ({', '.join(RULES)})")
        dims = [d for f in self.fields for d in f.dims]
        if len(set(dims)) != len(dims):
            raise NetworkError(f"an input dimension appears in two domain fields: {sorted(d for d in set(dims) if dims.count(d) > 1)}")
        if isinstance(self.claimed_from, bool) or not isinstance(self.claimed_from, int) or self.claimed_from < 0:
            raise NetworkError(f"claimed_from must be an integer >= 0, got {self.claimed_from!r}")

    @property
    def dims(self) -> tuple[str, ...]:
        """Every input label a field names."""
        return tuple(d for f in self.fields for d in f.dims)

    def field_of(self, dim: str) -> Field | None:
        return next((f for f in self.fields if dim in f.dims), None)

    def check_labels(self, input_labels: tuple[str, ...]) -> None:
        """One-line :class:`NetworkError` unless every dimension the domain names is an input label."""
        names = list(self.dims) + [d for r in self.rules for d in r.dims_used()]
        missing = [d for d in names if d not in input_labels]
        if missing:
            raise NetworkError(f"the input domain names {', '.join(missing[:4])}, which are not input dimensions of "
                               f"the network ({', '.join(input_labels[:6])}{', ...' if len(input_labels) > 6 else ''})")

    def violation(self, X: np.ndarray, input_labels: tuple[str, ...], arithmetic: str | None = None) -> str | None:
        """Why ``X`` (``(n, d_in)`` or ``(batch, n, d_in)``, float or exact) is outside the domain, or ``None``;
        ``arithmetic`` (one of :data:`ARITHMETICS`; ``None``: not asked) the one it is evaluated in."""
        X3 = X[None] if X.ndim == 2 else X
        batch = X3.shape[0]

        def where(b: int, t: int) -> str:
            return f"token {t}" if batch == 1 else f"input {b}, token {t}"

        for f in self.fields:
            cols = [input_labels.index(d) for d in f.dims]
            message = f.check(X3[..., cols], where)
            if message:
                return message
        named = set(self.dims)
        rest = [k for k, label in enumerate(input_labels) if label not in named]
        if rest:
            values = X3[..., rest]
            bad = np.asarray(values != 0, dtype=bool)
            message = _first(bad, lambda b, t, k: f"{where(b, t)} has {input_labels[rest[k]]} = "
                                                   f"{short(values[b, t, k])}; the claim covers inputs with it 0")
            if message:
                return message
        for rule in self.rules:
            message = rule.check(X3, input_labels, where, self)
            if message:
                return message
        # last: an input outside the domain is named for what it is, not for the arithmetic it would need
        return self.arithmetic_violation(X3, arithmetic)

    @property
    def exact_only(self) -> bool:
        """Whether the claim holds in exact arithmetic and in no float one (:attr:`arithmetic`)."""
        return bool(self.arithmetic) and "exact" in self.arithmetic and "float64" not in self.arithmetic

    def arithmetic_violation(self, X: np.ndarray, arithmetic: str | None, with_fix: bool = True) -> str | None:
        """Why evaluating ``X`` in ``arithmetic`` is outside the claim (see :attr:`arithmetic`), or ``None``; with
        ``with_fix``, followed by what to do (``"; evaluate in ... arithmetic"``), for a caller that says its own."""
        if arithmetic is None or not self.arithmetic:
            return None
        if arithmetic not in self.arithmetic:
            return (f"{ARITHMETIC_REASONS[0]} {', '.join(self.arithmetic)} arithmetic, not {arithmetic} (its rounding is not "
                    f"shown to keep the answer)"
                    + (f"; evaluate in {next(iter(self.arithmetic))} arithmetic" if with_fix else ""))
        limit = self.arithmetic[arithmetic]
        if limit is None or X.size == 0:
            return None
        largest = (max(abs(v) for v in X.ravel()) if X.dtype == object
                   else float(np.max(np.abs(np.asarray(X, dtype=np.float64)))))
        if largest > limit:
            wider = [name for name in ARITHMETICS if name in self.arithmetic and name != arithmetic
                     and (self.arithmetic[name] is None or self.arithmetic[name] > largest)]
            fix = f"evaluate in {wider[0]} arithmetic" if wider else "use smaller values"
            # "56295 is beyond 56295" (an audit, 2026-11-29): enough digits to tell them apart
            shown, bound = short(largest), short(limit)
            if shown == bound:
                shown, bound = _apart(largest, limit)
            return (f"{ARITHMETIC_REASONS[1]} {shown} is beyond {bound}, the largest {arithmetic} carries "
                    f"through this network within its claim" + (f"; {fix}" if with_fix else ""))
        return None

    def sample(self, rng: np.random.Generator, batch: int, n: int, input_labels: tuple[str, ...]) -> np.ndarray:
        """Inputs ``(batch, n, d_in)`` (float64) inside the domain: examples, and inputs to check exports on."""
        X = np.zeros((batch, n, len(input_labels)))
        for f in self.fields:
            X[..., [input_labels.index(d) for d in f.dims]] = f.sample(rng, (batch, n))
        for rule in self.rules:
            rule.impose(X, input_labels, rng, self)
        return X

    # ---- printing ----------------------------------------------------------------------
    def describe(self, input_labels: tuple[str, ...] | None = None, facts: bool = True) -> str:
        """One line: the fields, the rules, and (``facts``) what the claim was built for."""
        parts = [f.describe() for f in self.fields] or ["no input dimension"]
        rest = [] if input_labels is None else [lab for lab in input_labels if lab not in set(self.dims)]
        if rest:
            parts.append(f"{', '.join(rest) if len(rest) <= 3 else f'{len(rest)} other inputs'} = 0")
        parts += [r.describe(self) for r in self.rules]
        if self.claimed_from:
            parts.append(f"outputs claimed from position {self.claimed_from} on")
        text = "; ".join(parts)
        built = ", ".join(f"{k.replace('_', ' ')} {short(v) if isinstance(v, (int, float, Fraction)) else v}"
                          for k, v in self.built_for.items() if v is not None) if facts else ""
        # the arithmetics the claim holds in, with their largest |value| (a prose audit, 2026-11-28: "up to the
        # arithmetic's limit" was printed, the limit itself only in a refusal)
        held = ", ".join(name + (f" for |value| up to {_short_down(limit)}" if limit is not None else "")
                         for name, limit in self.arithmetic.items()) if facts else ""
        return (text + (f" (built with {built})" if built else "") + (f"; holds in {held}" if held else "")
                + (" [exact]" if self.exact and facts else ""))

    def __str__(self) -> str:
        return self.describe()

    def names(self) -> tuple | None:
        """The decoded value of each token id when the domain is one one-hot field (a token network), else ``None``."""
        hot = [f for f in self.fields if f.kind == "one-hot"]
        return hot[0].names if len(self.fields) == 1 and hot else None

    # ---- serialisation -----------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {"fields": [f.to_dict() for f in self.fields], "rules": [r.to_dict() for r in self.rules],
               "exact": self.exact, "built_for": jsonable(dict(self.built_for)), "fix": self.fix,
               "claimed_from": self.claimed_from, "origin": self.origin}
        return out | ({"arithmetic": {k: number_to_json(v) if v is not None else None for k, v in self.arithmetic.items()}}
                      if self.arithmetic else {})

    @classmethod
    def from_dict(cls, d) -> "InputDomain":
        """Inverse of :meth:`to_dict`; a one-line :class:`NetworkError` on anything else."""
        if not isinstance(d, dict) or not isinstance(d.get("fields"), list):
            raise NetworkError(f"input_domain must be {{'fields': [...], ...}}, got {str(d)[:80]!r}")
        built_for = d.get("built_for") or {}
        if not isinstance(built_for, dict):
            raise NetworkError("input_domain's built_for must be an object")
        arithmetic = d.get("arithmetic") or {}
        if not isinstance(arithmetic, dict):
            raise NetworkError("input_domain's arithmetic must be an object")
        return cls(tuple(Field.from_dict(f) for f in d["fields"]),
                   tuple(rule_from_dict(r) for r in d.get("rules") or ()), exact=bool(d.get("exact")),
                   built_for=built_for, fix=str(d.get("fix") or ""), claimed_from=d.get("claimed_from", 0),
                   origin=str(d.get("origin") or "recorded"),
                   arithmetic={k: None if v is None else number_from_json(v) for k, v in arithmetic.items()})


# how InputDomain.arithmetic_violation's reasons begin (each ends with its own fix)
ARITHMETIC_REASONS = ("the claim holds in", "a value of magnitude")


def refusal(name: str, domain: InputDomain, reason: str, input_labels=None, flag: str = "allow_outside=True") -> str:
    """The one-line message for an input outside ``domain`` (or, where :meth:`InputDomain.arithmetic_violation`
    gave ``reason``, an evaluation in an arithmetic the claim does not hold in: that reason names its own fix)."""
    if reason.startswith(ARITHMETIC_REASONS):
        return f"network {name!r}: {reason}; or pass {flag} to run it outside its construction's claim"
    fix = domain.fix or "give an input inside it"
    return (f"{reason}, outside the inputs network {name!r} is built and verified for "
            f"({domain.describe(input_labels, facts=False)}); {fix}, or pass {flag} to run it outside its construction's claim")


# The origin of a domain a loader derived from a token model's embedding rows (a TransformerLens checkpoint
# with no expressivity.json): the token ids it takes, no claim (a random checkpoint read "within_claim: true",
# a fresh audit, 2026-11-29)
TAKES_ORIGIN = "derived: the token ids the embedding takes"


def token_domain(names, *, first: str | None = None, origin: str = "recorded",
                 labels: tuple[str, ...] | None = None, arithmetic: dict | None = None) -> InputDomain:
    """The domain of a token network: one-hot over ``names`` (the value each id stands for), with
    ``first`` (a label, such as RASP's ``tokens:BOS``) at the first position only; ``arithmetic`` as
    :attr:`InputDomain.arithmetic` (none: any)."""
    from expressivity.network.sequence_rules import FirstOnly

    names = tuple(names)
    labels = tuple(labels) if labels is not None else tuple(f"token {k}" for k in range(len(names)))
    rules = (FirstOnly(first),) if first is not None else ()
    fix = f"give token ids in 0..{len(names) - 1}" + (f", {names[labels.index(first)]} first and only first"
                                                      if first is not None else "")
    return InputDomain((Field.one_hot(labels, names),), rules, exact=False, fix=fix, origin=origin,
                       arithmetic=dict(arithmetic or {}))


def any_reals(dims, **options) -> InputDomain:
    """Every real value in ``dims`` (other inputs 0): a claim that holds for any input."""
    return InputDomain((Field.real(dims),), **options)
