"""Helpers shared by every CLI command: consoles and JSON output (records live in :mod:`expressivity.records`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import click

from rich.console import Console

from expressivity.records import jsonable, run_record, write_json  # noqa: F401  (re-exported for commands)

# The signal that interrupted this command (SIGINT or SIGTERM), set by the CLI's handler: a command stopped by
# `timeout`, a batch scheduler's preemption or `kill` exits 143 (128 + SIGTERM), one stopped by Ctrl-C 130.
_INTERRUPTED_BY: list[int] = []


def interrupted_exit_code(exc: BaseException | None = None) -> int:
    """128 plus the number of the signal that interrupted the command (``exc.signum`` where the training loop
    deferred it to a step boundary), SIGINT's where none was recorded."""
    import signal

    signum = getattr(exc, "signum", None) or (_INTERRUPTED_BY[-1] if _INTERRUPTED_BY else signal.SIGINT)
    return 128 + int(signum)


def interrupted_by(exc: BaseException | None = None) -> str:
    """``" (SIGTERM)"`` where a SIGTERM interrupted the command, else ``""`` (Ctrl-C needs no name)."""
    import signal

    return " (SIGTERM)" if interrupted_exit_code(exc) == 128 + signal.SIGTERM else ""


# Human output goes to stderr when --json is given, so stdout stays one JSON object.
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def overflowed(text: str, number: float) -> bool:
    """Whether ``number`` is infinite only because ``text`` overflowed float64 (``1e999``), not written as
    infinity: such an option value is refused, never read as hardmax."""
    return math.isinf(number) and str(text).strip().lower() not in ("inf", "+inf", "infinity", "+infinity")


def emit_json(obj) -> None:
    """Print one JSON value on stdout."""
    sys.stdout.write(json.dumps(jsonable(obj)) + "\n")
    sys.stdout.flush()


class human_output_to_stderr:
    """Context manager: while active, :data:`console` writes to stderr (keeps stdout pure JSON)."""

    def __init__(self, active: bool = True):
        self.active = active
        self._saved = None

    def __enter__(self):
        if self.active:
            # Save the explicit file (None = follow sys.stdout), not the resolved stream, so a
            # later redirection of sys.stdout (tests, pipes) is still honoured after we restore.
            self._saved = console._file
            console.file = sys.stderr
        return self

    def __exit__(self, *exc):
        if self.active:
            console._file = self._saved
        return False


class PositiveNumber(click.ParamType):
    """A finite number > 0; ``example`` goes into the refusal (``--tolerance``: 1e-10)."""

    name = "number"

    def __init__(self, example: str = "1"):
        self.example = example

    def convert(self, value, param, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number; give a finite number > 0 such as {self.example}", param, ctx)
        if not (math.isfinite(number) and number > 0):
            self.fail(f"{value!r} must be a finite number > 0, such as {self.example}", param, ctx)
        return number


def construction_out_option(param: str = "out_dir"):
    """``--out DIR`` of the commands that save a construction through
    :func:`expressivity.export.folders.save_construction` (one option, one help text)."""
    return click.option("--out", param, type=click.Path(path_type=Path, file_okay=False), default=None,
                        help="Save the network (DIR/network: safetensors + JSON), report.json, run.json and "
                             "manifest.json here, for `expressivity run`, `show` and `export`; written whole or not "
                             "at all.")


def typed_options(ctx: click.Context, names=None) -> list[str]:
    """The parameters of ``names`` (default: all of ``ctx.params``, in their order) that the user typed:
    given on the command line or in the environment, not left at a default (``DEFAULT``,
    ``DEFAULT_MAP``). A flag typed with its default value counts as typed."""
    from click.core import ParameterSource

    not_typed = (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
    return [name for name in (ctx.params if names is None else names) if ctx.get_parameter_source(name) not in not_typed]


def option_flag(ctx: click.Context, name: str) -> str:
    """How the user spells parameter ``name`` of ``ctx``'s command: its option strings (``task_name``
    -> ``--task``; a flag with an off switch shows both, ``--rotary/--no-rotary``)."""
    param = next(p for p in ctx.command.params if p.name == name)
    return "/".join([*param.opts, *param.secondary_opts])


def refuse_untaken(taker: str, names, why: str = "") -> None:
    """Refuse parameters ``names`` of the running command that ``taker`` (``"--memory fixed"``) does not
    read, by their option spelling (:func:`option_flag`): ``"--memory fixed does not take --b, --eps"
    + why``; nothing when ``names`` is empty."""
    if names:
        ctx = click.get_current_context()
        raise click.UsageError(f"{taker} does not take " + ", ".join(option_flag(ctx, n) for n in names) + why)


def warn(saved) -> None:
    """Print what loading a saved network had to assume (``Saved.warnings``), one ``warning:`` line each, on stderr."""
    for message in getattr(saved, "warnings", ()):
        err_console.print(f"warning: {message}", soft_wrap=True, markup=False)


# How training runs run (expressivity.training.execution): options of train, sweep run and reproduce.
EXECUTION_PARAMS = ("precision", "attention_kernel", "capture", "sampler", "memory_budget")


def execution_options(command):
    """``--precision``, ``--attention-kernel``, ``--capture``, ``--sampler`` and ``--memory-budget``
    (how the steps run, not what they compute; recorded in every run record)."""
    options = [
        click.option("--precision", type=click.Choice(["auto", "fp32", "tf32", "bf16"]), default="auto",
                     show_default=True, help="arithmetic of the training steps (auto: fp32 on the CPU, TF32 matrix "
                                             "products on CUDA, which alone has tf32; bf16: autocast with float32 "
                                             "weights)"),
        click.option("--attention-kernel", "attention_kernel", type=click.Choice(["auto", "explicit", "sdpa"]),
                     default="auto", show_default=True,
                     help="softmax attention spelled out (the reference) or through scaled_dot_product_attention "
                          "(auto: explicit on the CPU, sdpa on CUDA)"),
        click.option("--capture", type=click.Choice(["auto", "eager", "compiled"]), default="auto", show_default=True,
                     help="run the forward pass and loss eagerly or through torch.compile (auto: eager on the CPU; "
                          "compiled on CUDA, captured as CUDA graphs)"),
        click.option("--sampler", type=click.Choice(["auto", "host", "device"]), default="auto", show_default=True,
                     help="training batches from per-run generators on the CPU (stream 1) or computed on the device "
                          "for every run at once (stream 2) (auto: host on the CPU, device on CUDA)"),
        click.option("--memory-budget", "memory_budget", metavar="SIZE",
                     help="memory one run or pack may use, e.g. 24GiB (default: 80% of the available RAM on the "
                          "CPU, 90% of the free GPU memory on CUDA, shared by the workers)"),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def execution_choices(params: dict) -> dict:
    """The :class:`~expressivity.training.execution.Execution` choices given (``auto`` left out)."""
    names = {"precision": "precision", "attention_kernel": "attention", "capture": "capture", "sampler": "sampler"}
    return {names[k]: params[k] for k in names if params.get(k) not in (None, "auto")}


def check_memory_budget(value) -> None:
    """Refuse a malformed ``--memory-budget`` at once (one line, exit 2)."""
    if value is not None:
        from expressivity.errors import ExpressivityError
        from expressivity.training.budget import parse_memory_size

        try:
            parse_memory_size(value)
        except ExpressivityError as exc:
            raise click.BadParameter(str(exc).removeprefix("--memory-budget "), param_hint="--memory-budget") from None


LOG_EVERY_S = 60.0   # where stderr is a log, not a terminal: a progress line at most this often


def eta_text(seconds) -> str:
    """``"4m05s"``, ``"2h10m"``, or ``"?"`` before anything finished."""
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class SweepProgress:
    """``on_progress`` of a sweep (``sweep run``, a trained claim): in a terminal, a bar with done, failed,
    running and the ETA; elsewhere (a batch job's log, ``nohup``, a pipe) one plain line on stderr when runs
    have finished since the last one and at least :data:`LOG_EVERY_S` has passed, so a job hours long says
    how far it is (the bar alone printed nothing outside a terminal: an audit at scale, 2026-11-28)."""

    def __init__(self, label: str, bar, log: bool, every_s: float | None = None):
        import time

        self.label, self.bar, self.log = label, bar, log
        self.every_s = LOG_EVERY_S if every_s is None else every_s
        self.last_s, self.last_finished = time.monotonic(), 0

    def __call__(self, p) -> None:
        import time

        text = f"{self.label}: done {p.done}, failed {p.failed}, running {p.running}, ETA {eta_text(p.eta_s)}"
        if self.bar is not None:
            self.bar(total=p.total, completed=p.done + p.failed, description=text)
            return
        finished, now = p.done + p.failed, time.monotonic()
        if finished < self.last_finished:   # a new round (a claim's grid extended): its counts start again
            self.last_finished = 0
        if self.log and finished > self.last_finished and now - self.last_s >= self.every_s:
            self.last_s, self.last_finished = now, finished
            err_console.print(f"{text} (of {p.total})", markup=False, soft_wrap=True)
