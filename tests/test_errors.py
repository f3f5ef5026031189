"""One-line errors stay short whatever was typed (issue 32, item 6): a huge number or argument in a
message is shown shortened, with its size, in the Python API's errors and the CLI's alike.

Before: ``run rev6 --input "1e999,..."`` printed a 1,103-character error line (the integer written
out), and a 3,000-character --input came back whole in the error."""

import pytest

from expressivity.errors import ExpressivityError, require_int, shorten_values
from tests.cli_runner import cli_run


def test_long_digit_runs_and_words_are_shortened_with_their_size():
    assert shorten_values("value " + "1" + "0" * 999 + " is too big") == "value 100000000000…000 (1,000 digits) is too big"
    assert shorten_values("got " + "x" * 3000) == "got " + "x" * 60 + "… (3,000 characters)"
    ordinary = "2713639138479549/4503599627370496 at /tmp/some/folder/of/the/user/network.json; 1e-10"
    assert shorten_values(ordinary) == ordinary   # fractions, paths and ordinary numbers are left whole


def test_library_errors_carry_shortened_values():
    with pytest.raises(ExpressivityError) as info:
        require_int(10**500, "length", 1, 4096)
    assert len(str(info.value)) < 120 and "(501 digits)" in str(info.value)


@pytest.mark.parametrize("args", [
    ["circuit", "reverse", "--length", "9" * 400],
    ["circuit", "reverse", "--input", "x" * 5000],
    ["circuit", "sum", "--input", "1e999,1"],
    ["equivariance", "reverse", "--samples", "-" + "9" * 300],
])
def test_cli_errors_are_one_short_line(args):
    code, out, err = cli_run(*args)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error:"), err
    assert len(err) < 400, err


def test_running_out_of_memory_is_one_line_not_a_traceback(monkeypatch):
    """A fresh fuzz (2026-11-28): an allocation no estimate covered ended in NumPy's _ArrayMemoryError traceback."""
    from click.testing import CliRunner

    import expressivity.constructions.circuits.check as check
    from expressivity.cli.main import cli

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 2.06 GiB for an array with shape (66, 2048, 2048)")

    monkeypatch.setattr(check, "run_circuit", exhausted)
    res = CliRunner().invoke(cli, ["circuit", "sum", "--length", "3"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert res.stderr.startswith("error: ran out of memory (Unable to allocate 2.06 GiB") and "smaller sizes" in res.stderr


@pytest.mark.parametrize("message,one_line", [
    ("[enforce fail at alloc_cpu.cpp:127] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate "
     "10319184896 bytes. Error code 12 (Cannot allocate memory)", True),
    ("CUDA out of memory. Tried to allocate 20.00 GiB", True),
    ("mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)", False),   # a bug stays a traceback
])
def test_torch_failing_to_allocate_is_one_line_not_a_traceback(monkeypatch, message, one_line):
    """A fresh audit (2026-11-28): torch's CPU allocator raises RuntimeError, not MemoryError, and
    ``train`` under ``ulimit -v`` ended in a traceback."""
    from click.testing import CliRunner

    import expressivity.constructions.circuits.check as check
    from expressivity.cli.main import cli

    def exhausted(*args, **kwargs):
        raise RuntimeError(message)

    monkeypatch.setattr(check, "run_circuit", exhausted)
    res = CliRunner().invoke(cli, ["circuit", "sum", "--length", "3"])
    if one_line:
        assert res.exit_code == 2 and res.stderr.count("\n") == 1 and res.stderr.startswith("error: ran out of memory (")
    else:
        assert isinstance(res.exception, RuntimeError) and "ran out of memory" not in res.stderr


def test_the_memory_budget_counts_an_address_space_limit(monkeypatch):
    import resource

    from expressivity.training import budget

    monkeypatch.setattr(resource, "getrlimit", lambda which: (3 * 10**9, resource.RLIM_INFINITY))
    left = budget.address_space_left()
    assert 0 <= left < 3 * 10**9 and budget.available_ram()[0] <= left
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert budget.address_space_left() is None
