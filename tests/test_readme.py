"""The README's Python examples run as written, in order, in one namespace (in a scratch folder)."""

import re
from pathlib import Path

from click.testing import CliRunner

from expressivity.cli.main import cli

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    assert len(BLOCKS) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for index, code in enumerate(BLOCKS):
        # keep the training example short: the same calls, fewer steps
        code = code.replace('RunConfig.for_task("reverse", {"length": 8}, seed=1)',
                            'RunConfig.for_task("reverse", {"length": 8}, train={"steps": 20}, seed=1)')
        if "shift_tl/" in code:  # the README's shell commands that make the folder this block loads
            for args in (["circuit", "shift", "--length", "8", "--out", "shift"],
                         ["export", "shift", "--to", "transformer-lens", "--out", "shift_tl"]):
                result = CliRunner().invoke(cli, args)
                assert result.exit_code == 0, result.output
        exec(compile(code, f"README python block {index}", "exec"), namespace)
