"""Figures are files: a user's MPLBACKEND (for interactive windows) must not break them
(issue 16, item 3: an invalid MPLBACKEND gave a matplotlib traceback and exit 1)."""

import os
import subprocess
import sys
from pathlib import Path

import expressivity


def run_python(code: str, *args: str, backend: str = "no-such-backend", cwd=None):
    """A fresh interpreter (matplotlib reads MPLBACKEND when first imported)."""
    # the package under test, whatever the working folder
    path = os.pathsep.join([str(Path(expressivity.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "MPLBACKEND": backend, "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_an_invalid_mplbackend_still_gives_a_png_and_is_kept_for_children(tmp_path):
    res = run_python("import os, sys\n"
                     "from expressivity.figures import pyplot, save\n"
                     "plt = pyplot()\n"
                     "fig, ax = plt.subplots(); ax.plot([1, 2])\n"
                     "save(fig, sys.argv[1])\n"
                     "print(plt.get_backend().lower(), os.environ['MPLBACKEND'])\n", str(tmp_path / "f.png"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["agg", "no-such-backend"]
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


def test_plot_with_an_invalid_mplbackend_writes_its_figure(tmp_path):
    (tmp_path / "t.csv").write_text("x,y\n1,2\n2,3\n4,5\n")
    res = run_python("from expressivity.cli.main import main; main()", "plot", "t.csv", "--x", "x", "--y", "y",
                     "--out", "p.png", cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
