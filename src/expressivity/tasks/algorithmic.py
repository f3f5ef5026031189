"""Algorithmic token tasks: reverse, sort, copy, sum, parity, multi-query associative recall."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks.base import Batch, Task, uniform_ints

_CLS_TRAIN = {"steps": 3000, "batch_size": 64, "lr": 3e-3, "target_metric": 0.999}


@dataclass
class Reverse(Task):
    """``y_i = x_{n-1-i}`` at every position of a length-``length`` sequence over ``vocab`` symbols
    (encoder form: the whole input is visible, so the default model is bidirectional)."""

    name = "reverse"
    draws_members_at_once = True
    length: int = 8
    vocab: int = 16

    @property
    def vocab_size(self):
        return self.vocab

    @property
    def d_out(self):
        return self.vocab

    def model_defaults(self):
        return {"causal": False, "ape": "learned", "layers": 1, "heads": 4, "d_model": 64, "ffn_width": 128}

    def train_defaults(self):
        return dict(_CLS_TRAIN)

    def target(self, x):
        return x.flip(-1)

    def generate(self, batch_size, length, generator):
        x = uniform_ints((batch_size, length), self.vocab, generator)
        return Batch(x, self.target(x), torch.ones_like(x, dtype=torch.bool))


@dataclass
class Sort(Reverse):
    """``y = sorted(x)`` (ascending), position by position, encoder form."""

    name = "sort"

    def target(self, x):
        return x.sort(-1).values


@dataclass
class Copy(Task):
    """Input ``x_1..x_L, SEP, BLANK x L`` (length ``2L+1``); at blank ``j`` the target is ``x_j``.

    Ids: symbols ``0..vocab-1``, ``SEP = vocab``, ``BLANK = vocab + 1``. Causal by default.
    """

    name = "copy"
    draws_members_at_once = True
    length: int = 8
    vocab: int = 16

    @property
    def vocab_size(self):
        return self.vocab + 2

    @property
    def d_out(self):
        return self.vocab

    def sequence_length(self, length=None):
        return 2 * (self.length if length is None else length) + 1

    def token_names(self):
        return (*range(self.vocab), "SEP", "BLANK")

    def model_defaults(self):
        return {"causal": True, "rpe": "free", "layers": 1, "heads": 4, "d_model": 64, "ffn_width": 128}

    def train_defaults(self):
        return dict(_CLS_TRAIN)

    def generate(self, batch_size, L, generator):
        src = uniform_ints((batch_size, L), self.vocab, generator)
        lead = src.shape[:-1]   # (batch,) or (members, batch)
        x = torch.cat([src, torch.full((*lead, 1), self.vocab), torch.full((*lead, L), self.vocab + 1)], -1)
        y = torch.zeros_like(x)
        y[..., L + 1:] = src
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[..., L + 1:] = True
        return Batch(x, y, mask)


@dataclass
class Sum(Task):
    """Running sum: ``y_t = (x_1 + ... + x_t) mod modulus`` for digits ``x_t < modulus``; causal."""

    name = "sum"
    draws_members_at_once = True
    length: int = 16
    modulus: int = 10

    @property
    def vocab_size(self):
        return self.modulus

    @property
    def d_out(self):
        return self.modulus

    def model_defaults(self):
        return {"causal": True, "layers": 2, "heads": 4, "d_model": 64, "ffn_width": 256}

    def train_defaults(self):
        return dict(_CLS_TRAIN)

    def generate(self, batch_size, length, generator):
        x = uniform_ints((batch_size, length), self.modulus, generator)
        return Batch(x, x.cumsum(-1) % self.modulus, torch.ones_like(x, dtype=torch.bool))


@dataclass
class Parity(Task):
    """Parity of a bit string, scored at the last position only (sequence-level label)."""

    name = "parity"
    draws_members_at_once = True
    length: int = 16

    @property
    def vocab_size(self):
        return 2

    @property
    def d_out(self):
        return 2

    def model_defaults(self):
        return {"causal": True, "layers": 2, "heads": 4, "d_model": 64, "ffn_width": 256}

    def train_defaults(self):
        return dict(_CLS_TRAIN)

    def generate(self, batch_size, length, generator):
        x = uniform_ints((batch_size, length), 2, generator)
        y = torch.zeros_like(x)
        y[..., -1] = x.sum(-1) % 2
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[..., -1] = True
        return Batch(x, y, mask)


@dataclass
class AssociativeRecall(Task):
    """Multi-query associative recall (MQAR, as in zoology).

    Sequence ``k_1 v_1 ... k_P v_P q_1 ... q_Q`` with ``P = length`` distinct keys (ids
    ``0..keys-1``) and values (ids ``keys..keys+values-1``); each query is one of the keys
    (distinct queries); the target at a query is the index of its value (``0..values-1``).
    """

    name = "associative-recall"
    length: int = 8
    queries: int = 4
    keys: int = 16
    values: int = 16

    def check_length(self, length):
        super().check_length(length)
        if length > self.keys or self.queries > length:
            raise ExpressivityError(f"associative-recall needs queries <= length <= keys; got queries={self.queries}, "
                                    f"length={length}, keys={self.keys}")

    @property
    def vocab_size(self):
        return self.keys + self.values

    @property
    def d_out(self):
        return self.values

    def sequence_length(self, length=None):
        return 2 * (self.length if length is None else length) + self.queries

    def model_defaults(self):
        return {"causal": True, "ape": "learned", "layers": 2, "heads": 4, "d_model": 64, "ffn_width": 128}

    def train_defaults(self):
        return dict(_CLS_TRAIN)

    def drawing_bytes(self, n, sequences):
        # distinct keys by sorting one float32 row of all keys per sequence: the values, their sorted copy and the
        # int64 indices, 16 bytes a key (keys=300,000 peaked at 2.9 GiB where 0.46 GiB was estimated: a fresh audit,
        # 2026-11-29; 12 bytes a key still undercounted one draw by 25%, a review)
        return sequences * self.keys * (4 + 4 + 8)

    def generate(self, batch_size, P, generator):
        Q = self.queries
        keys = torch.rand(batch_size, self.keys, generator=generator).argsort(-1)[:, :P]
        vals = uniform_ints((batch_size, P), self.values, generator)
        which = torch.rand(batch_size, P, generator=generator).argsort(-1)[:, :Q]
        pairs = torch.stack([keys, vals + self.keys], -1).reshape(batch_size, 2 * P)
        x = torch.cat([pairs, keys.gather(1, which)], 1)
        y = torch.zeros_like(x)
        y[:, 2 * P:] = vals.gather(1, which)
        mask = torch.zeros_like(x, dtype=torch.bool)
        mask[:, 2 * P:] = True
        return Batch(x, y, mask)
