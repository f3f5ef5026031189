"""Synthetic tasks: "name + kwargs -> object" via :func:`make_task`."""

from __future__ import annotations

import math
from dataclasses import MISSING, fields

from expressivity.errors import ExpressivityError
from expressivity.tasks.algorithmic import AssociativeRecall, Copy, Parity, Reverse, Sort, Sum
from expressivity.tasks.base import Batch, Task
from expressivity.tasks.language import CausalLM, MaskedLM
from expressivity.tasks.memory import AdaptiveMemory, FixedMemory, KernelMemory, NestedMemory
from expressivity.tasks.yun import YunTarget
from expressivity.verify.size import fmt_size

TASKS: dict[str, type[Task]] = {cls.name: cls for cls in (
    FixedMemory, AdaptiveMemory, NestedMemory, KernelMemory, Reverse, Sort, Copy, Sum, Parity,
    AssociativeRecall, YunTarget, CausalLM, MaskedLM)}


def task_args(name: str) -> dict:
    """Keyword arguments of task ``name`` with their defaults."""
    return {f.name: f.default for f in fields(get_task_class(name)) if f.default is not MISSING}


def get_task_class(name: str) -> type[Task]:
    if name not in TASKS:
        raise ExpressivityError(f"unknown task {name!r}; use one of {', '.join(TASKS)} (see 'expressivity tasks')")
    return TASKS[name]


def make_task(name: str, **kwargs) -> Task:
    """Build task ``name``; string values (from ``--task-arg KEY=VALUE``) are parsed to the type of
    the argument's default."""
    defaults = task_args(name)
    parsed = {}
    for key, value in kwargs.items():
        key = key.replace("-", "_")
        if key not in defaults:
            raise ExpressivityError(f"task {name!r} has no argument {key!r}; its arguments are {', '.join(defaults)}")
        kind = type(defaults[key])
        if isinstance(value, str) and kind is not str:
            try:
                value = kind(value)
            except ValueError:
                raise ExpressivityError(f"task argument {key}={value!r} is not a valid {kind.__name__}") from None
        parsed[key] = value
    for key, value in parsed.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ExpressivityError(f"task argument {key} must be a finite number, got {value}")
        if isinstance(value, int) and not isinstance(value, bool):
            # An alphabet needs two symbols to carry information; every other count needs one.
            least = 2 if key in _ALPHABET_SIZES else 0 if key in _FILLED_IN else 1
            if value < least:
                raise ExpressivityError(f"task argument {key} must be >= {least}, got {value}")
            if value > MAX_TASK_INT:
                raise ExpressivityError(f"task argument {key}={fmt_size(value)} is beyond any memory budget (limit "
                                        f"{MAX_TASK_INT:,}); use a smaller value")
    return get_task_class(name)(**parsed)


_ALPHABET_SIZES = ("vocab", "modulus", "keys", "values")
# counts a task fills in itself when given 0 (the language tasks' corpus size: refused though documented, an audit)
_FILLED_IN = ("corpus_bytes",)
MAX_TASK_INT = 10**9  # larger counts overflow PyTorch's index types before a size estimate can refuse them


__all__ = ["Batch", "TASKS", "Task", "get_task_class", "make_task", "task_args"]
