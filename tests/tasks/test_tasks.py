"""Task targets on hand-checked cases, determinism, and the name + kwargs registry."""

import math

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks import TASKS, make_task, task_args


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", [n for n in TASKS if n != "yun-target"])
def test_every_task_is_deterministic_and_well_shaped(name):
    task = make_task(name)
    a, b = task.sample(4, None, gen(3)), task.sample(4, None, gen(3))
    c = task.sample(4, None, gen(4))
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    assert not torch.equal(a.x, c.x)
    assert a.x.shape[:2] == (4, task.seq_len) and a.mask.shape == (4, task.seq_len) and a.mask.any()
    if task.kind == "classification":
        assert a.x.dtype == torch.int64 and a.x.max() < task.vocab_size and a.y.max() < task.d_out
    else:
        assert a.x.shape[-1] == task.d_in and a.y.shape[-1] == task.d_out
    # a perfect predictor scores 1 and has (near) zero loss
    if task.kind == "classification":
        perfect = torch.nn.functional.one_hot(a.y, task.d_out).float() * 50
    else:
        perfect = a.y
    assert task.metric(perfect, a) == pytest.approx(1.0)
    assert task.loss(perfect, a).item() < 1e-6


def test_reverse_sort_sum_parity_targets():
    x = torch.tensor([[3, 1, 2, 0]])
    assert make_task("reverse").target(x).tolist() == [[0, 2, 1, 3]]
    assert make_task("sort").target(x).tolist() == [[0, 1, 2, 3]]
    b = make_task("sum", length=5, modulus=10).sample(2, None, gen())
    for row, ys in zip(b.x.tolist(), b.y.tolist()):
        assert ys == [sum(row[: t + 1]) % 10 for t in range(5)]
    p = make_task("parity", length=7).sample(8, None, gen())
    assert p.mask[:, :-1].sum() == 0
    assert p.y[:, -1].tolist() == [sum(r) % 2 for r in p.x.tolist()]


def test_copy_layout():
    task = make_task("copy", length=3, vocab=5)
    b = task.sample(2, None, gen())
    x = b.x[0].tolist()
    assert x[3] == 5 and x[4:] == [6, 6, 6]
    assert b.y[0, 4:].tolist() == x[:3] and b.mask[0].tolist() == [False] * 4 + [True] * 3


def test_associative_recall_answers_are_the_bound_values():
    task = make_task("associative-recall", length=5, queries=3, keys=8, values=6)
    b = task.sample(16, None, gen(1))
    for x, y in zip(b.x.tolist(), b.y.tolist()):
        pairs = {x[2 * i]: x[2 * i + 1] - 8 for i in range(5)}
        assert len(pairs) == 5
        for q in range(10, 13):
            assert y[q] == pairs[x[q]]
    with pytest.raises(ExpressivityError):
        make_task("associative-recall", length=20, keys=8)


def test_fixed_memory_readouts():
    for readout, f in (("linear", lambda a: sum(a) / len(a)), ("boolean", math.prod),
                       ("smooth", lambda a: math.sin(math.pi * sum(a) / len(a)))):
        task = make_task("fixed-memory", length=10, lags="2,5", readout=readout)
        b = task.sample(3, None, gen())
        x = b.x[..., 0]
        if readout == "boolean":
            assert set(x.unique().tolist()) == {-1.0, 1.0}
        for i in range(3):
            for t in range(10):
                assert b.mask[i, t].item() == (t >= 5)
                if t >= 5:
                    assert b.y[i, t, 0].item() == pytest.approx(f([x[i, t - 2].item(), x[i, t - 5].item()]), abs=1e-5)
    with pytest.raises(ExpressivityError):
        make_task("fixed-memory", lags="0,3")
    with pytest.raises(ExpressivityError):
        make_task("fixed-memory", length=5, lags="1,9")


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_nested_memory_follows_the_pointer_chain(depth):
    task = make_task("nested-memory", length=12, max_lag=4, depth=depth)
    b = task.sample(5, None, gen(depth))
    for i in range(5):
        v = b.x[i, :, 0].tolist()
        ptr = [0] + [int(b.x[i, t, 2:].argmax()) + 1 for t in range(1, 12)]
        assert b.x[i, 0, 1] == 1 and b.x[i, 1:, 1].sum() == 0
        for t in range(1, 12):
            assert 1 <= ptr[t] <= min(4, t)
            pos = t
            for _ in range(depth):
                pos -= ptr[pos]
            assert b.y[i, t, 0].item() == v[pos]
    assert make_task("adaptive-memory").depth == 1


def test_kernel_memory_is_the_causal_convolution():
    for kernel in ("exp", "power"):
        task = make_task("kernel-memory", length=9, kernel=kernel, alpha=0.5)
        s = torch.arange(200000)
        assert task.rho(s).sum().item() == pytest.approx(1.0, abs=2e-3)  # power tail ~ N^-alpha / alpha
        b = task.sample(2, None, gen())
        x = b.x[..., 0].double()
        for t in range(9):
            want = sum(task.rho(torch.tensor(k)).item() * x[:, t - k] for k in range(t + 1))
            assert torch.allclose(b.y[:, t, 0].double(), want, atol=1e-5)
    task = make_task("kernel-memory", kernel="power", alpha=0.5)
    assert task.rho(torch.tensor(3)).item() == pytest.approx(4 ** -1.5 / 2.6123753486854883, rel=1e-9)


def test_registry_parses_and_rejects_arguments():
    assert task_args("reverse") == {"length": 8, "vocab": 16}
    t = make_task("kernel-memory", alpha="1.5", length="32", kernel="exp")
    assert (t.alpha, t.length, t.kernel) == (1.5, 32, "exp")
    for bad in (dict(name="nope"), dict(name="reverse", zz=1), dict(name="reverse", length="eight"), dict(name="reverse", length=0)):
        with pytest.raises(ExpressivityError):
            make_task(**bad)


def test_yun_target_regression_uses_the_targets_api():
    pytest.importorskip("expressivity.targets")
    from expressivity.targets import get_target, list_targets

    name = list_targets()[0].name
    task = make_task("yun-target", target=name, length=3, dim=1)
    b = task.sample(4, None, gen())
    assert b.x.min() >= 0 and b.x.max() <= 1
    want = get_target(name).fn(b.x.double().numpy())
    assert torch.allclose(b.y, torch.as_tensor(want, dtype=torch.float32))
    with pytest.raises(ExpressivityError):
        make_task("yun-target", target="no-such-target")


@pytest.mark.parametrize("name", [n for n in TASKS if n != "yun-target"])
def test_every_task_samples_at_other_lengths(name):
    task = make_task(name)
    longer = task.length + 3
    b = task.sample(3, longer, gen(1))
    assert b.x.shape[:2] == (3, task.sequence_length(longer)) and b.mask.shape == b.x.shape[:2]
    assert task.sequence_length(longer) > task.seq_len  # not silently the training length


def test_lengths_a_task_cannot_take_are_refused():
    with pytest.raises(ExpressivityError, match="largest lag 7 must be < length 5"):
        make_task("fixed-memory").sample(2, 5, gen())
    with pytest.raises(ExpressivityError, match="queries <= length"):
        make_task("associative-recall").sample(2, 3, gen())
    with pytest.raises(ExpressivityError, match="length must be an integer >= 1"):
        make_task("reverse").sample(2, 0, gen())


def test_kernel_memory_targets_at_another_length_use_that_lengths_kernel():
    task = make_task("kernel-memory", length=16, kernel="exp", alpha=0.5)
    b = task.sample(2, 40, gen(2))
    x, y = b.x[..., 0].double(), b.y[..., 0].double()
    rho = task.rho(torch.arange(40))
    want = torch.stack([sum(rho[s] * x[:, t - s] for s in range(t + 1)) for t in range(40)], 1)
    assert torch.allclose(y, want.float().double(), atol=1e-5)


def test_fixed_memory_sin_product_readout():
    task = make_task("fixed-memory", lags="1,3", readout="sin-product", length=8)
    b = task.sample(4, None, gen(0))
    x, y = b.x[..., 0], b.y[..., 0]
    t = 5
    assert torch.allclose(y[:, t], torch.sin(4 * math.pi * x[:, t - 1] * x[:, t - 3]))
    with pytest.raises(ExpressivityError, match="two lags"):
        make_task("fixed-memory", lags="1,3,5", readout="sin-product")


def test_fixed_memory_sin_product_diff_readout():
    task = make_task("fixed-memory", lags="2,5", readout="sin-product-diff", length=8)
    b = task.sample(4, None, gen(0))
    x, y = b.x[..., 0], b.y[..., 0]
    a1, a2 = x[:, 6 - 2], x[:, 6 - 5]
    assert torch.allclose(y[:, 6], torch.sin(4 * math.pi * a1 * a2) + (a1 - a2) / 2)
    assert not b.mask[:, 4].any() and b.mask[:, 5].all()
    with pytest.raises(ExpressivityError, match="two lags"):
        make_task("fixed-memory", lags="1", readout="sin-product-diff")
    with pytest.raises(ExpressivityError, match="readout must be one of"):
        make_task("fixed-memory", readout="cosine")


@pytest.mark.parametrize("name", ["reverse", "copy", "fixed-memory", "nested-memory"])
def test_member_metrics_give_each_member_its_own_metric(name):
    # an ensemble scores its K members in one pass; each must get exactly what it gets alone,
    # and that is the accuracy or R^2 computed independently
    import numpy as np

    task = make_task(name)
    batch = task.sample(16, None, gen(1))
    K = 5
    if task.kind == "classification":
        out = torch.randn(K, *batch.y.shape, task.d_out, generator=gen(2))
        out[0] = torch.nn.functional.one_hot(batch.y, task.d_out).float()   # a perfect member
    else:
        out = batch.y + 0.3 * torch.randn(K, *batch.y.shape, generator=gen(2)) * torch.arange(K).view(K, 1, 1, 1)
    together = task.member_metrics(out, batch)
    assert together == [task.metric(out[k], batch) for k in range(K)]
    m = batch.mask.numpy()
    for k in range(K):
        if task.kind == "classification":
            want = float(np.mean(out[k].numpy().argmax(-1)[m] == batch.y.numpy()[m]))
        else:
            y, pred = batch.y.numpy()[m].astype(float), out[k].numpy()[m].astype(float)
            want = 1 - ((pred - y) ** 2).sum() / ((y - y.mean(0)) ** 2).sum()
        assert together[k] == pytest.approx(want, rel=1e-6, abs=1e-12)
    assert together[0] == 1.0


_READOUTS = [("fixed-memory", {"readout": r, "lags": "2,5" if r.startswith("sin-product") else "1,3,7"})
             for r in ("linear", "boolean", "smooth", "sin-product", "sin-product-diff")]


@pytest.mark.parametrize("name,args", [(n, {}) for n in TASKS if n != "yun-target"] + _READOUTS)
def test_sample_members_gives_each_member_its_own_batch(name, args):
    # an ensemble draws K members' batches at once; member k must get exactly the batch its
    # single run draws from the same generator, and every generator must end where it would
    # (37 sequences at odd lengths: blocks that fill no whole number of vectors, where a kernel
    # that treated a tail differently from full vectors would show)
    task = make_task(name, **args)
    for length in (None, task.length + 3):
        for split in ("train", "val"):
            together_gens = [gen(s) for s in (5, 6, 7)]
            alone_gens = [gen(s) for s in (5, 6, 7)]
            for _ in range(2):   # twice: the generators must have advanced exactly as alone
                together = task.sample_members(37, length, together_gens, split)
                alone = [task.sample(37, length, g, split) for g in alone_gens]
                for part, whole in zip(zip(*alone), together):
                    assert whole.shape == (3, *part[0].shape) and whole.dtype == part[0].dtype
                    assert all(torch.equal(whole[k], part[k]) for k in range(3))
            assert all(torch.equal(a.get_state(), b.get_state()) for a, b in zip(together_gens, alone_gens))


def test_a_generator_given_twice_draws_two_batches_one_after_the_other():
    g, h = gen(3), gen(3)
    task = make_task("nested-memory")
    together = task.sample_members(6, None, [g, g])
    alone = [task.sample(6, None, h) for _ in range(2)]
    assert all(torch.equal(whole[k], part[k]) for whole, part in zip(together, zip(*alone)) for k in range(2))


def test_tasks_that_draw_members_at_once_call_generate_once(monkeypatch):
    from expressivity.tasks.base import MemberGenerators

    flagged = sorted(n for n, cls in TASKS.items() if cls.draws_members_at_once)
    assert {"reverse", "sort", "copy", "sum", "parity", "fixed-memory", "nested-memory", "adaptive-memory",
            "kernel-memory"} <= set(flagged)
    for name, expected in (("reverse", [MemberGenerators]), ("associative-recall", [torch.Generator] * 2)):
        calls = []
        task = make_task(name)
        original = type(task).generate
        monkeypatch.setattr(type(task), "generate", lambda self, *a: calls.append(type(a[2])) or original(self, *a))
        batch = task.sample_members(4, None, [gen(1), gen(2)])
        assert calls == expected and batch.x.shape[:2] == (2, 4)


def test_a_bf16_output_does_not_round_the_count_of_scored_positions():
    """Under bf16 autocast the model's output is bf16; the loss's mask weights and sums stay in
    float32, so 48 x 127 = 6,096 scored positions (10 significant bits; bf16 keeps 8) are counted
    exactly: a constant error of 0.5 per position has loss 0.5 exactly, for one run and K members."""
    from expressivity.tasks import Batch

    task = make_task("fixed-memory", length=128, lags="2,5")
    y = torch.zeros(48, 128, 1)
    mask = torch.ones(48, 128, dtype=torch.bool)
    mask[:, 0] = False                                   # 48 x 127 scored
    out = torch.full((48, 128, 1), 0.5 ** 0.5, dtype=torch.bfloat16)
    error = float(torch.tensor(0.5 ** 0.5, dtype=torch.bfloat16)) ** 2
    assert task.loss(out, Batch(y, y, mask)).item() == pytest.approx(error, rel=1e-6)
    members = task.member_losses(out.expand(2, *out.shape), Batch(y.expand(2, *y.shape), y.expand(2, *y.shape),
                                                                  mask.expand(2, *mask.shape)))
    assert members.tolist() == pytest.approx([error, error], rel=1e-6)


def test_a_user_target_s_code_is_part_of_the_run_s_configuration(tmp_path, monkeypatch):
    """An audit (2026-11-28): a sweep of yun-target with target mytgt:f, run again after mytgt.py changed, reported
    "2 recorded before, 0 done": the old code's results under the same run ids. The file's SHA-256 is now a task
    argument (so the id changes with the code), and a stored configuration naming other code is refused."""
    import hashlib

    from expressivity.errors import ExpressivityError
    from expressivity.training.config import RunConfig

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    (tmp_path / "tgt_sha_a.py").write_text("def f(X):\n    return X * 0.25\n")
    first = RunConfig.for_task("yun-target", {"target": "tgt_sha_a:f"}, steps=2)
    digest = hashlib.sha256((tmp_path / "tgt_sha_a.py").read_bytes()).hexdigest()
    assert first.task.args["target_sha256"] == digest
    # a built-in target's configuration is as it was (its run ids too)
    assert "target_sha256" not in RunConfig.for_task("yun-target", {"target": "mean-shift"}, steps=2).task.args
    first.build_task()   # the same code: builds
    import sys

    (tmp_path / "tgt_sha_a.py").write_text("def f(X):\n    return X * 3.0\n")
    sys.modules.pop("tgt_sha_a", None)   # a new process imports the file as it is now
    with pytest.raises(ExpressivityError, match="made with other code for target 'tgt_sha_a:f'"):
        first.build_task()
    second = RunConfig.for_task("yun-target", {"target": "tgt_sha_a:f"}, steps=2)
    assert second.id() != first.id()


@pytest.mark.parametrize("args, needle", [({"dim": 257}, "dim 257 is above 256"), ({"length": 0}, "length"),
                                          ({"length": -3}, "length")])
def test_yun_target_refuses_a_dimension_or_length_it_cannot_take(args, needle):
    """A review (2026-11-28): a method inserted into YunTarget's __post_init__ left its dim and length checks after a
    return: dim 100,000 trained a 13M-parameter model and length -3 was taken."""
    from expressivity.errors import ExpressivityError
    from expressivity.tasks.yun import YunTarget

    with pytest.raises(ExpressivityError, match=needle):
        YunTarget(**args)


def test_one_set_of_lags_has_one_spelling_and_one_run_id():
    """"7,3,1", "1, 3,7" and "01,3,7" drew the batches of "1,3,7" under four run ids, so a sweep and `results` saw
    four configurations of one data set (a fresh audit, 2026-11-29)."""
    from expressivity import RunConfig

    spellings = ("1,3,7", "7,3,1", "1, 3,7", "01,3,7")
    assert {make_task("fixed-memory", lags=s).lags for s in spellings} == {"1,3,7"}
    assert len({RunConfig.for_task("fixed-memory", {"lags": s}, steps=10).id() for s in spellings}) == 1


@pytest.mark.parametrize("kernel", ["power", "exp"])
def test_kernel_memory_refuses_an_alpha_whose_kernel_float64_cannot_normalise(kernel):
    """An audit (2026-11-29): at alpha 1e-17 both kernels were 0 (zeta(1 + alpha) = zeta(1) = inf; 1 - e^-alpha
    cancelled to 0), and a run trained on an all-zero target with exit 0."""
    with pytest.raises(ExpressivityError, match=r"alpha must be a finite number >= 1e-06"):
        make_task("kernel-memory", kernel=kernel, alpha=1e-17)
    task = make_task("kernel-memory", length=8, kernel=kernel, alpha=1e-6)
    total = float(task.rho(torch.arange(10 ** 6)).sum())
    assert 0 < total <= 1 and float(task.rho(torch.arange(1))[0]) > 0   # the smallest alpha still has a kernel


def test_uniform_integers_are_uniform_for_large_ranges_and_unchanged_for_small_ones():
    """An audit (2026-11-29): floor(u * float32(high)) with u on a 2^-24 grid drew a third of 10^7 values half as
    often, and above 2^24 values most never. Above 4,096 values the draws are float64; below, the data of every
    run stays bit for bit what it was."""
    from expressivity.tasks.base import uniform_ints

    ids = uniform_ints((400_000,), 2 ** 26, torch.Generator().manual_seed(0))
    assert int(ids.min()) >= 0 and int(ids.max()) < 2 ** 26
    # on float32's grid u * 2^26 is a multiple of 4: three values in four could never come
    assert 0.74 < float((ids % 4 != 0).double().mean()) < 0.76
    top = float((ids >= 2 ** 26 - 2 ** 21).double().mean())   # the top 1/32 of the range holds its share
    assert 0.029 < top < 0.034
    small = uniform_ints((1000,), 16, torch.Generator().manual_seed(3))
    u = torch.rand((1000,), generator=torch.Generator().manual_seed(3))
    assert torch.equal(small, torch.floor(u * torch.tensor(16.0)).long())


def test_kernel_memory_alpha_is_a_float_so_one_dataset_has_one_run_id():
    # alpha=1 and alpha=1.0 drew the same data under two run ids (a fresh audit, 2026-11-29)
    from expressivity.training import TaskSpec

    assert type(make_task("kernel-memory", alpha=1).alpha) is float
    assert TaskSpec("kernel-memory", {"alpha": 1}).build().alpha == 1.0
    whole, point = make_task("kernel-memory", alpha=1), make_task("kernel-memory", alpha=1.0)
    assert repr(whole) == repr(point)
