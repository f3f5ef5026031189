"""What `reproduce --summary` checks of a run folder before reporting it (the module, without the CLI)."""

import json
import shutil
from pathlib import Path

import pytest

from expressivity.errors import ExpressivityError
from expressivity.experiments.claims.verdict_file import check_folders

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "results"


def test_every_committed_result_folder_passes():
    folders = sorted(RESULTS.glob("*/*"))
    assert len(folders) >= 10
    check_folders(folders, markdown=True)


def test_a_malformed_or_unmatched_folder_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "w8"
    shutil.copytree(RESULTS / "quick" / "wang-e-8", folder)
    verdict = json.loads((folder / "verdict.json").read_text())
    (folder / "verdict.json").write_text(json.dumps({**verdict, "verdict": "banana"}))
    with pytest.raises(ExpressivityError, match="'verdict' is a string 'banana'") as info:
        check_folders([folder], markdown=False)
    assert "\n" not in str(info.value)
    (folder / "verdict.json").write_text(json.dumps(verdict))
    check_folders([folder], markdown=False)
    (folder / "criterion.md").write_text((folder / "criterion.md").read_text() + "edited\n")
    with pytest.raises(ExpressivityError, match="does not match the SHA-256"):
        check_folders([folder], markdown=False)
    with pytest.raises(ExpressivityError, match="twice"):
        check_folders([folder, tmp_path / "." / "w8"], markdown=False)
