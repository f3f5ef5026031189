"""Run a saved network on the user's input: parse ``--input`` text, evaluate, name every number.

Input text (tokens as rows, like every array here):

* **token networks** (one-hot inputs: trained token models, imported TransformerLens models):
  token ids, ``"3,1,2"`` or ``"3 1 2"``;
* networks whose saved metadata names **input dimensions** (``circuit --out`` saves
  ``input_dims = ["x"]``): one value per token for each named dimension, other dimensions 0;
  ``"1,2,3"`` is three tokens when one dimension is named; where the metadata also says
  ``input_dims_optional`` (a TransformerLens export whose input domain names one dimension),
  whole rows of ``d_in`` values (``"1,0; 2,0"``) are accepted too;
* otherwise ``d_in`` numbers per token, tokens separated by ``;`` (``"1,0; 0,1"``); when
  ``d_in = 1``, ``"1,2,3"`` is three tokens.

Numbers may be integers, decimals, ``1e-3`` or fractions ``1/3``; they are kept exact (so
``--dtype exact`` reads what was typed) and converted to float64 for the float evaluators. A JSON
list of tokens (``[[1, 0], [0, 1]]``) is accepted too. NaN and infinities are refused.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np

from expressivity.errors import ExpressivityError, NetworkError
from expressivity.network.answers import answers_of, plain
from expressivity.network.domain import EXACT_AGREEMENT, short
from expressivity.network.evaluate import DTYPES, evaluate
from expressivity.network.inputs import input_dims, input_help, takes_tokens
from expressivity.network.network import Network
from expressivity.network.numbers import TooManyDigits, exact_from_text

MAX_TOKENS = 4096
MAX_VALUES = 1_000_000
ARITHMETIC = {"exact": "exact rationals (Python int/Fraction)", "float64": "NumPy float64 reference pass",
              "float32": "PyTorch float32", "torch-float64": "PyTorch float64"}


def _number(text: str, where: str) -> Fraction:
    t = text.strip()
    try:
        value = exact_from_text(t)
    except TooManyDigits as exc:
        raise ExpressivityError(f"--input {where}: {exc}") from None
    except (ValueError, ZeroDivisionError):
        low = t.lower().lstrip("+-")
        if low in ("nan", "inf", "infinity"):
            raise ExpressivityError(f"--input {where}: {text!r} is not a finite number") from None
        raise ExpressivityError(f"--input {where}: {text!r} is not a number (write e.g. 2, -0.5, 1e-3 or 1/3)") from None
    return value


def _json_tokens(text: str) -> list[list[Fraction]]:
    try:
        value = json.loads(text, parse_float=str, parse_int=str, parse_constant=lambda c: c)
    except json.JSONDecodeError as exc:
        raise ExpressivityError(f"--input is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, list):
        raise ExpressivityError("--input JSON must be a list of tokens, e.g. [[1, 0], [0, 1]]")
    rows = []
    for i, tok in enumerate(value):
        items = tok if isinstance(tok, list) else [tok]
        row = []
        for v in items:
            if not isinstance(v, str):
                raise ExpressivityError(f"--input token {i}: {v!r} is not a number")
            row.append(_number(v, f"token {i}"))
        rows.append(row)
    return rows


def _split(text: str, one_per_token: bool) -> list[list[Fraction]]:
    if text.lstrip()[:1] in ("[", "{"):
        return _json_tokens(text)
    text = text.replace("\n", ";")
    if ";" in text:
        parts = [p for p in text.split(";")]
        if parts and not parts[-1].strip():
            parts = parts[:-1]                      # a trailing ';' is harmless
        rows = []
        for i, part in enumerate(parts):
            fields = [f for f in part.replace(",", " ").split()]
            if not fields:
                raise ExpressivityError(f"--input token {i} is empty; write numbers between the ';'")
            rows.append([_number(f, f"token {i}") for f in fields])
        return rows
    raw = text.split(",") if "," in text else text.split()
    if any(not f.strip() for f in raw):
        raise ExpressivityError(f"--input {text!r} has an empty field; give comma-separated numbers such as '1,2,3'")
    values = [_number(f, f"value {i}") for i, f in enumerate(raw)]
    return [[v] for v in values] if one_per_token else [values]


def parse_input(net: Network, text, allow_length: bool = False, allow_outside: bool = False) -> np.ndarray:
    """The network input ``(n, d_in)`` (an object array of exact numbers) that ``text`` describes.

    A length outside ``net.valid_lengths`` is refused unless ``allow_length``, a value outside
    ``net.input_domain`` unless ``allow_outside``; either given where it cannot apply is refused."""
    refuse_inapplicable(net, allow_length, allow_outside)
    if not isinstance(text, str) or not text.strip():
        raise ExpressivityError(f"--input is empty; give {input_help(net)}")
    if len(text) > 50 * MAX_VALUES:
        raise ExpressivityError("--input is too long; give at most a million numbers")
    tokens = takes_tokens(net)
    dims = input_dims(net)
    per_token = 1 if tokens else (len(dims) if dims is not None else net.d_in)
    try:
        rows = _split(text, one_per_token=per_token == 1)
    except ExpressivityError as exc:
        if not tokens:
            raise
        # token names typed for ids ("x,a,x"): the error named numbers, not the ids the network takes (an audit,
        # 2026-11-29)
        raise ExpressivityError(f"{str(exc).split(' (write e.g.')[0]}; this network takes {input_help(net)}") from None
    if not rows:
        raise ExpressivityError(f"--input has no tokens; give {input_help(net)}")
    if (dims is not None and net.metadata.get("input_dims_optional") is True and per_token != net.d_in
            and all(len(row) == net.d_in for row in rows)):
        dims, per_token = None, net.d_in          # whole rows, every input dimension given
    if len(rows) > MAX_TOKENS:
        raise ExpressivityError(f"--input has {len(rows)} tokens; at most {MAX_TOKENS} are allowed")
    for i, row in enumerate(rows):
        if len(row) != per_token:
            rows_too = (f", or all {net.d_in} values ({', '.join(net.input_labels[:6])}) per token separated by ';'"
                        if dims is not None and net.metadata.get("input_dims_optional") is True else "")
            raise ExpressivityError(f"--input token {i} has {len(row)} values, the network takes {per_token} per token; "
                                    f"give {input_help(net)}{rows_too}")
    n = len(rows)
    X = np.zeros((n, net.d_in), dtype=object)
    X[:] = 0
    if tokens:
        for i, (v,) in enumerate(rows):
            if v.denominator != 1 or not 0 <= v < net.d_in:
                raise ExpressivityError(f"--input token {i}: {short(v)} is not a token id in 0..{net.d_in - 1}")
            X[i, int(v)] = 1
    else:
        cols = dims if dims is not None else list(range(net.d_in))
        for i, row in enumerate(rows):
            for c, v in zip(cols, row):
                X[i, c] = v.numerator if v.denominator == 1 else v
    try:
        net.check_input(X, allow_length=allow_length, allow_outside=allow_outside)
    except ExpressivityError as exc:
        raise ExpressivityError(f"--input: {as_flags(str(exc))}") from None
    return X


def refuse_inapplicable(net: Network, allow_length: bool, allow_outside: bool) -> None:
    """``--allow-length`` / ``--allow-outside`` on a network with no such claim to step outside: one line naming it."""
    if allow_length and (net.valid_lengths is None or net.valid_lengths.is_any):
        raise ExpressivityError(f"--allow-length does not apply: network {net.name!r} records no valid lengths narrower "
                                f"than its weights take ({net.structural_lengths().describe()}); drop it")
    if allow_outside and net.input_domain is None:
        raise ExpressivityError(f"--allow-outside does not apply: network {net.name!r} records no input domain (its "
                                "inputs are not checked against a claim); drop it")


def as_flags(message: str) -> str:
    """A library message with its keyword arguments spelled as the command line's flags (of ``run``, ``show`` and
    ``export``, which take ``--allow-length`` and ``--allow-outside``)."""
    for keyword, flag in (("allow_length", "--allow-length"), ("allow_outside", "--allow-outside")):
        message = message.replace(f"{keyword}=True", flag).replace(f"{keyword} cannot", f"{flag} cannot")
    return dtype_flags(message)


def dtype_flags(message: str) -> str:
    """A library message's arithmetic advice spelled as ``--dtype``, and its advice to pass ``allow_length=True`` or
    ``allow_outside=True`` dropped: the line every command prints (a command with those flags has already spelled
    them, :func:`as_flags`; ``equivariance`` was told to pass ``--allow-outside``, which it does not take: a review,
    2026-11-29)."""
    for clause in ("; or pass allow_outside=True to run it outside its construction's claim",
                   ", or pass allow_outside=True to run it outside its construction's claim",
                   " (or pass allow_length=True to run it outside its construction's claim)",
                   "; pass allow_outside=True to run it anyway, its outputs marked as outside the claim"):
        message = message.replace(clause, "")
    for arithmetic in ("exact", "float64", "float32"):
        message = message.replace(f"evaluate in {arithmetic} arithmetic", f"run it with --dtype {arithmetic}")
    return message.replace("evaluate with dtype float64/float32", "use --dtype float64 or float32")


def as_dtype(X: np.ndarray, dtype: str) -> np.ndarray:
    """``X`` for the evaluator ``dtype``: exact numbers for ``exact``, float64 otherwise (one-line error on overflow)."""
    if dtype == "exact":
        return X
    out = np.empty(X.shape, dtype=np.float64)
    for k, v in enumerate(X.flat):
        try:
            out.flat[k] = float(v)
        except OverflowError:
            raise ExpressivityError(f"--input value {short(v)} is beyond the float64 range (|v| > 1.8e308); use smaller "
                                    "values or --dtype exact") from None
    return out


def default_dtype(net: Network) -> str:
    """``run``'s arithmetic when none is asked for: float64, or exact where the network's claim holds in
    exact arithmetic only (:attr:`~expressivity.network.domain.InputDomain.arithmetic`) and the network has an
    exact value. A hardmax construction exported with softmax keeps its exact-only domain but has none (and no
    claim): ``run --allow-outside`` and ``show`` refused it in exact arithmetic, which ``show`` cannot change (an
    audit, 2026-11-29); it runs in float64."""
    from expressivity.errors import EvaluationError
    from expressivity.network.exact import check_exact_evaluable

    if net.input_domain is None or not net.input_domain.exact_only:
        return "float64"
    try:
        check_exact_evaluable(net)
    except EvaluationError:
        return "float64"
    return "exact"


FLOAT_TYPES = {"float64": np.float64, "torch-float64": np.float64, "float32": np.float32}


def input_rounding(X: np.ndarray, dtype: str) -> dict | None:
    """How the float evaluator ``dtype`` rounds the typed (exact) input ``X``: ``None`` when it carries
    every value exactly (and for ``exact``), else ``{"dtype", "values": how many moved, "largest_change",
    "examples": [[typed, received], ...]}`` (the first three). The network answers for the rounded values."""
    cast = FLOAT_TYPES.get(dtype)
    if cast is None:
        return None
    moved, largest, examples = 0, Fraction(0), []
    for v in X.flat:
        with np.errstate(over="ignore"):    # a value beyond float32 becomes inf, skipped below: no warning
            received = cast(float(v))       # float64 first, as as_dtype does, then the evaluator's type
        if not math.isfinite(received):     # beyond float32: the domain's limits or the overflow check say it
            continue
        change = abs(Fraction(float(received)) - Fraction(v))
        if change:
            moved += 1
            largest = max(largest, change)
            if len(examples) < 3:
                examples.append([v, float(received)])
    if not moved:
        return None
    return {"dtype": dtype, "values": moved, "largest_change": float(largest), "examples": examples}


def differs_from_exact(net: Network, X: np.ndarray, out: np.ndarray, dtype: str, rounding: dict | None,
                        outs: tuple[str, ...]) -> tuple[str | None, dict | None]:
    """For a network whose claim is exact: whether the float answer ``out`` differs from the exact one.

    A float pass can leave an exact claim two ways: rounding the typed input (``0.49999999999``
    becomes ``0.5`` in float32, across a cell boundary), or rounding inside the network (values
    beyond what the float type carries exactly). The typed input is evaluated exactly and compared
    with ``out``, float rounding of the output allowed (:data:`EXACT_AGREEMENT`: relative 1e-4 in
    float32, 1e-9 in float64, of the exact answer; an exact 0 must be answered 0). Returns ``(reason,
    agreement)``: the reason when they differ (else ``None``), and how they compare (``{"equal":
    bool, "largest_difference", "relative", "allowed", "where"}``, ``"where"`` only when not equal),
    or ``(None, None)`` when no exact comparison applies (the claim is not exact, or the network
    cannot be evaluated exactly: softmax)."""
    if net.input_domain is None or not net.input_domain.exact:
        return None, None
    try:
        with np.errstate(all="ignore"):
            exact = evaluate(net, X, "exact", allow_length=True, allow_outside=True, check_finite=False)
    except ExpressivityError as exc:
        # an exact claim with no exact pass (a TransformerLens export puts a softmax where hardmax scores tie):
        # a float answer cannot be checked, and was shown as covered by the claim (a fuzz pass: -1.5e13 for 1)
        why = " ".join(str(exc).split()).split(";")[0]
        return (f"the network's claim is exact, but a {dtype} answer cannot be checked against exact arithmetic "
                f"here ({why})"), None
    tolerance = EXACT_AGREEMENT["float32" if dtype == "float32" else "float64"]
    agreement = {"equal": True, "largest_difference": 0.0, "relative": 0.0, "allowed": tolerance}
    for (i, k), want in np.ndenumerate(exact):
        got = float(out[i, k])
        try:
            gap = abs(Fraction(got) - Fraction(want)) if math.isfinite(got) else math.inf
            relative = (0.0 if not gap else math.inf if not want or gap == math.inf
                        else float(gap / abs(Fraction(want))))
        except OverflowError:   # the exact answer is beyond float64, the float one is not
            gap, relative = math.inf, math.inf
        where = f"{outs[k]} at token {i}: {fmt(got)} against {fmt(want)}"
        if gap and relative >= agreement["relative"]:
            agreement |= {"equal": False, "largest_difference": float(gap), "relative": relative, "where": where}
        if relative > tolerance:
            if rounding is None:
                return (f"the {dtype} answer differs from the exact one ({where}): {dtype} does not carry this "
                        "network's arithmetic on this input"), agreement
            moves = ", ".join(f"{_typed(typed)} becomes {received!r}, {_small(abs(Fraction(received) - Fraction(typed)))} "
                              "away" for typed, received in rounding["examples"])
            return (f"{rounding['values']} input value(s) are not {dtype} numbers ({moves}), and the {dtype} answer "
                    f"differs from the exact answer for the typed input ({where})"), agreement
    return None, agreement


def _exact_evaluable(net: Network) -> bool:
    """Whether ``net`` has an exact pass (:func:`~expressivity.network.exact.check_exact_evaluable`)."""
    from expressivity.network.exact import check_exact_evaluable

    try:
        check_exact_evaluable(net)
    except ExpressivityError:
        return False
    return True


def _small(q: Fraction) -> str:
    """A positive exact difference to two digits, also below float64's range (a subnormal input's
    rounding read "0 away")."""
    if q == 0 or float(q) != 0:
        return f"{float(q):.2g}"
    from decimal import Context, Decimal

    return f"{Context(prec=2).divide(Decimal(q.numerator), Decimal(q.denominator)):.1e}".replace("E", "e")


def _typed(v) -> str:
    """A typed value in a message: as a fraction when short (``1/3``), else as its nearest double
    where that is the value (``0.49999999999``), else in decimal to 25 digits (``0.99999999999999999999``,
    which no double is)."""
    text = str(v)
    if len(text) <= 12:
        return text
    if Fraction(float(v)) == Fraction(v):
        return repr(float(v))
    from decimal import Context, Decimal

    v = Fraction(v)
    return str(Context(prec=25).divide(Decimal(v.numerator), Decimal(v.denominator)).normalize()).replace("E", "e")


def outside_claim(net: Network, X: np.ndarray, dtype: str | None = None) -> str | None:
    """The note every output computed outside the network's claim carries (``None`` inside it);
    ``dtype``: the evaluator's (its arithmetic is part of the claim where the domain says so)."""
    reason = net.outside_claim(X, None if dtype is None else dtype.removeprefix("torch-"))
    if reason is None:
        return None
    return f"outside the construction's claim: {reason}; the output is not covered by any check"


def claim_status(net: Network, note: str | None) -> bool | None:
    """``within_claim`` of an answer whose outside-claim note is ``note``: ``False`` with a note, ``True`` inside a
    recorded claim, ``None`` where there is none to be inside: no input domain recorded, or a trained model (a
    3-step model reversed 13,10,8,4 as 2,2,12,8 "within_claim: true", and a circuit round-tripped through
    :mod:`expressivity.nn` answered 9 for a reversal of 5 the same way, beside "input domain: not recorded": two
    audits, 2026-11-29)."""
    if note is not None:
        return False
    return None if net.input_domain is None or net.trained or not net.input_domain.is_claim else True


def no_claim_text(net: Network) -> str:
    """What ``within_claim: null`` stands for (:func:`claim_status`)."""
    if net.trained:
        return ("none: a trained model carries no proven claim (nor does any network passed through expressivity.nn; "
                "its input domain, where recorded, is what it takes, not where a proof holds)")
    if net.input_domain is not None and not net.input_domain.is_claim:
        return ("none: the model records no claim (a TransformerLens checkpoint of its own, or a copy of one); the "
                "token ids its embedding takes are checked, nothing is proven about its answers")
    return "none recorded: the network records no input domain, so no value is checked against a claim"


def run_network(net: Network, X: np.ndarray, dtype: str = "float64", residuals: bool = False,
                allow_length: bool = False, allow_outside: bool = False) -> dict:
    """Evaluate ``net`` on ``X`` ``(n, d_in)`` in ``dtype``: outputs under their labels, optionally the residuals.

    ``within_claim`` says whether ``X`` is inside the network's claim (one of its valid lengths,
    inside its input domain; ``None`` where no input domain is recorded: :func:`claim_status`); outside it the
    call is refused unless ``allow_length`` /
    ``allow_outside``, and the result then carries ``outside_claim`` (the reason). On a token
    network the result also has, per position, the input token's id and value
    (``input_ids``, ``input_values``), the answer (``answers``: the decoded value) and the arg-max
    output column (``argmax``); every list holds plain Python values.

    Raises a one-line :class:`ExpressivityError` when the evaluator cannot run the network
    (exact on softmax) or the result is not finite (overflow).
    """
    if dtype not in DTYPES:
        raise ExpressivityError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    Xd = as_dtype(X, dtype)
    rounding = input_rounding(X, dtype)
    with np.errstate(all="ignore"):
        try:
            result = evaluate(net, Xd, dtype, allow_length=allow_length, allow_outside=allow_outside,
                              return_residuals=residuals, check_finite=False)   # one pass; _check_finite says it
        except NetworkError as exc:   # e.g. an input float64 cannot carry within the claim: the flags that apply
            message = as_flags(str(exc))
            if rounding is not None:  # the typed value may be inside: 0.99999999999999999999 is 1 in float64
                typed, received = rounding["examples"][0]
                message = (f"--input: {rounding['values']} value(s) are not {dtype} numbers ({_typed(typed)} becomes "
                           f"{received!r}), and the rounded input is refused: {message}; "
                           + ("--dtype exact takes the values as typed" if _exact_evaluable(net) else
                              "type values the arithmetic carries inside the domain"))
            raise NetworkError(message) from None
        out, res = (result[0], list(result[1])) if residuals else (result, None)
    _check_finite(out, net, dtype)
    outs = net.output_labels or tuple(f"y[{k}]" for k in range(net.d_out))
    note = outside_claim(net, X, dtype)
    if note is None and rounding is not None:
        # the values evaluated are the rounded ones: typed 3/5 is inside a softened Yun network's claim, its float64
        # value a rounding below the breakpoint 3/5 is on a ramp (evaluate refused it; --allow-outside marks it)
        rounded = net.outside_claim(Xd, dtype.removeprefix("torch-"))
        note = None if rounded is None else (f"outside the construction's claim once the input is rounded to {dtype}: "
                                             f"{rounded}; the output is not covered by any check")
    checked, agreement = False, None
    if note is None and dtype != "exact":
        differs, agreement = differs_from_exact(net, X, out, dtype, rounding, outs)
        checked = differs is None and agreement is not None
        if differs is not None:
            if not allow_outside:
                fix = ("run it with --dtype exact" if agreement is not None else
                       "run the network it was made from (a saved network runs in exact arithmetic)")
                raise NetworkError(f"--input: {differs}; {fix}, or pass --allow-outside to see the {dtype} answer, marked")
            note = f"outside the construction's claim: {differs}; the output is not covered by any check"
    result = {"network": net.name, "dtype": dtype, "arithmetic": ARITHMETIC[dtype], "length": int(X.shape[0]),
              "input_labels": list(net.input_labels), "input": X, "output_labels": list(outs), "output": out,
              "valid_lengths": net.lengths.describe(), "input_domain": domain_text(net),
              "within_claim": claim_status(net, note)}
    if note is not None:
        result["outside_claim"] = note
    elif result["within_claim"] is None:
        result["claim"] = no_claim_text(net)
    if dtype != "exact":
        result["checked_against_exact"] = checked
        if checked:   # equal, or within the output's rounding (said with the largest difference)
            result["exact_agreement"] = agreement
    if rounding is not None:
        result["input_rounding"] = rounding
    claimed_from = 0 if net.input_domain is None else net.input_domain.claimed_from
    if claimed_from:     # e.g. a lag that reaches before the start: the claim says nothing about these outputs
        result["unclaimed_positions"] = list(range(min(claimed_from, int(X.shape[0]))))
        result["claimed_from"] = claimed_from
    if takes_tokens(net):
        result |= token_answers(net, X, out)
    if res is not None:
        for H in res:
            _check_finite(H, net, dtype)
        names = ["input"] + [f"after layer {k}" + (f" ({layer.name})" if layer.name else "")
                             for k, layer in enumerate(net.layers)]
        result["residual_labels"] = list(net.labels)
        result["residuals"] = [{"where": w, "values": H} for w, H in zip(names, res)]
    return result


def domain_text(net: Network) -> str:
    """The network's input domain in one line, saying where it came from (recorded, derived, unknown)."""
    domain = net.input_domain
    if domain is None:
        return "not recorded (inputs are not checked against a claim)"
    origin = "" if domain.origin == "recorded" else f" [{domain.origin}]"
    return domain.describe(net.input_labels) + origin


def token_answers(net: Network, X: np.ndarray, out: np.ndarray) -> dict:
    """Per position of a token network's input ``X`` ``(n, d_in)`` and output ``out`` ``(n, d_out)``: the
    input id and value, the answer (the decoded output) and the arg-max output column; plain Python values."""
    ids = [int(np.argmax(np.asarray(row, dtype=np.float64))) for row in X]
    names = net.input_domain.names() if net.input_domain is not None else None
    found = {"input_ids": ids, "input_values": [plain(names[i]) if names else i for i in ids]}
    answers = answers_of(net)
    if answers is not None:
        found["answers"], found["argmax"] = answers.decode(out)
    else:
        found["argmax"] = [int(np.argmax(np.asarray(row, dtype=np.float64))) for row in out]
    return found


def _check_finite(values: np.ndarray, net: Network, dtype: str) -> None:
    if dtype == "exact":
        return
    if not np.all(np.isfinite(np.asarray(values, dtype=np.float64))):
        raise ExpressivityError(f"network {net.name!r} produced non-finite values in {dtype} on this input (overflow); "
                                "use smaller input values" + (" or --dtype float64" if dtype == "float32" else
                                                              " or --dtype exact where the network allows it"))


def fmt(v) -> str:
    """A number as printed in tables: exact numbers as themselves, floats to 5 significant digits."""
    if isinstance(v, (Fraction, int)) and not isinstance(v, bool):
        return str(v)
    f = float(v)
    if math.isfinite(f) and f == int(f) and abs(f) < 1e15:
        return str(int(f))
    return f"{f:.5g}"
