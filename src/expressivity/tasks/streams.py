"""The device stream of training batches (sampler ``"device"``, stream version 2): random numbers
computed where the model runs, for every ensemble member at once, from an integer hash of
``(seed, step, draw, element)``.

Why: the host stream (version 1, the CPU default) gives each member its own ``torch.Generator``
on the CPU, draws member by member and copies the batch to the device every step; on a GPU that
host work, not arithmetic, set the pace of small models (issue 29: 10 ms to sample one batch of
claim 7's task on the host). Here a batch is a few elementwise integer kernels on the device for
all members together, and no generator state exists: step ``t``'s batch is a pure function of the
member's seed and ``t``, so a resumed run draws exactly what an uninterrupted one would, at any
step.

**The stream, version 2.** Values are uint32 held in int64 tensors (products stay below 2^49, so
no integer overflow on any device). ``hash32`` is Wellons' "lowbias32" finaliser. Per draw, a key
per member mixes the seed's two 32-bit halves, the step's two halves, the split and the draw's
index within the batch (the tasks' calls in order); element ``i`` of the draw (row-major over the
requested shape) is ``hash32(hash32(i ^ key) ^ key2)``. A float32 uniform is ``(bits >> 8) * 2^-24``
(24 random bits, like ``torch.rand``); a float64 uniform takes 53 bits from two elements; integers
in ``[0, high)`` are ``floor(u * high)`` of a float64 uniform (exact ranges up to 2^31); normals
are Box-Muller. Integer and uniform draws are bit-identical on every device; normals agree to
the device's rounding of ``log``, ``sqrt`` and ``cos``.

A stream with ``members=False`` draws one member's batch with the shapes :meth:`Task.sample`
gives; with ``members=True`` every draw has a leading axis of K members.
"""

from __future__ import annotations

import math

import torch

VERSION = 2
MASK32 = 0xFFFFFFFF
_SPLIT_CODES = {"train": 0x1B873593, "val": 0x2545F491, "test": 0x5851F42D}


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``x * c mod 2^32`` for ``x`` in ``[0, 2^32)`` and a 32-bit constant ``c``, in 16-bit halves of ``c``."""
    return (x * (c & 0xFFFF) + ((x * (c >> 16)) & 0xFFFF) * 65536) & MASK32


def hash32(x: torch.Tensor) -> torch.Tensor:
    """Wellons' lowbias32 finaliser on uint32 values held in an int64 tensor."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


class CounterStream:
    """Random draws of one step's batch for ``seeds`` (one per member) on ``device``; pass it to
    :meth:`~expressivity.tasks.Task.sample` in place of a generator after :meth:`at`."""

    version = VERSION

    def __init__(self, seeds: list[int], device="cpu", members: bool = True):
        if not members and len(seeds) != 1:
            raise ValueError("a stream of one run takes one seed")
        self.device, self.members, self.size = torch.device(device), members, len(seeds)
        s = torch.tensor([[v & MASK32, (v >> 32) & MASK32] for v in seeds], dtype=torch.int64, device=self.device)
        self._seed = hash32(s[:, 0] ^ hash32(s[:, 1] ^ 0x9E3779B9))
        self.step, self.split, self.draws = 0, "train", 0

    def at(self, step, split: str = "train") -> "CounterStream":
        """This stream positioned at the start of ``step``'s batch of ``split``; ``step`` an int, or
        a 0-d int64 tensor on the stream's device (the same draws: inside a captured step the
        step is an input, not a constant compiled into the graph)."""
        self.step = step if isinstance(step, torch.Tensor) else int(step)
        self.split, self.draws = split, 0
        return self

    def _keys(self) -> tuple[torch.Tensor, torch.Tensor]:
        k = hash32(self._seed ^ (self.step & MASK32))
        k = hash32(k ^ ((self.step >> 32) & MASK32) ^ _SPLIT_CODES[self.split])
        k = hash32(k ^ (((self.draws + 1) * 0x85EBCA6B) & MASK32))
        self.draws += 1
        return k, hash32(k ^ 0x27D4EB2F)

    def bits(self, shape: tuple[int, ...], words: int = 1) -> torch.Tensor:
        """``(K, *shape, words)`` uint32 values (int64), or ``(*shape, words)`` for one run."""
        key, key2 = self._keys()
        count = math.prod(shape) * words
        index = torch.arange(count, dtype=torch.int64, device=self.device)
        out = hash32(hash32(index[None, :] ^ key[:, None]) ^ key2[:, None]).view(self.size, *shape, words)
        return out if self.members else out[0]

    def uniform(self, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        """Uniform ``[0, 1)``: float32 from 24 bits, float64 from 53."""
        if dtype == torch.float64:
            w = self.bits(shape, 2)
            return (((w[..., 0] >> 11) << 32) | w[..., 1]).double() * 2.0**-53
        return ((self.bits(shape)[..., 0] >> 8).to(torch.float32) * 2.0**-24).to(dtype or torch.float32)

    def integers(self, high, shape: tuple[int, ...]) -> torch.Tensor:
        """Integers in ``[0, high)`` (``high`` an int or a tensor broadcasting to ``shape``), exact up to 2^31."""
        if isinstance(high, torch.Tensor):   # a Python number stays a scalar: no host-to-device copy
            high = high.to(torch.float64)
        return torch.floor(self.uniform(shape, torch.float64) * high).long()

    def normal(self, shape: tuple[int, ...], dtype: torch.dtype | None = None) -> torch.Tensor:
        """Standard normals by Box-Muller from two float64 uniforms (``1 - u`` keeps the log finite)."""
        u = self.uniform((*shape, 2), torch.float64)
        z = torch.sqrt(-2.0 * torch.log1p(-u[..., 0])) * torch.cos(2.0 * math.pi * u[..., 1])
        return z.to(dtype or torch.float32)
