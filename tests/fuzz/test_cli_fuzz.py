"""Property-based fuzzing of every command, from click's own option specification.

For each leaf command of ``expressivity`` hypothesis builds argument lists: every parameter of
the command (required ones almost always, optional ones sometimes), each with a value drawn from
values that fit its type (choices, small numbers, the option's default, paths in the fixture
tree) and values that do not (wrong types, NaN/inf, huge and negative numbers, empty and very long
strings, files and folders of other commands as ``--out``). The command runs in-process (click's
CliRunner) inside a tree holding one output of every kind (:mod:`tests.output_tree`); a run that
takes longer than the profile's limit is interrupted as Ctrl-C would (``KeyboardInterrupt``).

What must hold for every input:
* the exit code is 0, 1 or 2 (130 when interrupted), never an uncaught exception or a traceback;
* exit 2 prints exactly one ``error:`` line and changes nothing at all;
* otherwise nothing changes outside the command's own output (``--out``, ``--resume``, the
  default output folders of ``demo`` and ``reproduce``), checked by fingerprinting the tree;
* a user's file planted in every folder of every output (:func:`tests.output_tree.planted`) is
  never changed or deleted, not even inside the command's own output folder.

Profiles (environment variable ``EXPRESSIVITY_FUZZ``): ``ci`` (default; sized for ``make test``
on two cores), ``long`` (many more inputs and a longer limit per run, for local use). The number
of inputs tried per command is stored in pytest's cache: ``pytest --cache-show 'fuzz/*'``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expressivity.cli.main import cli

from tests.output_tree import (DANGLING, FILES, FOLDERS, USER_FILES, build_tree, changes, fingerprint, planted,
                               run_in)

PROFILES = {  # examples per command, seconds before a run is interrupted
    "ci": (10, 2.0),
    "long": (100, 5.0),
}
PROFILE = os.environ.get("EXPRESSIVITY_FUZZ", "ci")
if PROFILE not in PROFILES:
    raise ValueError(f"EXPRESSIVITY_FUZZ={PROFILE!r}: use one of {', '.join(PROFILES)}")
EXAMPLES, LIMIT_S = PROFILES[PROFILE]
# demo takes only --out and --json, and every valid run is long (it is interrupted): few inputs.
FEWER = {"demo": 3}
# A run still going this long after its Ctrl-C gets a second one (as an impatient user would),
# so one input cannot hold the suite up; such runs are counted as "interrupted_twice".
SECOND_CTRL_C_S = 10 * LIMIT_S

# Output folders a command writes when no --out is given.
DEFAULT_OUTPUTS = {"demo": ["demo_out"], "reproduce": ["repro_out"]}
# Inputs the fuzzer does not send: a private Ray cluster takes long to start and its processes
# outlive an interrupted run (the Ray backend has its own tests), and paths that leave the tree.
NOT_SENT = {"ray"}


def leaf_commands(command: click.Command = cli, path: tuple = ()) -> list[tuple[tuple, click.Command]]:
    if isinstance(command, click.Group):
        return [leaf for name, sub in sorted(command.commands.items()) for leaf in leaf_commands(sub, (*path, name))]
    return [(path, command)]


LEAVES = leaf_commands()

PATHS = [*FOLDERS, *FILES, *USER_FILES, DANGLING, "sw.json", "new_folder", "new.csv", "new.json", "new.parquet",
         "new.png", "new.html", "afile/inside", "afile/x.csv", "missing/deep/x.png", "net/network", "sw/records.jsonl",
         "sw/sweep.json", "tr/seed_0", "tr/loss_curve.png", "yb/run.json", ".", "sw/new.csv", "net/new",
         "net/my_analysis.txt", "tr/seed_0/my_analysis.txt"]
NAMES = ["reverse", "shift", "sort", "copy", "parity", "smooth-rank", "wang-e-8", "wang-e-1", "yun-hybrids", "linear",
         "model.heads", "train.lr", "test_metric", "seed", "1 - test_metric", "status = 'failed'", "x", "k=v", "length=4"]
NASTY = ["", " ", "nan", "NaN", "inf", "-inf", "-1", "0", "1e308", "-1e308", "1e-320", "9" * 40, "-" + "9" * 40,
         "x" * 5000, "1,2,3", "1,,2", "a=b=c", "ü∂∑", "--json", "-", "1/0", "0/0", "1/3", "3.5", "true", "None", "[]",
         "{}", "'; DROP TABLE t; --", "$(echo hi)", "\\", "\t", "\n"]
NUMBERS = ["0", "1", "2", "3", "4", "8", "16", "-1", "-5", "0.5", "1e-3", "1e3", "2**31", "10" * 12, "nan", "inf"]


def _default(param: click.Parameter) -> list[str]:
    value = param.default
    if value is None or callable(value) or isinstance(value, (bool, tuple, list)):
        return []
    return [str(value)]


def value_strategy(param: click.Parameter) -> st.SearchStrategy[str]:
    """Strings for one value of ``param``: ones of its type and ones that are not."""
    kind = param.type
    nasty = st.sampled_from(NASTY) | st.text(max_size=12).filter(lambda s: "\x00" not in s)
    if isinstance(kind, click.Choice):
        fitting = st.sampled_from([str(c) for c in kind.choices if str(c) not in NOT_SENT])
    elif isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)) or kind.name in ("number", "scale"):
        fitting = (st.sampled_from(NUMBERS + _default(param)) | st.integers(-10, 40).map(str)
                   | st.floats(allow_nan=True, allow_infinity=True).map(repr))
    else:  # paths, names, free text
        fitting = st.sampled_from(PATHS + NAMES + _default(param))
    return st.one_of(fitting, fitting, nasty)


def tokens_for(param: click.Parameter) -> st.SearchStrategy[list[str]]:
    """The argv tokens for ``param``: none, its flag, or ``--option value`` (maybe repeated)."""
    if isinstance(param, click.Argument):
        count = 1 if param.nargs == 1 else 2
        values = st.lists(value_strategy(param), min_size=count if param.required else 0, max_size=count)
        return values if param.required else st.one_of(st.just([]), values)
    if param.hidden or param.name == "help":
        return st.just([])
    if param.is_flag:
        return st.sampled_from([[], [param.opts[0]], *([[param.secondary_opts[0]]] if param.secondary_opts else [])])
    pair = value_strategy(param).map(lambda v: [param.opts[0], v])
    if param.multiple:
        pair = st.lists(pair, max_size=2).map(lambda pairs: [t for p in pairs for t in p])
    if param.required:
        return st.one_of(pair, pair, pair, st.just([]))  # mostly given; sometimes missing
    return st.one_of(st.just([]), st.just([]), pair)


@st.composite
def argument_lists(draw, path: tuple, command: click.Command) -> list[str]:
    argv = list(path)
    params = [p for p in command.params if not isinstance(p, click.Argument)]
    for param in draw(st.permutations(params)):  # options in any order
        argv += draw(tokens_for(param))
    for param in (p for p in command.params if isinstance(p, click.Argument)):
        argv += draw(tokens_for(param))
    return argv


def own_outputs(path: tuple, argv: list[str]) -> list[str]:
    """Paths (relative to the tree) the command may write: its --out/--resume and default outputs."""
    own = list(DEFAULT_OUTPUTS.get(path[0], []))
    for flag in ("--out", "--resume"):
        own += [argv[i + 1] for i, token in enumerate(argv[:-1]) if token == flag]
    return [os.path.normpath(p) for p in own if p.strip()]


def is_within(changed: str, own: list[str]) -> bool:
    changed = os.path.normpath(changed)
    return any(o == "." or changed == o or changed.startswith(o.rstrip("/") + "/") for o in own)


def run_interruptible(root: Path, argv: list[str]):
    """Run the command; after LIMIT_S interrupt it as Ctrl-C would: through the SIGINT handler in place
    (the command's own, which may defer it to a safe point, or Python's, which raises KeyboardInterrupt).
    Returns ``(result or None, interrupted)``."""
    state = {"armed": True, "fired": 0}

    def ctrl_c(signum, frame):
        if state["armed"]:
            state["fired"] += 1
            handler = signal.getsignal(signal.SIGINT)
            if callable(handler):
                handler(signal.SIGINT, frame)
                return
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    # SIGINT as a command's process starts with it (an earlier test in this worker may have left another)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S, SECOND_CTRL_C_S)
    try:
        result = run_in(root, argv)
    except KeyboardInterrupt:  # landed outside the command (in click's runner): nothing to check
        result = None
    finally:
        state["armed"] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGINT, previous_int)
    return result, state["fired"]  # 0, 1, or 2+ Ctrl-Cs


def import_everything() -> None:
    """Import every module a command may load, once, before any run can be interrupted: an
    interruption in the middle of an import (torch takes seconds) leaves a half-imported module in
    this process and breaks every later run; a real Ctrl-C ends the process instead."""
    import importlib
    import pkgutil

    import expressivity

    for module in pkgutil.walk_packages(expressivity.__path__, "expressivity."):
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed
            pass
    for name in ("torch", "duckdb", "matplotlib.pyplot", "transformer_lens", "safetensors.numpy"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


@pytest.fixture(scope="module")
def tree(tmp_path_factory, request):
    import_everything()
    root = build_tree(tmp_path_factory.mktemp("fuzz") / "tree", plant=True)
    counts: dict[str, int] = {}
    yield root, counts, {str(p.relative_to(root)) for p in planted(root)}
    inputs = {k: v for k, v in counts.items() if not k.startswith("interrupted")}
    summary = {"profile": PROFILE, "per_command": inputs, "total": sum(inputs.values()),
               "interrupted": counts.get("interrupted", 0), "interrupted_twice": counts.get("interrupted_twice", 0)}
    if getattr(request.config, "cache", None) is not None:   # absent under -p no:cacheprovider
        request.config.cache.set("fuzz/inputs", summary)
    print(f"\nfuzz: {summary}")


@pytest.mark.parametrize("path, command", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_every_input_gets_an_answer_and_touches_only_its_output(tree, path, command):
    root, counts, users = tree
    os.environ.pop("RAY_ADDRESS", None)

    @settings(max_examples=min(EXAMPLES, FEWER.get(" ".join(path), EXAMPLES)), deadline=None, derandomize=PROFILE == "ci", database=None,
              suppress_health_check=list(HealthCheck))
    @given(argv=argument_lists(path, command))
    def check(argv):
        counts[" ".join(path)] = counts.get(" ".join(path), 0) + 1
        before = fingerprint(root)
        result, interrupted = run_interruptible(root, argv)
        counts["interrupted"] = counts.get("interrupted", 0) + (interrupted > 0)
        counts["interrupted_twice"] = counts.get("interrupted_twice", 0) + (interrupted > 1)
        changed = changes(before, fingerprint(root))
        own = own_outputs(path, argv)
        stray = sorted(c for c in changed if not is_within(c, own))
        assert not stray, f"{argv!r} changed files outside its output: {stray[:5]}"
        lost = sorted(changed & users)
        assert not lost, f"{argv!r} changed or deleted a user's file in an output folder: {lost[:5]}"
        if result is None:
            return
        crash = result.exception if not isinstance(result.exception, SystemExit) else None
        assert crash is None, f"{argv!r} raised {type(crash).__name__}: {crash}"
        text = result.output + result.stderr
        assert "Traceback" not in text, f"{argv!r} printed a traceback:\n{text[-2000:]}"
        allowed = {0, 1, 2} | ({130} if interrupted else set())
        assert result.exit_code in allowed, f"{argv!r} exited {result.exit_code}:\n{result.stderr[-2000:]}"
        if result.exit_code == 2:
            errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
            assert len(errors) == 1, f"{argv!r}: exit 2 needs one error line, got:\n{result.stderr[-2000:]}"
            assert not changed, f"{argv!r} was refused but changed {sorted(changed)[:5]}"

    check()
