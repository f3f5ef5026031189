"""The language-model tasks on a small slice of the standard library: windows from the right split,
BERT masking, bits per byte, corpus facts carried by the configuration, refusals, every mixer trains."""

import math

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.nn.mixers import MIXER_NAMES
from expressivity.tasks import make_task, task_args
from expressivity.tasks.language import MASK_ID, copy_positions
from expressivity.training import RunConfig, run
from expressivity.training.ensemble import run_ensemble
from expressivity.training.trainer import eval_batch

SLICE = "wsgiref/*"


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _find(haystack: bytes, row) -> bool:
    return bytes(row.tolist()) in haystack


def test_causal_windows_come_from_the_asked_split_and_targets_are_the_next_byte():
    task = make_task("lm-causal", length=24, include=SLICE)
    assert task.has_splits
    texts = {s: bytes(task.corpus.text(s).tolist()) for s in ("train", "val", "test")}
    for split in ("train", "val", "test"):
        b = task.sample(8, None, gen(0), split)
        assert b.x.shape == b.y.shape == b.mask.shape == (8, 24) and b.mask.all()
        assert b.x.dtype == torch.int64 and int(b.x.max()) < 256
        assert torch.equal(b.x[:, 1:], b.y[:, :-1])
        for xr, yr in zip(b.x, b.y):
            assert _find(texts[split], torch.cat([xr, yr[-1:]]))
    # the default split is train, and the trainer's held-out batches come from the held-out files
    assert torch.equal(task.sample(4, None, gen(3)).x, task.sample(4, None, gen(3), "train").x)
    for split in ("val", "test"):
        b = eval_batch(task, 6, 10, split)
        assert b.x.shape == (6, 10) and all(_find(texts[split], r) for r in b.x)
    # same generator state, same batch; another seed, another batch
    assert torch.equal(task.sample(4, None, gen(5)).x, task.sample(4, None, gen(5)).x)
    assert not torch.equal(task.sample(4, None, gen(5)).x, task.sample(4, None, gen(6)).x)
    with pytest.raises(ExpressivityError, match="unknown split"):
        task.sample(2, None, gen(), "dev")


def test_the_splits_share_no_text():
    """No 64-byte window of the validation or test text occurs in the training text (files are disjoint;
    a shared license header could repeat, but not every window)."""
    task = make_task("lm-masked", length=64, include=SLICE)
    train = bytes(task.corpus.text("train").tolist())
    for split in ("val", "test"):
        rows = task.sample(32, None, gen(1), split).y
        assert sum(_find(train, r) for r in rows) < 4


def test_masked_lm_masks_exactly_bert_fifteen_percent():
    task = make_task("lm-masked", length=100, include=SLICE)
    assert task.vocab_size == 257 and task.d_out == 256 and task.masked_count(100) == 15 and task.masked_count(3) == 1
    b = task.sample(400, None, gen(1))
    assert (b.mask.sum(1) == 15).all()
    assert torch.equal(b.x[~b.mask], b.y[~b.mask])  # unchosen positions are the text
    chosen_x, chosen_y = b.x[b.mask], b.y[b.mask]
    masked = (chosen_x == MASK_ID).float().mean().item()
    kept = (chosen_x == chosen_y).float().mean().item()
    assert 0.77 < masked < 0.83 and 0.08 < kept < 0.14  # 10% kept + random bytes that happen to match
    assert (b.x[~b.mask] != MASK_ID).all() and int(b.y.max()) < 256
    text = bytes(task.corpus.text("train").tolist())
    assert all(_find(text, r) for r in b.y[:20])
    one = task.sample(2, 1, gen(2))
    assert one.mask.all()


def test_loss_is_bits_per_byte_and_a_perfect_model_scores_one():
    task = make_task("lm-causal", length=16, include=SLICE)
    b = task.sample(4, None, gen())
    uniform = torch.zeros(4, 16, 256)
    assert task.loss(uniform, b).item() == pytest.approx(8.0, abs=1e-5)  # log2(256)
    perfect = torch.nn.functional.one_hot(b.y, 256).float() * 50
    assert task.metric(perfect, b) == 1.0 and task.loss(perfect, b).item() < 1e-6
    m = make_task("lm-masked", length=16, include=SLICE)
    bm = m.sample(4, None, gen())
    assert m.loss(uniform, bm).item() == pytest.approx(8.0, abs=1e-5)


def test_the_configuration_carries_the_corpus_and_refuses_another():
    config = RunConfig.for_task("lm-causal", {"length": 16, "include": SLICE})
    args = config.task.args
    corpus = make_task("lm-causal", include=SLICE).corpus
    assert args["python"] == corpus.python and args["corpus_bytes"] == corpus.bytes
    assert args["corpus_hash"] == corpus.content_hash[:16] and args["file_list_hash"] == corpus.file_list_hash[:16]
    assert RunConfig.from_dict(config.to_dict()).id() == config.id()
    other = config.to_dict()
    other["task"]["args"]["corpus_hash"] = "0" * 16
    with pytest.raises(ExpressivityError, match="another corpus: corpus_hash"):
        RunConfig.from_dict(other)
    # string arguments from the command line parse like any task's
    assert make_task("lm-causal", length="16", include=SLICE, corpus_bytes=str(corpus.bytes)).length == 16
    # 0 fills it in, as documented (the command line refused it: an audit, 2026-11-29)
    assert make_task("lm-causal", length="16", include=SLICE, corpus_bytes="0").corpus_bytes == corpus.bytes
    assert set(task_args("lm-masked")) == {"length", "include", "root", "python", "corpus_hash", "file_list_hash",
                                           "corpus_bytes", "mask_rate"}


@pytest.mark.parametrize("name,args,match", [
    ("lm-causal", {"length": 0}, ">= 1"),
    ("lm-causal", {"length": True}, "length must be an integer"),
    ("lm-causal", {"include": 3}, "include must be a string"),
    ("lm-causal", {"length": "abc"}, "not a valid int"),
    ("lm-causal", {"length": 10**9}, "smallest split"),
    ("lm-masked", {"mask_rate": 0.0}, "mask_rate must be in"),
    ("lm-masked", {"mask_rate": 1.5}, "mask_rate must be in"),
    ("lm-masked", {"mask_rate": float("nan")}, "finite"),
    ("lm-masked", {"mask_rate": "often"}, "not a valid float"),
    ("lm-causal", {"include": "no/such/*"}, "corpus is empty"),
    ("lm-causal", {"include": " , "}, None),  # no patterns: the whole corpus
    ("lm-causal", {"root": "/no/such/folder"}, "does not exist"),
    ("lm-causal", {"corpus_bytes": -3}, ">= 0"),
    ("lm-causal", {"python": "CPython 2.7.18"}, "another corpus: python"),
    ("lm-causal", {"nope": 1}, "has no argument"),
])
def test_bad_arguments_are_refused_with_one_line(name, args, match):
    args = {"include": SLICE, **args}
    if match is None:
        assert make_task(name, **args).include == ""
        return
    with pytest.raises(ExpressivityError, match=match):
        make_task(name, **args)


def test_bad_lengths_and_batch_sizes_at_sample_time():
    task = make_task("lm-causal", length=8, include=SLICE)
    shortest = min(task.corpus.text(s).numel() for s in ("train", "val", "test"))
    assert task.sample(1, int(shortest) - 1, gen()).x.shape == (1, shortest - 1)  # the longest that fits
    for bad in (0, -1, shortest, True, 2.5):
        with pytest.raises(ExpressivityError):
            task.sample(2, bad, gen())
    for bad in (0, True):
        with pytest.raises(ExpressivityError, match="batch size"):
            task.sample(bad, None, gen())


@pytest.mark.parametrize("name", ["lm-causal", "lm-masked"])
def test_every_mixer_trains_on_both_tasks_and_evaluates_at_another_length(name):
    for mixer in MIXER_NAMES:
        config = RunConfig.for_task(name, {"length": 12, "include": SLICE}, model={
            "mixer": mixer, "layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16},
            train={"steps": 3, "batch_size": 4, "eval_every": 3, "eval_size": 8, "lr": 1e-2}, eval_lengths=(20,))
        result = run(config)
        assert result.status == "done", mixer
        for length in (12, 20):
            row = result.lengths[length]
            assert all(math.isfinite(row[k]) for k in ("val_loss", "test_loss")), (mixer, row)
            assert 0 < row["val_loss"] < 12  # bits per byte, near log2(256) = 8 after three steps


def test_copy_positions_mark_repeated_four_grams():
    w = torch.tensor([[1, 2, 3, 4, 9, 2, 3, 4, 5, 1, 2, 3, 4]])
    got = copy_positions(w)
    assert got.shape == (1, 12) and got[0].nonzero().flatten().tolist() == [11]
    rows = torch.randint(0, 3, (5, 40), generator=gen(1))   # three symbols: many repeats
    brute = [[any(tuple(r[s - 2:s + 2]) == tuple(r[t - 2:t + 2]) for s in range(2, t)) if t >= 2 else False
              for t in range(39)] for r in rows.tolist()]
    assert copy_positions(rows).tolist() == brute


def _copy_bits(model, task, config):
    """Test bits per byte on all targets and on the copy targets, from the weights (the reference)."""
    batch = eval_batch(task, config.train.eval_size, None, "test", seed=config.train.split_seed("test"))
    copies = copy_positions(torch.cat([batch.x[:, :1], batch.y], dim=1))
    with torch.no_grad():
        bits = torch.nn.functional.cross_entropy(model(batch.x).transpose(1, 2), batch.y, reduction="none") / math.log(2)
    return float(bits.mean()), float(bits[copies].mean()), float(copies.double().mean())


def test_causal_runs_record_their_test_loss_on_copy_bytes_single_and_ensemble():
    configs = [RunConfig.for_task("lm-causal", {"length": 24, "include": SLICE}, model={
        "layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16}, seed=seed,
        train={"steps": 4, "batch_size": 4, "eval_every": 4, "eval_size": 16, "lr": 1e-2}) for seed in (0, 1)]
    single = run(configs[0])
    members, _ = run_ensemble(configs)
    for result, config in ((single, configs[0]), *zip(members, configs)):
        row = result.lengths[24]
        copies = row["test_subsets"]["copies"]
        whole, part, share = _copy_bits(result.model.eval(), config.build_task(), config)
        assert 0 < share < 1 and copies["share"] == pytest.approx(share, abs=1e-12)
        assert copies["loss"] == pytest.approx(part, rel=1e-5) and row["test_loss"] == pytest.approx(whole, rel=1e-5)
        assert copies["loss"] != pytest.approx(row["test_loss"], rel=1e-3)   # a subset, not the whole again
    assert members[0].lengths[24]["test_subsets"]["copies"] == pytest.approx(
        single.lengths[24]["test_subsets"]["copies"], rel=1e-5)


def test_tasks_without_subsets_record_none():
    config = RunConfig.for_task("lm-masked", {"length": 12, "include": SLICE}, model={
        "layers": 1, "heads": 2, "d_model": 16, "ffn_width": 16},
        train={"steps": 2, "batch_size": 4, "eval_every": 2, "eval_size": 8, "lr": 1e-2})
    assert "test_subsets" not in run(config).lengths[12]

