"""The ``expressivity`` command.

Every user error (bad option value, unknown name, size over budget) is reported as one line
``error: ...`` on stderr with exit code 2 and no traceback.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
import threading
import warnings

import click

from expressivity import __version__
from expressivity.cli.common import _INTERRUPTED_BY, interrupted_by, interrupted_exit_code
from expressivity.errors import ExpressivityError, shorten_values


class _CtrlC:
    """Python's default SIGINT handling (raise ``KeyboardInterrupt``) that remembers it fired, and which signal
    fired it (SIGTERM is handled the same way: a command it stops exits 143, one Ctrl-C stops 130).

    Compiled code that calls back into Python can turn a ``KeyboardInterrupt`` raised inside it into
    another error: matplotlib's raised ``ValueError('Invalid bounding box')`` when Ctrl-C landed while it
    converted a bounding box (a fuzz run of the demo), a traceback instead of ``error: aborted``. An
    unexpected error after a Ctrl-C is reported as the abort it is."""

    # training defers a SIGTERM to the step boundary only where this handler holds it (training.interrupt), not
    # where a host process installed its own (a Ray worker's exits)
    turns_sigterm_into_an_interrupt = True

    def __init__(self):
        self.seen = False

    def __call__(self, signum, frame):
        self.seen = True
        _INTERRUPTED_BY.append(signum)
        raise KeyboardInterrupt


INT_DIGITS_PRINTED = 40_000   # digits of an int the CLI prints (it stays quick to print at that size)

# what torch's CPU and CUDA allocators say when an allocation fails
_ALLOCATOR_FAILED = re.compile(r"can't allocate memory|out of memory", re.I)


def _out_of_memory(exc: BaseException) -> None:
    detail = " ".join(str(exc).split())[:160]
    click.echo(f"error: ran out of memory{f' ({detail})' if detail else ''}; use smaller sizes (a shorter "
               "length, fewer samples or a smaller model)", err=True)
    sys.exit(2)


class _Group(click.Group):
    """A click group that turns usage errors and :class:`ExpressivityError` into one-line errors."""

    def main(self, *args, **kwargs):
        # Typed exact numbers have at most 4,000 digits (network.numbers.MAX_EXACT_DIGITS); a network's
        # exact answers and residuals can have a few times more (a product of two), which Python's
        # default limit of 4,300 digits would not print (a traceback where the answer belongs)
        limit = sys.get_int_max_str_digits()
        if 0 < limit < INT_DIGITS_PRINTED:
            sys.set_int_max_str_digits(INT_DIGITS_PRINTED)
        # only where SIGINT has Python's default handler, in the main thread (an ignored one stays ignored)
        ctrl_c = _CtrlC()
        _INTERRUPTED_BY.clear()   # an earlier command in this process (a test's, a notebook's) is not this one's
        mine = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler
        previous = signal.signal(signal.SIGINT, ctrl_c) if mine else None
        # SIGTERM (`timeout`, a batch scheduler's preemption, `kill`) is an interrupt too: training checkpoints at
        # the step boundary and every command cleans up and says what was kept, as after Ctrl-C, where the
        # default (dying mid-write, silently) was in place
        terminate = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        previous_term = signal.signal(signal.SIGTERM, ctrl_c) if terminate else None
        try:
            return self._main(ctrl_c, *args, **kwargs)
        finally:
            if mine:
                signal.signal(signal.SIGINT, previous)
            if terminate:
                signal.signal(signal.SIGTERM, previous_term)

    def _main(self, ctrl_c: _CtrlC, *args, **kwargs):
        kwargs["standalone_mode"] = False
        # Library code checks finiteness itself and reports it in one line; NumPy's overflow and
        # invalid-value warnings would only put extra lines before that error.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        try:
            rv = super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            click.echo(f"error: aborted{interrupted_by()}", err=True)
            sys.exit(interrupted_exit_code())
        except click.UsageError as exc:
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            message = " ".join(exc.format_message().split())  # click lists choices one per line: keep one line
            click.echo(f"error: {shorten_values(message)}{hint}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            click.echo(f"error: {shorten_values(' '.join(exc.format_message().split()))}", err=True)
            sys.exit(2)
        except ExpressivityError as exc:
            from expressivity.inspect.run import dtype_flags

            # the library's arithmetic advice spelled as --dtype on every command ("evaluate in float64 arithmetic"
            # reached `circuit` and `equivariance` users as Python: a fresh audit, 2026-11-29); run, show and export
            # spell their --allow-* flags themselves, and other commands do not take them
            click.echo(f"error: {dtype_flags(str(exc))}", err=True)
            if getattr(exc, "threads_left_behind", False):
                # A thread still inside native code (Ray's abandoned join) can abort interpreter
                # shutdown (SIGABRT, exit -6, seen under load): leave without finalising.
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(2)
            sys.exit(2)
        except MemoryError as exc:
            # Sizes are estimated before large allocations; one that was not (or an estimate that was short)
            # still ends in one line, not a traceback.
            _out_of_memory(exc)
        except OSError as exc:
            # Almost always an --out/--resume path that cannot be written or read.
            where = f" {exc.filename!r}" if exc.filename else ""
            if exc.errno == errno.ENOSPC:   # a write's OSError often names no file: say what to do about it
                click.echo(shorten_values(f"error: no space left on the device{' for' + where if where else ''}; free "
                                          "some space, or write the output to another disk"), err=True)
                sys.exit(2)
            click.echo(shorten_values(f"error: cannot use{where}: {exc.strerror or exc}; choose a folder you can write to"),
                       err=True)
            sys.exit(2)
        except RecursionError:
            # JSON nested thousands of levels deep (a shared folder's file, typed in) exhausts the parser's
            # recursion; the readers of folder files name the file, this catches any other reader
            click.echo("error: a file or input this command read is nested too deeply to read (Python's recursion "
                       "limit); check the JSON files it reads, or save them again", err=True)
            sys.exit(2)
        except Exception as exc:
            if isinstance(exc, RuntimeError) and _ALLOCATOR_FAILED.search(str(exc)):
                _out_of_memory(exc)   # torch's allocators raise RuntimeError (CUDA's OutOfMemoryError is one)
            if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop from "):
                # Path.resolve() on a link that leads back to itself (Python < 3.13 raises RuntimeError, not OSError)
                click.echo(shorten_values(f"error: {str(exc)[len('Symlink loop from '):]} is a symbolic link that "
                                          "leads back to itself; name another path"), err=True)
                sys.exit(2)
            if not ctrl_c.seen:
                raise
            click.echo(f"error: aborted{interrupted_by()}", err=True)   # a Ctrl-C that compiled code turned into another error
            sys.exit(interrupted_exit_code())
        if isinstance(rv, int) and rv:
            sys.exit(rv)
        return rv

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            # click answers Ctrl-C with a blank line, then "Aborted!"; ours is one line, on a line of its own
            # in a terminal (past the ^C the terminal echoed) and with no blank line before it in a log
            if sys.stderr.isatty():
                click.echo(err=True)
            raise click.exceptions.Abort() from exc


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="expressivity")
def cli() -> None:
    """Build Transformers with hand-set weights, verify them exactly, and train small ones."""


# Every command, by the module that defines it: a table, so a new subsystem adds one line.
COMMANDS = (
    ("expressivity.cli.circuits", ("circuit", "circuits_list", "equivariance")),
    ("expressivity.cli.demo", ("demo",)),
    ("expressivity.cli.yun", ("yun",)),
    ("expressivity.cli.train", ("train", "tasks")),
    ("expressivity.cli.wang_e", ("wang_e",)),
    ("expressivity.cli.sweep", ("sweep",)),
    ("expressivity.cli.results", ("results", "fit", "plot")),
    ("expressivity.cli.reproduce", ("reproduce",)),
    ("expressivity.cli.rasp", ("rasp",)),
    # Interoperability: export to TransformerLens / Network folders, run any saved network, a page per network.
    ("expressivity.cli.export", ("export",)),
    ("expressivity.cli.run", ("run",)),
    ("expressivity.cli.show", ("show",)),
)


def _register() -> None:
    import importlib

    for module, names in COMMANDS:
        mod = importlib.import_module(module)
        for name in names:
            cli.add_command(getattr(mod, name))
    _whole_summaries(cli)


# Words a full stop ends without ending the sentence ("Yun et al. Claim 1", "e.g. 1,2,3").
ABBREVIATIONS = ("al.", "e.g.", "i.e.", "cf.", "etc.", "vs.", "eq.", "fig.", "thm.", "resp.")


def summary_sentence(text: str) -> str:
    """The first sentence of a command's help, whole: click's own summary stops at the first full
    stop and cuts at 45 characters ("yun  Yun et al."); a group's command list wraps this one."""
    paragraph = " ".join(text.replace("\b", "").strip().split("\n\n")[0].split())
    words = paragraph.split(" ")
    for k, word in enumerate(words):
        ends = word.endswith((".", "!", "?")) or word.endswith((".)", ".'", '."'))
        if ends and word.lower().lstrip("(") not in ABBREVIATIONS and (k + 1 == len(words) or words[k + 1][:1].isupper()):
            return " ".join(words[:k + 1])
    return paragraph


def _whole_summaries(group: click.Group) -> None:
    """Every command under ``group`` lists with :func:`summary_sentence` (unless it names its own), and
    refuses an option given twice (:class:`_OnceEach`)."""
    for command in group.commands.values():
        if command.short_help is None and command.help:
            command.short_help = summary_sentence(command.help)
        if not isinstance(command, _OnceEach):
            command.__class__ = type(f"OnceEach{type(command).__name__}", (_OnceEach, type(command)), {})
        if isinstance(command, click.Group):
            _whole_summaries(command)


class _OnceEach(click.Command):
    """Refuses an option that takes one value given more than once: click keeps the last silently
    (``wang-e build --memory adaptive --memory fixed`` built ``fixed``, a fresh fuzz, 2026-11-28)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        order = self.make_parser(ctx).parse_args(args=list(args))[2]
        seen: set = set()
        for param in order:
            if isinstance(param, click.Option) and not (param.multiple or param.count or param.is_flag):
                if param in seen:
                    raise click.UsageError(f"{param.opts[0]} was given more than once; give it once", ctx)
                seen.add(param)
        return super().parse_args(ctx, args)


_register()


def main() -> None:
    # the name its messages give, also when run as ``python -m expressivity`` (click would say
    # "python -m expressivity.expressivity" there)
    cli(prog_name="expressivity")


if __name__ == "__main__":
    main()
