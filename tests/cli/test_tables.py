"""Tables that never cut a number (issue 32, item 5): ``expressivity.cli.tables.print_table`` at any
width >= 60, and every command that prints a table, at 60 and 80 columns.

Before: rich shrank a too-wide table and cut cells with "…" (``reproduce wang-e-8`` at 80 columns
printed "0.18…" and the header "inte…", ``circuit max --dtype exact`` cut its fractions, the
demo's Yun table wrapped its intervals over two lines)."""

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from expressivity.cli import common
from expressivity.cli.tables import print_table
from tests.cli_runner import cli_run

WIDTHS = (60, 80)


def rendered(table: Table, width: int, printer=print_table) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, highlight=False, color_system=None)
    printer(console, table) if printer is print_table else console.print(table)
    return buffer.getvalue()


def whole_on_a_line(text: str, value: str) -> bool:
    """``value`` (no line break in it) appears unbroken on one line of ``text``."""
    return any(value in line for line in text.splitlines())


# ---- the printer, on tables drawn at random -------------------------------------------------------------

NUMBERS = st.one_of(
    st.integers(-10**18, 10**18).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(lambda x: f"{x:.10g}"),
    st.floats(1e-12, 1e12).map(lambda x: f"{x:.3e}"),
    st.tuples(st.integers(-10**16, 10**16), st.integers(1, 10**16)).map(lambda t: f"{t[0]}/{t[1]}"),
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)).map(lambda t: f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"),
)
WORDS = st.text("abcdefghij_-", min_size=1, max_size=14)
TEXTS = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)


@st.composite
def tables(draw):
    columns = draw(st.integers(1, 9))
    headers = [draw(st.lists(WORDS, min_size=1, max_size=3).map("_".join)) for _ in range(columns)]
    kinds = [draw(st.sampled_from(["number", "text"])) for _ in range(columns)]
    rows = [[draw(NUMBERS if kind == "number" else TEXTS) for kind in kinds] for _ in range(draw(st.integers(1, 4)))]
    title = draw(st.one_of(st.none(), st.just("a title with 26.244726754808656 in it")))
    return headers, kinds, rows, title


@settings(max_examples=150, deadline=None)
@given(tables(), st.integers(60, 140))
def test_every_number_is_printed_whole_at_any_width(drawn, width):
    headers, kinds, rows, title = drawn
    table = Table(*headers, title=title)
    for row in rows:
        table.add_row(*row)
    text = rendered(table, width)
    assert "…" not in text
    assert max(map(len, text.splitlines())) <= width
    for row in rows:
        for kind, cell in zip(kinds, row):
            if kind == "number":   # an interval "0.1 [0.0, 0.2]" is one number here: not split over lines
                assert whole_on_a_line(text, cell), (cell, text)


def test_rich_alone_cuts_what_print_table_keeps():
    """The check above can fail: the same table printed by rich alone loses digits at 80 columns."""
    table = lambda: Table("interval", "sup_error", "bound", "kernel_l1", "ffn_error_bound", "max_abs_weight",  # noqa: E731
                          "intervals_per_square", "within_bound", "heads", "ffn_width")
    cells = ["0.18 [0.12, 0.25]", "0.001581", "0.003322", "6.65e-04", "0.001956", "7.69e+09", "32", "True", "5", "64"]
    cut, kept = table(), table()
    cut.add_row(*cells)
    kept.add_row(*cells)
    assert "…" in rendered(cut, 80, printer=None)
    text = rendered(kept, 80)
    assert "…" not in text and all(whole_on_a_line(text, c) for c in cells)


def test_a_table_too_wide_for_its_numbers_prints_one_record_per_block():
    table = Table("pos", "input", "output", title="circuit max")
    fractions = ["-466517564113157/562949953421312", "2713639138479549/4503599627370496"]
    table.add_row("0", *fractions)
    table.add_row("1", *reversed(fractions))
    text = rendered(table, 60)
    assert text.splitlines()[0] == "circuit max"
    assert all(whole_on_a_line(text, f) for f in fractions) and "…" not in text
    assert re.search(r"^input +-466517564113157/562949953421312", text, re.MULTILINE)   # header  value


def test_a_title_wider_than_the_table_is_its_own_paragraph():
    table = Table("pos", "input", title="circuit reverse: L=6, scale=26.244726754808656, dtype=float64")
    table.add_row("0", "1")
    text = rendered(table, 60)
    assert whole_on_a_line(text, "scale=26.244726754808656,") and "┃ pos" in text


# ---- every command that prints a table, at 60 and 80 columns ------------------------------------------

@pytest.fixture(params=WIDTHS)
def width(request, monkeypatch):
    monkeypatch.setattr(common.console, "_width", request.param)
    return request.param


def printed(*args) -> str:
    code, out, err = cli_run(*args)
    assert code == 0, err
    assert "…" not in out
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tables")
    for args in (["circuit", "reverse", "--length", "6", "--scale", "inf", "--out", root / "rev6"],
                 ["rasp", "compile", "sort", "--max-len", "3", "--out", root / "sort3"],
                 ["reproduce", "wang-e-8", "--quick", "--out", root / "rp"]):
        code, _, err = cli_run(*args)
        assert code == 0, err
    (root / "t.csv").write_text("family,width,err,seed\n" + "".join(
        f"{f},{w},{0.123456789 * w ** -0.75 * (1 + s / 100):.9f},{s}\n" for f in ("a", "b") for w in (1, 2, 4, 8)
        for s in range(3)))
    return root


def test_circuit_prints_exact_fractions_whole(width):
    out = printed("circuit", "max", "--dtype", "exact", "--scale", "inf", "--seed", "3")
    values = json.loads(cli_run("circuit", "max", "--dtype", "exact", "--scale", "inf", "--seed", "3", "--json")[1])
    assert all(whole_on_a_line(out, str(v)) for v in values["input"] + values["output"])
    assert max(map(len, out.splitlines())) <= width


@pytest.mark.parametrize("args", [["circuits"], ["rasp", "list"], ["tasks"], ["circuit", "reverse"]])
def test_listings_fit_the_width(width, args):
    out = printed(*args)
    assert max(map(len, out.splitlines())) <= width


def test_run_tables(width, folders):
    out = printed("run", folders / "rev6", "--input", "1/3,1/2,0,1,-1,-2/7", "--dtype", "exact", "--residuals")
    assert whole_on_a_line(out, "1/3") and whole_on_a_line(out, "-2/7")
    # a token network's input starts with BOS (id 0): its domain refuses any other first token
    out = printed("run", folders / "sort3", "--input", "0,3,1,2", "--dtype", "exact")
    assert max(map(len, out.splitlines())) <= width


@pytest.mark.slow
def test_reproduce_prints_every_number_of_its_table(width, folders):
    from expressivity.experiments.query import format_number

    out = printed("reproduce", "wang-e-8", "--quick", "--out", folders / "rp")
    rows = json.loads((folders / "rp" / "results.json").read_text())["rows"]
    for row in rows:
        for value in row.values():
            shown = format_number(value) if isinstance(value, float) else str(value)
            assert whole_on_a_line(out, shown), (shown, out)
    summary = printed("reproduce", "--summary", folders / "rp")
    assert "wang-e-8" in summary and "reproduced" in summary


def test_results_and_fit_tables(width, folders):
    out = printed("results", folders / "t.csv", "--metric", "err", "--group-by", "family,width")
    data = json.loads(cli_run("results", folders / "t.csv", "--metric", "err", "--group-by", "family,width",
                              "--json")[1])
    from expressivity.experiments.query import format_number

    for row in data["rows"]:
        assert all(whole_on_a_line(out, format_number(v)) for v in row.values() if isinstance(v, float)), out
    printed("fit", folders / "t.csv", "--x", "width", "--y", "err", "--by", "family", "--seed-col", "seed")


def test_the_demos_tables(width, tmp_path):
    from expressivity.cli import demo, yun

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, highlight=False, color_system=None)
    for module in (demo, yun):
        module.console = console
    try:
        demo.circuits_section(tmp_path)
        yun.demo_section(tmp_path)
    finally:
        demo.console = yun.console = common.console
    text = buffer.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= width
    number = r"\d+(?:\.\d+)?(?:e[+-]\d+)?"
    intervals = re.findall(rf"{number} \[{number}, {number}\]|{number} \(no CI\)", text)
    assert len(intervals) == 4, text   # each d_2 interval (or its absence: the quantizer ramps') on one line


def test_headers_fold_inside_a_word_only_where_whole_words_do_not_fit():
    """A newcomer's walk-through (2026-11-29): at 80 columns `train` folded "val accuracy" into "val accura" and
    "cy" although the table fitted with every header word whole. A header word is split only where nothing else
    fits."""
    headers = ["seed", "status", "steps", "final loss", "val accuracy", "test accuracy", "params", "seconds"]
    row = ["0", "done", "30", "2.358", "0.2351", "0.2190", "35536", "4.5"]

    def printed(width):
        table = Table(*headers)
        table.add_row(*row)
        return rendered(table, width)

    text = printed(80)
    words = [word for header in headers for word in header.split()]
    assert all(text.count(word) == words.count(word) for word in words), text   # "accuracy" twice, whole
    assert max(map(len, text.splitlines())) <= 80
    headers[4:6] = ["validation_accuracy", "held_out_test_accuracy"]
    text = printed(80)   # too wide for every header word whole: one folds, and no number is cut
    assert "held_out_test_accuracy" not in text and "┃" in text   # still a table, not a block per record
    assert all(whole_on_a_line(text, cell) for cell in row[2:])
