"""Tables that never cut a number: :func:`print_table` prints a rich ``Table`` at any terminal width.

Rich fits a table that is too wide by shrinking its columns and cutting what no longer fits with
"…" ("0.18…", a fraction without its denominator). Here every column gets at least the width of
its longest word (a cell made only of numbers, such as an interval ``[0.12, 0.34]``, counts as
one word), so a number is printed whole or not at all:

1. the table fits at its natural width: printed as built;
2. it fits with every word whole: text cells and headers wrap at spaces (the columns that lack least
   of their natural width get all of it first);
3. it fits with headers folded inside a word as well (down to the width their cells need, at least
   :data:`HEADER_FOLD`): "val accura/cy" rather than a block per record;
4. it does not: one record per block (``header  value`` per line, or a paragraph of
   ``header=value`` pairs for many columns), each value whole.

A title or caption wider than the table is printed as its own paragraph, wrapped at spaces.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# One number as the commands print them: 12, -0.5, 1.2e-05, 2713639138479549/4503599627370496,
# 95%, 1,234, inf, nan (a sign, a fraction bar, a percent sign and digit groups belong to it).
NUMBER = r"[-+−]?(?:(?:\d[\d,_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+)?%?|inf|nan|infinity)"
# A cell made of numbers alone (an interval, a pair, a list): it is printed on one line.
_ONLY_NUMBERS = re.compile(rf"[\s\[\](){{}}<>~≈±,;:=/-]*(?:{NUMBER}[\s\[\](){{}}<>~≈±,;:=/–-]*)+", re.IGNORECASE)
HEADER_FOLD = 4         # a header may fold onto several lines of at least this width
FIELDS_AS_LINES = 6     # a record of more fields is printed as a paragraph of header=value pairs


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` on ``console`` without cutting a number (see the module notes)."""
    headers = [_plain(column.header) for column in table.columns]
    cells = [[_plain(cell) for cell in column.cells] for column in table.columns]
    if not table.columns or any(h is None for h in headers) or any(c is None for col in cells for c in col):
        console.print(table)   # cells that are not text: rich alone knows their width
        return
    natural = [max([_width(h), *map(_width, col)]) for h, col in zip(headers, cells)]
    cell_least = [max(map(_least_cell, col), default=1) for col in cells]
    whole = [max(cell_least[i], _longest_word(h)) for i, h in enumerate(headers)]
    folded = [max(least, _least_header(h, least)) for h, least in zip(headers, cell_least)]
    overhead = _overhead(console, table)
    room = console.width - overhead
    least = whole if sum(whole) <= room else folded
    if sum(natural) <= room:
        widths = natural
    elif sum(least) <= room:
        widths = _share(least, natural, room)
        for column, width in zip(table.columns, widths):
            column.width, column.min_width, column.max_width = width, None, None
            column.no_wrap, column.overflow = False, "fold"
    else:
        _print_records(console, table, headers, cells)
        return
    table_width = sum(widths) + overhead
    title, caption = table.title, table.caption
    if title is not None and _width(_plain(title) or "") > table_width:
        table.title = None
        console.print(title, style="table.title")
    if caption is not None and _width(_plain(caption) or "") > table_width:
        table.caption = None
    console.print(table)
    if table.caption is None and caption is not None:
        console.print(caption, style="table.caption")


def _plain(cell) -> str | None:
    """The text a cell shows (markup removed), or ``None`` for a renderable that is not text."""
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:   # not valid markup: rich prints it as it is  # noqa: BLE001
            return cell
    return None


def _width(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def is_number_cell(text: str) -> bool:
    """Whether ``text`` holds only numbers (and the brackets, signs and separators between them)."""
    return bool(text.strip()) and _ONLY_NUMBERS.fullmatch(text.strip()) is not None


def _least_cell(text: str) -> int:
    """The narrowest column ``text`` fits with every word whole: a cell of numbers alone on one line
    (an interval is not split), otherwise its longest word."""
    lines = text.splitlines() or [""]
    if all(is_number_cell(line) or not line.strip() for line in lines):
        return _width(text)
    return max((cell_len(word) for word in text.split()), default=1)


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=1)


def _least_header(header: str, cells_need: int) -> int:
    """A header folds down to the width its cells need (``cells_need``), and no narrower than :data:`HEADER_FOLD`."""
    return min(_longest_word(header), max(HEADER_FOLD, cells_need))


def _overhead(console: Console, table: Table) -> int:
    """Columns of the table that are not cell contents: borders, separators and padding (measured
    with every column set one character wide for the moment, then set back)."""
    saved = [(c.width, c.min_width, c.max_width) for c in table.columns]
    try:
        for column in table.columns:
            column.width, column.min_width, column.max_width = 1, None, None
        measured = Measurement.get(console, console.options.update(width=1 << 20), table)
    finally:
        for column, (width, least, most) in zip(table.columns, saved):
            column.width, column.min_width, column.max_width = width, least, most
    return measured.maximum - len(table.columns)


def _share(least: list[int], natural: list[int], room: int) -> list[int]:
    """Widths from ``least`` up: the columns that lack least of their ``natural`` width get all of
    it first (a name, a number), the spare ``room`` left goes to the next (long text wraps)."""
    widths, spare = list(least), room - sum(least)
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - least[i]):
        extra = min(natural[i] - widths[i], spare)
        widths[i] += extra
        spare -= extra
    return widths


def _print_records(console: Console, table: Table, headers: list[str], cells: list[list[str]]) -> None:
    """One block per row, a blank line between rows: ``header  value`` lines (a value wraps under
    itself at spaces, or goes below its header when the header leaves it too little room), or for a
    table of more than :data:`FIELDS_AS_LINES` columns lines of ``header=value`` pairs. No number
    and no pair is split; a single word wider than the terminal gets a line of its own, whole."""
    width = console.width
    if table.title is not None:
        console.print(table.title, style="table.title")
    rows = [[column[k] if k < len(column) else "" for column in cells] for k in range(max(map(len, cells)))]
    pad = min(max(map(cell_len, headers)), width // 3)
    for k, row in enumerate(rows):
        if k:
            console.print()
        pairs = [f"{h}={v}" for h, v in zip(headers, row)]
        if len(headers) > FIELDS_AS_LINES and "\n" not in "".join(pairs) and max(map(cell_len, pairs)) <= width:
            lines = _pack(pairs, width)
        else:
            lines = [line for h, v in zip(headers, row) for line in _field(h, v, pad, width)]
        for line in lines:
            console.print(Text(line), soft_wrap=True)   # wrapped here already: nothing for rich to cut
    if table.caption is not None:
        console.print(table.caption, style="table.caption")


def _field(header: str, value: str, pad: int, width: int) -> list[str]:
    """``header`` padded to ``pad``, then ``value`` wrapped at spaces into the rest of ``width``; or,
    where that leaves a word of it no room, ``header`` alone and the value indented below."""
    beside = width - pad - 2
    if cell_len(header) <= pad and _least_cell(value) <= beside:
        lines = _wrap(value, beside)
        return [f"{header.ljust(pad)}  {lines[0]}", *(" " * (pad + 2) + line for line in lines[1:])]
    return [header, *("  " + line for line in _wrap(value, width - 2))]


def _wrap(value: str, width: int) -> list[str]:
    """``value`` in lines of at most ``width`` broken at spaces only (a cell of numbers alone, and
    any word, stays whole even where it is wider)."""
    import textwrap

    out = []
    for line in value.splitlines() or [""]:
        if is_number_cell(line) or cell_len(line) <= width:
            out.append(line)
        else:
            out += textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""]
    return out


def _pack(pairs: list[str], width: int) -> list[str]:
    """``pairs`` on as few lines of at most ``width`` as their order allows, two spaces apart; a
    pair is never split between lines (one wider than ``width`` gets a line of its own)."""
    lines: list[str] = []
    for pair in pairs:
        if lines and cell_len(lines[-1]) + 2 + cell_len(pair) <= width:
            lines[-1] += "  " + pair
        else:
            lines.append(pair)
    return lines
