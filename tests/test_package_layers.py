"""Packages form layers: each may import only packages of a strictly lower layer (or itself).

Function-level imports count too: a lazy import is still a dependency. Checked on the source
text (AST), so nothing has to be imported to find a violation.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "expressivity"

# Lower layers first. A package may import anything in an earlier layer, nothing in its own
# layer except itself, nothing later. ``cli`` is on top and nothing imports it.
LAYERS = (
    ("__init__", "errors", "statistics"),
    ("records", "progress", "mixer_switches"),
    ("network", "manifest"),
    ("verify", "targets", "nn"),
    ("tasks", "constructions"),
    ("training", "figures", "rasp"),
    ("export", "experiments"),
    ("inspect",),
    ("cli",),
    ("__main__",),   # ``python -m expressivity``: the command, run as a module
)
RANK = {name: k for k, names in enumerate(LAYERS) for name in names}


def _package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.suffix == ".py" else rel.stem


def _imported_packages(path: Path) -> set[tuple[str, int]]:
    """``(top-level package under expressivity, line)`` for every import in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "expressivity":
                found.add((parts[1] if len(parts) > 1 else "__init__", node.lineno))
    return found


def _modules():
    return sorted(SRC.rglob("*.py"))


def test_every_package_has_a_layer():
    packages = {_package_of(p) for p in _modules()}
    assert packages <= set(RANK), f"add {sorted(packages - set(RANK))} to LAYERS"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_go_downward(path):
    own = _package_of(path)
    bad = [f"line {line}: {own} imports {pkg}" for pkg, line in sorted(_imported_packages(path))
           if pkg in RANK and pkg != own and RANK[pkg] >= RANK[own]]
    assert not bad, "; ".join(bad)


def test_the_checker_sees_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from expressivity.cli.common import console\n")
    assert ("cli", 2) in _imported_packages(bad)
