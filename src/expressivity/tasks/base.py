"""What a task is: a small dataclass that samples a batch from a generator, with exact targets,
a loss and a metric.

A task's fields are its keyword arguments (with defaults); ``length`` is the length it trains at,
but :meth:`Task.sample` takes the length per call, so a model can be evaluated at lengths it was
not trained on. ``model_defaults`` and ``train_defaults`` say which architecture and training
run suit it out of the box.

Shapes (tokens as rows): ``x`` is ``(batch, n)`` int64 ids when ``vocab_size > 0``, else
``(batch, n, d_in)`` float32; ``y`` is ``(batch, n)`` int64 class ids (``kind ==
"classification"``) or ``(batch, n, d_out)`` float32; ``mask`` is ``(batch, n)`` bool, the
positions that are scored.

Ensembles draw K members' batches with :meth:`Task.sample_members`: member ``k``'s from its own
generator, exactly the batch :meth:`Task.sample` gives it. Tasks whose ``generate`` draws only
through :func:`uniform`, :func:`uniform_ints` or :func:`normal` and whose other operations act
on the last axes alone (``draws_members_at_once``, the rule beside it) draw all K batches in one
call, with a :class:`MemberGenerators` in place of the generator; the others are sampled member
by member and stacked.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, NamedTuple

import torch
import torch.nn.functional as F

from expressivity.errors import ExpressivityError
from expressivity.tasks.streams import CounterStream


SPLITS = ("train", "val", "test")


class Batch(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor


@dataclass
class Task:
    name: ClassVar[str] = ""
    kind: ClassVar[str] = "classification"  # or "regression"
    metric_name: ClassVar[str] = "accuracy"
    # A task with a finite dataset (a corpus) draws train, validation and test batches from
    # disjoint data and receives the split in ``generate``; synthetic tasks draw fresh samples for
    # every split and tell the splits apart by the generator alone.
    has_splits: ClassVar[bool] = False
    # The target at position t is an input at a later position (next-token prediction): only a
    # causal model may be trained on it, or it reads its own target (a bidirectional model scored
    # 0.15 bits/byte on lm-causal by copying the next byte, a fresh audit, 2026-11-28).
    needs_causal: ClassVar[bool] = False
    # ``generate`` draws only through :func:`uniform`, :func:`uniform_ints` or :func:`normal` and
    # treats every leading axis as a batch axis, with operations that give each element the same
    # bits whatever the batch shape (integer arithmetic, float + - * /, gathers, flips, sorts,
    # scans), and transcendental functions or float reductions through :func:`each_member`: then
    # :meth:`sample_members` hands it all K generators at once. Checked against member-by-member
    # sampling in tests/tasks for every registered task. Subclasses inherit it: one whose
    # ``generate`` does not keep these rules sets it back to False.
    draws_members_at_once: ClassVar[bool] = False
    # ``generate`` draws only through the helpers below (:func:`uniform`, :func:`uniform_ints`,
    # :func:`normal`, :func:`integers`), so it also takes a
    # :class:`~expressivity.tasks.streams.CounterStream` and samples on the model's device, every
    # member at once (the ``"device"`` sampler). By default the tasks that draw members at once.
    samples_on_device: ClassVar[bool | None] = None

    @classmethod
    def device_sampling(cls) -> bool:
        """Whether this task takes a device stream (``samples_on_device``, by default ``draws_members_at_once``)."""
        return cls.draws_members_at_once if cls.samples_on_device is None else cls.samples_on_device

    def __post_init__(self) -> None:
        self.check_length(self.length)

    # ---- shapes the model must match -------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return 0

    @property
    def d_in(self) -> int:
        return 1

    @property
    def d_out(self) -> int:
        raise NotImplementedError

    def sequence_length(self, length: int | None = None) -> int:
        """Number of tokens ``n`` of a sample at task length ``length`` (default: the training
        length); equal to ``length`` unless a task lays its sequence out otherwise (copy's input,
        separator and blanks)."""
        return self.length if length is None else length

    @property
    def seq_len(self) -> int:
        """Tokens per sequence at the training length."""
        return self.sequence_length()

    def check_length(self, length: int) -> None:
        """Raise :class:`ExpressivityError` if the task cannot be sampled at ``length``."""
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ExpressivityError(f"task {self.name!r}: length must be an integer >= 1, got {length!r}")

    def drawing_bytes(self, n: int, sequences: int) -> int:
        """Memory (bytes) that drawing ``sequences`` samples of ``n`` tokens takes beyond the batch itself
        (temporaries): counted in the run's memory estimate. Nothing for most tasks."""
        return 0

    def cached_bytes(self, n: int) -> int:
        """Memory (bytes) a task keeps for the whole run once it has drawn samples of ``n`` tokens (a cache per
        length): counted for every length the run trains and evaluates at. Nothing for most tasks."""
        return 0

    def model_defaults(self) -> dict:
        return {}

    def train_defaults(self) -> dict:
        return {}

    def kwargs(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def token_names(self) -> tuple:
        """The value each input token id stands for (``run`` prints them): the ids themselves, unless a
        task has special tokens (copy's separator and blank, the masked LM's mask)."""
        return tuple(range(self.vocab_size))

    # ---- data ------------------------------------------------------------------------------
    def sample(self, batch_size: int, length: int | None, generator: torch.Generator, split: str = "train") -> Batch:
        """A batch of ``batch_size`` sequences at task length ``length`` (``None``: the training
        length) from ``split`` (``"train"``, ``"val"`` or ``"test"``), drawn from ``generator``
        alone (same generator state, same batch)."""
        if split not in SPLITS:
            raise ExpressivityError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        length = self.length if length is None else length
        self.check_length(length)
        if isinstance(generator, CounterStream):
            if not self.device_sampling():
                raise ExpressivityError(f"task {self.name!r} samples on the host only; use the host sampler")
            generator.at(generator.step, split)
            if torch.compiler.is_compiling():   # Dynamo cannot enter the context: a captured step is
                return self._generate(batch_size, length, generator, split)   # traced inside it instead
            with torch.device(generator.device):   # the tasks' own tensors (positions, masks) there too
                return self._generate(batch_size, length, generator, split)
        return self._generate(batch_size, length, generator, split)

    def _generate(self, batch_size, length, generator, split) -> Batch:
        if self.has_splits:
            return self.generate(batch_size, length, generator, split)
        return self.generate(batch_size, length, generator)

    def sample_members(self, batch_size: int, length: int | None, generators: list[torch.Generator],
                       split: str = "train") -> Batch:
        """K batches in one: member ``k``'s is what :meth:`sample` draws from ``generators[k]``
        (bit for bit, and each generator advances as it would), stacked on a leading axis of
        ``K = len(generators)``: ``x`` ``(K, batch_size, n[, d_in])`` and so on. A generator
        given twice draws twice, one batch after the other, as the loop below does."""
        if self.draws_members_at_once and len({id(g) for g in generators}) == len(generators):
            return self.sample(batch_size, length, MemberGenerators(generators), split)
        batches = [self.sample(batch_size, length, g, split) for g in generators]
        return Batch(*(torch.stack(parts) for parts in zip(*batches)))

    def generate(self, batch_size: int, length: int, generator: torch.Generator, *split) -> Batch:
        """Draw the batch; ``length`` has passed :meth:`check_length`; tasks with ``has_splits``
        also receive the split. Subclasses implement this."""
        raise NotImplementedError

    def held_out_subsets(self, batch: Batch) -> dict[str, torch.Tensor]:
        """Named subsets of ``batch``'s scored positions whose test loss every run also records
        (``lengths[L]["test_subsets"]``, at the training length), each a ``(batch, n)`` bool mask
        within ``batch.mask``; none by default. A verdict that reads a subset's loss from the record
        needs no weights (a sweep folder then resumes from its records alone)."""
        return {}

    # ---- loss and metric (higher metric is better) --------------------------------------
    # The loss is reported in units of ``loss_unit`` nats (1: nats or squared error; ln 2 for bits).
    loss_unit: ClassVar[float] = 1.0

    def loss(self, out: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Mean cross-entropy (classification) or mean squared error (regression) over scored
        positions, divided by :attr:`loss_unit`; ``out`` is the model output ``(batch, n, d_out)``."""
        w = batch.mask.to(_at_least_float32(out.dtype))
        per = self._per_position(out, batch.y)
        loss = (per * w).sum() / w.sum()
        return loss if self.loss_unit == 1.0 else loss / self.loss_unit

    def member_losses(self, out: torch.Tensor, batch: Batch) -> torch.Tensor:
        """:meth:`loss` of each of K models at once: ``out`` ``(K, batch, n, d_out)``, ``batch``
        tensors with the same leading ``K`` axis; returns ``(K,)`` (member ``k``'s loss on its own
        batch). Mask-weighted rather than mask-indexed, so every member reduces the same shape."""
        w = batch.mask.to(_at_least_float32(out.dtype))
        per = self._per_position(out, batch.y)
        dims = tuple(range(1, per.dim()))
        loss = (per * w).sum(dims) / w.sum(dims)
        return loss if self.loss_unit == 1.0 else loss / self.loss_unit

    def _per_position(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss at every position, shaped like ``y`` (classification) or ``y`` without its last axis."""
        if self.kind == "classification":
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none").view(y.shape)
        return ((out - y) ** 2).mean(-1)

    @torch.no_grad()
    def metric(self, out: torch.Tensor, batch: Batch) -> float:
        """Token accuracy over scored positions (classification) or ``R^2 = 1 - SSE/SST``
        (regression, SST about the mean of the scored targets, computed in float64)."""
        return self.member_metrics(out.unsqueeze(0), batch)[0]

    @torch.no_grad()
    def member_metrics(self, out: torch.Tensor, batch: Batch) -> list[float]:
        """:meth:`metric` of each of K models on one held-out ``batch`` (no ``K`` axis): ``out``
        ``(K, batch, n, d_out)``. Every member gets what :meth:`metric` gives it alone, bit for bit
        (the sums run over each member's block in the same order)."""
        m = batch.mask
        if self.kind == "classification":
            return (out[:, m].argmax(-1) == batch.y[m]).float().mean(1).tolist()
        # float64: 1 - R^2 of a near-perfect float32 model is ~1e-8, below float32's resolution at 1.
        y, pred = batch.y[m].double(), out[:, m].double()
        sse = ((pred - y) ** 2).sum(tuple(range(1, pred.dim())))
        sst = ((y - y.mean(0)) ** 2).sum().clamp(min=1e-300)
        return (1.0 - sse / sst).tolist()

    @torch.no_grad()
    def chunked_member_scores(self, forward, batch: Batch, chunk: int) -> list[tuple[float, float]]:
        """Each of K models' ``(loss, metric)`` on one held-out ``batch`` (no ``K`` axis), computed
        ``chunk`` sequences at a time: ``forward(x)`` maps a chunk of inputs to ``(K, chunk, n,
        d_out)``. The same quantities as :meth:`member_losses` and :meth:`member_metrics` (sums
        over the chunks, accumulated in float64, so equal to round-off), for held-out batches
        whose one pass would not fit in memory (:func:`expressivity.training.budget.eval_chunk`)."""
        totals = None
        for start in range(0, len(batch.x), chunk):
            part = Batch(*(t[start:start + chunk] for t in batch))
            out = forward(part.x)
            m, w = part.mask, part.mask.to(out.dtype)
            per = self._per_position(out, part.y.expand(out.shape[0], *part.y.shape))
            sums = [(per * w).double().sum(tuple(range(1, per.dim())))]
            if self.kind == "classification":
                sums.append((out[:, m].argmax(-1) == part.y[m]).double().sum(1))
            else:
                pred, y = out[:, m].double(), part.y[m].double()
                sums.append(((pred - y) ** 2).sum(tuple(range(1, pred.dim()))))
            totals = torch.stack(sums) if totals is None else totals + torch.stack(sums)
        weight = batch.mask.double().sum()
        loss = totals[0] / weight / self.loss_unit
        if self.kind == "classification":
            metric = totals[1] / weight
        else:
            y = batch.y[batch.mask].double()
            metric = 1.0 - totals[1] / ((y - y.mean(0)) ** 2).sum().clamp(min=1e-300)
        return list(zip(loss.tolist(), metric.tolist()))


class MemberGenerators(tuple):
    """The generators of K ensemble members, passed to a task's ``generate`` in place of one
    generator (:meth:`Task.sample_members`): the draws below then return ``(K, *shape)``."""


def uniform(shape: tuple[int, ...], generator: torch.Generator | MemberGenerators) -> torch.Tensor:
    """``torch.rand(shape, generator=generator)``; for :class:`MemberGenerators`, ``(K, *shape)``
    whose block ``k`` is what generator ``k`` draws alone (the same kernel fills a block of the
    same size)."""
    return _draw(torch.rand, shape, generator)


def normal(shape: tuple[int, ...], generator: torch.Generator | MemberGenerators,
           dtype: torch.dtype | None = None) -> torch.Tensor:
    """``torch.randn(shape, generator=generator, dtype=dtype)``, with a leading ``K`` axis for
    :class:`MemberGenerators` as :func:`uniform`."""
    return _draw(torch.randn, shape, generator, dtype)


def _draw(draw, shape: tuple[int, ...], generator, dtype: torch.dtype | None = None) -> torch.Tensor:
    if isinstance(generator, CounterStream):
        return (generator.uniform if draw is torch.rand else generator.normal)(tuple(shape), dtype)
    if not isinstance(generator, MemberGenerators):
        return draw(shape, generator=generator, dtype=dtype)
    out = torch.empty((len(generator), *shape), dtype=dtype)
    for block, g in zip(out, generator):
        draw(shape, generator=g, dtype=dtype, out=block)
    return out


def each_member(fn, t: torch.Tensor, generator: torch.Generator | MemberGenerators) -> torch.Tensor:
    """``fn(t)``; with :class:`MemberGenerators`, ``fn`` of each member's block alone, stacked:
    for operations PyTorch does not promise give the same bits whatever the batch shape
    (transcendental functions, float reductions, which may regroup their sums). On the CPU
    build measured they do (sines and 3-term means of 3 x n blocks, n < 200, and 100,000 sines
    one by one against one call), so this is a guarantee rather than a fix; it costs one call
    per member."""
    if not isinstance(generator, MemberGenerators):   # a device stream: every member in one call
        return fn(t)
    return torch.stack([fn(block) for block in t])


def uniform_ints(shape, high, generator: torch.Generator | MemberGenerators) -> torch.Tensor:
    """Integers in ``[0, high)`` where ``high`` is an int or a tensor broadcasting to ``shape``
    (a leading ``K`` axis with :class:`MemberGenerators`, as :func:`uniform`)."""
    if isinstance(generator, CounterStream):
        return generator.integers(high, tuple(shape))
    if float(torch.as_tensor(high).max()) > FLOAT32_UNIFORM_LIMIT:
        # float32 draws lie on a 2^-24 grid: at 10^7 values a third of them came half as often, and above 2^24
        # most could never come (an audit, 2026-11-29); float64's 2^-53 grid keeps the bias below 10^-12 of a value
        u = _draw(torch.rand, tuple(shape), generator, torch.float64)
        return torch.floor(u * torch.as_tensor(high, dtype=torch.float64)).long()
    u = uniform(tuple(shape), generator)
    return torch.floor(u * torch.as_tensor(high, dtype=torch.float32)).long()


# Up to it float32 draws give each of high values its share within high / 2^24 (2.4e-4 at 4,096), and the data of
# every run made with such values stays as it was; above it the draws are float64.
FLOAT32_UNIFORM_LIMIT = 4096


def integers(high: int, shape: tuple[int, ...], generator: torch.Generator | CounterStream) -> torch.Tensor:
    """``torch.randint(0, high, shape, generator=generator)`` (int64), or a device stream's exact
    integers in ``[0, high)`` (the corpus tasks' window starts, which exceed float32's 24 bits)."""
    if isinstance(generator, CounterStream):
        return generator.integers(high, tuple(shape))
    return torch.randint(0, high, tuple(shape), generator=generator)


def _at_least_float32(dtype: torch.dtype) -> torch.dtype:
    """The dtype a loss's mask weights and sums are kept in: ``dtype``, or float32 where ``out`` is
    bf16 (autocast), whose 8 significant bits would round a count of scored positions such as
    48 x 127 (float32 and float64 outputs are unchanged, so their losses are too)."""
    return torch.promote_types(dtype, torch.float32)
