"""``expressivity rasp list|compile|eval``: RASP programs, compiled to verified networks."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from expressivity.cli.common import (console, construction_out_option, emit_json, human_output_to_stderr, option_flag,
                                     run_record, typed_options)
from expressivity.errors import ExpressivityError
from expressivity.records import check_output_dir
from expressivity.verify.size import counted

MAX_TOKENS_TEXT = 100_000
MAX_EVAL_TOKENS = 1024


@click.group("rasp")
def rasp_group():
    """RASP programs (tracr's language) compiled to verified networks."""


def _token(text: str):
    """A vocabulary or input token: an integer when written as one (``-3``, ``12``), else the text
    itself (``01``, ``00``, ``1.5``, ``+1``: tokens such as add_binary's bit pairs keep their spelling)."""
    t = text.strip()
    try:
        value = int(t)
    except ValueError:
        return t
    return value if str(value) == t else t


def parse_tokens(text: str, what: str) -> list:
    if not isinstance(text, str) or not text.strip():
        raise ExpressivityError(f"{what} is empty; give comma-separated tokens such as '1,2,3' or 'a,b'")
    if len(text) > MAX_TOKENS_TEXT:
        raise ExpressivityError(f"{what} is too long (over {MAX_TOKENS_TEXT} characters)")
    fields = text.split(",")
    if any(not f.strip() for f in fields):
        raise ExpressivityError(f"{what} {text!r} has an empty field; give comma-separated tokens such as '1,2,3'")
    return [_token(f) for f in fields]


def program_source(spec: str) -> dict:
    """For a ``module:function`` or ``file.py:function`` program (already loaded), its file (absolute) and the
    SHA-256 of its bytes, as a run record keeps them (the record named only the spec, so the same record stood for
    whatever the file held when it was run again: an audit, 2026-11-28); ``{}`` for a library program."""
    import hashlib
    import sys

    module_name, _, attr = spec.rpartition(":")
    if not module_name:
        return {}
    path = Path(module_name) if module_name.endswith(".py") else \
        getattr(sys.modules.get(module_name), "__file__", None)
    if not path:
        return {}
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        digest = None
    return {"program_source": str(Path(path).resolve()), "program_sha256": digest}


def load_program(spec: str, max_seq_len: int | None, vocab: list | None = None, what: str = "--vocab",
                 max_len_given: bool = False):
    """``(program, vocab or None, name)`` for a library name or ``module:function`` /
    ``path/file.py:function`` (the function is called with ``max_seq_len`` when it takes a positional
    argument, required or not). A library program is built for ``vocab`` (default: its own), which it
    must compute its description on (:meth:`~expressivity.rasp.library.LibraryProgram.check_vocab`;
    ``what`` names it in the error). ``max_len_given``: ``--max-len`` was given only to build the program
    (``rasp eval``), so a program that does not depend on it is refused rather than the option ignored."""
    from expressivity.rasp import RASPExpr, SOp
    from expressivity.rasp.library import PROGRAMS, get_program

    if not isinstance(spec, str) or not spec.strip():
        raise ExpressivityError("PROGRAM is empty; give a library name (see 'expressivity rasp list') or module:function")
    if ":" not in spec:
        entry = get_program(spec)
        if max_len_given and not entry.sized:
            raise ExpressivityError(f"--max-len does not apply to {entry.name}: it does not depend on the length; "
                                    "leave it out")
        if vocab is not None:
            vocab = spelled_as(entry.vocab, vocab)
            entry.check_vocab(vocab, what)
        return entry.program(max_seq_len or 5, vocab), list(entry.vocab if vocab is None else vocab), entry.name
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr.isidentifier():
        raise ExpressivityError(f"PROGRAM {spec!r} must be a library name ({', '.join(list(PROGRAMS)[:4])}, ...) or "
                                "module:function")
    try:
        module = _import_file(Path(module_name)) if module_name.endswith(".py") else \
            importlib.import_module(module_name)
    except ExpressivityError:
        raise
    except (Exception, SystemExit) as exc:  # a user module can raise anything while importing, even exit
        raise ExpressivityError(f"cannot import {module_name!r}: {_said(exc)}") from None
    target = getattr(module, attr, None)
    if target is None:
        raise ExpressivityError(f"{module_name} has no attribute {attr!r}")
    if isinstance(target, RASPExpr) and not isinstance(target, SOp):
        raise ExpressivityError(f"{spec} is a {type(target).__name__}, not a program; wrap it in "
                                "rasp.SelectorWidth(...) or rasp.Aggregate(..., sop)")
    program = target
    if callable(target) and not isinstance(target, SOp):
        required, accepted = _positional_arguments(target)
        if required > 1:
            raise ExpressivityError(f"{spec} takes {required} arguments; give a function of no argument or of "
                                    "max_seq_len alone")
        if max_len_given and not accepted:
            raise ExpressivityError(f"--max-len does not apply to {spec}: it takes no max_seq_len; leave it out")
        try:
            program = target(max_seq_len or 5) if accepted else target()
        except ExpressivityError:
            raise
        except (Exception, SystemExit) as exc:
            raise ExpressivityError(f"{spec} failed: {_said(exc)}") from None
    if not isinstance(program, SOp):
        raise ExpressivityError(f"{spec} gave {type(program).__name__}, not a RASP SOp")
    return program, None, attr


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


def _positional_arguments(function) -> tuple[int, int]:
    """How many positional arguments ``function`` needs and how many it takes (``(0, 0)`` when its
    signature cannot be read)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 0, 0
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = any(p.kind is p.VAR_POSITIONAL for p in parameters)
    return sum(p.default is p.empty for p in positional), len(positional) + star


def _import_file(path: Path):
    """Import ``path`` as ``python FILE`` would run it: its folder first on ``sys.path`` (so a module beside it
    imports; it stays there for the rest of the command, as for a script), registered under its stem."""
    if not path.is_file():
        raise ExpressivityError(f"{path} is not a file; give path/to/file.py:function")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(path.stem)
    sys.modules[path.stem] = module   # dataclasses and pickling look their module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if previous is None:
            sys.modules.pop(path.stem, None)
        else:
            sys.modules[path.stem] = previous
        raise
    return module


@rasp_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def rasp_list(as_json):
    """The library's RASP programs."""
    from expressivity.cli.tables import print_table
    from expressivity.rasp.library import ORIGINS, PROGRAMS

    rows = [{"name": p.name, "origin": p.origin, "source": ORIGINS[p.origin], "vocab": list(p.vocab),
             "description": p.description} for p in PROGRAMS.values()]
    if as_json:
        emit_json({"programs": rows, "run": run_record("rasp list", {})})
        return
    table = Table(title="RASP library (compile with: expressivity rasp compile NAME --max-len L)")
    for col in ("name", "from", "default vocab", "what it computes"):
        table.add_column(col, overflow="fold")   # wrap a long word rather than cut it
    for r in rows:
        table.add_row(r["name"], r["origin"], escape(",".join(map(str, r["vocab"]))), escape(r["description"]))
    print_table(console, table)


@rasp_group.command("compile")
@click.argument("program")
@click.option("--vocab", default=None, help="Comma-separated tokens (integers stay integers), e.g. '1,2,3' or 'a,b,x'. "
                                            "Default: the library program's vocabulary.")
@click.option("--max-len", "max_len", type=click.IntRange(1, 128), required=True,
              help="Longest input (tokens after BOS) the network is built and verified for.")
@click.option("--causal", is_flag=True, help="Causal attention (a query sees only earlier keys).")
@click.option("--attention", type=click.Choice(("hardmax", "softmax")), default="hardmax", show_default=True,
              help="hardmax: exact in rational arithmetic; softmax: inverse temperature from the score margin "
                   "(exports to TransformerLens as is).")
@click.option("--dtype", type=click.Choice(("exact", "float64")), default=None,
              help="Arithmetic of the verification: exact (hardmax only; the default there) or float64 (the default "
                   "for softmax).")
@click.option("--bos", default="BOS", show_default=True, help="The beginning-of-sequence token.")
@click.option("--samples", type=click.IntRange(1, 100_000), default=64, show_default=True,
              help="Random inputs to verify on when there are too many to check all.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seed of the random verification inputs.")
@construction_out_option()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def rasp_compile(ctx, program, vocab, max_len, causal, attention, dtype, bos, samples, seed, out_dir, as_json):
    """Compile PROGRAM (a library name or module:function) to a network, verified against rasp.evaluate.

    Exit 2 (one line) when the program cannot be compiled exactly or verification fails."""
    from expressivity import rasp
    from expressivity.rasp.verify import EXHAUSTIVE_LIMIT, input_count

    if dtype == "exact" and attention == "softmax":
        raise click.UsageError("--dtype exact needs --attention hardmax (softmax has no exact value)")
    if not bos.strip():
        raise ExpressivityError("--bos is empty; give a token name such as BOS")
    if out_dir is not None:
        check_output_dir(out_dir, "rasp compile", replaces=True)
    config = {"program": program, "vocab": vocab, "max_len": max_len, "causal": causal, "attention": attention,
              "dtype": dtype, "bos": bos, "samples": samples, "seed": seed, "out": None if out_dir is None else str(out_dir)}
    record = run_record("rasp compile", config, seed)
    with human_output_to_stderr(as_json):
        given = parse_tokens(vocab, "--vocab") if vocab is not None else None
        twice = next((t for i, t in enumerate(given or []) if t in given[:i]), None)
        if twice is not None:
            raise ExpressivityError(f"--vocab lists {twice!r} twice; give each token once")
        sop, library_vocab, name = load_program(program, max_len, given)
        record["config"].update(program_source(program))   # which code a module:function program ran
        tokens = library_vocab if library_vocab is not None else given   # a library program's own spelling
        if tokens is None:
            raise ExpressivityError(f"--vocab is required for {program} (give e.g. --vocab 1,2,3)")
        total = input_count(len(set(tokens)), max_len)
        _refuse_sampling_options(ctx, total <= EXHAUSTIVE_LIMIT, total)
        compiled = rasp.compile(sop, vocab=tokens, max_seq_len=max_len, bos=bos, causal=causal, attention=attention,
                                samples=samples, seed=seed, arithmetic=dtype)
        # a softmax network is checked on every input up to a larger limit, which only the compile knows it kept
        _refuse_sampling_options(ctx, compiled.report.constants["verification"]["inputs"].startswith("exhaustive"))
    # ok: every check passed; claim: whether the network claims anything at an input (a softmax network checked on
    # samples claims nothing, though its checks passed: a script read ok alone, an audit, 2026-11-29)
    result = {"program": name, "ok": compiled.report.ok, "claim": compiled.network.no_claim is None,
              "no_claim": compiled.network.no_claim, "report": compiled.report.as_dict(),
              "residual_labels": list(compiled.residual_labels), "run": record}
    if out_dir is not None:
        from expressivity.export.folders import save_construction

        save_construction(out_dir, "rasp compile", compiled.network, result["report"], result["run"])
        result["out"] = str(out_dir)
    if as_json:
        emit_json(result)
        return
    _print_report(name, compiled, out_dir)


def _refuse_sampling_options(ctx: click.Context, exhaustive: bool, total: int | None = None) -> None:
    """--samples / --seed choose random verification inputs: an error when every input (``total``, where known) is
    checked anyway (``exhaustive``: known before compiling up to ``EXHAUSTIVE_LIMIT`` inputs; a softmax network's
    larger limit only from the compile's check)."""
    given = [option_flag(ctx, p) for p in typed_options(ctx, ("samples", "seed"))]
    if given and exhaustive:
        verb = "choose" if len(given) > 1 else "chooses"
        every = "the" if total is None else total
        raise click.UsageError(f"{' and '.join(given)} {verb} random verification inputs, but all {every} inputs are "
                               "checked here (exhaustive); drop them")


def _say(text: str) -> None:
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def _print_report(name: str, compiled, out_dir) -> None:
    report = compiled.report
    size, c = report.size, report.constants
    _say(f"rasp {name}: vocab {{{', '.join(c['vocab'])}}}, max_seq_len {c['max_seq_len']}, {c['attention']} attention"
         + (f" (lam = {c['scale']:.4g})" if c["scale"] else "") + (", causal" if c["causal"] else ""))
    _say(f"size: {counted(size.layers, 'layer')} ({size.attention_layers} attention), {counted(size.heads, 'head')}, "
         f"d_model {size.width}, MLP hidden {size.extra['mlp_hidden_max']} (max per layer), "
         f"{counted(size.parameters, 'parameter')}")
    for b in c["blocks"]:
        extra = f", hidden {b['hidden']}" if "hidden" in b else ""
        _say(f"  {b['sublayer']:9s} {b['sop']} ({b['encoding']}, {b['values']} values{extra}): {b['how']}")
        _say(f"            proof: {b['proof']}")
    margins = ", ".join(f"{k} = {v}" for k, v in report.margins.items())
    _say(f"margins: {margins}" + (f"; bounds: {report.bounds}" if report.bounds else ""))
    if compiled.network.no_claim is not None:
        _say(f"claim: none on any one input ({compiled.network.no_claim})")
    for check in report.checks:
        d = check.details
        extra = (f"; float64 {d['float64']}" if "float64" in d else
                 f"; float64 agreed on {d['float64_points'] - d['float64_disagreements']} of {d['float64_points']}"
                 if "float64_points" in d else "")
        # "verified" where the network claims what the check shows; a softmax network checked on samples claims
        # nothing, and its block proofs are the hardmax limit's. A check of some inputs is "checked" even where the
        # proofs carry the claim ("verified: ... on 64 inputs (64 random inputs)": a fresh audit, 2026-11-29)
        sampled = d.get("unit", "inputs") == "inputs" and "exhaustive" not in str(d.get("inputs", ""))
        said = ("verified" if compiled.network.no_claim is None and "hardmax limit" not in check.property
                and not sampled else "checked")
        if "numerical_output_tolerance" in report.bounds and check.property == "outputs equal rasp.evaluate":
            extra += f" (equal within the numerical output tolerance {report.bounds['numerical_output_tolerance']:.3g})"
        _say(f"{said}: {check.property} on {counted(check.points, d.get('unit', 'inputs').removesuffix('s'))} "
             f"({d.get('inputs')}), "
             f"{check.failures} failures, "
             f"{check.arithmetic}{extra}")
    _say(f"compile {c['compile_seconds']} s, proof {c['proof_seconds']} s, verify {c['verify_seconds']} s")
    if out_dir is not None:
        dtype = " --dtype exact" if compiled.exact else ""
        # an input run accepts: '0,1,2' was refused with one token in the vocabulary, at max_seq_len 1, where
        # evaluate raises on it, and (without --allow-outside) for a network that claims nothing (an audit, 2026-11-29)
        outside = " --allow-outside" if compiled.network.no_claim is not None else ""
        _say(f"saved to {out_dir} (expressivity run {out_dir} --input '{_example_input(compiled)}'{dtype}{outside}; "
             "token ids: "
             f"0={compiled.bos}, " + ", ".join(f"{k + 1}={t}" for k, t in enumerate(compiled.vocab[:8]))
             + (" ..." if len(compiled.vocab) > 8 else "") + ")")


def _example_input(compiled) -> str:
    """Token ids of a short input inside the compiled network's claim: BOS, then up to two tokens, none of the
    inputs its domain lists as outside (where rasp.evaluate raises)."""
    import itertools

    listed = {seq for rule in compiled.network.input_domain.rules if rule.kind == "not-listed" for seq in rule.inputs}
    ids = range(1, len(compiled.vocab) + 1)
    for n in sorted(range(1, compiled.max_seq_len + 1), key=lambda n: (n != min(2, compiled.max_seq_len), n)):
        for seq in itertools.islice(itertools.product(ids, repeat=n), 10_000):
            if len(set(seq)) == len(seq) or n > len(ids):   # distinct tokens where there are enough
                if (0, *seq) not in listed:
                    return ",".join(map(str, (0, *seq)))
    return "0,1"


@rasp_group.command("eval")
@click.argument("program")
@click.option("--input", "input_text", required=True, help="Comma-separated tokens, e.g. '3,1,2' or 'a,b' (no BOS).")
@click.option("--max-len", "max_len", type=click.IntRange(1, 128), default=None,
              help="The max_seq_len a library program is built for (sort and sort_freq use it; default: the input's "
                   "length).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def rasp_eval(program, input_text, max_len, as_json):
    """Run PROGRAM in the reference interpreter (rasp.evaluate) on --input."""
    from expressivity import rasp

    tokens = parse_tokens(input_text, "--input")
    if len(tokens) > MAX_EVAL_TOKENS:
        raise ExpressivityError(f"--input has {len(tokens)} tokens; the interpreter takes at most {MAX_EVAL_TOKENS} "
                                "(selectors are n x n)")
    if max_len is not None and len(tokens) > max_len:
        raise ExpressivityError(f"--input has {len(tokens)} tokens, more than --max-len {max_len}")
    tokens, vocab = library_input(program, tokens)
    sop, _, name = load_program(program, max_len or len(tokens), vocab, "--input",
                                max_len_given=max_len is not None)
    output = rasp.evaluate(sop, tokens)
    record = run_record("rasp eval", {"program": program, "input": input_text, "max_len": max_len})
    if as_json:
        emit_json({"program": name, "input": tokens, "output": output, "run": record})
        return
    _say(f"{name}({', '.join(map(str, tokens))}) = [{', '.join(map(str, output))}]")


def spelled_as(known, tokens: list) -> list:
    """``tokens`` with each one a library program's own token where the two are spelled alike (the bit
    pair ``11`` parses as the integer 11, but add_binary's token is the text ``"11"``)."""
    by_spelling = {str(t): t for t in known}
    return [t if t in known else by_spelling.get(str(t), t) for t in tokens]


def library_input(program: str, tokens: list) -> tuple[list, list | None]:
    """``(tokens, vocab)`` for evaluating ``program``: a library program's input in its own spelling
    (:func:`spelled_as`) and the vocabulary it is built over, its own and the input's tokens (a program
    defined on its listed tokens alone gets the input's, which it refuses outside them); a
    ``module:function`` program's input as given, and ``None`` (built as written)."""
    if ":" in program:
        return tokens, None
    from expressivity.rasp.library import get_program

    entry = get_program(program)
    tokens = spelled_as(entry.vocab, tokens)
    return tokens, list(dict.fromkeys(tokens if entry.tokens == "listed" else [*entry.vocab, *tokens]))


rasp = rasp_group   # the name cli/main.py's COMMANDS registers
