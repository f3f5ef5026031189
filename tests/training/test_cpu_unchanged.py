"""Today's CPU defaults compute what the code computed before issue 29 added execution choices
(precision, attention kernel, capture, sampler, host reads, held-out chunks): small runs of five
kinds (one model and ensembles; attention, DP-free, a T5-biased pre-norm model; token and vector
tasks) give the histories and held-out numbers recorded at commit 1e9eded
(``data/cpu_golden_1e9eded.json``, written by ``data/make_cpu_golden_1e9eded.py``).

Bit for bit where this machine has the torch version, CPU capability and CPU model of a machine
that recorded them at 1e9eded (one file each: ``cpu_golden_1e9eded*.json``); elsewhere (another
CPU's kernels sum in another order) to 1e-5 relative, which still catches any change of
arithmetic, data or schedule. The CPU model is part of the match: an AMD EPYC and an Intel Xeon
both report AVX512 and differ at 1e9eded itself in 21 of 68 recorded numbers (up to 4e-6).
"""

import json
import math
from pathlib import Path

import pytest
import torch

from tests.training.data.make_cpu_golden_1e9eded import CASES, machine, run_case

_DATA = Path(__file__).parent / "data"
# the file recorded on this kind of machine, if any (else the first one, to the tolerance)
_GOLDENS = [json.loads(p.read_text()) for p in sorted(_DATA.glob("cpu_golden_1e9eded*.json"))]
_HERE = [g for g in _GOLDENS if machine(g) == machine()]
SAME_MACHINE = bool(_HERE)
GOLDEN = (_HERE or _GOLDENS)[0]


def _close(got, want, where):
    if isinstance(want, str) and want.startswith(("0x", "-0x")):
        a, b = float.fromhex(got), float.fromhex(want)
        if SAME_MACHINE:
            assert a == b, f"{where}: {a!r} != {b!r} (recorded at 1e9eded on {GOLDEN['cpu_name']})"
        else:
            assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7), f"{where}: {a!r} vs {b!r}"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", list(CASES))
def test_cpu_defaults_give_the_results_recorded_before_execution_choices(name):
    torch.set_num_threads(1)
    got, want = run_case(CASES[name]), GOLDEN["cases"][name]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g["params"] == w["params"]
        assert [set(h) for h in g["history"]] == [set(h) for h in w["history"]], f"{name} member {k}: history keys"
        for i, (hg, hw) in enumerate(zip(g["history"], w["history"])):
            for key in hw:
                _close(hg[key], hw[key], f"{name} member {k} history[{i}].{key}")
        assert set(g["lengths"]) == set(w["lengths"])
        for L in w["lengths"]:
            for key in w["lengths"][L]:
                _close(g["lengths"][L][key], w["lengths"][L][key], f"{name} member {k} length {L} {key}")
