"""``rasp.compile``: a RASP program to a verified :class:`~expressivity.network.Network`.

The stages, each its own module with its own tests::

    graph    = build_graph(program)                      # rasp/graph.py
    values   = infer_values(graph, vocab, max_seq_len)   # rasp/values.py
    prove_selections(graph, values, ...)                 # rasp/selection.py: single-valued, backward-only
    graph    = fuse_maps(graph, values)                  # rasp/graph.py
    layout   = allocate(graph, values)                   # rasp/layout.py
    blocks   = [attention_block / mlp_block per node]    # rasp/blocks.py
    network  = assemble(graph, values, layout, blocks)   # rasp/assemble.py
    proofs   = prove_network(network, ...)               # rasp/proofs.py: every block, exactly
    checks   = verify(compiled)                          # rasp/verify.py: end to end, the second line

No network is returned without a proof for every block (translation validation: the claim holds
on every input of length 1..L, not only on the inputs tried); a program whose selections cannot
be proven is refused before any weight is built, and :class:`RASPError` says which rule failed.
Hardmax attention (the default) gives a network that is exact in rational arithmetic. Softmax
attention gets its inverse temperature ``lam`` from the score margin: every query's selected
keys outscore the others by ``g = 1`` per unit of ``lam``, so the weight off them is at most
``(n - 1) exp(-lam g)`` with ``n <= max_seq_len + 1`` keys; ``lam`` makes that at most
``delta``, a fraction of the feed-forward blocks' input margin (a quarter of the gap between
consecutive values). That is a design, not a proof: a lookup table writing large values, or a
linear map with a large coefficient, multiplies the attention error past the next block's margin
(an audit, 2026-11-29: an error of 333 against a margin of 1/4). A softmax network's claim is
therefore its float64 check on every input (:data:`~.verify.SOFTMAX_EXHAUSTIVE_LIMIT` inputs at
most); checked on samples only, it carries no claim on any one input (``network.no_claim``).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction

from expressivity.constructions.report import Check, ConstructionReport, Size
from expressivity.rasp.assemble import assemble
from expressivity.rasp.blocks import AttentionBlock, attention_block, mlp_block
from expressivity.rasp.compiled import NUMERIC_TOLERANCE, CompiledProgram
from expressivity.rasp.encoders import special_tokens
from expressivity.rasp.graph import build_graph, fuse_maps
from expressivity.rasp.language import RASPError, SOp
from expressivity.rasp.layout import allocate
from expressivity.rasp.proofs import prove_network
from expressivity.rasp.selection import prove_selections
from expressivity.rasp.values import infer_values, sort_values, unique_values
from expressivity.rasp.verify import (EXACT_OPS, EXHAUSTIVE_LIMIT, FLOAT_OPS, SAMPLES, SOFTMAX_EXHAUSTIVE_LIMIT,
                                      input_count, softmax_limit, verify)

MAX_SEQ_LEN = 128
MAX_VOCAB = 512
MAX_WIDTH = 50_000             # residual dimensions
MAX_PARAMETERS = 50_000_000    # stored weights
ATTENTION = ("hardmax", "softmax")


def _check_arguments(program, vocab, max_seq_len, bos, attention) -> list:
    if not isinstance(program, SOp):
        raise RASPError(f"compile needs a RASP SOp, got {type(program).__name__}")
    if not isinstance(bos, str) or not bos.strip():
        raise RASPError(f"bos must be a non-empty string, got {bos!r}")
    if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int) or not 1 <= max_seq_len <= MAX_SEQ_LEN:
        raise RASPError(f"max_seq_len must be an integer in 1..{MAX_SEQ_LEN}, got {max_seq_len!r}")
    if isinstance(vocab, (str, bytes)) or not hasattr(vocab, "__iter__"):
        raise RASPError(f"vocab must be a set or list of tokens, got {vocab!r}")
    vocab = list(vocab)
    for t in vocab[:MAX_VOCAB + 1]:
        if t is None or isinstance(t, float) and not math.isfinite(t) or not isinstance(t, (str, int, float, Fraction)):
            raise RASPError(f"vocab token {t!r} is not a string or a finite number")
    vocab = unique_values(vocab)
    if not vocab:
        raise RASPError("vocab is empty; give the tokens the program reads, e.g. {1, 2, 3}")
    if len(vocab) > MAX_VOCAB:
        raise RASPError(f"vocab has {len(vocab)} tokens, above the budget of {MAX_VOCAB}")
    zeros = [t for t in vocab if isinstance(t, float) and t == 0]
    if len(zeros) > 1:
        raise RASPError("vocab holds both 0.0 and -0.0, which an input cannot tell apart; keep one")
    labels: dict[str, object] = {}
    for t in vocab:
        if str(t) in labels:
            raise RASPError(f"vocab holds both {labels[str(t)]!r} and {t!r}, which would share the residual label "
                            f"'tokens:{t}'; use tokens of one type (e.g. all strings)")
        labels[str(t)] = t
    if bos in labels:
        raise RASPError(f"the BOS token {bos!r} is also in vocab; choose another bos")
    if attention not in ATTENTION:
        raise RASPError(f"attention must be 'hardmax' or 'softmax', got {attention!r}")
    return sort_values(vocab)


def _check_check_arguments(exhaustive_limit, samples, seed, exact_ops) -> None:
    """The end-to-end check's arguments, in the CLI's ranges: ``samples=0, exhaustive_limit=0`` checked no input
    and blamed the program ("rasp.evaluate fails on every one of the 0 inputs checked"), and ``samples=-1`` or
    ``exact_ops=nan`` were taken (an audit, 2026-11-28)."""
    import math

    from expressivity.errors import ExpressivityError, require_int, require_number

    try:
        require_int(exhaustive_limit, "exhaustive_limit", lo=0)
        require_int(samples, "samples", lo=1, hi=100_000)
        require_int(seed, "seed", lo=0, hi=2 ** 32 - 1)
        if not (isinstance(exact_ops, (int, float)) and not isinstance(exact_ops, bool) and math.isinf(exact_ops)
                and exact_ops > 0):
            require_number(exact_ops, "exact_ops", positive=True)
    except ExpressivityError as exc:
        raise RASPError(str(exc)) from None


def compile(program: SOp, vocab, max_seq_len: int, bos: str = "BOS", causal: bool = False, *,
            attention: str = "hardmax", arithmetic: str | None = None, exhaustive_limit: int = EXHAUSTIVE_LIMIT,
            samples: int = SAMPLES, seed: int = 0, exact_ops: float = EXACT_OPS, compiler_bos: str | None = None,
            compiler_pad: str | None = None, mlp_exactness=None) -> CompiledProgram:
    """Compile ``program`` for inputs of 1..``max_seq_len`` tokens over ``vocab`` (after a BOS token), prove every
    block (see the module notes), and check it end to end against :func:`expressivity.rasp.evaluate` in
    ``arithmetic``: ``"exact"`` (hardmax only; its default) or ``"float64"`` (softmax's default), on every input
    when there are at most ``exhaustive_limit`` (also the limit for proving a selection by checking every input),
    else on ``samples`` random ones (``seed``); exact runs stop after ``exact_ops`` multiply-adds (float64
    disagreements first, then the longest inputs). Raises :class:`RASPError` (one line) for programs whose
    selections no rule proves, programs that cannot be compiled exactly, sizes beyond the budgets, and failed
    checks. tracr's ``compiler_bos`` / ``compiler_pad`` name the BOS / PAD tokens
    (:func:`~.encoders.special_tokens`)."""
    bos, pad = special_tokens(vocab, bos, compiler_bos, compiler_pad, mlp_exactness)
    vocab = _check_arguments(program, vocab, max_seq_len, bos, attention)
    _check_check_arguments(exhaustive_limit, samples, seed, exact_ops)
    arithmetic = arithmetic or ("exact" if attention == "hardmax" else "float64")
    if arithmetic not in ("exact", "float64") or (arithmetic == "exact" and attention == "softmax"):
        raise RASPError(f"arithmetic {arithmetic!r} does not apply to {attention} attention; use 'exact' (hardmax) or "
                        "'float64'")
    started = time.perf_counter()
    graph = build_graph(program)
    values = infer_values(graph, vocab, max_seq_len)
    partial = next((node for node in graph.nodes if node.fails_on is not None), None)
    prove_selections(graph, values, causal=causal, vocab=vocab, max_seq_len=max_seq_len,
                     exhaustive_limit=exhaustive_limit)
    graph, values = fuse_maps(graph, values)
    layout = allocate(graph, values)
    if len(layout.labels) > MAX_WIDTH:
        raise RASPError(f"the residual stream would have {len(layout.labels)} dimensions, above the budget of "
                        f"{MAX_WIDTH}; shorten max_seq_len or use numerical SOps")
    robust = attention == "softmax"
    sublayers = _blocks(graph, layout, values, robust, max_seq_len)
    mlp_margins = [b.margin for blocks in sublayers for b in blocks if getattr(b, "margin", None) is not None]
    output = graph.nodes[graph.output]
    largest = max((_size(v) for v in values[output.id] if isinstance(v, (int, float, Fraction))), default=1)
    scale, delta = _scale(robust, max_seq_len, mlp_margins, output.numerical, largest, _averaged_size(graph, values))
    parameters = _estimate_parameters(layout, sublayers, vocab, max_seq_len)
    if parameters > MAX_PARAMETERS:
        raise RASPError(f"the network would have about {parameters:,} weights, above the budget of {MAX_PARAMETERS:,}; "
                        "shorten max_seq_len")
    name = program.name
    network = assemble(graph, values, layout, sublayers, vocab, max_seq_len, scale=scale, bos=bos, name=name,
                       causal=causal)
    compile_seconds = time.perf_counter() - started
    proofs, proof_check = _prove(network, graph, layout, sublayers, values, vocab, max_seq_len, causal)
    if robust:   # the proofs hold for hardmax; a softmax network's claim is its float64 check (an audit, 2026-11-29)
        proof_check = replace(proof_check, property="every block proven for the hardmax limit (not this softmax network)")
    compiled = CompiledProgram(program, network, None, vocab, max_seq_len, bos,
                               [v for v in values[output.id] if v is not None], output.numerical, causal, pad)
    started = time.perf_counter()
    limit = (softmax_limit(len(vocab), max_seq_len, network.parameter_count(), exhaustive_limit) if robust
             else exhaustive_limit)
    checks, facts = verify(compiled, exhaustive_limit=limit, samples=samples, seed=seed,
                           exact=arithmetic == "exact", exact_ops=exact_ops, tolerance=output.tolerance or 0.0)
    verify_seconds = time.perf_counter() - started
    exhaustive = facts["inputs"].startswith("exhaustive")
    failing = facts.pop("failing_inputs", [])
    if robust and not exhaustive:   # the check is a softmax network's claim: on samples, it claims no one input
        compiled.network = replace(network, metadata={**network.metadata, "no_claim": _softmax_sampled(
            facts["float64_points"], input_count(len(vocab), max_seq_len))})
    elif failing and exhaustive:
        # the claim leaves out the inputs where evaluate raises, and the network answers there all the same: they
        # are listed in its domain, so that run refuses them (an audit, 2026-11-29)
        compiled.network = _without(network, failing, facts["evaluate_fails"])
    elif not exhaustive and (failing or partial is not None):
        # checked on samples, the inputs where evaluate raises are not all known: no one input claimed. Checked on
        # every input, none failing, the claim stands: fails_on comes from the value sets, which over-approximate
        # (12 // x on a selector width, never 0, lost a verified claim: a review, 2026-11-29)
        compiled.network = replace(network, metadata={**network.metadata, "no_claim": _partial_sampled(
            partial, facts.get("evaluate_fails"), input_count(len(vocab), max_seq_len), limit)})
    compiled.report = _report(compiled, graph, layout, sublayers, values, checks + [proof_check], facts, scale, delta,
                              compile_seconds, verify_seconds, robust, proofs, output.tolerance)
    if not compiled.report.ok:
        check = checks[0]
        example = check.examples[0] if check.examples else {}
        why = ("although every block was proven; this is a compiler bug, please report it with the program"
               if not robust else
               f"with softmax attention (lam = {scale:.4g}), whose error the hardmax proofs do not bound: a block that "
               "scales values (a lookup table writing large ones, a large coefficient) carried the weight off the "
               "selected keys past the next block's margin, or float64 could not tell two of its values apart; "
               "compile with hardmax attention (proven, exact)")
        raise RASPError(f"refused: the compiled network disagrees with rasp.evaluate on {check.failures} of "
                        f"{check.points} inputs ({check.arithmetic}), e.g. {example.get('input')} -> expected "
                        f"{example.get('expected')}, {why}")
    return compiled


def _without(network, failing: list[tuple], first_failure: str):
    """``network`` with the inputs ``failing`` (token ids after BOS) listed as outside its claim
    (:class:`~expressivity.network.sequence_rules.NotListed`)."""
    from expressivity.network.sequence_rules import NotListed

    domain = network.input_domain
    dims = next(f.dims for f in domain.fields if f.kind == "one-hot")
    detail = first_failure.split(": ", 1)[-1].split("; ")[0]   # "q: its function fails on (2,) (ZeroDivision..."
    cut = detail.rfind(" (")
    if cut > 0 and "Error" in detail[cut:]:
        detail = detail[:cut]                                      # "q: its function fails on (2,)"
    detail = detail[:120]
    rule = NotListed(dims, tuple((0, *(t + 1 for t in seq)) for seq in failing), f"rasp.evaluate raises (e.g. {detail})")
    # the domain's fix named token ids and BOS only, which a listed input keeps (a review, 2026-11-29)
    fix = f"{domain.fix}, and an input not among the {len(rule.inputs):,} where rasp.evaluate raises (network.json lists them)"
    return replace(network, input_domain=replace(domain, rules=domain.rules + (rule,), fix=fix))


def _partial_sampled(node, first_failure: str | None, total: int, limit: int) -> str:
    """Why a network checked on samples claims no one input where a function of its program fails on some
    value: the inputs where rasp.evaluate raises are left out of the claim, and nothing says which they are."""
    where = (f"{node.name}'s function raises on {node.fails_on!r}" if node is not None else
             f"rasp.evaluate raises {first_failure}")
    return (f"{where}, so the program has no output on some of the {total:,} inputs, which were checked on samples "
            "and are not listed: make the function return a value on every value it can receive, or compile for at "
            f"most {limit:,} inputs (a smaller vocabulary or max_seq_len), where every such input is "
            "listed and refused")


def _softmax_sampled(checked: int, total: int) -> str:
    """Why a softmax network checked on samples claims no one input (its ``no_claim``): too many inputs, or (at most
    :data:`SOFTMAX_EXHAUSTIVE_LIMIT` of them) too many for the float64 check's budget through this many weights
    (sort_freq, vocabulary 1, 2, max_seq_len 15: 65,534 inputs, 3.2e11 multiply-adds; the message said they would
    all be checked: a review, 2026-11-29)."""
    way = (f"or with at most {SOFTMAX_EXHAUSTIVE_LIMIT:,} inputs (a smaller vocabulary or max_seq_len), which are all "
           "checked" if total > SOFTMAX_EXHAUSTIVE_LIMIT else
           f"or a shorter max_seq_len: running all {total:,} inputs through this network is above the float64 "
           f"check's budget ({FLOAT_OPS:.1e} multiply-adds)")
    return (f"softmax attention, checked in float64 on {checked:,} sampled inputs of the {total:,}: the block proofs "
            "hold in the hardmax limit only, and nothing bounds the softmax error through blocks that scale values; "
            f"compile with hardmax attention (proven), {way}")


def _blocks(graph, layout, values, robust: bool, max_seq_len: int) -> list[list]:
    """Stage 4: per sublayer of the layout, its blocks (attention heads or feed-forward units)."""
    return [[attention_block(graph.nodes[i], graph, layout, values, snap=not robust) if kind == "attention"
             else mlp_block(graph.nodes[i], graph, layout, values, robust, max_seq_len) for i in node_ids]
            for kind, node_ids in layout.sublayers]


def _prove(network, graph, layout, sublayers, values, vocab, max_seq_len, causal) -> tuple[list, Check]:
    """Every block's proof (rasp/proofs.py), and the report's check summing them (raises at a block without)."""
    started = time.perf_counter()
    proofs = prove_network(network, graph, layout, sublayers, values, vocab, max_seq_len, causal)
    return proofs, Check("every block proven", sum(p.cases for p in proofs), 0, "exact rationals (scaled integers)",
                         time.perf_counter() - started, {"inputs": "every value combination of every block",
                                                         "unit": "cases", "blocks": len(proofs)})


def _averaged_size(graph, values) -> float:
    """The largest ``|value|`` a numerical Aggregate averages (1 where none does: a categorical one moves
    one-hot entries). A softmax head's weight off the selected keys moves its output by that weight times
    up to twice this, so ``delta`` shrinks with it."""
    sizes = [_size(v) for node in graph.nodes if node.kind == "aggregate" and node.numerical
             for v in values[node.inputs[2]] if isinstance(v, (int, float, Fraction))]
    return max([1.0, *sizes])


def _size(value) -> float:
    """``|value|`` as a float, ``inf`` beyond float64 (10^400 raised OverflowError here: a fuzz, 2026-11-29)."""
    try:
        return abs(float(value))
    except OverflowError:
        return math.inf


def _scale(robust: bool, max_seq_len: int, margins: list, numerical_output: bool,
           largest: float, averaged: float = 1.0) -> tuple[float, float | None]:
    """Hardmax: ``inf``. Softmax: ``lam`` with ``(n - 1) exp(-lam) <= delta``, ``n = L + 1``, ``delta`` an eighth of
    the smallest feed-forward input margin divided by twice the largest ``|value|`` a numerical Aggregate averages
    (``averaged``, at least 1; at most 1e-3); for a numerical output, which no feed-forward block cleans, also at
    most ``NUMERIC_TOLERANCE / (4 (1 + max |value|))``. Without the value size a mean of values near 1,000 moved
    by 0.08 past a 1/224 margin (a fresh audit, 2026-11-28)."""
    if not robust:
        return math.inf, None
    smallest = min((float(m) for m in margins), default=0.25)
    delta = min(1e-3, smallest / (8 * 2 * averaged) if averaged > 1 else smallest / 8)
    if numerical_output:
        delta = min(delta, NUMERIC_TOLERANCE / (4 * (1 + largest)))
    if not delta > 0:   # values near the float64 limit: the weight off the selected keys would have to be 0
        raise RASPError(f"softmax attention cannot keep the weight off the selected keys below what values of size "
                        f"{max(largest, averaged):.3g} allow (it would need an inverse temperature beyond float64); "
                        "compile with hardmax attention (proven, exact), or scale the program's values down")
    return math.log(max(max_seq_len, 1) / delta), delta


def _estimate_parameters(layout, sublayers, vocab, max_seq_len) -> int:
    d = len(layout.labels)
    total = (len(vocab) + 1) * d + (max_seq_len + 1) * d
    for blocks in sublayers:
        for b in blocks:
            if isinstance(b, AttentionBlock):
                total += b.head.parameter_count()
            else:
                total += 2 * d * len(b.units) + len(b.units) + d
    return total


def _block_entries(graph, layout, sublayers, values, proofs) -> list[dict]:
    """One report row per block: what it computes, how, and which proof it has (``proofs`` after the
    embedding's, in block order)."""
    blocks, proof_of = [], iter(proofs[1:])
    for (kind, _), bs in zip(layout.sublayers, sublayers):
        for b in bs:
            node = graph.nodes[b.node]
            entry = {"sublayer": kind, "sop": node.name, "encoding": node.encoding.value, "how": b.how,
                     "values": len([v for v in values[node.id] if v is not None])}
            if kind == "mlp":
                entry["hidden"] = len(b.units)
                if b.margin is not None:
                    entry["input_margin"] = b.margin
            if node.fused:
                entry["fused"] = node.fused
            proof = next(proof_of)
            entry["proof"], entry["proof_cases"] = proof.text, proof.cases
            blocks.append(entry)
    return blocks


def _claim(compiled, robust: bool, tolerance: float | None) -> tuple[str, str]:
    """The report's claim and notes."""
    if compiled.network.no_claim is not None:
        return (f"none on any one input: {compiled.network.no_claim}",
                "softmax attention with the inverse temperature from the score margin; checked in float64 on samples"
                if robust else "hardmax attention: exact in rational arithmetic, checked on samples")
    within = f" (numerical output within {tolerance:.3g}: evaluate's float64 mean)" if tolerance else ""
    listed = next((r for r in compiled.network.input_domain.rules if r.kind == "not-listed"), None)
    returns = ("" if listed is None else
               f" (the {len(listed.inputs):,} inputs where it raises are listed in the network's input domain, and "
               "run refuses them)")
    claim = (f"the network's decoded output equals rasp.evaluate on every input of length 1..{compiled.max_seq_len} "
             f"over the vocabulary where evaluate returns{returns}{within}: proven block by block in exact arithmetic"
             + (" for hardmax attention" if not robust else " for the hardmax limit, and with softmax checked end to "
                "end in float64 on every one of those inputs (its claim: the proofs do not bound the softmax error)"))
    notes = ("hardmax attention: exact in rational arithmetic; float64 can split exact score ties by rounding, so run "
             "it with --dtype exact" if not robust else
             "softmax attention with the inverse temperature from the score margin; checked in float64 on every input")
    return claim, notes


def _report(compiled, graph, layout, sublayers, values, checks, facts, scale, delta, compile_s, verify_s,
            robust, proofs, tolerance) -> ConstructionReport:
    net = compiled.network
    widths = [layer.width for layer in net.layers if layer.kind == "feedforward"]
    size = Size.of(net, mlp_hidden_max=max(widths, default=0), mlp_hidden_total=sum(widths),
                   d_model=net.d, heads_max=max((len(layer.heads) for layer in net.layers if layer.kind == "attention"),
                                                default=0))
    margins = {"attention_score_gap_per_unit_scale": 1}
    mlp_margins = [b.margin for bs in sublayers for b in bs if getattr(b, "margin", None)]
    if mlp_margins:   # softmax steps: how far an input may move from a known value and still give the exact output
        margins["mlp_input_margin_min"] = min(mlp_margins)
    gaps = [b.facts["value_gap"] for bs in sublayers for b in bs if getattr(b, "facts", {}).get("value_gap") is not None]
    if gaps:          # the closest two known inputs of any scalar feed-forward block (its breakpoints lie between)
        margins["mlp_value_gap_min"] = min(gaps)
    bounds = {}
    if robust:
        n = compiled.max_seq_len + 1
        bounds["softmax_weight_off_selected_max"] = (n - 1) * math.exp(-scale)
        bounds["delta"] = delta
    if tolerance:
        bounds["numerical_output_tolerance"] = tolerance
    claim, notes = _claim(compiled, robust, tolerance)
    return ConstructionReport(
        construction=f"rasp {compiled.program.name}", claim=claim, size=size, checks=tuple(checks), bounds=bounds,
        margins=margins,
        constants={"max_seq_len": compiled.max_seq_len, "length": compiled.max_seq_len + 1,
                   "vocab": [str(v) for v in compiled.vocab], "bos": compiled.bos, "causal": compiled.causal,
                   "attention": "softmax" if robust else "hardmax", "scale": None if not robust else scale,
                   "mlp": "steps between consecutive values (robust)" if robust else "interpolation through the values",
                   "compile_seconds": round(compile_s, 3), "verify_seconds": round(verify_s, 3),
                   "proof_seconds": round(checks[-1].seconds, 3), "verification": facts,
                   "input_proof": proofs[0].text, "blocks": _block_entries(graph, layout, sublayers, values, proofs)},
        notes=notes)
