"""The device stream (tasks/streams.py, sampler "device", stream 2): a pure function of seed and
step, members independent of their pack, uniform, and taken by every task that samples on the
device; the host stream (1) is untouched."""

import math

import pytest
import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks import TASKS, make_task
from expressivity.tasks.streams import CounterStream, hash32

DEVICE_TASKS = [name for name, cls in TASKS.items() if cls.device_sampling()]
SMALL = {"fixed-memory": {"length": 12, "lags": "1,3"}, "nested-memory": {"length": 12, "max_lag": 4},
         "adaptive-memory": {"length": 12, "max_lag": 4}, "kernel-memory": {"length": 12},
         "reverse": {"length": 6}, "sort": {"length": 6}, "copy": {"length": 4}, "sum": {"length": 6},
         "parity": {"length": 6}, "lm-causal": {"length": 16}, "lm-masked": {"length": 16}}


def test_hash32_is_the_published_lowbias32():
    # lowbias32(x) for x = 0, 1, 0xFFFFFFFF computed with Python's unbounded integers
    def reference(x):
        x ^= x >> 16
        x = (x * 0x7FEB352D) & 0xFFFFFFFF
        x ^= x >> 15
        x = (x * 0x846CA68B) & 0xFFFFFFFF
        return x ^ (x >> 16)

    xs = [0, 1, 2, 12345, 2**31, 0xFFFFFFFF, 0xDEADBEEF]
    assert hash32(torch.tensor(xs)).tolist() == [reference(x) for x in xs]


def test_a_step_is_a_pure_function_of_seed_and_step():
    a, b = CounterStream([3, 7], members=True), CounterStream([3, 7], members=True)
    first = a.at(5).uniform((4, 6))
    a.at(9).uniform((4, 6))   # other steps in between change nothing
    assert torch.equal(a.at(5).uniform((4, 6)), first) and torch.equal(b.at(5).uniform((4, 6)), first)
    assert not torch.equal(a.at(6).uniform((4, 6)), first)
    s = a.at(5)
    assert not torch.equal(s.uniform((4, 6)), s.uniform((4, 6)))   # successive draws of a step differ


def test_a_member_draws_what_it_draws_alone_whatever_its_pack():
    pack = CounterStream([11, 0, 2**62 + 5], members=True).at(17)
    alone = CounterStream([2**62 + 5], members=False).at(17)
    assert torch.equal(pack.uniform((3, 5))[2], alone.uniform((3, 5)))
    assert torch.equal(pack.integers(10**9, (7,))[2], alone.integers(10**9, (7,)))
    assert torch.equal(pack.normal((4,), torch.float64)[2], alone.normal((4,), torch.float64))


def test_draws_are_uniform_and_members_uncorrelated():
    s = CounterStream([0, 1], members=True).at(0)
    u = s.uniform((200_000,))
    assert u.min() >= 0 and u.max() < 1
    counts = torch.histc(u[0], bins=20, min=0, max=1)
    chi2 = float(((counts - 10_000) ** 2 / 10_000).sum())
    assert chi2 < 45   # 19 degrees of freedom: 45 is beyond the 0.999 quantile (43.8)
    assert abs(float(torch.corrcoef(u)[0, 1])) < 0.01
    z = s.normal((200_000,), torch.float64)[0]
    assert abs(float(z.mean())) < 0.01 and abs(float(z.std()) - 1) < 0.01
    ints = s.integers(3_000_000_000 // 2, (200_000,))
    assert ints.min() >= 0 and ints.max() < 1_500_000_000 and ints.dtype == torch.int64


def test_float64_uniforms_carry_53_bits():
    u = CounterStream([1], members=False).at(0).uniform((10_000,), torch.float64)
    scaled = u * 2.0**53
    assert torch.equal(scaled, scaled.floor()) and bool(((scaled % 2**29) != 0).any())


@pytest.mark.parametrize("name", DEVICE_TASKS)
def test_every_device_task_samples_from_a_stream_per_member(name):
    task = make_task(name, **SMALL.get(name, {}))
    pack = task.sample(5, None, CounterStream([4, 9], members=True).at(3))
    alone = task.sample(5, None, CounterStream([9], members=False).at(3))
    single = task.sample(5, None, torch.Generator().manual_seed(9))
    for part, one, host in zip(pack, alone, single):
        assert part.shape == (2, *host.shape) and one.shape == host.shape and part.dtype == host.dtype
        # float reductions and products in targets run on K x batch rows at once: equal to round-off
        assert torch.allclose(part[1].double(), one.double(), rtol=1e-6, atol=1e-7), name
    again = task.sample(5, None, CounterStream([9], members=False).at(3))
    assert all(torch.equal(a, b) for a, b in zip(alone, again))


def test_tasks_that_sample_on_the_host_refuse_a_stream():
    task = make_task("associative-recall")
    with pytest.raises(ExpressivityError, match="host sampler"):
        task.sample(4, None, CounterStream([0], members=False))


def test_the_nested_memory_features_are_the_one_hot_pointers():
    # the scatter that replaced one_hot(...).float() writes the same features (the host stream's
    # numbers are also held by tests/training/test_cpu_unchanged.py)
    task = make_task("nested-memory", length=12, max_lag=4)
    batch = task.sample(6, None, torch.Generator().manual_seed(0))
    feats = batch.x
    onehot = feats[..., 2:]
    assert torch.equal(onehot[:, 0], torch.zeros_like(onehot[:, 0]))
    assert torch.equal(onehot[:, 1:].sum(-1), torch.ones(6, 11))
    pointers = onehot[:, 1:].argmax(-1) + 1
    t = torch.arange(1, 12)
    assert bool(((pointers >= 1) & (pointers <= t.clamp(max=4))).all())
    assert math.isclose(float(feats[:, 0, 1].sum()), 6.0)
