"""Light commands stay light (issue 32, item 4): every command and API call that needs no torch runs
in a fresh interpreter without importing it, nor matplotlib or scipy, and duckdb only where a
query runs (``results``, ``fit``). The commands are the table ``benchmarks/bench_startup.py`` times
(:data:`LIGHT`), so a command added there is guarded here too.

Before this change every one of them imported torch (the run record read ``torch.__version__``;
``reproduce --list`` and ``results`` reached the training stack through package imports)."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import bench_startup
finally:
    sys.path.remove(str(BENCHMARKS))

QUERIES = {"results", "results --json", "fit"}   # run DuckDB by design
NEVER = ("torch", "matplotlib", "scipy")

# The Python API's torch-free paths: the RASP interpreter and exact compiler, the circuits and the
# saved-network round trip in exact and float64 arithmetic ({rev6}: a saved circuit, {new}: a new
# folder, both written by bench_startup.make_inputs).
API = {
    "rasp interpreter": "from expressivity import rasp\nfrom expressivity.rasp.library import get_program\n"
                        "assert rasp.evaluate(get_program('sort').build(3), [3, 1, 2]) == [1, 2, 3]",
    "rasp compile exact": "from expressivity import rasp\nfrom expressivity.rasp.library import make_length\n"
                          "c = rasp.compile(make_length(), vocab={1, 2, 3}, max_seq_len=3)\n"
                          "assert c.apply(['BOS', 1, 2, 3]).decoded[1:] == [3, 3, 3]",
    "circuit exact and float64": "from expressivity import build_max, build_reverse, embed, evaluate\n"
                                 "net, _ = build_reverse(4, input_range=3)\nevaluate(net, embed(net, [1, 2, 3, 4]), 'float64')\n"
                                 "net, _ = build_max(4, scale=float('inf'))\nevaluate(net, embed(net, [1, 2, 3, 4]), 'exact')",
    "circuit check and equivariance": "from expressivity.constructions.circuits.check import circuit_equivariance, run_circuit\n"
                                      "assert run_circuit('reverse', [1, 2, 3]).report.ok\n"
                                      "circuit_equivariance('max', 4, 2, 2, 0, 'exact', float('inf'))",
    "load, run and save": "from expressivity import save_network\nfrom expressivity.export.folders import load_saved\n"
                          "from expressivity.inspect.run import parse_input, run_network\n"
                          "saved = load_saved({rev6})\n"
                          "run_network(saved.network, parse_input(saved.network, '1,2,3,4,5,6'), 'float64')\n"
                          "save_network(saved.network, {new} + '/api-net')",
}


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    return bench_startup.make_inputs(tmp_path_factory.mktemp("light"))


def _loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has imported after running ``code``."""
    probe = f"\nimport sys\nprint('LOADED', *[m for m in {bench_startup.HEAVY_MODULES!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code + probe], capture_output=True, text=True, timeout=300,
                          env=bench_startup._env(bench_startup.SRC))
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1].split()[1:]


@pytest.mark.parametrize("name", bench_startup.LIGHT)
def test_a_light_command_imports_no_torch(places, name):
    args = bench_startup.command_line(bench_startup.LIGHT[name], places)
    _, _, heavy, done = bench_startup.run_once(args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [m for m in NEVER if m in heavy], (name, heavy)
    assert ("duckdb" in heavy) == (name in QUERIES), (name, heavy)


@pytest.mark.parametrize("name", API)
def test_a_light_api_call_imports_no_torch(places, name):
    code = API[name]
    for key, path in places.items():
        code = code.replace("{" + key + "}", repr(path))
    heavy = _loaded_after(code)
    assert not [m for m in NEVER + ("duckdb",) if m in heavy], (name, heavy)


def test_the_probe_sees_torch_where_it_is_imported(places):
    """The check can fail: ``tasks`` samples with torch, and the probe reports it."""
    _, _, heavy, done = bench_startup.run_once(bench_startup.HEAVY["tasks"])
    assert done.returncode == 0 and "torch" in heavy
    assert "torch" in _loaded_after("import expressivity.training")
