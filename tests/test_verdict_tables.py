"""The README's verdict table quotes finished runs, and says nothing they do not.

``docs/results/SCALE/NAME/`` holds a finished ``expressivity reproduce NAME --scale SCALE`` run's
files (``criterion.md``, ``verdict.json``, ``results.csv``, ``results.json``, ``figure.png``,
``run.json``). The README's table has a row per claim and a column per scale; a cell that gives a
verdict starts with it in bold, and that word must be the one ``verdict.json`` holds, under the
criterion ``criterion.md`` states (its SHA-256 is in ``verdict.json``), with any amendment of that
criterion named in the cell. A cell without a word
(``not run``, ``—``) must have no folder, and every folder must be quoted. Re-judging a folder with
newer code and copying its files back is how the table is regenerated; this test says when it
was not.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from expressivity.experiments.claims import SCALES, VERDICTS, all_claims, get_claim
from expressivity.experiments.claims.criterion import in_force, statement

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
HEADER = "| claim | quick | medium | full |"
FILES = ("criterion.md", "verdict.json", "results.csv", "results.json", "figure.png", "run.json")
WORD = re.compile(r"^\*\*(" + "|".join(map(re.escape, VERDICTS)) + r")\*\*")


def readme_table() -> dict[tuple[str, str], str]:
    """``{(claim name, scale): cell}`` of the README's verdict table."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(HEADER)
    cells = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        name = re.match(r"`([\w-]+)`", row[0])
        assert name and len(row) == 1 + len(SCALES), f"README verdict table row not understood: {line}"
        cells.update({(name.group(1), scale): cell for scale, cell in zip(SCALES, row[1:])})
    return cells


def folders() -> set[tuple[str, str]]:
    return {(p.parent.name, p.parent.parent.name) for p in RESULTS.glob("*/*/verdict.json")}


def test_every_claim_has_a_row_and_every_folder_is_quoted():
    table = readme_table()
    assert {name for name, _ in table} == set(all_claims())
    unquoted = {(n, s) for n, s in folders() if not WORD.match(table.get((n, s), ""))}
    assert not unquoted, f"docs/results folders the README's verdict table does not quote: {sorted(unquoted)}"


@pytest.mark.parametrize("name,scale", sorted(readme_table()))
def test_a_cell_gives_the_word_its_folder_holds(name, scale):
    cell = readme_table()[(name, scale)]
    folder = RESULTS / scale / name
    word = WORD.match(cell)
    if word is None:
        assert not folder.exists(), f"{folder} holds a run, but the README's cell gives no verdict: {cell!r}"
        return
    assert folder.is_dir(), f"the README quotes '{word.group(1)}' for {name} at {scale}, but {folder} does not exist"
    missing = [f for f in FILES if not (folder / f).is_file()]
    assert not missing, f"{folder} lacks {missing}"
    verdict = json.loads((folder / "verdict.json").read_text())
    assert verdict["verdict"] == word.group(1) and verdict["scale"] == scale and verdict["claim"] == name
    # a criterion amended after the folder's first run is said in the cell, with when
    for amendment in verdict["amendments"]:
        assert "amended" in cell and amendment["time"][:10] in cell, f"{folder}: amendment not in the README: {cell}"
    # the word was reached under the criterion the folder states, and that is today's criterion
    criterion = (folder / "criterion.md").read_bytes()
    assert verdict["criterion_sha256"] == hashlib.sha256(criterion).hexdigest()
    assert " ".join(in_force(criterion.decode()).split()) == " ".join(statement(get_claim(name), scale).split())
