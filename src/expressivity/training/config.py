"""The run contract: one typed, validated, serialisable configuration per training run.

A :class:`RunConfig` is everything a run computes from: the task and its arguments, the model
architecture, the training settings and the seed, plus the lengths to evaluate at besides the
training length. Its :meth:`~RunConfig.id` is a content hash of its canonical JSON, so equal
configurations share an id on every machine. The CLI and the Python API build the same object
(:meth:`RunConfig.for_task` fills the task's defaults) and hand it to
:func:`expressivity.training.run`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from expressivity.errors import ExpressivityError, require_path
from expressivity.nn.model import ModelConfig, length_limit
from expressivity.nn.mixers import SWITCH_NEUTRAL, switches_read
from expressivity.records import content_hash, jsonable
from expressivity.tasks import Task, make_task
from expressivity.training.schedule import TrainConfig

MAX_SEED = 2**63 - 1  # torch generators take 64-bit seeds
MAX_EVAL_LENGTHS = 32


def check_seed(seed) -> int:
    """``seed`` as an int in ``[0, 2^63)``, or a one-line error."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ExpressivityError(f"seed must be an integer in [0, 2^63), got {seed!r}")
    return seed


@dataclass(frozen=True)
class TaskSpec:
    """A task by name with its full, typed arguments (defaults filled in, as the task holds them)."""

    name: str
    args: dict = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, **args) -> "TaskSpec":
        """Validate ``args`` (strings from the command line are parsed) and fill the defaults."""
        task = make_task(name, **args)
        return cls(task.name, task.kwargs())

    def build(self) -> Task:
        return make_task(self.name, **self.args)

    def to_dict(self) -> dict:
        return {"name": self.name, "args": jsonable(self.args)}


def model_length_limit(model: ModelConfig) -> int | None:
    """The longest input ``model`` accepts, or ``None`` when any length works (the model's own
    fact: :func:`expressivity.nn.model.length_limit`)."""
    return length_limit(model)


def model_config_for(task: Task, lengths: tuple[int, ...] = (), **overrides) -> ModelConfig:
    """The task's default architecture, sized to its inputs/outputs and to the longest of its
    training length and ``lengths``, with the non-``None`` ``overrides`` applied.

    A task's defaults are suggestions: one that the overrides make inapplicable (copy's
    ``rpe="free"`` under ``mixer="sepconv"``) is dropped, while an inapplicable option given in
    ``overrides`` is refused by :class:`ModelConfig`, naming it.
    """
    longest = max(task.sequence_length(L) for L in (task.length, *lengths))
    given = {k: v for k, v in overrides.items() if v is not None}
    cfg = {"vocab_size": task.vocab_size, "d_in": task.d_in, "d_out": task.d_out, "max_len": longest,
           **task.model_defaults(), **given}
    for key, neutral in _inapplicable_defaults(cfg).items():
        if key not in given:
            cfg[key] = neutral
    return ModelConfig(**cfg)


def _inapplicable_defaults(cfg: dict) -> dict:
    """Options set in ``cfg`` that no layer of its mixers uses, with the values that switch them off."""
    mixer = cfg.get("mixer", "attention")
    read = switches_read((mixer,) if isinstance(mixer, str) else tuple(mixer))
    off = {switch: neutral for switch, neutral in SWITCH_NEUTRAL.items() if switch not in read}
    if off.get("rpe", cfg.get("rpe", "none")) not in ("lin", "log"):
        off["learnable_slopes"] = False
        off["dpfree_normaliser"] = "visible"  # only lin and log biases have a finite infinite-past mass
    if cfg.get("causal") is False:
        # an infinite past is a causal model's: kernel-memory's suggested normaliser refused --bidirectional with
        # "set causal or use visible", which train has no option for (a fresh audit, 2026-11-29)
        off["dpfree_normaliser"] = "visible"
    return {k: v for k, v in off.items() if k in cfg and cfg[k] != v}


@dataclass(frozen=True)
class RunConfig:
    """One training run: ``task`` x ``model`` x ``train`` x ``seed``, evaluated at the training
    length and at every length in ``eval_lengths`` (task lengths, as the task's ``length``)."""

    task: TaskSpec
    model: ModelConfig
    train: TrainConfig
    seed: int = 0
    eval_lengths: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        check_seed(self.seed)
        object.__setattr__(self, "eval_lengths", tuple(self.eval_lengths))
        task = self.task.build()
        for name, want in (("vocab_size", task.vocab_size), ("d_out", task.d_out)):
            if getattr(self.model, name) != want:
                raise ExpressivityError(f"model {name} is {getattr(self.model, name)} but task {task.name!r} needs "
                                        f"{want}; leave it to the task's default")
        if task.vocab_size == 0 and self.model.d_in != task.d_in:
            raise ExpressivityError(f"model d_in is {self.model.d_in} but task {task.name!r} has {task.d_in} input "
                                    "features; leave it to the task's default")
        if len(self.eval_lengths) > MAX_EVAL_LENGTHS:
            raise ExpressivityError(f"{len(self.eval_lengths)} evaluation lengths is above {MAX_EVAL_LENGTHS}; "
                                    "evaluate at fewer lengths (each costs a held-out pass per split)")
        if len(set(self.eval_lengths)) != len(self.eval_lengths):
            raise ExpressivityError(f"evaluation lengths repeat: {list(self.eval_lengths)}; give each once")
        target = self.train.target_metric
        if target is not None:
            low = 0.0 if task.kind == "classification" else -math.inf
            if not low <= target <= 1.0:
                raise ExpressivityError(f"target-metric {target} can never be reached by {task.metric_name} (at most 1"
                                        f"{', at least 0' if low == 0 else ''}); give a value in that range")
        limit = model_length_limit(self.model)
        for length in (task.length, *self.eval_lengths):
            task.check_length(length)
            n = task.sequence_length(length)
            if limit is not None and n > limit:
                raise ExpressivityError(f"length {length} gives {n} tokens but the model's position tables stop at "
                                        f"max_len {limit}; raise the model's max_len to at least {n}")

    # ---- building ----------------------------------------------------------------------------
    def check_trainable(self) -> None:
        """Refuse a configuration that would train on what it is scored on (checked where a run,
        ensemble or sweep is about to train; a folder trained before these checks still reads):

        * ``lm-causal`` (the target is the next input) with a bidirectional model, which reads its
          own target (0.15 bits/byte by copying the next byte, a fresh audit, 2026-11-28);
        * a synthetic task's seed equal to a held-out split's generator seed: its training batches
          (the host sampler, the CPU's default, draws them from a generator seeded with the run's
          seed) would be that split's examples (512 of 512 test examples seen in 8 steps of sort);
        * hardmax attention (``model.normalization``), whose arg-max passes no gradient to the query,
          key or position-bias weights: they would never move (an audit, 2026-11-28); it is for
          networks built by hand and converted (``nn.convert``), not for training."""
        if self.model.normalization == "hardmax":
            raise ExpressivityError("hardmax attention passes no gradient to its query, key and position-bias weights, "
                                    "so training would never move them; train with softmax attention (the default)")
        task = self.task.build()
        if task.needs_causal and not self.model.causal:
            raise ExpressivityError(f"task {task.name!r} predicts the next input: a bidirectional model reads its own "
                                    "target; train a causal one (drop --bidirectional, or model.causal: true)")
        if not task.has_splits:
            for split, name in (("val", "validation"), ("test", "test")):
                if self.seed == self.train.split_seed(split):
                    raise ExpressivityError(
                        f"seed {self.seed} is the seed of the {name} split's generator: the run would train on its "
                        f"{name} examples; choose another seed" + (" (or another test_seed)" if split == "test"
                                                                   else ""))

    def check_scorable(self, task: Task) -> None:
        """Refuse a regression task whose held-out targets do not vary at a length it is scored at: its
        metric ``R^2 = 1 - SSE/SST`` is undefined there (SST = 0) and read -3e299 with exit 0 (pairwise
        distances at length 1, kernel-memory with an alpha whose kernel underflows to 0: an audit, 2026-11-29).
        The validation and test batches at each length are drawn as the run draws them (``eval_size`` sequences
        from each split's seed: a check of the validation split alone let a constant test split through, a review,
        2026-11-29), so call it after the memory budget was checked (a length of 200,000 allocates a 320 GB kernel
        matrix)."""
        if task.kind != "regression":
            return
        import torch

        for length in dict.fromkeys((task.length, *self.eval_lengths)):
            for split, name in (("val", "validation"), ("test", "test")):
                batch = task.sample(self.train.eval_size, length,
                                    torch.Generator().manual_seed(self.train.split_seed(split)), split)
                y = batch.y[batch.mask]
                if y.numel() and bool((y == y.reshape(-1, *y.shape[1:])[0]).all()):
                    value = y.reshape(-1)[0].item()
                    raise ExpressivityError(
                        f"task {task.name!r} has the same target {value:g} at every scored position of its {name} "
                        f"batch ({self.train.eval_size} sequences) at length {length}, so its R^2 (1 - SSE/SST) is "
                        "undefined there (SST = 0); train or evaluate at lengths where the target varies"
                        + ("" if length == task.length else " (drop it from the evaluation lengths)")
                        + " or give a larger eval_size")

    @classmethod
    def for_task(cls, name: str, task_args: dict | None = None, model: dict | None = None,
                 train: dict | None = None, seed: int = 0, eval_lengths: tuple[int, ...] = (),
                 **settings) -> "RunConfig":
        """Fill in the task's default model and training settings, then apply the given ones.

        Any :class:`TrainConfig` or :class:`ModelConfig` field may also be given by name:
        ``RunConfig.for_task("reverse", {"length": 8}, steps=60, lr=3e-3, d_model=32)``; an unknown
        name is refused with the list of known ones.
        """
        for what, value in (("task_args", task_args), ("model", model), ("train", train)):
            if value is not None and not isinstance(value, dict):
                raise ExpressivityError(f"{what} must be a dict of settings, e.g. {{'length': 8}}, got {value!r}")
        if isinstance(eval_lengths, (str, bytes)) or not hasattr(eval_lengths, "__iter__"):
            raise ExpressivityError(f"eval_lengths must be a list of lengths, e.g. (4, 16), got {eval_lengths!r}")
        model, train = dict(model or {}), dict(train or {})
        train_fields, model_fields = {f.name for f in fields(TrainConfig)}, {f.name for f in fields(ModelConfig)}
        for key, value in settings.items():
            if key in train_fields:
                train[key] = value
            elif key in model_fields:
                model[key] = value
            else:
                raise ExpressivityError(f"RunConfig.for_task has no setting {key!r}; training settings: "
                                        f"{', '.join(sorted(train_fields))}; model settings: {', '.join(sorted(model_fields))}")
        spec = TaskSpec.of(name, **(task_args or {}))
        task = spec.build()
        model_cfg = model_config_for(task, tuple(eval_lengths), **model)
        train_cfg = TrainConfig.from_dict({**task.train_defaults(), **{k: v for k, v in train.items() if v is not None}})
        return cls(spec, model_cfg, train_cfg, seed, tuple(eval_lengths))

    def with_changes(self, **changes) -> "RunConfig":
        """A copy with fields replaced; ``model``/``train`` may be dicts of field changes."""
        for part, cls_ in (("model", ModelConfig), ("train", TrainConfig)):
            if isinstance(changes.get(part), dict):
                changes[part] = cls_.from_dict({**getattr(self, part).to_dict(), **changes[part]})
        return replace(self, **changes)

    def build_task(self) -> Task:
        return self.task.build()

    # ---- identity and serialisation --------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"task": self.task.to_dict(), "model": jsonable(self.model.to_dict()), "train": self.train.to_dict(),
                "seed": self.seed, "eval_lengths": list(self.eval_lengths)}

    def id(self) -> str:
        """Content hash (16 hex digits) of the canonical JSON: equal configurations, equal ids. Computed once
        per object: a configuration is not changed in place (its ``model`` is a plain dataclass and its task
        arguments a dict, but nothing here changes them; change a configuration with :meth:`with_changes`,
        which makes a new one with its own id). A sweep of 18,000 runs spent 24 of its 53 s before training
        in 90,000 recomputations (an audit, 2026-11-28)."""
        cached = self.__dict__.get("_id")
        if cached is None:
            cached = content_hash(self.to_dict())
            object.__setattr__(self, "_id", cached)
        return cached

    @classmethod
    def from_dict(cls, d) -> "RunConfig":
        """Rebuild from :meth:`to_dict` output; malformed input gives one line naming the problem."""
        if not isinstance(d, dict):
            raise ExpressivityError(f"a run configuration must be a JSON object, got {type(d).__name__}")
        known = {"task", "model", "train", "seed", "eval_lengths"}
        unknown, missing = sorted(set(d) - known), sorted({"task", "model", "train"} - set(d))
        if unknown or missing:
            raise ExpressivityError("run configuration: " + "; ".join(
                ([f"unknown keys {', '.join(unknown)}"] if unknown else []) +
                ([f"missing keys {', '.join(missing)}"] if missing else [])))
        task = d["task"]
        if not (isinstance(task, dict) and isinstance(task.get("name"), str) and isinstance(task.get("args", {}), dict)):
            raise ExpressivityError('run configuration: "task" must be {"name": ..., "args": {...}}')
        for part in ("model", "train"):
            if not isinstance(d[part], dict):
                raise ExpressivityError(f'run configuration: "{part}" must be an object of settings')
        lengths = d.get("eval_lengths", [])
        if not isinstance(lengths, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in lengths):
            raise ExpressivityError('run configuration: "eval_lengths" must be a list of integers')
        train = {k: (None if v is None else _number(v)) if k in _FLOAT_FIELDS else v for k, v in d["train"].items()}
        try:
            model = ModelConfig.from_dict(d["model"])
        except (TypeError, ValueError) as exc:
            raise ExpressivityError(f"run configuration: bad model settings ({exc})") from None
        try:
            train_cfg = TrainConfig.from_dict(train)
        except TypeError as exc:
            raise ExpressivityError(f"run configuration: bad training settings ({exc})") from None
        return cls(TaskSpec.of(task["name"], **task.get("args", {})), model, train_cfg, d.get("seed", 0), tuple(lengths))


# Floats arrive from JSON as numbers, or as the strings "inf"/"nan" that jsonable writes.
_FLOAT_FIELDS = {"lr", "weight_decay", "beta1", "beta2", "eps", "min_lr_ratio", "grad_clip", "target_metric"}


def _number(value):
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ExpressivityError(f"run configuration: {value!r} is not a number") from None
    return value


def check_run_arguments(config, out_dir) -> None:
    """One-line :class:`ExpressivityError` unless ``config`` is a :class:`RunConfig` and ``out_dir`` a path or ``None``."""
    if not isinstance(config, RunConfig):
        raise ExpressivityError(f"run takes a RunConfig, got {type(config).__name__}; make one with "
                                "RunConfig.for_task('reverse', {'length': 8}, steps=60)")
    require_path(out_dir, "out_dir", optional=True)
    refuse_file(out_dir, "out_dir")


def refuse_file(path, what: str) -> None:
    """One-line :class:`ExpressivityError` where ``path`` (a run's folder to be) is a file (it was
    ``FileExistsError`` from deep in the trainer)."""
    if path is not None and Path(path).exists() and not Path(path).is_dir():
        raise ExpressivityError(f"{what} {str(path)!r} is a file, not a folder; give a folder for the run "
                                "(a new one, or a run's own to resume)")
