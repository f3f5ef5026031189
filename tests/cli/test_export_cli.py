"""``expressivity export``, ``run``, ``show`` and ``circuit --out`` as a user runs them, and fuzzed."""

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from expressivity.cli.main import cli


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="session")
def tl():
    """TransformerLens (an extra): skipped when missing, a failure when EXPRESSIVITY_REQUIRE_INTERP=1 (make test)."""
    import os

    try:
        import transformer_lens
    except ImportError:
        if os.environ.get("EXPRESSIVITY_REQUIRE_INTERP") == "1":
            pytest.fail("TransformerLens is required (EXPRESSIVITY_REQUIRE_INTERP=1)")
        pytest.skip("TransformerLens is not installed (pip install 'expressivity[interp]')")
    return transformer_lens


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    for args in (["circuit", "reverse", "--length", "5", "--out", root / "rev"],
                 ["circuit", "mean", "--length", "4", "--out", root / "mean"],
                 ["circuit", "reverse", "--length", "5", "--scale", "inf", "--out", root / "hard"],
                 ["wang-e", "build", "--memory", "fixed", "--readout", "linear", "--out", root / "we"],
                 ["train", "--task", "reverse", "--length", "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8",
                  "--batch-size", "8", "--steps", "3", "--out", root / "train"]):
        code, _, err = run(*args)
        assert code == 0, err
    return root


def test_circuit_out_saves_network_report_and_record(saved):
    assert (saved / "rev" / "network" / "network.json").exists()
    report = json.loads((saved / "rev" / "report.json").read_text())
    record = json.loads((saved / "rev" / "run.json").read_text())
    assert report["ok"] and record["command"] == "circuit" and record["config"]["out"] == str(saved / "rev")
    code, _, err = run("circuit", "reverse", "--length", "5", "--out", saved / "rev", "--json")   # ours: replaced whole
    assert code == 0 and (saved / "rev" / "network" / "network.json").exists()
    code, _, err = run("circuit", "reverse", "--out", "")
    assert code == 2 and "current folder" in err


def test_run_prints_output_and_residuals_under_labels(saved):
    code, out, err = run("run", saved / "rev", "--input", "1,2,3,4,5", "--residuals", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert [round(v[0], 9) for v in obj["output"]] == [5, 4, 3, 2, 1] and obj["output_labels"] == ["y"]
    assert obj["residual_labels"] == ["x", "out"] and len(obj["residuals"]) == 2
    assert obj["run"]["command"] == "run" and obj["source"]["kind"] == "construction"
    code, out, _ = run("run", saved / "hard", "--input", "1/3,2,3,4,5", "--dtype", "exact")
    assert code == 0 and "1/3" in out and "exact rationals" in out
    code, out, _ = run("run", saved / "train", "--input", "1,0,2,3")
    assert code == 0 and "answer" in out and "position" in out
    code, out, _ = run("run", saved / "we", "--input", "0.5,-0.25,1")
    assert code == 0 and "Wang" in out


def test_show_writes_one_self_contained_page(saved, tmp_path):
    code, _, err = run("train", "--task", "reverse", "--length", "4", "--mixer", "attention,sepconv", "--layers", "2",
                       "--d-model", "8", "--heads", "2", "--ffn-width", "8", "--batch-size", "8", "--steps", "2",
                       "--out", tmp_path / "mixed")
    assert code == 0, err
    code, out, err = run("show", tmp_path / "mixed", "--out", tmp_path / "mixed.html", "--json")
    assert code == 0, err
    text = (tmp_path / "mixed.html").read_text()   # one heatmap per head, attention and mixing alike
    assert json.loads(out)["heads"] == text.count('data-kind="attention"') + text.count('data-kind="mixing"') == 3
    assert text.count('data-kind="mixing"') == 1
    for folder in ("rev", "we", "train", "hard"):
        page = tmp_path / f"{folder}.html"
        code, out, err = run("show", saved / folder, "--out", page, "--json")
        assert code == 0, err
        obj = json.loads(out)
        text = page.read_text()
        assert obj["bytes"] == len(text.encode()) and text.count('class="heatmap"') == obj["heads"]
    code, _, err = run("show", saved / "rev", "--input", "5,4,3,2,1", "--out", tmp_path / "deep" / "p.html")
    assert code == 0 and (tmp_path / "deep" / "p.html").exists()


def test_export_to_network_then_run_it(saved, tmp_path):
    code, out, err = run("export", saved / "train", "--to", "network", "--out", tmp_path / "net", "--json")
    assert code == 0, err
    assert json.loads(out)["to"] == "network" and (tmp_path / "net" / "network.json").exists()
    a = json.loads(run("run", tmp_path / "net", "--input", "1,0,2,3", "--json")[1])
    b = json.loads(run("run", saved / "train", "--input", "1,0,2,3", "--json")[1])
    assert a["output"] == b["output"]


def test_export_to_transformer_lens_verifies_and_records(saved, tmp_path, tl):
    code, out, err = run("export", saved / "rev", "--to", "transformer-lens", "--out", tmp_path / "tl", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["verified"]["float64"]["status"] == "ok" and obj["verified"]["float32"]["status"] == "ok"
    assert obj["cost"]["position_dims"] == 5 and {p.name for p in (tmp_path / "tl").iterdir()} == {
        "config.json", "model.safetensors", "expressivity.json", "README.md", "run.json", "manifest.json"}
    desc = json.loads((tmp_path / "tl" / "expressivity.json").read_text())
    assert desc["verified"]["float64"]["output_relative"] <= 1e-10 and desc["labels"][:2] == ["x", "out"]
    record = json.loads((tmp_path / "tl" / "run.json").read_text())   # the commit stays the commit (it was replaced)
    assert set(record["source"]) == {"commit", "dirty"} and record["exported"]["kind"] == "construction"
    code, out, _ = run("run", tmp_path / "tl", "--input", "1,0; 2,0; 3,0; 4,0; 5,0", "--json")   # imported back
    assert code == 0 and [round(v[0], 9) for v in json.loads(out)["output"]] == [5, 4, 3, 2, 1]
    code, out, _ = run("export", saved / "mean", "--to", "transformer-lens", "--out", tmp_path / "mean")
    assert code == 0 and "exported exactly as softmax" in out
    code, out, err = run("export", saved / "hard", "--to", "transformer-lens", "--out", tmp_path / "hard",
                         "--hardmax-lambda", "40")
    assert code == 0, err
    assert "at most" in out and "softmax copy vs the hardmax network" in out
    assert "carries no claim on any input" in out and "outside the lengths" not in out
    # a fresh audit (2026-11-28): the softmax copy kept the hardmax claim ("any real [exact]") and `run` marked
    # its outputs (1.58 where the reversal says 1) within it; it carries no claim, so run refuses or marks them
    assert json.loads((tmp_path / "hard" / "expressivity.json").read_text())["within_claim"] is False
    hard_input = ",".join(str(v) for v in range(1, 1 + json.loads((tmp_path / "hard" / "config.json").read_text())["n_ctx"]))
    code, _, err = run("run", tmp_path / "hard", "--input", hard_input)
    assert code == 2 and "carries no claim on any input: its hardmax layers were exported as softmax of 40" in err
    code, out, _ = run("run", tmp_path / "hard", "--input", hard_input, "--allow-outside", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False and "no proven bound" in json.loads(out)["outside_claim"]
    code, out, err = run("export", tmp_path / "hard", "--to", "network", "--out", tmp_path / "hard_net")
    assert code == 0, err
    # its summary printed the lost claim's lengths and domain ("claim covers inputs: ... [exact]") while run
    # refused it as carrying none (2026-11-28)
    assert "claim: none on any input (its hardmax layers were exported as softmax" in out
    assert "claim covers inputs" not in out and "valid:" not in out
    code, _, err = run("run", tmp_path / "hard_net", "--input", hard_input)   # saved again: still no claim
    assert code == 2 and "carries no claim" in err
    code, out, _ = run("export", saved / "train", "--to", "transformer-lens", "--out", tmp_path / "train")
    assert code == 0 and "float64: output" in out
    code, _, err = run("show", tmp_path / "train", "--out", tmp_path / "train.html")
    assert code == 0, err


def test_export_without_transformer_lens_still_writes_and_says_so(saved, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformer_lens", None)   # import transformer_lens raises ImportError
    code, out, err = run("export", saved / "rev", "--to", "transformer-lens", "--out", tmp_path / "tl", "--json")
    assert code == 0, err
    assert json.loads(out)["verified"]["status"].startswith("not run: TransformerLens is not installed")


def test_a_failed_verification_writes_nothing_and_exits_1(saved, tmp_path, monkeypatch, tl):
    from expressivity.export import transformer_lens

    def broken(net, export, X, dtypes=("float32", "float64"), folder=None):
        bad = {"output_relative": 1.0, "pattern_abs": 1.0, "residual_relative": 1.0, "tolerance": 1e-10,
               "status": "failed"}
        return {"float32": bad, "float64": bad}

    monkeypatch.setattr(transformer_lens, "verify", broken)
    code, _, err = run("export", saved / "rev", "--to", "transformer-lens", "--out", tmp_path / "tl")
    assert code == 1 and "does not reproduce" in err and list(tmp_path.iterdir()) == []   # no partial folder either


def _one_line_error(code, err, needle):
    assert code == 2, err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert needle in err, err


FUZZ_RUN = [
    (["--input", ""], "empty"), (["--input", "   "], "empty"), (["--input", "nan,1,2,3,4"], "not a finite number"),
    (["--input", "1,2,3,4,inf"], "not a finite number"), (["--input", "-inf,1,2,3,4"], "not a finite number"),
    (["--input", "a,b,c,d,e"], "not a number"), (["--input", "1,2,3"], "built for length 5"),
    (["--input", "1e400,1,2,3,4"], "max - min of x in the input is 9.99999e+399, above 4"),
    (["--input", "1e400,1,2,3,4", "--allow-outside"], "value 1e+400 is beyond the float64 range"), (["--input", "1,2,3,4,5", "--dtype", "exact"], "softmax"),
    (["--input", "1,2,3,4,5", "--dtype", "float16"], "--dtype"), (["--input", "1;2;;3;4"], "empty"),
    (["--input", "[[1,2]]"], "2 values"), (["--input", "1,2,3,4,5", "--residuals", "x"], "unexpected extra argument"),
    ([], "--input"), (["--input", "1/0,1,2,3,4"], "not a number"),
]


@pytest.mark.parametrize("args, needle", FUZZ_RUN)
def test_run_fuzz(saved, args, needle):
    _one_line_error(*run("run", saved / "rev", *args)[::2], needle)


@pytest.mark.parametrize("path, needle", [
    ("", "empty path"), ("/no/such/folder", "does not exist"), ("__file__", "is a file"), ("__empty__", "no saved network"),
    ("__corrupt__", "not valid JSON"), ("__truncated__", "safetensors"),
])
def test_run_and_show_refuse_missing_or_corrupt_folders(saved, tmp_path, path, needle):
    if path == "__file__":
        path = saved / "rev" / "report.json"
    elif path == "__empty__":
        path = tmp_path
    elif path in ("__corrupt__", "__truncated__"):
        import shutil

        path = tmp_path / "copy"
        shutil.copytree(saved / "rev" / "network", path)
        if "corrupt" in needle or needle == "not valid JSON":
            (path / "network.json").write_text('{"format": ')
        else:
            data = (path / "weights.safetensors").read_bytes()
            (path / "weights.safetensors").write_bytes(data[: len(data) // 2])
    _one_line_error(*run("run", path, "--input", "1,2,3,4,5")[::2], needle)
    _one_line_error(*run("show", path, "--out", tmp_path / "p.html")[::2], needle)


@pytest.mark.parametrize("args, needle", [
    (["--out", ""], "--out must name"), (["--out", "__dir__"], "is a folder"), (["--input", "1,2"], "built for length 5"),
    (["--input", "nan,1,2,3,4", "--out", "p.html"], "not a finite number"), ([], "--out"),
    (["--out", "p.html", "--dtype", "exact"], "No such option"),
])
def test_show_fuzz(saved, tmp_path, args, needle):
    args = [tmp_path if a == "__dir__" else a for a in args]
    if "--out" not in args and args[:1] == ["--input"]:
        args += ["--out", tmp_path / "p.html"]
    _one_line_error(*run("show", saved / "rev", *args)[::2], needle)


@pytest.mark.parametrize("args, needle", [
    (["--to", "onnx"], "--to"), (["--n-ctx", "0"], "--n-ctx"), (["--n-ctx", "abc"], "--n-ctx"),
    (["--n-ctx", "99"], "at most 5 tokens"), (["--hardmax-lambda", "nan"], "--hardmax-lambda"),
    (["--hardmax-lambda", "-1"], "--hardmax-lambda"), (["--hardmax-lambda", "inf"], "--hardmax-lambda"),
    (["--hardmax-lambda", "1e999"], "--hardmax-lambda"), (["--hardmax-lambda", ""], "--hardmax-lambda"),
    (["--out", ""], "--out must name"), (["--out", "__theirs__"], "did not write"),
])
def test_export_fuzz(saved, tmp_path, args, needle):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("mine")
    args = [theirs if a == "__theirs__" else a for a in args]
    base = ["export", saved / "rev"]
    if "--to" not in args:
        base += ["--to", "transformer-lens"]
    if "--out" not in args:
        base += ["--out", tmp_path / "x"]
    _one_line_error(*run(*base, *args)[::2], needle)
    assert (theirs / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("folder, args, needle", [
    ("rev", ["--to", "network"], "already a saved network"),
    ("train", ["--to", "network", "--n-ctx", "4"], "--to network does not take --n-ctx"),
    ("train", ["--to", "network", "--hardmax-lambda", "3", "--no-verify"], "--hardmax-lambda, --no-verify"),
    ("hard", ["--to", "transformer-lens"], "--hardmax-lambda LAM"),
    ("we", ["--to", "transformer-lens"], "infinite past"),
])
def test_export_refuses_what_does_not_apply_with_the_fix(saved, tmp_path, folder, args, needle):
    _one_line_error(*run("export", saved / folder, *args, "--out", tmp_path / "x")[::2], needle)
    assert not (tmp_path / "x").exists()


def test_n_ctx_must_cover_a_fixed_length_network_and_may_shorten_a_bounded_one(saved, tmp_path, tl):
    _one_line_error(*run("export", saved / "rev", "--to", "transformer-lens", "--out", tmp_path / "a",
                         "--n-ctx", "2")[::2], "exactly 5 tokens")
    code, out, err = run("export", saved / "train", "--to", "transformer-lens", "--out", tmp_path / "b", "--n-ctx", "2",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["config"]["n_ctx"] == 2 and json.loads(out)["verified"]["float64"]["status"] == "ok"


def test_hardmax_lambda_is_refused_where_no_hardmax_layer_needs_it(saved, tmp_path):
    for folder in ("rev", "mean"):
        _one_line_error(*run("export", saved / folder, "--to", "transformer-lens", "--out", tmp_path / folder,
                             "--hardmax-lambda", "5")[::2], "drop it")


# ---- a file a folder's manifest lists, missing or damaged: one line naming it and the fix, not a reinterpretation ----

def _damaged_copy(src, dst, name, text):
    """A copy of the folder ``src`` at ``dst`` with its file ``name`` removed (``text`` None) or overwritten."""
    import shutil

    shutil.copytree(src, dst)
    if text is None:
        (dst / name).unlink()
    else:
        (dst / name).write_text(text)
    return dst


@pytest.fixture(scope="module")
def rev_tl(saved):
    """The reversal circuit exported to TransformerLens (unverified: these tests read the folder back)."""
    code, _, err = run("export", saved / "rev", "--to", "transformer-lens", "--out", saved / "rev_tl", "--no-verify")
    assert code == 0, err
    return saved / "rev_tl"


@pytest.mark.parametrize("text, needle", [
    (None, "expressivity.json is missing, though {f}/manifest.json lists it; export the network again "
           "(expressivity export {rev} --to transformer-lens --out {f})"),
    ("{bad", "expressivity.json is not valid JSON"),
])
def test_a_transformer_lens_folder_missing_its_listed_description_is_refused_not_read_as_tokens(saved, rev_tl, tmp_path,
                                                                                                 text, needle):
    folder = _damaged_copy(rev_tl, tmp_path / "tl", "expressivity.json", text)
    needle = needle.format(f=folder, rev=saved / "rev")
    for args in (["run", folder, "--input", "0,1,1,0,1"], ["show", folder, "--out", tmp_path / "p.html"]):
        code, out, err = run(*args)
        _one_line_error(code, err, needle)
        assert out == "" and "answer" not in err
    assert not (tmp_path / "p.html").exists()
    if text is not None:
        assert err.rstrip().endswith("; re-export the network")


def test_a_transformer_lens_folder_missing_a_listed_weights_or_config_file_names_it(rev_tl, tmp_path):
    for name in ("config.json", "model.safetensors"):
        folder = _damaged_copy(rev_tl, tmp_path / name, name, None)
        _one_line_error(*run("run", folder, "--input", "1,2,3,4,5")[::2],
                        f"{folder / name} is missing, though {folder}/manifest.json lists it; export the network again")


def test_without_a_manifest_an_export_missing_its_description_is_read_as_tokens_with_a_warning(rev_tl, tmp_path):
    folder = tmp_path / "bare"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        (folder / name).write_bytes((rev_tl / name).read_bytes())
    code, out, err = run("run", folder, "--input", "0,1,1,0,1", "--json")
    assert code == 0, err
    assert err.strip() == (f"warning: {folder} was exported by expressivity but has no expressivity.json, so it is "
                           "read as a token model without the export's input layout, labels, valid lengths or input "
                           "domain; export the network again")
    assert json.loads(out)["input_ids"] == [0, 1, 1, 0, 1]


@pytest.mark.parametrize("text, needle", [
    (None, "report.json is missing, though {f}/manifest.json lists it as the construction report of {f}/network; "
           "run the construction again (expressivity circuit ... --out {f}, with the options its run.json records)"),
    ("{bad", "report.json (the construction report {f}/manifest.json lists) is not valid JSON (JSONDecodeError); "
             "run the construction again"),
    ('{"checks": "no"}', "report.json holds no construction report (checks and size), though {f}/manifest.json lists "
                         "one there; run the construction again"),
])
def test_a_construction_missing_its_listed_report_is_refused_not_shown_as_never_saved(saved, tmp_path, text, needle):
    folder = _damaged_copy(saved / "rev", tmp_path / "rev", "report.json", text)
    needle = needle.format(f=folder)
    code, out, err = run("run", folder, "--input", "1,2,3,4,5", "--json")
    _one_line_error(code, err, needle)
    assert out == ""
    code, out, err = run("show", folder, "--out", tmp_path / "p.html")
    _one_line_error(code, err, needle)
    assert not (tmp_path / "p.html").exists()


def test_a_construction_missing_its_listed_network_file_names_the_fix(saved, tmp_path):
    folder = _damaged_copy(saved / "rev", tmp_path / "rev", "network/weights.safetensors", None)
    _one_line_error(*run("run", folder, "--input", "1,2,3,4,5")[::2],
                    f"{folder}/network/weights.safetensors is missing, though {folder}/manifest.json lists it; "
                    f"run the construction again (expressivity circuit ... --out {folder}")


READ_FIX = ("the run's checkpoint is damaged or missing, so it cannot be read: train it again into a new folder "
            "(expressivity train ... --out NEW, with the options of the original run)")


@pytest.mark.parametrize("damage, needle", [
    ("truncated", "model.safetensors does not match the SHA-256 its config.json records"),
    ("missing weights", "has unreadable weights (No such file or directory"),
    ("missing config", "(config.json is missing)"),
    ("another shape", "does not fit this model"),   # saved whole, with its digest: the shapes are what is wrong
    ("changed", "model.safetensors does not match the SHA-256 its config.json records"),
])
def test_a_damaged_trained_run_says_to_train_again_not_to_delete_the_folder(saved, tmp_path, damage, needle):
    import shutil

    folder = tmp_path / "train"
    shutil.copytree(saved / "train", folder)
    ckpt = folder / "seed_0" / "checkpoint"
    weights = ckpt / "model.safetensors"
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:100])
    elif damage == "missing weights":
        weights.unlink()
    elif damage == "missing config":
        (ckpt / "config.json").unlink()
    elif damage == "changed":
        data = bytearray(weights.read_bytes())
        data[-5] ^= 1
        weights.write_bytes(bytes(data))
    else:
        import hashlib
        import json

        from safetensors.torch import load_file, save_file

        tensors = load_file(weights)
        first = sorted(tensors)[0]
        tensors[first] = tensors[first][:1].clone()
        save_file(tensors, weights)
        config = json.loads((ckpt / "config.json").read_text())
        config["files_sha256"]["model.safetensors"] = hashlib.sha256(weights.read_bytes()).hexdigest()
        (ckpt / "config.json").write_text(json.dumps(config))
    code, out, err = run("run", folder, "--input", "1,2,3,0")
    _one_line_error(code, err, needle)
    assert err.rstrip().endswith("; " + READ_FIX) and "start over" not in err and "fresh run" not in err
    if damage in ("truncated", "another shape", "changed"):   # resuming training keeps its own advice
        code, _, err = run("train", "--resume", folder)
        _one_line_error(code, err, "to start over")
        assert "train it again" not in err


def test_allow_length_is_refused_where_the_network_claims_no_narrower_lengths(saved, tmp_path):
    """`export RUN --to transformer-lens --allow-length` on a trained run wrote what it wrote without the flag, where
    `run` refuses the flag as not applying (an audit, 2026-11-28)."""
    code, _, err = run("export", saved / "train", "--to", "transformer-lens", "--allow-length", "--out", tmp_path / "t")
    assert code == 2 and "--allow-length does not apply" in err and not (tmp_path / "t").exists()


def _bfloat16(folder, name):
    import safetensors.torch
    import torch

    tensors = safetensors.torch.load_file(str(folder / name))
    safetensors.torch.save_file({k: v.to(torch.bfloat16) for k, v in tensors.items()}, str(folder / name))


@pytest.mark.parametrize("which, name, damage, needle", [
    ("rev", "manifest.json", "nested", "manifest.json is not valid JSON"),
    ("rev", "report.json", "nested", "is not valid JSON"),
    ("rev", "network/weights.safetensors", "bfloat16", "weights.safetensors is not a readable safetensors file"),
    ("rev_tl", "expressivity.json", "nested", "expressivity.json is not valid JSON"),
    ("rev_tl", "config.json", "nested", "config.json is not valid JSON"),
    ("rev_tl", "model.safetensors", "bfloat16", "model.safetensors is not a readable safetensors file"),
    ("train", "seed_0/checkpoint/config.json", "nested", "corrupt config.json"),
    ("rev_tl", "expressivity.json", "control", "expressivity.json holds a terminal control character"),
    ("rev_tl", "config.json", "control", "config.json holds a terminal control character"),
])
def test_hostile_files_of_a_shared_folder_are_one_line_errors(saved, rev_tl, tmp_path, which, name, damage, needle):
    """A fresh audit (2026-11-28): JSON nested 200,000 levels deep (RecursionError) and bfloat16 weights (numpy has
    no such dtype: TypeError) were tracebacks from `run`, `show` and `export`; nothing may be written."""
    import shutil

    folder = tmp_path / which
    shutil.copytree(rev_tl if which == "rev_tl" else saved / which, folder)
    if damage == "nested":
        (folder / name).write_text("[" * 200_000)
    elif damage == "control":     # a name that retitles and clears the terminal it is printed on
        value = json.loads((folder / name).read_text())
        (folder / name).write_text(json.dumps(value | {"model_name": "rev\x1b]0;PWNED\x07\x1b[2J"}))
    else:
        _bfloat16(folder, name)
    for args in (["run", folder], ["show", folder, "--out", tmp_path / "page.html"],
                 ["export", folder, "--to", "network", "--out", tmp_path / "net"]):
        code, _, err = run(*args, "--input", "1,2,3,4,5") if args[0] != "export" else run(*args)
        _one_line_error(code, err, needle)
        assert not (tmp_path / "page.html").exists() and not (tmp_path / "net").exists()


def test_an_exports_readme_states_the_lengths_it_is_verified_for(tmp_path, tl):
    """A fresh audit (2026-11-28): the sum circuit (valid at its built length only) exported with a README saying
    "built and verified for lengths 1..8", where 4 tokens give 20 for a sum of 10; the other exports' READMEs
    named no lengths, and an `--allow-length` export's read as a normal one's."""
    import re

    def said(folder):
        return re.search(r"It is built and verified for (.*?)\.(?: |$)", (folder / "README.md").read_text()).group(1)

    for name, lengths in (("sum", "length 8"), ("shift", "lengths 1..8")):
        assert run("circuit", name, "--length", "8", "--out", tmp_path / name)[0] == 0
        code, _, err = run("export", tmp_path / name, "--to", "transformer-lens", "--out", tmp_path / f"{name}_tl")
        assert code == 0, err
        assert said(tmp_path / f"{name}_tl") == lengths
        assert "outside those lengths" not in (tmp_path / f"{name}_tl" / "README.md").read_text()
    code, _, err = run("export", tmp_path / "sum", "--to", "transformer-lens", "--n-ctx", "16", "--allow-length",
                       "--out", tmp_path / "sum16")
    assert code == 0, err
    assert said(tmp_path / "sum16") == "length 8"
    assert "exported with n_ctx = 16, outside those lengths" in (tmp_path / "sum16" / "README.md").read_text()


def test_a_circuits_transformer_lens_export_is_rebuilt_and_compared(tmp_path, tl):
    """A TransformerLens export of a circuit with its unembedding doubled and its digests written again kept its claim
    (an audit, 2026-11-28: doubled outputs within the claim); the export records its circuit's constants, and the
    folder is compared value for value with the circuit built and exported again."""
    from safetensors.numpy import load_file, save_file

    from expressivity.export.folders import load_saved
    from expressivity.manifest import file_digests, with_own_digest

    assert run("circuit", "shift", "--length", "6", "--out", tmp_path / "s")[0] == 0
    code, _, err = run("export", tmp_path / "s", "--to", "transformer-lens", "--out", tmp_path / "t")
    assert code == 0, err
    desc = json.loads((tmp_path / "t" / "expressivity.json").read_text())
    assert desc["circuit"] == "shift" and desc["circuit_constants"]["length"] == 6
    assert load_saved(tmp_path / "t").network.no_claim is None
    import shutil

    shutil.copytree(tmp_path / "t", tmp_path / "f")
    tensors = load_file(str(tmp_path / "f" / "model.safetensors"))
    tensors["unembed.weight"] = tensors["unembed.weight"] * 2
    save_file(tensors, str(tmp_path / "f" / "model.safetensors"))
    desc["sha256"] |= file_digests({"model.safetensors": (tmp_path / "f" / "model.safetensors").read_bytes()})
    (tmp_path / "f" / "expressivity.json").write_text(json.dumps(with_own_digest(desc, "expressivity.json")))
    assert "its model is not circuit 'shift' built again" in load_saved(tmp_path / "f").network.no_claim
    code, _, err = run("run", tmp_path / "f", "--input", "1,2,3,4,5,6")
    _one_line_error(code, err, "carries no claim")


def test_show_says_what_its_parameter_count_counts_and_a_transformer_lens_folder_s_own(saved, rev_tl, tmp_path, tl):
    """An audit (2026-11-28): a TransformerLens folder's page said "parameters 304" while its model.safetensors holds
    326 entries, with nothing saying which layout either counts."""
    from safetensors.numpy import load_file

    for folder, stored in ((saved / "rev", None), (rev_tl, sum(v.size for v in load_file(rev_tl / "model.safetensors")
                                                                  .values()))):
        code, _, err = run("show", folder, "--out", tmp_path / "page.html")
        assert code == 0, err
        page = (tmp_path / "page.html").read_text()
        size = page[page.index("<h2>Size</h2>"):]
        size = size[:size.index("</table>")]
        assert "zeros included" in size
        assert (f"TransformerLens parameters</th><td>{stored} (every entry of model.safetensors" in size) == \
            (stored is not None) and ("TransformerLens parameters" in size) == (stored is not None)


def test_an_export_s_run_record_names_the_network_it_exported(saved, tmp_path):
    """An audit (2026-11-28): the record named only the path exported, which may hold another network later; a
    replayed record wrote other weights while the two records read the same."""
    from expressivity.export.folders import load_saved
    from expressivity.network.network import weights_digest

    code, _, err = run("export", saved / "rev", "--to", "transformer-lens", "--out", tmp_path / "e", "--no-verify")
    assert code == 0, err
    config = json.loads((tmp_path / "e" / "run.json").read_text())["config"]
    assert config["source_folder"] == str((saved / "rev").resolve())
    assert config["source_weights_digest"] == weights_digest(load_saved(saved / "rev").network)


def test_show_and_export_of_a_changed_network_name_their_own_way_out(tmp_path):
    """A fuzz (2026-11-28): `show` and `export` of a network whose weights changed after saving said "pass
    allow_outside=True" (the Python keyword); show's flag is --allow-outside, and export has none."""
    from safetensors.numpy import load_file, save_file

    code, _, err = run("circuit", "sum", "--length", "3", "--out", tmp_path / "c")
    assert code == 0, err
    weights = tmp_path / "c" / "network" / "weights.safetensors"
    tensors = load_file(weights)
    key = next(k for k, v in tensors.items() if np.any(v))
    tensors[key] = tensors[key] * 2
    save_file(tensors, weights)
    code, _, err = run("show", tmp_path / "c" / "network", "--out", tmp_path / "p.html")
    assert code == 2 and "pass --allow-outside to run it anyway" in err and "allow_outside=True" not in err
    code, _, err = run("export", tmp_path / "c" / "network", "--to", "transformer-lens", "--out", tmp_path / "t")
    assert code == 2 and "build or save it again" in err and "allow_outside" not in err


def test_an_export_of_a_network_that_lost_its_claim_claims_nothing(tmp_path):
    """A shift circuit with its readout x1.5, saved with the API: `run` refused it, but `export` wrote a TransformerLens
    folder "within its claim" that answered [1.5, 1.5, 3.0, ...] for [1, 1, 2, ...] (a fresh audit, 2026-11-29)."""
    import dataclasses

    import numpy as np

    from expressivity import build_shift, save_network

    net, _ = build_shift(6)
    save_network(dataclasses.replace(net, readout=np.asarray(net.readout) * 1.5), tmp_path / "changed")
    result = CliRunner().invoke(cli, ["export", str(tmp_path / "changed"), "--to", "transformer-lens", "--out",
                                      str(tmp_path / "tl")])
    assert result.exit_code == 0 and "WARNING: the exported network carries no claim" in result.output, result.output
    assert json.loads((tmp_path / "tl" / "expressivity.json").read_text())["within_claim"] is False
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "tl"), "--input", "1,2,3,4,5,6"])
    assert result.exit_code == 2 and "carries no claim on any input" in result.stderr


def test_exporting_again_an_export_made_outside_its_lengths_defaults_to_a_claimed_length(tmp_path):
    """A shift circuit of lengths 1..6 exported at n_ctx 10 with --allow-length, exported again without --n-ctx, was
    written at 10 tokens "within its claim" (where --n-ctx 10 was refused): a fresh audit, 2026-11-29."""
    def run(*args):
        return CliRunner().invoke(cli, [str(a) for a in args])

    assert run("circuit", "shift", "--length", "6", "--out", tmp_path / "c").exit_code == 0
    result = run("export", tmp_path / "c", "--to", "transformer-lens", "--n-ctx", "10", "--allow-length", "--out",
                 tmp_path / "tl10")
    assert result.exit_code == 0 and "outside the construction's claim" in result.output
    result = run("export", tmp_path / "tl10", "--to", "transformer-lens", "--out", tmp_path / "again")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "again" / "config.json").read_text())["n_ctx"] == 6
    assert json.loads((tmp_path / "again" / "expressivity.json").read_text())["within_claim"] is True
    result = run("export", tmp_path / "tl10", "--to", "transformer-lens", "--n-ctx", "10", "--out", tmp_path / "x")
    assert result.exit_code == 2 and "--n-ctx 10 is outside the lengths" in result.stderr


def test_an_exact_claims_export_that_runs_in_float_only_says_run_needs_allow_outside(tmp_path):
    """The sum circuit's export said "ok", within its claim, and `run` on it refused every input (its claim is exact,
    TransformerLens runs in float): the export now says so (a fresh audit, 2026-11-29)."""
    runner = CliRunner()
    assert runner.invoke(cli, ["circuit", "sum", "--length", "4", "--out", str(tmp_path / "s")]).exit_code == 0
    result = runner.invoke(cli, ["export", str(tmp_path / "s"), "--to", "transformer-lens", "--out", str(tmp_path / "t")])
    assert result.exit_code == 0 and "refuses it without --allow-outside" in " ".join(result.output.split())
    result = runner.invoke(cli, ["run", str(tmp_path / "t"), "--input", "1,2,3,4"])
    assert result.exit_code == 2 and "cannot be checked against exact arithmetic" in result.stderr


def test_show_of_such_an_export_without_input_names_the_example_input_not_a_flag_never_given(tmp_path):
    """`show` of the sum circuit's export, no --input typed, was refused as "--input: ..." (a fresh audit,
    2026-11-29): the refusal names the example input the page drew."""
    runner = CliRunner()
    assert runner.invoke(cli, ["circuit", "sum", "--length", "4", "--out", str(tmp_path / "s")]).exit_code == 0
    assert runner.invoke(cli, ["export", str(tmp_path / "s"), "--to", "transformer-lens",
                               "--out", str(tmp_path / "t")]).exit_code == 0
    result = runner.invoke(cli, ["show", str(tmp_path / "t"), "--out", str(tmp_path / "p.html")])
    assert result.exit_code == 2 and result.stderr.startswith("error: the example input (no --input given): ")
    assert not (tmp_path / "p.html").exists()
    result = runner.invoke(cli, ["show", str(tmp_path / "t"), "--input", "1,2,3,4", "--out", str(tmp_path / "p.html")])
    assert result.exit_code == 2 and result.stderr.startswith("error: --input: "), result.stderr


def test_export_json_names_the_exported_lengths(saved, tmp_path, tl):
    """An audit (2026-11-29): `export --n-ctx 3 --json` of a shift circuit valid at 1..6 printed "lengths 1..6",
    the source's, where expressivity.json and `run` said 1..3."""
    code, _, err = run("circuit", "shift", "--out", tmp_path / "cs")
    assert code == 0, err
    code, out, err = run("export", tmp_path / "cs", "--to", "transformer-lens", "--n-ctx", "3", "--out",
                         tmp_path / "tl", "--json")
    assert code == 0 and json.loads(out)["valid_lengths"] == "lengths 1..3", err


def test_show_without_input_refuses_flags_that_do_not_apply(saved, tmp_path):
    """An audit (2026-11-29): `show` with no --input took --allow-length on a trained model (which records no
    narrower lengths) and exited 0, where `run` and `show --input` refuse it by name."""
    code, _, err = run("show", saved / "train", "--allow-length", "--out", tmp_path / "p.html")
    assert code == 2 and "--allow-length applies only with --input" in err and not (tmp_path / "p.html").exists()
    # a fuzz pass (2026-11-29): on a network with a domain the flags were taken and did nothing, exit 0; the page's
    # own example is inside the claim, so without --input neither applies (run takes no call without --input)
    code, _, err = run("show", saved / "rev", "--allow-outside", "--allow-length", "--out", tmp_path / "q.html")
    assert code == 2 and "--allow-length and --allow-outside apply only with --input" in err, err
    assert not (tmp_path / "q.html").exists()
    code, _, err = run("show", saved / "rev", "--out", tmp_path / "q.html")
    assert code == 0, err


def test_an_n_ctx_below_every_claimed_length_names_the_smallest_to_give(tmp_path, tl):
    """An audit (2026-11-29): `--n-ctx 1 --allow-length` on a network built for lengths 2..6 said "no length is
    valid for both lengths 2..6 and length 1", naming no fix."""
    code, _, err = run("rasp", "compile", "reverse", "--vocab", "1,2,3", "--max-len", "5", "--attention", "softmax",
                       "--out", tmp_path / "r")
    assert code == 0, err
    code, _, err = run("export", tmp_path / "r", "--to", "transformer-lens", "--n-ctx", "1", "--allow-length",
                       "--out", tmp_path / "tl")
    _one_line_error(code, err, "--n-ctx 1 is below every length the network is built for (lengths 2..6)")
    assert "give --n-ctx 2 or more" in err and not (tmp_path / "tl").exists()


def test_a_transformer_lens_checkpoint_of_someone_elses_records_no_claim(tmp_path, tl):
    # A fresh audit (2026-11-29): a random native TransformerLens model saved as config.json + model.safetensors
    # (no expressivity.json) ran "within_claim: true", its page said "what the claim covers" and its export's README
    # "Its claim covers the inputs token ids 0..9": the domain was only the embedding's size.
    import torch
    from safetensors.numpy import save_file
    from transformer_lens.config import TransformerBridgeConfig
    from transformer_lens.model_bridge import TransformerBridge

    config = dict(d_model=8, d_head=4, n_heads=2, n_layers=1, n_ctx=6, d_vocab=5, d_mlp=10, act_fn="relu",
                  normalization_type=None, attention_dir="causal", init_weights=True, seed=1)
    bridge = TransformerBridge.boot_native(TransformerBridgeConfig(**config), dtype=torch.float64, device="cpu")
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    state = {k: v.detach().numpy().copy() for k, v in bridge.state_dict().items()
             if not k.endswith(("IGNORE", "mask")) and "._original_component" not in k}
    save_file(state, str(folder / "model.safetensors"))
    code, out, err = run("run", folder, "--input", "1,4,3,0,2", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["within_claim"] is None and "records no claim" in result["claim"]
    with torch.no_grad():   # the answers are the checkpoint's own
        logits = bridge(torch.tensor([[1, 4, 3, 0, 2]]))[0].numpy()
    assert np.allclose(np.array(result["output"]), logits, rtol=1e-9, atol=1e-12)
    code, out, err = run("run", folder, "--input", "1,7,3", "--json")   # a token id it does not take: refused
    assert code == 2 and "token" in err
    code, out, err = run("show", folder, "--input", "1,4,3", "--out", tmp_path / "page.html")
    assert code == 0, err
    assert "what the model takes; it records no claim" in (tmp_path / "page.html").read_text()
    code, out, err = run("export", folder, "--to", "transformer-lens", "--out", tmp_path / "again", "--json")
    assert code == 0, err
    assert json.loads(out)["within_claim"] is None
    assert json.loads((tmp_path / "again" / "expressivity.json").read_text())["within_claim"] is None
    readme = (tmp_path / "again" / "README.md").read_text()
    assert "This model records no claim" in readme and "Its claim covers" not in readme
    code, out, err = run("run", tmp_path / "again", "--input", "1,4,3,0,2", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is None, err


@pytest.mark.parametrize("build", [("circuit", "reverse", "--scale", "inf", "--length", "6"),
                                   ("wang-e", "build", "--memory", "dpfree-boolean")])
def test_a_hardmax_exports_stated_bound_is_measured_and_a_false_one_refused(tmp_path, build, tl):
    # A fresh audit (2026-11-29): report.json (not digested) with its score gap edited from 1 to 10 made export state
    # "the weight off the arg-max is at most 4.68e-13" of a copy whose weight off it reached 0.25, exit 0.
    assert run(*build, "--out", tmp_path / "net")[0] == 0
    code, out, err = run("export", tmp_path / "net", "--to", "transformer-lens", "--hardmax-lambda", "30", "--out",
                         tmp_path / "tl", "--json")
    assert code == 0, err
    measured = json.loads(out)["verified"]["off_argmax"]
    # the gap these constructions guarantee is met with equality: the bound is tight on their inputs
    assert 0.999 * measured["bound"] <= measured["measured"] <= measured["bound"]
    report_path = tmp_path / "net" / "report.json"
    report = json.loads(report_path.read_text())
    key = measured["margin"]
    report["margins"][key] *= 10
    report_path.write_text(json.dumps(report))
    code, out, err = run("export", tmp_path / "net", "--to", "transformer-lens", "--hardmax-lambda", "3", "--out",
                         tmp_path / "tl2")
    assert code == 1 and "above the bound" in err and f"({key} = 10)" in err, err
    assert not (tmp_path / "tl2").exists()
