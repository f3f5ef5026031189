"""``experiments/partial_medium.py``: the complete cells of a stopped reproduce run carry the same
numbers reproduce reports when the run is finished."""

import importlib.util
import json
from pathlib import Path

import pytest

from expressivity.experiments.claims import reproduce

SCRIPT = Path(__file__).resolve().parents[3] / "experiments" / "partial_medium.py"


def _script():
    spec = importlib.util.spec_from_file_location("partial_medium", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_finished_toy_run_reads_as_reproduce_reported_it(tmp_path, capsys):
    out = tmp_path / "wang-e-3"
    reproduce("wang-e-3", out, "quick", overrides={"steps": 20, "seeds": (0, 1), "lrs": (1e-2,), "horizons": (8, 16),
                                         "lin_heads": (1, 8)},
              workers=1)
    result = _script().main([str(out)])
    assert result["runs_done"] == result["runs"] > 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    for row in rows:
        cell = result["table"]["l1"][f"{row['horizon_N']} {row['kernel'].split()[0]} {row['rpe']} {row['heads']}"]
        assert cell["value"] == pytest.approx(row["kernel_l1"]) and cell["n"] == row["seeds"] == 2


def test_a_folder_that_is_not_such_a_run_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        _script().main([str(tmp_path)])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and err.startswith("error:") and err.count("\n") == 1
