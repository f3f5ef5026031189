"""expressivity rasp list|compile|eval, and compiled folders through run, show and export."""

import json
import pytest
from click.testing import CliRunner

from expressivity import rasp
from expressivity.cli.main import cli
from expressivity.rasp import library as lib


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_list_json_names_every_library_program():
    code, out, _ = run("rasp", "list", "--json")
    assert code == 0
    names = [p["name"] for p in json.loads(out)["programs"]]
    tracr = {"length", "reverse", "hist", "sort_unique", "sort", "sort_freq", "frac_prevs", "pair_balance",
             "shuffle_dyck", "shuffle_dyck2", "shift_by", "detect_pattern", "count_less_freq", "count",
             "nary_sequencemap"}
    beyond = {"dyck3", "dyck_depth", "sort_stable", "successor", "add_binary", "majority", "parity", "induction",
              "double_hist", "running_max", "running_min", "most_freq", "sum", "max"}
    assert tracr | beyond <= set(names)
    code, out, _ = run("rasp", "list")
    assert code == 0 and all(name in out for name in tracr | beyond)


def test_eval_runs_the_interpreter():
    code, out, _ = run("rasp", "eval", "sort", "--input", "3,1,2,1", "--json")
    assert code == 0 and json.loads(out)["output"] == [1, 1, 2, 3]
    code, out, _ = run("rasp", "eval", "frac_prevs", "--input", "x,a,x")
    assert code == 0 and "[True, 1/2, 2/3]" in out   # a mean of one value is that value, as in tracr


def test_a_program_defined_by_its_vocabulary_is_built_for_the_tokens_given():
    """sum counts each token of its vocabulary: evaluated on tokens outside the default one it is
    built over them (no token silently dropped), and compiled for --vocab 6,7 it sums 6s and 7s."""
    for text, want in (("-1,1", 0), ("7,8,9", 24), ("3,3", 6)):
        code, out, _ = run("rasp", "eval", "sum", "--input", text, "--json")
        assert code == 0 and json.loads(out)["output"] == [want] * len(text.split(","))
    code, out, _ = run("rasp", "compile", "sum", "--vocab", "6,7", "--max-len", "2", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["ok"] and obj["report"]["constants"]["vocab"] == ["6", "7"]
    program = lib.get_program("sum").program(2, (6, 7))
    assert rasp.evaluate(program, [6, 7]) == [13, 13] and rasp.evaluate(program, [7, 7]) == [14, 14]
    compiled = rasp.compile(program, vocab=[6, 7], max_seq_len=2)
    assert compiled.apply([compiled.bos, 6, 7]).decoded[1:] == [13, 13]


def test_tokens_keep_their_spelling():
    """``01`` is add_binary's bit pair, not the integer 1; ``11`` is its token too; ``-3`` is an integer."""
    # a token is a column "ab": bit a of the first number, bit b of the second
    code, out, _ = run("rasp", "eval", "add_binary", "--input", "01,10", "--json")
    assert code == 0 and json.loads(out)["output"] == [1, 1]   # 01 + 10 = 11
    code, out, _ = run("rasp", "eval", "add_binary", "--input", "00,11", "--json")
    assert code == 0 and json.loads(out)["output"] == [1, 0]   # 01 + 01 = 10
    code, out, _ = run("rasp", "compile", "add_binary", "--vocab", "01,11", "--max-len", "2", "--json")
    assert code == 0 and json.loads(out)["ok"]
    code, out, _ = run("rasp", "eval", "running_min", "--input", "-3,2", "--json")
    assert code == 0 and json.loads(out)["output"] == [-3, -3]


def test_every_library_program_computes_on_its_own_vocabulary():
    for entry in lib.PROGRAMS.values():
        entry.check_vocab(entry.vocab)
        assert entry.program(3) is not None
    with pytest.raises(lib.RASPError, match="defined on integers"):
        lib.get_program("nary_sequencemap").program(3, ("a", "b"))


def test_a_library_program_not_marked_sized_means_the_same_whatever_max_len():
    # rasp eval refuses --max-len for those (it would be ignored): they must not depend on it
    import itertools

    from expressivity import rasp

    for entry in lib.PROGRAMS.values():
        if entry.sized:
            continue
        inputs = [list(xs) for n in (1, 3, 4) for xs in itertools.islice(itertools.product(entry.vocab, repeat=n), 40)]
        short, long = entry.program(4), entry.program(9)
        for xs in inputs:
            try:
                want = rasp.evaluate(short, xs)
            except rasp.RASPError:
                continue
            assert rasp.evaluate(long, xs) == want, (entry.name, xs)


def test_compile_json_reports_size_margins_and_verification():
    code, out, _ = run("rasp", "compile", "hist", "--vocab", "1,2", "--max-len", "4", "--json")
    assert code == 0
    obj = json.loads(out)
    report = obj["report"]
    assert obj["ok"] and report["size"]["width"] == len(obj["residual_labels"])
    check = report["checks"][0]
    assert check["points"] == 30 and check["failures"] == 0 and check["arithmetic"].startswith("exact")
    assert report["margins"]["attention_score_gap_per_unit_scale"] == 1
    assert "hist:2" in obj["residual_labels"]


def test_compile_human_output(tmp_path):
    code, out, _ = run("rasp", "compile", "reverse", "--max-len", "3", "--vocab", "1,2")
    assert code == 0 and "d_model" in out and "verified" in out and "0 failures" in out


def test_a_module_function_program_compiles(tmp_path, monkeypatch):
    (tmp_path / "myprog.py").write_text(
        "from expressivity import rasp\n"
        "def program():\n"
        "    return rasp.numerical(rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices, rasp.Comparison.LEQ),\n"
        "                          rasp.numerical(rasp.tokens == 1), default=0)).named('ones_so_far')\n")
    code, out, err = run("rasp", "compile", f"{tmp_path / 'myprog.py'}:program", "--vocab", "0,1", "--max-len", "3",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["program"] == "program"
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run("rasp", "eval", "myprog:program", "--input", "1,0,1")
    assert code == 0 and "[True, 1/2, 2/3]" in out   # a mean of one value is that value, as in tracr


def test_a_program_file_imports_modules_beside_it_as_python_file_would(tmp_path, monkeypatch):
    # issue 32: `rasp compile mine.py:make_program` where mine.py does `import progs2` (a module next to it)
    (tmp_path / "progs_beside_a2.py").write_text(
        "from expressivity import rasp\n"
        "def count_same():\n"
        "    return rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)).named('same')\n")
    (tmp_path / "mine_a2.py").write_text(
        "import progs_beside_a2\n"
        "from dataclasses import dataclass\n"
        "@dataclass\n"
        "class Options:\n"
        "    name: str = 'same'\n"
        "def make_program():\n"
        "    return progs_beside_a2.count_same().named(Options().name)\n")
    monkeypatch.chdir(tmp_path.parent)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))   # the command adds the file's folder
    code, out, err = run("rasp", "compile", f"{tmp_path.name}/mine_a2.py:make_program", "--vocab", "1,2",
                         "--max-len", "3", "--json")
    assert code == 0, err
    assert json.loads(out)["report"]["construction"] == "rasp same"
    code, out, err = run("rasp", "eval", f"{tmp_path / 'mine_a2.py'}:make_program", "--input", "1,2,1", "--json")
    assert code == 0 and json.loads(out)["output"] == [2, 1, 2], err


@pytest.mark.slow
def test_compiled_folder_runs_shows_and_exports_with_the_interpreters_outputs(tmp_path):
    folder = tmp_path / "sort"
    code, _, err = run("rasp", "compile", "sort", "--vocab", "1,2,3", "--max-len", "4", "--attention", "softmax",
                       "--out", folder)
    assert code == 0, err
    tokens = [3, 1, 2, 1]
    expected = rasp.evaluate(lib.make_sort(rasp.tokens, rasp.tokens, max_seq_len=4, min_key=1), tokens)
    code, out, err = run("run", folder, "--input", "0," + ",".join(str(t) for t in tokens), "--json")
    assert code == 0, err
    obj = json.loads(out)   # the answers are the program's values; the arg-max columns are named sort:<value>
    assert obj["answers"] == ["BOS", *expected] and obj["input_values"] == ["BOS", *tokens]
    assert [obj["output_labels"][k] for k in obj["argmax"][1:]] == [f"sort:{v}" for v in expected]
    code, _, err = run("show", folder, "--out", tmp_path / "page.html")
    assert code == 0, err
    assert "sort:1" in (tmp_path / "page.html").read_text()
    code, out, err = run("export", folder, "--to", "transformer-lens", "--out", tmp_path / "tl", "--json")
    assert code == 0, err
    assert json.loads(out)["verified"]["float64"]["status"] == "ok"


def test_a_hardmax_folder_runs_exactly(tmp_path):
    folder = tmp_path / "rev"
    assert run("rasp", "compile", "reverse", "--vocab", "1,2,3", "--max-len", "4", "--out", folder)[0] == 0
    code, out, _ = run("run", folder, "--input", "0,1,2,3", "--dtype", "exact", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["answers"] == ["BOS", 3, 2, 1]
    assert [obj["output_labels"][k] for k in obj["argmax"][1:]] == ["reverse:3", "reverse:2", "reverse:1"]
    assert json.loads((folder / "report.json").read_text())["ok"]


def test_a_compiled_folder_refuses_lengths_it_was_not_verified_for(tmp_path):
    folder = tmp_path / "rev"
    assert run("rasp", "compile", "reverse", "--vocab", "1,2,3", "--max-len", "4", "--out", folder)[0] == 0
    code, _, err = run("run", folder, "--input", "0")   # BOS alone: the empty program input is not verified
    assert code == 2 and "2..5" in err and "--allow-length" in err
    code, out, _ = run("run", folder, "--input", "0", "--allow-length", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False


@pytest.mark.parametrize("args, words", [
    (("rasp", "compile", "nope", "--max-len", "3"), "unknown program"),
    (("rasp", "compile", "hist", "--max-len", "0"), "--max-len"),
    (("rasp", "compile", "hist", "--max-len", "3", "--vocab", "1,,2"), "empty field"),
    (("rasp", "compile", "hist", "--max-len", "3", "--vocab", ""), "empty"),
    (("rasp", "compile", "hist", "--max-len", "3", "--attention", "softmax", "--dtype", "exact"), "softmax"),
    (("rasp", "compile", "hist", "--max-len", "3", "--vocab", "1,BOS"), "BOS"),
    (("rasp", "compile", "no_such_module_xyz:f", "--max-len", "3", "--vocab", "1"), "cannot import"),
    (("rasp", "compile", "expressivity.rasp.library:nothing", "--max-len", "3", "--vocab", "1"), "no attribute"),
    (("rasp", "compile", "expressivity.rasp.library:PROGRAMS", "--max-len", "3", "--vocab", "1"), "not a RASP SOp"),
    (("rasp", "compile", "missing.py:f", "--max-len", "3", "--vocab", "1"), "not a file"),
    (("rasp", "eval", "hist", "--input", ""), "empty"),
    (("rasp", "eval", "hist", "--input", "1,2,3", "--max-len", "2"), "more than --max-len"),
    (("rasp", "compile", "reverse", "--max-len", "3", "--causal"), "refused"),
    (("rasp", "compile", "hist", "--max-len", "3", "--seed", "4"), "exhaustive"),
    (("rasp", "compile", "sort_freq", "--max-len", "128"), "above the budget"),
    (("rasp", "eval", "sort", "--input", "1,a"), "fails on"),
    (("rasp", "eval", "sum", "--input", "1.5,1"), "sum is defined on integers; --input has the text '1.5'"),
    (("rasp", "eval", "sum", "--input", "1e3,1"), "defined on integers"),
    (("rasp", "compile", "sum", "--vocab", "a,b", "--max-len", "2"), "sum is defined on integers; --vocab has the text 'a'"),
    (("rasp", "eval", "reverse", "--input", "1,2", "--max-len", "9"), "--max-len does not apply to reverse"),
    (("rasp", "compile", "hist", "--vocab", "1,2,1", "--max-len", "2"), "--vocab lists 1 twice"),
    (("rasp", "eval", "successor", "--input", "12,3"), "successor is defined on the tokens 0, 1, 2"),
    (("rasp", "compile", "successor", "--vocab", "1,10", "--max-len", "2"), "--vocab has 10"),
    (("rasp", "eval", "add_binary", "--input", "01,12"), "--input has 12"),
])
def test_bad_input_is_one_line_with_exit_2(args, words):
    code, out, err = run(*args)
    assert code == 2 and words in err and err.count("\n") == 1 and err.startswith("error:")


def test_a_program_file_takes_max_len_where_it_has_a_parameter_and_refuses_it_where_not(tmp_path):
    # a fresh audit (2026-11-28): a Selector named as the program gave "evaluate needs a sequence of tokens,
    # got int"; --max-len was ignored by a function of an optional length and by one of none
    (tmp_path / "p.py").write_text(
        "from expressivity import rasp\n"
        "T = rasp.tokens\n"
        "selector = rasp.Select(T, T, rasp.Comparison.EQ)\n"
        "def upto(L=3):\n"
        "    return rasp.Map(lambda x: min(x, L), T)\n"
        "def plain():\n"
        "    return rasp.Map(lambda x: x, T)\n")
    code, _, err = run("rasp", "eval", f"{tmp_path / 'p.py'}:selector", "--input", "1,2")
    assert code == 2 and "is a Select, not a program; wrap it in rasp.SelectorWidth" in err
    code, out, _ = run("rasp", "eval", f"{tmp_path / 'p.py'}:upto", "--input", "4,9", "--max-len", "5")
    assert code == 0 and out.strip().endswith("= [4, 5]")
    code, _, err = run("rasp", "eval", f"{tmp_path / 'p.py'}:plain", "--input", "4,9", "--max-len", "5")
    assert code == 2 and "--max-len does not apply" in err
    assert run("rasp", "eval", "sort", "--input", "2,1", "--max-len", "5")[0] == 0   # sort is built for it


def test_refused_out_folder_is_not_written(tmp_path):
    code, _, _ = run("rasp", "compile", "reverse", "--max-len", "3", "--causal", "--out", tmp_path / "x")
    assert code == 2 and not (tmp_path / "x").exists()


def test_a_program_file_s_run_record_names_its_code(tmp_path, monkeypatch):
    """An audit (2026-11-28): `rasp compile file.py:fn --out` recorded only "file.py:fn", so the record stood for
    whatever the file held when replayed; it now records the file and the SHA-256 of its bytes."""
    import hashlib

    source = ("from expressivity import rasp\n"
              "def program():\n"
              "    return rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, rasp.Comparison.EQ)).named('same')\n")
    (tmp_path / "mine_rec.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    code, _, err = run("rasp", "compile", "mine_rec.py:program", "--vocab", "1,2", "--max-len", "3", "--out", "c")
    assert code == 0, err
    config = json.loads((tmp_path / "c" / "run.json").read_text())["config"]
    assert config["program_source"] == str((tmp_path / "mine_rec.py").resolve())
    assert config["program_sha256"] == hashlib.sha256(source.encode()).hexdigest()
    code, _, err = run("rasp", "compile", "reverse", "--max-len", "3", "--out", "lib")
    assert code == 0 and "program_source" not in json.loads((tmp_path / "lib" / "run.json").read_text())["config"]


def test_samples_are_refused_where_a_softmax_network_is_checked_on_every_input_and_a_sampled_one_says_no_claim(tmp_path):
    """A softmax network is checked on every input up to 65,536 (5,460 here, above the 4,096 of hardmax): --samples
    chooses nothing there. Checked on samples, its claim is none, which the summary says and `run` enforces."""
    code, _, err = run("rasp", "compile", "sort", "--vocab", "1,2,3,4", "--max-len", "6", "--attention", "softmax",
                       "--samples", "100")
    assert code == 2 and "--samples chooses random verification inputs, but all the inputs are checked" in err, err
    code, out, err = run("rasp", "compile", "sort", "--max-len", "10", "--attention", "softmax", "--out",
                         tmp_path / "s")
    assert code == 0 and "claim: none on any one input (softmax attention, checked in float64 on 64 sampled" in out
    code, _, err = run("run", tmp_path / "s", "--input", "0,3,1,2")
    assert code == 2 and "carries no claim on any input" in err, err


def test_run_keeps_a_compiled_network_to_the_arithmetic_its_claim_rests_on(tmp_path):
    """A softmax network's claim is its float64 check, yet `run --dtype float32` answered within the claim; a hardmax
    one's is exact (the proofs), yet float64 was run's default (a fresh audit, 2026-11-29)."""
    for attention, holds, other in (("softmax", "float64", "float32"), ("hardmax", "exact", "float64")):
        folder = tmp_path / attention
        code, _, err = run("rasp", "compile", "sort", "--vocab", "1,2,3,4", "--max-len", "4", "--attention", attention,
                           "--out", folder)
        assert code == 0, err
        code, out, err = run("run", folder, "--input", "0,3,1,2", "--json")
        assert code == 0 and json.loads(out)["answers"] == ["BOS", 1, 2, 3], err
        assert json.loads(out)["within_claim"] is True
        code, _, err = run("run", folder, "--input", "0,3,1,2", "--dtype", other)
        assert code == 2 and f"the claim holds in {holds} arithmetic, not {other}" in err, err
        code, out, err = run("run", folder, "--input", "0,3,1,2", "--dtype", other, "--allow-outside", "--json")
        assert code == 0 and json.loads(out)["within_claim"] is False, err


def test_a_softmax_network_checked_on_samples_says_it_claims_nothing_in_json_and_text():
    """An audit (2026-11-29): sort at 87,380 inputs with softmax attention printed "verified: every block proven" and
    --json "ok": true beside a claim of none; the block proofs are the hardmax limit's."""
    args = ("rasp", "compile", "sort", "--max-len", "8", "--vocab", "1,2,3,4", "--attention", "softmax")
    data = json.loads(run(*args, "--json")[1])
    assert data["ok"] is True and data["claim"] is False and "64 sampled inputs" in data["no_claim"]
    proof = [c for c in data["report"]["checks"] if c["property"].startswith("every block proven")]
    assert proof[0]["property"] == "every block proven for the hardmax limit (not this softmax network)"
    text = run(*args)[1]
    assert "verified:" not in text and "checked: outputs equal rasp.evaluate on 64 inputs" in text
    hard = json.loads(run("rasp", "compile", "sort", "--max-len", "4", "--vocab", "1,2,3", "--json")[1])
    assert hard["claim"] is True and hard["no_claim"] is None
    assert "verified: every block proven on" in run("rasp", "compile", "sort", "--max-len", "4", "--vocab", "1,2,3")[1]


@pytest.mark.parametrize("args, hint", [
    (("reverse", "--vocab", "1", "--max-len", "1"), "--input '0,1' --dtype exact;"),
    (("reverse", "--vocab", "1,2,3", "--max-len", "4"), "--input '0,1,2' --dtype exact;"),
    (("sort", "--max-len", "10", "--attention", "softmax"), "--input '0,1,2' --allow-outside;"),
])
def test_the_saved_hint_runs_as_printed(tmp_path, args, hint):
    """An audit (2026-11-29): the hint after "saved to" gave '0,1,2' whatever the vocabulary and length (refused with
    one token, or at max_len 1), and no --allow-outside for a network that claims nothing (refused as printed)."""
    code, out, err = run("rasp", "compile", *args, "--out", tmp_path / "f")
    assert code == 0 and hint in out, out + err
    command = out.split("saved to ")[1].split("(expressivity ")[1].split(";")[0].split()
    code, _, err = run(*(part.strip("'") for part in command))
    assert code == 0, err


def test_run_refuses_an_input_where_the_program_has_no_output(tmp_path):
    program = tmp_path / "divide.py"
    program.write_text("from expressivity import rasp\n"
                       "def make_program():\n"
                       "    return rasp.Map(lambda x: 12 // (x - 2), rasp.tokens).named('q')\n")
    code, out, err = run("rasp", "compile", f"{program}:make_program", "--vocab", "1,2,3", "--max-len", "3", "--out",
                         tmp_path / "q")
    assert code == 0 and "--input '0,1,3'" in out, err
    code, _, err = run("run", tmp_path / "q", "--input", "0,1,2,3")
    assert code == 2 and "one of the 25 inputs where rasp.evaluate raises" in err, err
    code, out, err = run("run", tmp_path / "q", "--input", "0,1,2,3", "--allow-outside", "--json")
    assert code == 0 and json.loads(out)["within_claim"] is False, err
    code, out, err = run("run", tmp_path / "q", "--input", "0,1,3,3", "--json")
    assert code == 0 and json.loads(out)["answers"] == ["BOS", -12, 12, 12] and json.loads(out)["within_claim"], err


def test_a_hardmax_check_of_sampled_inputs_says_checked_and_the_proofs_say_verified():
    """A fresh audit (2026-11-29): "verified: outputs equal rasp.evaluate on 64 inputs (64 random inputs)" put the
    word of a proof on a sample. The proofs carry the claim ("verified"); the sampled check is "checked"."""
    code, text, _ = run("rasp", "compile", "reverse", "--max-len", "8")
    assert code == 0 and "checked: outputs equal rasp.evaluate on 64 inputs (64 random inputs" in text, text
    assert "verified: every block proven on" in text and "verified: outputs equal" not in text
    code, text, _ = run("rasp", "compile", "reverse", "--max-len", "3")   # every input, in float64 and exactly
    assert code == 0 and "verified: outputs equal rasp.evaluate on 155 inputs (exhaustive)" in text, text
