"""Language modelling on a real corpus (:mod:`expressivity.tasks.corpus`), byte by byte.

* ``lm-causal``: next-byte prediction. A sample is a window of ``length + 1`` consecutive bytes
  of the split's text; ``x`` is its first ``length`` bytes, ``y`` the following byte at every
  position, all scored. Causal by default.
* ``lm-masked``: BERT-style masked prediction (Devlin et al. 2018). A window of ``length`` bytes;
  exactly ``max(1, round(mask_rate * length))`` positions per sequence are chosen (BERT's own
  rule), and of those 80% become the mask token (id 256), 10% a uniformly random byte and 10% stay;
  only the chosen positions are scored, against the original byte. Bidirectional by default.

**Loss in bits per byte.** A token is a byte, and :meth:`loss` is the mask-weighted cross-entropy
in bits (nats / ln 2), so every ``loss``, ``val_loss`` and ``test_loss`` these tasks produce *is*
bits per byte (per scored byte for ``lm-masked``). The metric is the accuracy of the most likely
byte at the scored positions (higher is better, as the trainer expects).

**Which split a batch comes from.** These tasks have ``has_splits = True``: :meth:`Task.sample`
passes the split to :meth:`generate`, training batches (``split="train"``, the default) come from
the training files, and the trainer's held-out batches (``training.trainer.eval_batch``) from the
validation and test files. No file is in two splits (:func:`expressivity.tasks.corpus.split_of`).

**Results carry the corpus.** The arguments ``python``, ``corpus_hash``, ``file_list_hash`` and
``corpus_bytes`` are filled in from the corpus when left empty, so every run configuration (and
so every run record and result) says which corpus it was trained on; given explicitly (a stored
configuration, a resumed run), they must match this machine's corpus or the task refuses to build,
naming both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from expressivity.errors import ExpressivityError
from expressivity.tasks.base import Batch, Task, integers, uniform
from expressivity.tasks.corpus import SPLITS, Corpus, load_corpus, parse_include

BYTES = 256
MASK_ID = BYTES
HASH_DIGITS = 16
LN2 = math.log(2.0)


@dataclass
class _CorpusTask(Task):
    """Shared fields: the training ``length`` (bytes of context), the corpus slice (``include``:
    comma-separated ``fnmatch`` patterns over the files' relative paths, ``""`` = all; ``root``:
    another folder of ``.py`` files, ``""`` = this interpreter's standard library) and the corpus
    facts filled in at construction."""

    has_splits: ClassVar[bool] = True

    length: int = 128
    include: str = ""
    root: str = ""
    python: str = ""
    corpus_hash: str = ""
    file_list_hash: str = ""
    corpus_bytes: int = 0

    def __post_init__(self) -> None:
        for key in ("include", "root", "python", "corpus_hash", "file_list_hash"):
            if not isinstance(getattr(self, key), str):
                raise ExpressivityError(f"task {self.name!r}: {key} must be a string, got {getattr(self, key)!r}")
        if isinstance(self.corpus_bytes, bool) or not isinstance(self.corpus_bytes, int) or self.corpus_bytes < 0:
            raise ExpressivityError(f"task {self.name!r}: corpus_bytes must be an integer >= 0 (0: fill in), "
                                    f"got {self.corpus_bytes!r}")
        self.include = ",".join(parse_include(self.include))
        corpus = load_corpus(self.root, self.include)
        found = {"python": corpus.python, "corpus_hash": corpus.content_hash[:HASH_DIGITS],
                 "file_list_hash": corpus.file_list_hash[:HASH_DIGITS], "corpus_bytes": corpus.bytes}
        wrong = [f"{k} {getattr(self, k)!r} (here {v!r})" for k, v in found.items() if getattr(self, k) not in ("", 0, v)]
        if wrong:
            raise ExpressivityError(f"task {self.name!r}: this configuration was made on another corpus: "
                                    f"{'; '.join(wrong)}; the standard library differs between Python versions and "
                                    "builds, so rerun on a machine with the same Python, or drop these arguments "
                                    "to train afresh on this one")
        for k, v in found.items():
            setattr(self, k, v)
        self._corpus = corpus
        super().__post_init__()

    @property
    def corpus(self) -> Corpus:
        return self._corpus

    @property
    def d_out(self) -> int:
        return BYTES

    def _window(self) -> int:
        """Bytes one sample reads beyond ``length``."""
        return 0

    def check_length(self, length: int) -> None:
        super().check_length(length)
        shortest = min(int(self._corpus.text(s).numel()) for s in SPLITS)
        if length + self._window() > shortest:
            raise ExpressivityError(f"task {self.name!r}: length {length} needs {length + self._window()} bytes per "
                                    f"sample but the smallest split of this corpus slice holds {shortest}; use a "
                                    "shorter length or a wider include")

    def train_defaults(self) -> dict:
        return {"steps": 2000, "batch_size": 32, "lr": 3e-3, "eval_every": 250, "eval_size": 256,
                "target_metric": None}

    # ---- data --------------------------------------------------------------------------------
    def generate(self, batch_size: int, length: int, generator: torch.Generator, split: str = "train") -> Batch:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ExpressivityError(f"task {self.name!r}: batch size must be an integer >= 1, got {batch_size!r}")
        return self.generate_split(batch_size, length, generator, split)

    samples_on_device: ClassVar[bool] = True   # every draw goes through the stream-aware helpers

    def windows(self, batch_size: int, size: int, generator, split: str) -> torch.Tensor:
        """``(batch, size)`` int64 byte windows at uniformly random starts in ``split``'s text
        (``(K, batch, size)`` from a device stream of K members, read from a copy of the text on
        the stream's device)."""
        text = self._corpus.text(split)
        starts = integers(text.numel() - size + 1, (batch_size,), generator)
        if starts.device != text.device:
            text = self._device_text(split, starts.device)
        return text[starts[..., None] + torch.arange(size, device=starts.device)].long()

    def _device_text(self, split: str, device) -> torch.Tensor:
        cache = self.__dict__.setdefault("_texts", {})
        key = (split, str(device))
        if key not in cache:
            cache[key] = self._corpus.text(split).to(device)
        return cache[key]

    def generate_split(self, batch_size, length, generator, split) -> Batch:
        raise NotImplementedError

    # The loss is mask-weighted cross-entropy in bits: bits per (scored) byte.
    loss_unit: ClassVar[float] = LN2


@dataclass
class CausalLM(_CorpusTask):
    """Next-byte prediction on the CPython standard library (see the module docstring)."""

    name = "lm-causal"
    needs_causal = True

    @property
    def vocab_size(self) -> int:
        return BYTES

    def _window(self) -> int:
        return 1

    def model_defaults(self) -> dict:
        return {"causal": True, "rpe": "t5", "norm": "pre", "activation": "gelu", "layers": 2, "heads": 4,
                "d_model": 64, "ffn_width": 256}

    def generate_split(self, batch_size, length, generator, split) -> Batch:
        w = self.windows(batch_size, length + 1, generator, split)
        return Batch(w[..., :-1], w[..., 1:], torch.ones(w[..., 1:].shape, dtype=torch.bool))

    def held_out_subsets(self, batch: Batch) -> dict[str, torch.Tensor]:
        """``{"copies": mask}``: the targets a 4-gram earlier in the same window predicts
        (:func:`copy_positions`), whose test loss ``wang-e-dp`` compares (the dot product's use)."""
        copies = copy_positions(torch.cat([batch.x[..., :1], batch.y], dim=-1)).to(batch.mask.device)
        return {"copies": copies & batch.mask}


@dataclass
class MaskedLM(_CorpusTask):
    """BERT-style masked byte prediction on the CPython standard library (see the module docstring)."""

    name = "lm-masked"
    mask_rate: float = 0.15

    def __post_init__(self) -> None:
        if isinstance(self.mask_rate, bool) or not isinstance(self.mask_rate, (int, float)) \
                or not 0 < self.mask_rate <= 1:
            raise ExpressivityError(f"task 'lm-masked': mask_rate must be in (0, 1], got {self.mask_rate!r}")
        self.mask_rate = float(self.mask_rate)
        super().__post_init__()

    @property
    def vocab_size(self) -> int:
        return BYTES + 1  # the bytes and the mask token

    def token_names(self) -> tuple:
        return (*range(BYTES), "MASK")

    def model_defaults(self) -> dict:
        return {"causal": False, "rpe": "t5", "norm": "pre", "activation": "gelu", "layers": 2, "heads": 4,
                "d_model": 64, "ffn_width": 256}

    def masked_count(self, length: int) -> int:
        """Positions chosen per sequence of ``length`` bytes."""
        return min(length, max(1, round(self.mask_rate * length)))

    def generate_split(self, batch_size, length, generator, split) -> Batch:
        y = self.windows(batch_size, length, generator, split)
        k = self.masked_count(length)
        rank = uniform((batch_size, length), generator).argsort(-1).argsort(-1)
        chosen = rank < k  # exactly k positions per row, uniformly at random
        action = uniform((batch_size, length), generator)
        noise = integers(BYTES, (batch_size, length), generator)
        x = torch.where(chosen & (action < 0.8), MASK_ID, y)
        x = torch.where(chosen & (action >= 0.8) & (action < 0.9), noise, x)
        return Batch(x, y, chosen)


def copy_positions(windows: torch.Tensor) -> torch.Tensor:
    """``(batch, n)`` bool, on the CPU: the target byte ``w[t+1]`` completes a 4-gram ``w[t-2..t+1]``
    that occurred earlier in the same window (so an induction-style read of the context predicts it).
    ``windows``: ``(batch, n + 1)`` byte ids; targets are ``windows[:, 1:]``."""
    marks = []
    for row in windows.tolist():
        seen, mark = set(), [False] * (len(row) - 1)
        for t in range(2, len(row) - 1):
            gram = tuple(row[t - 2:t + 2])
            mark[t] = gram in seen
            seen.add(gram)
        marks.append(mark)
    return torch.tensor(marks, dtype=torch.bool).reshape(windows.shape[0], windows.shape[1] - 1)
