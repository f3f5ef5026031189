"""Every kind of saved network reads the same way, runs on typed input, and gets a self-contained page."""

import json
import math
import re
from fractions import Fraction

import numpy as np
import pytest

from expressivity.errors import ExpressivityError
from expressivity.export import save_network
from expressivity.export.folders import find_report, load_saved
from expressivity.inspect.page import MAX_CELLS, layer_rows, network_page
from expressivity.inspect.run import parse_input, run_network
from expressivity.network import AttentionLayer, FeedForwardLayer, Head, Network, ReLU, evaluate
from expressivity.network.inputs import default_input, input_help
from tests.cli_runner import cli_run


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """One folder of every kind, written by the commands a user runs."""
    root = tmp_path_factory.mktemp("saved")
    made = {}
    for name, args in {
        "circuit": ["circuit", "shift", "--length", "5", "--out", root / "circuit"],
        "hard": ["circuit", "reverse", "--length", "4", "--scale", "inf", "--out", root / "hard"],
        "wang-e": ["wang-e", "build", "--memory", "fixed", "--readout", "linear", "--out", root / "wang_e"],
        "yun": ["yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples", "100",
                "--out", root / "yun"],
        "train": ["train", "--task", "reverse", "--length", "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8",
                  "--batch-size", "8", "--steps", "3", "--out", root / "train"],
        "train2": ["train", "--task", "copy", "--length", "4", "--d-model", "8", "--heads", "2", "--ffn-width", "8",
                   "--batch-size", "8", "--steps", "2", "--seeds", "0,1", "--out", root / "train2"],
    }.items():
        code, _, err = cli_run(*args)
        assert code == 0, (name, err)
        made[name] = root / args[args.index("--out") + 1].name
    return made


def test_every_kind_of_folder_loads_with_its_report(folders):
    circuit = load_saved(folders["circuit"])
    assert circuit.kind == "construction" and circuit.report["checks"][0]["passed"]
    assert circuit.network.metadata["input_dims"] == ["x"]
    assert load_saved(folders["circuit"] / "network").report_path == folders["circuit"] / "report.json"
    we = load_saved(folders["wang-e"])
    assert we.kind == "construction" and we.report["ok"]
    soft = load_saved(folders["yun"] / "delta_1_2" / "softened")
    assert soft.report["constants"]["delta"] == "1/2" and soft.report_path.name == "run.json"
    trained = load_saved(folders["train"])
    assert trained.kind == "trained run" and trained.info["task"] == "reverse" and trained.folder.name == "seed_0"
    with pytest.raises(ExpressivityError, match="holds 2 saved networks; name one"):
        load_saved(folders["yun"] / "delta_1_2")
    with pytest.raises(ExpressivityError, match="holds 2 trained runs; name one"):
        load_saved(folders["train2"])


@pytest.mark.parametrize("bad, needle", [
    ("", "empty path"), ("/nonexistent/folder", "does not exist"),
])
def test_a_missing_folder_is_one_clear_error(bad, needle):
    with pytest.raises(ExpressivityError, match=needle):
        load_saved(bad)


def test_a_folder_with_no_network_or_a_corrupt_one_is_one_clear_error(tmp_path):
    with pytest.raises(ExpressivityError, match="no saved network"):
        load_saved(tmp_path)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ExpressivityError, match="is a file"):
        load_saved(tmp_path / "file.txt")
    (tmp_path / "network.json").write_text("{not json")
    (tmp_path / "weights.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(ExpressivityError, match="not valid JSON"):
        load_saved(tmp_path)
    broken = tmp_path / "run" / "checkpoint"
    broken.mkdir(parents=True)
    (broken / "config.json").write_text("[]")
    with pytest.raises(ExpressivityError, match="checkpoint"):
        load_saved(tmp_path / "run")
    tl = tmp_path / "tl"
    tl.mkdir()
    (tl / "config.json").write_text('{"d_model": "eight"}')
    (tl / "model.safetensors").write_bytes(b"")
    with pytest.raises(ExpressivityError):
        load_saved(tl)


def test_a_report_is_only_taken_when_it_is_one(tmp_path):
    (tmp_path / "report.json").write_text('{"checks": "no"}')
    assert find_report(tmp_path) == (None, None)


def test_run_gives_the_evaluators_output_in_every_arithmetic(folders):
    hard = load_saved(folders["hard"])
    X = parse_input(hard.network, "1/3, 2, 3, 4")
    exact = run_network(hard.network, X, "exact", residuals=True)
    assert list(exact["output"][:, 0]) == [4, 3, 2, Fraction(1, 3)]
    assert exact["residuals"][-1]["values"][0, 1] == 4 and exact["residual_labels"] == ["x", "out"]
    for dtype in ("float64", "float32", "torch-float64"):
        res = run_network(hard.network, X, dtype, residuals=True)
        assert np.allclose(np.asarray(res["output"], dtype=float)[:, 0], [4, 3, 2, 1 / 3], rtol=1e-6)
        assert len(res["residuals"]) == len(hard.network.layers) + 1
    soft = load_saved(folders["circuit"]).network
    with pytest.raises(ExpressivityError, match="softmax, which has no exact value"):
        run_network(soft, parse_input(soft, "1,2,3,4,5"), "exact")


def test_token_models_take_ids_and_report_their_predictions(folders):
    saved = load_saved(folders["train"])
    X = parse_input(saved.network, "1 2 0 3")
    assert X.shape == (4, saved.network.d_in) and X[2, 0] == 1
    res = run_network(saved.network, X, "float64")
    assert res["input_ids"] == [1, 2, 0, 3] and res["input_values"] == [1, 2, 0, 3]
    # a trained model's answer is its arg-max class (the model's vocabulary: the ids themselves)
    assert res["answers"] == res["argmax"] and len(res["answers"]) == 4
    assert all(type(v) is int for v in res["answers"] + res["argmax"] + res["input_values"])
    assert np.allclose(res["output"], evaluate(saved.network, np.asarray(X, dtype=float)))
    with pytest.raises(ExpressivityError, match="not a token id"):
        parse_input(saved.network, "1,99")
    with pytest.raises(ExpressivityError, match="not a token id"):
        parse_input(saved.network, "1.5")


def _net(d_in=2):
    head = Head(np.zeros((2, 1)), np.zeros((2, 1)), np.eye(2)[:, :1], np.eye(2)[1:])
    return Network((AttentionLayer((head,)),), ("a", "b"), embedding=np.eye(d_in, 2) if d_in != 2 else None)


@pytest.mark.parametrize("text, shape", [
    ("1,2; 3,4", (2, 2)), ("1 2;3 4;", (2, 2)), ("[[1, 2], [3, 4.5]]", (2, 2)), ("1e-3, 1/3", (1, 2)),
    ("1,2\n3,4", (2, 2)),
])
def test_inputs_parse_as_tokens_of_d_in_values(text, shape):
    assert parse_input(_net(), text).shape == shape


@pytest.mark.parametrize("text, needle", [
    ("", "empty"), ("   ", "empty"), ("1;2,3", "1 values"), ("1,,2", "empty field"), ("1,nan", "not a finite number"),
    ("inf,1", "not a finite number"), ("1,x", "not a number"), ("1,2;;3,4", "empty"), ("[1, 2", "not valid JSON"),
    ('{"a": 1}', "list of tokens"), ("[[1, true]]", "not a number"), ("1/0,1", "not a number"),
    ("1,2,3", "3 values"),
])
def test_bad_inputs_are_one_clear_error(text, needle):
    with pytest.raises(ExpressivityError, match=needle):
        parse_input(_net(), text)


def test_huge_values_are_exact_in_exact_mode_and_refused_in_float(folders):
    hard = load_saved(folders["hard"]).network
    X = parse_input(hard, "1e400, 1, 2, 3")
    assert run_network(hard, X, "exact")["output"][-1, 0] == 10 ** 400
    with pytest.raises(ExpressivityError, match="beyond the float64 range"):
        run_network(hard, X, "float64")
    big = parse_input(hard, "1e300, 1e300, 1, 2")
    assert np.isfinite(np.asarray(run_network(hard, big, "float64")["output"], dtype=float)).all()
    with pytest.raises(ExpressivityError, match="non-finite values in float32"):
        run_network(hard, big, "float32")


def test_inputs_of_the_wrong_length_name_the_fix(folders):
    circuit = load_saved(folders["hard"]).network
    with pytest.raises(ExpressivityError, match="built for length 4"):
        parse_input(circuit, "1,2,3")
    assert "one value of x per token" in input_help(circuit) and "exactly 4 tokens" in input_help(circuit)
    assert default_input(circuit).shape == (4, 2)
    # the default input stays within the claim: the shift circuit of length 5 takes 1..5 tokens
    assert default_input(load_saved(folders["circuit"]).network).shape == (5, 2)


def test_the_page_names_reads_and_writes_and_draws_every_head(folders):
    for key in ("circuit", "wang-e", "train"):
        saved = load_saved(folders[key])
        page = network_page(saved, default_input(saved.network))
        heads = sum(len(layer.heads) for layer in saved.network.layers if layer.kind == "attention")
        assert len(re.findall(r'<svg class="heatmap" id="attn-', page)) == heads
        assert not re.search(r"(src|href)=(?![\"']data:)|https?://", page)   # nothing fetched
    circuit = load_saved(folders["circuit"])
    page = network_page(circuit, default_input(circuit.network), "1,2,3,4,5")
    assert "position bias relative" in page and "all checks passed" in page and "score_gap_per_unit_scale" in page
    yun = load_saved(folders["yun"] / "delta_1_2" / "softened")
    page = network_page(yun, default_input(yun.network))
    assert "paper&#x27;s bound" in page and "Lemma 4.2" in page


def test_layer_rows_say_what_each_part_reads_and_writes():
    rows = layer_rows(_net())
    assert rows[0]["parts"][0]["reads values"] == "a" and rows[0]["parts"][0]["writes"] == "b"
    assert rows[0]["parts"][0]["scores from"] == "nothing (uniform over the keys)"


def test_the_page_escapes_labels_and_refuses_a_page_too_big_to_open():
    head = Head(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)))
    net = Network((AttentionLayer((head,)), FeedForwardLayer(np.ones((1, 1)), np.zeros(1), np.ones((1, 1)), activation=ReLU())),
                  ("<script>alert(1)</script>",), name="<b>x</b>")
    from expressivity.export.folders import Saved

    page = network_page(Saved(net, "network", "."), np.ones((3, 1)))
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page and "<b>x</b>" not in page
    n = int(math.isqrt(MAX_CELLS)) + 2
    with pytest.raises(ExpressivityError, match="shorter --input"):
        network_page(Saved(net, "network", "."), np.ones((n, 1)))


def test_a_saved_network_without_report_is_kind_network(tmp_path):
    save_network(_net(), tmp_path / "n")
    saved = load_saved(tmp_path / "n")
    assert saved.kind == "network" and saved.report is None
    assert "No construction report" in network_page(saved, np.ones((2, 2)))
    assert json.dumps(saved.describe())


def test_a_nan_weight_is_refused_when_the_network_is_loaded(tmp_path):
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from expressivity.constructions.circuits import build_reverse
    from expressivity.errors import ExpressivityError
    from expressivity.export import load_network, save_network

    net, _ = build_reverse(4, 10.0, input_range=1.0)
    save_network(net, tmp_path / "net")
    tensors = load_file(str(tmp_path / "net" / "weights.safetensors"))
    name = sorted(tensors)[0]
    tensors[name] = tensors[name].copy()
    tensors[name].flat[0] = np.nan
    save_file(tensors, str(tmp_path / "net" / "weights.safetensors"))
    with pytest.raises(ExpressivityError, match="NaN"):
        load_network(tmp_path / "net")


def test_a_listed_report_inside_a_run_record_must_be_there(folders, tmp_path):
    import shutil

    yun = tmp_path / "yun"
    shutil.copytree(folders["yun"], yun)
    record = json.loads((yun / "run.json").read_text())
    del record["results"][0]["checks"]
    (yun / "run.json").write_text(json.dumps(record))
    with pytest.raises(ExpressivityError) as caught:
        load_saved(yun / "delta_1_2" / "softened")
    assert str(caught.value) == (f"{yun}/run.json holds no construction report at #/results/0 (checks and size), "
                                 f"though {yun}/manifest.json lists one there; run the construction again "
                                 f"(expressivity yun build ... --out {yun}, with the options its run.json records)")
    (yun / "run.json").unlink()
    with pytest.raises(ExpressivityError, match=r"run.json is missing, though .*manifest.json lists it as the "
                                                r"construction report of .*delta_1_2/softened; run the construction "
                                                r"again \(expressivity yun build \.\.\. --out \S+\)$"):
        load_saved(yun / "delta_1_2" / "softened")


def test_a_transformer_lens_export_names_its_one_input_dimension_and_keeps_tokens_as_tokens(folders, tmp_path):
    for name in ("circuit", "train"):
        code, _, err = cli_run("export", folders[name], "--to", "transformer-lens", "--out", tmp_path / name,
                               "--no-verify")
        assert code == 0, err
    circuit = load_saved(tmp_path / "circuit").network
    assert circuit.metadata["input_dims"] == ["x"] and circuit.metadata["input_dims_optional"] is True
    assert input_help(circuit) == "one value of x per token, e.g. '1,2,3' (1 to 5 tokens)"
    assert parse_input(circuit, "1,2").tolist() == parse_input(circuit, "1,0;2,0").tolist() == [[1, 0], [2, 0]]
    trained = load_saved(tmp_path / "train").network
    assert "input_dims" not in trained.metadata and parse_input(trained, "1,2").shape == (2, trained.d_in)
    # the circuit's own folder keeps its one form
    with pytest.raises(ExpressivityError, match="token 0 has 2 values, the network takes 1 per token"):
        parse_input(load_saved(folders["circuit"]).network, "1,0;2,0")


def _forged(src, dst, edit_weights=None, edit_description=None, edit_report=None):
    """A copy of the circuit folder ``src`` edited by hand, its digests written again (as anyone who edits it can)."""
    import shutil

    from safetensors.numpy import load_file, save_file

    from expressivity.manifest import file_digests, with_own_digest

    shutil.copytree(src, dst)
    net_dir = dst / "network"
    if edit_weights is not None:
        tensors = load_file(str(net_dir / "weights.safetensors"))
        edit_weights(tensors)
        save_file(tensors, str(net_dir / "weights.safetensors"))
    desc = json.loads((net_dir / "network.json").read_text())
    if edit_description is not None:
        edit_description(desc)
    if edit_report is not None:
        report = json.loads((dst / "report.json").read_text())
        edit_report(report)
        (dst / "report.json").write_text(json.dumps(report))
    digests = file_digests({"weights.safetensors": (net_dir / "weights.safetensors").read_bytes()})
    desc["sha256"] = {**desc["sha256"], **digests}
    (net_dir / "network.json").write_text(json.dumps(with_own_digest(desc, "network.json")))
    return dst


def _double_readout(tensors):
    key = next(k for k in tensors if "readout" in k)
    tensors[key] = tensors[key] * 2


@pytest.mark.parametrize("edit, needle", [
    (dict(edit_weights=_double_readout), "its weights are not those of circuit 'shift' built again"),
    (dict(edit_report=lambda r: r["bounds"].update(max_abs_error=10.0)), "its report's bounds are not those"),
    (dict(edit_report=lambda r: r["constants"].update(length="eight")), "cannot be built again from the constants"),
])
def test_a_circuit_edited_with_its_digests_written_again_carries_no_claim(tmp_path, edit, needle):
    """A fresh audit (2026-11-28): a circuit with its readout doubled (or its valid lengths widened) and its digests
    recomputed ran with `within_claim` true, answering [6, 6, 2, 8, ...] for a shift of 3,1,4,1,...: digests tie a
    folder's files to each other, not to the construction. A circuit is built again from its report's constants
    and compared weight for weight."""
    assert cli_run("circuit", "shift", "--length", "8", "--out", tmp_path / "s")[0] == 0
    assert load_saved(tmp_path / "s").network.no_claim is None
    forged = _forged(tmp_path / "s", tmp_path / "f", **edit)
    assert needle in load_saved(forged).network.no_claim
    code, out, err = cli_run("run", forged, "--input", "3,1,4,1,5,8,2,6")
    assert code == 2 and "carries no claim" in err and needle in err


def test_a_circuits_widened_lengths_cost_it_its_claim(tmp_path):
    """Valid lengths widened to 1..16 with the digests recomputed answered 4.5 at 16 tokens within the claim (the
    audit above). The claim the rebuilt circuit has and the one network.json records must agree (since an audit,
    2026-11-29, below: before, the rebuilt one replaced the recorded one)."""
    assert cli_run("circuit", "shift", "--length", "8", "--out", tmp_path / "s")[0] == 0
    forged = _forged(tmp_path / "s", tmp_path / "f",
                     edit_description=lambda d: d["valid_lengths"].update(hi=16))
    assert json.loads((forged / "network" / "network.json").read_text())["valid_lengths"]["hi"] == 16
    assert "build circuit 'shift' with another claim" in load_saved(forged).network.no_claim
    code, _, err = cli_run("run", forged, "--input", ",".join(["1", "2", "3", "4", "5", "6", "7", "8"] * 2))
    assert code == 2 and "carries no claim" in err


def test_a_constant_the_weights_do_not_show_cannot_widen_a_circuits_claim(tmp_path):
    """An audit (2026-11-29): with the scale given, a reversal's tolerance changes neither its weights nor its
    report's bounds, only its float64 limit (56,295 at tolerance 1e-10). report.json's tolerance edited to 1e300
    rebuilt a domain up to 1.8e308, which replaced the digested one: 1e12 ran off by 4.9e-4 "within the claim"."""
    assert cli_run("circuit", "reverse", "--scale", "30", "--length", "6", "--input-range", "5",
                   "--out", tmp_path / "r")[0] == 0
    big = ",".join(str(10**12 + k) for k in range(6))
    code, _, err = cli_run("run", tmp_path / "r", "--input", big)
    assert code == 2 and "is beyond 56295" in err, err
    forged = _forged(tmp_path / "r", tmp_path / "f", edit_report=lambda r: r["constants"].update(tolerance=1e300))
    code, _, err = cli_run("run", forged, "--input", big)
    assert code == 2 and "with another claim (input domain or lengths)" in err, err
    assert cli_run("run", tmp_path / "r", "--input", "1,2,3,4,5,5")[0] == 0   # the folder as built keeps its claim


def test_show_keeps_to_the_float_limit_of_the_claim(tmp_path):
    """An audit (2026-11-29): `show` checked the input without the arithmetic it draws, so a reversal at 1e12, past
    its float64 limit of 56,295, was drawn "within_claim: true" while `run` refused it."""
    assert cli_run("circuit", "reverse", "--length", "6", "--input-range", "5", "--out", tmp_path / "r")[0] == 0
    big = ",".join(str(10**12 + k) for k in range(6))
    code, _, err = cli_run("show", tmp_path / "r", "--input", big, "--out", tmp_path / "p.html")
    assert code == 2 and "is beyond 56295" in err and not (tmp_path / "p.html").exists(), err
    code, out, err = cli_run("show", tmp_path / "r", "--input", big, "--out", tmp_path / "p.html", "--allow-outside",
                             "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False, err


def test_a_circuits_network_folder_read_on_its_own_is_rebuilt_too(tmp_path):
    """A review (2026-11-28): the circuit's `network/` folder copied out of its construction folder loaded as a plain
    network, was not rebuilt, and a forged copy (weights doubled, digests written again) answered 56, 48, ... for a
    reversal of 1..7 within its claim. The constants travel in its metadata now."""
    import shutil

    assert cli_run("circuit", "reverse", "-L", "7", "--out", tmp_path / "c")[0] == 0
    shutil.copytree(tmp_path / "c" / "network", tmp_path / "alone")
    alone = load_saved(tmp_path / "alone")
    assert alone.kind == "network" and alone.network.no_claim is None
    assert alone.network.valid_lengths.describe() == "length 7"
    forged = _forged(tmp_path / "c", tmp_path / "f", edit_weights=lambda t: t.update({k: v * 2 for k, v in t.items()}))
    shutil.copytree(forged / "network", tmp_path / "forged_alone")
    assert "its weights are not those of circuit 'reverse'" in load_saved(tmp_path / "forged_alone").network.no_claim
    code, _, err = cli_run("run", tmp_path / "forged_alone", "--input", "1,2,3,4,5,6,7")
    assert code == 2 and "carries no claim" in err
    # a network naming a circuit but carrying no constants (and no report) cannot be rebuilt: no claim
    forged_meta = _forged(tmp_path / "c", tmp_path / "g", edit_description=lambda d: d["metadata"].pop("circuit_constants"))
    shutil.copytree(forged_meta / "network", tmp_path / "bare")
    assert "no constants to build it from" in load_saved(tmp_path / "bare").network.no_claim


def test_a_rasp_folder_compiled_before_networks_named_their_arithmetic_claims_what_it_did_then(tmp_path):
    """A folder written before 2026-11-29 records a domain without an arithmetic: a softmax network checked on 64
    samples ran in float32 "within its claim" (where the same network compiled now claims no input) and a hardmax
    one in float64 (now exact only): a review, 2026-11-29. Read now, such a folder claims what it would today."""
    import dataclasses

    from expressivity import rasp
    from expressivity.export.folders import load_saved, save_construction
    from expressivity.rasp import library

    def old_style(model, folder):
        net = model.network
        meta = {k: v for k, v in net.metadata.items() if k != "no_claim"}
        net = dataclasses.replace(net, metadata=meta, input_domain=dataclasses.replace(net.input_domain, arithmetic={}),
                                  claimed_weights=None)
        save_construction(folder, "rasp compile", net, model.report.as_dict(), {"command": "rasp compile"})
        return load_saved(folder)

    sampled = rasp.compile(library.make_reverse(), vocab={1, 2, 3, 4, 5}, max_seq_len=8, attention="softmax")
    assert sampled.network.no_claim is not None
    saved = old_style(sampled, tmp_path / "soft")
    assert "softmax attention, checked in float64 on 64 random inputs" in saved.network.no_claim
    assert any("claiming no input" in w for w in saved.warnings)
    checked = rasp.compile(library.make_reverse(), vocab={1, 2, 3}, max_seq_len=4, attention="softmax")
    saved = old_style(checked, tmp_path / "soft_all")
    assert saved.network.no_claim is None and saved.network.input_domain.arithmetic == {"float64": None}
    hard = rasp.compile(library.make_reverse(), vocab={1, 2, 3}, max_seq_len=4)
    saved = old_style(hard, tmp_path / "hard")
    assert saved.network.no_claim is None and saved.network.input_domain.arithmetic == {"exact": None}
    assert any("holding in exact arithmetic only" in w for w in saved.warnings)
    save_construction(tmp_path / "new", "rasp compile", hard.network, hard.report.as_dict(), {"command": "x"})
    assert load_saved(tmp_path / "new").warnings == ()   # a folder written now says nothing


@pytest.mark.parametrize("edit", ["tolerance", "lengths"])
def test_a_circuits_transformer_lens_export_cannot_widen_its_claim_either(tmp_path, edit):
    """A fresh audit (2026-11-29): the check above was missing on TransformerLens exports. expressivity.json's
    circuit_constants tolerance edited to 1e300 (its own digest written again) took the reversal's float64 limit from
    56,295 to 1.8e308 and 1e9 ran "within the claim", off by 2e-7 against a bound of 1e-10."""
    from expressivity.manifest import with_own_digest

    assert cli_run("circuit", "reverse", "--scale", "30", "--length", "6", "--input-range", "5",
                   "--out", tmp_path / "r")[0] == 0
    assert cli_run("export", tmp_path / "r", "--to", "transformer-lens", "--out", tmp_path / "tl")[0] == 0
    big = ",".join(str(10**9 + k) for k in range(6))
    code, _, err = cli_run("run", tmp_path / "tl", "--input", big)
    assert code == 2 and "is beyond 56295" in err, err
    path = tmp_path / "tl" / "expressivity.json"
    description = json.loads(path.read_text())
    if edit == "tolerance":
        description["circuit_constants"]["tolerance"] = 1e300
    else:
        description["valid_lengths"] = {"kind": "set", "values": [5, 6]}   # widened: not the rebuilt claim
    description.pop("description_sha256", None)
    path.write_text(json.dumps(with_own_digest(description, "expressivity.json"), indent=1))
    code, _, err = cli_run("run", tmp_path / "tl", "--input", big if edit == "tolerance" else "1,2,3,4,5")
    assert code == 2 and "with another claim (input domain or lengths)" in err, err


def test_a_transformer_lens_exports_padding_heads_are_counted_not_drawn(tmp_path):
    # A fresh audit (2026-11-29): the page of a Yun softened network's TransformerLens export drew 50 heatmaps where
    # the network has 9: every block is padded to the most heads, and the padding heads write nothing (W_O = 0).
    from expressivity.network.layers import head_count

    assert cli_run("yun", "build", "--target", "smooth-rank", "--n", "2", "--d", "1", "--delta", "1/2", "--samples",
                   "100", "--out", tmp_path / "y")[0] == 0
    source = tmp_path / "y" / "delta_1_2" / "softened"
    assert cli_run("export", source, "--to", "transformer-lens", "--out", tmp_path / "tl")[0] == 0
    drawn = {}
    for name, folder in (("source", source), ("export", tmp_path / "tl")):
        code, out, err = cli_run("show", folder, "--out", tmp_path / f"{name}.html", "--json")
        assert code == 0, err
        page = (tmp_path / f"{name}.html").read_text()
        drawn[name] = json.loads(out)["heads"]
        assert drawn[name] == len(re.findall(r'<svg class="heatmap" id="attn-', page))
    exported = load_saved(tmp_path / "tl").network
    assert head_count(exported.layers) > drawn["export"] == drawn["source"] == head_count(load_saved(source).network.layers)
    assert "not drawn" in (tmp_path / "export.html").read_text()
