"""The standard-library corpus: deterministic file list, fixed split by file, identity, refusals."""

import hashlib
import os
from pathlib import Path

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks.corpus import EXCLUDED_PARTS, SPLITS, list_files, load_corpus, split_of, stdlib_root

SLICE = "wsgiref/*"  # 7 files, 56 KB on CPython 3.11, every split present


def test_the_stdlib_slice_loads_deterministically_with_its_facts():
    a = load_corpus("", SLICE)
    b = load_corpus(str(stdlib_root()), (SLICE,))
    assert a is b  # cached per process
    facts = a.facts()
    assert facts["files"] == len(a.files) >= 3 and list(a.files) == sorted(a.files)
    assert all(f.startswith("wsgiref/") and f.endswith(".py") for f in a.files)
    assert facts["bytes"] == sum(a.sizes) == sum(facts["split_bytes"].values())
    assert all(facts["split_bytes"][s] > 0 and facts["split_files"][s] > 0 for s in SPLITS)
    assert facts["python"].split()[-1].count(".") == 2 and len(facts["content_hash"]) == len(facts["file_list_hash"]) == 64
    # the file-list hash is the SHA-256 of the sorted paths, one per line
    assert facts["file_list_hash"] == hashlib.sha256("".join(p + "\n" for p in a.files).encode()).hexdigest()
    # each split's text is its files' bytes, concatenated in order
    root = stdlib_root()
    for s in SPLITS:
        want = b"".join((root / f).read_bytes() for f in a.files if split_of(f) == s)
        assert bytes(a.text(s).tolist()) == want and a.text(s).dtype == torch.uint8


def test_the_whole_stdlib_excludes_tests_and_third_party_and_splits_by_file():
    files = list_files(stdlib_root())
    assert len(files) > 100 and files == sorted(files)
    assert not any(set(f.split("/")) & EXCLUDED_PARTS for f in files)
    counts = {s: sum(1 for f in files if split_of(f) == s) for s in SPLITS}
    assert counts["train"] > 0.8 * len(files) and counts["val"] > 0.02 * len(files) and counts["test"] > 0.02 * len(files)
    # the split depends on the path alone
    assert split_of("json/__init__.py") == split_of("json/__init__.py")


def _tree(root, files: dict):
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text)


def _three_split_names(n=60):
    """File names that land in each split (found by the fixed rule)."""
    names = {s: [] for s in SPLITS}
    k = 0
    while any(len(v) < 2 for v in names.values()):
        name = f"m{k}.py"
        names[split_of(name)].append(name)
        k += 1
    return names


def test_a_folder_corpus_skips_excluded_and_non_python_files_and_hashes_content(tmp_path):
    names = _three_split_names()
    files = {n: f"# {n}\nx = 1\n".encode() for v in names.values() for n in v}
    files.update({"site-packages/pkg.py": b"third party", "test/test_x.py": b"a test", "notes.txt": b"text",
                  "pkg/tests/t.py": b"tests"})
    _tree(tmp_path / "a", files)
    c = load_corpus(tmp_path / "a")
    assert set(c.files) == {n for v in names.values() for n in v}
    for s in SPLITS:
        assert bytes(c.text(s).tolist()) == b"".join(files[f] for f in c.files if split_of(f) == s)
    # same names, one byte changed: same file list, different content hash
    changed = dict(files)
    first = c.files[0]
    changed[first] = files[first] + b"#"
    _tree(tmp_path / "b", changed)
    d = load_corpus(tmp_path / "b")
    assert d.file_list_hash == c.file_list_hash and d.content_hash != c.content_hash and d.bytes == c.bytes + 1
    with pytest.raises(ExpressivityError, match="unknown corpus split"):
        c.text("dev")


def test_empty_or_lopsided_slices_and_missing_folders_are_refused(tmp_path):
    with pytest.raises(ExpressivityError, match="corpus is empty"):
        load_corpus("", "no_such_package/*")
    with pytest.raises(ExpressivityError, match="does not exist"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExpressivityError, match="corpus is empty"):
        load_corpus(tmp_path / "empty")
    only_train = next(f"m{k}.py" for k in range(1000) if split_of(f"m{k}.py") == "train")
    _tree(tmp_path / "one", {only_train: b"x = 1\n"})
    with pytest.raises(ExpressivityError, match="has no val text"):
        load_corpus(tmp_path / "one")
    names = _three_split_names()
    _tree(tmp_path / "blank", {n: b"" if split_of(n) == "test" else b"x\n" for v in names.values() for n in v})
    with pytest.raises(ExpressivityError, match="has no test text"):
        load_corpus(tmp_path / "blank")
    with pytest.raises(ExpressivityError, match="include must be a string"):
        load_corpus("", 7)


def test_an_unreadable_file_is_named(tmp_path, monkeypatch):
    names = _three_split_names()
    _tree(tmp_path, {n: b"x\n" for v in names.values() for n in v})
    unreadable = tmp_path / names["train"][0]
    if os.geteuid() != 0:
        unreadable.chmod(0)
    else:   # root reads a mode-0 file: make that one file's read fail as it would for anyone else
        read_bytes = Path.read_bytes

        def refuse(self):
            if self == unreadable:
                raise PermissionError(13, "Permission denied", str(self))
            return read_bytes(self)
        monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ExpressivityError, match=f"{names['train'][0]} cannot be read \\(Permission denied\\)"):
        load_corpus(tmp_path)
