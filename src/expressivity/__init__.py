"""expressivity: executable Transformer expressivity theory.

Constructs Transformers with hand-set weights that provably realise sequence-to-sequence
functions, verifies them (exactly where the claim is exact), and trains small models to
measure what depth, heads, width and positional encodings buy.

The centre is :class:`expressivity.network.Network`: explicit weights, labelled residual
dimensions, one semantics run by three evaluators (exact, NumPy float64, PyTorch).

The public API is importable from here (``from expressivity import build_shift, evaluate``);
every name is loaded on first use (PEP 562), so ``import expressivity`` stays fast and the
command line pays only for what it runs. Each function checks its arguments and raises a
one-line :class:`ExpressivityError` (the CLI's ``error: ...``) for anything it cannot use.
"""

from __future__ import annotations

__version__ = "0.1.0"

# name -> the module that defines it (imported on first access)
PUBLIC = {
    # errors
    "ExpressivityError": "expressivity.errors",
    # the representation and its evaluators
    "Network": "expressivity.network",
    "evaluate": "expressivity.network",
    "one_hot": "expressivity.network",
    "ValidLengths": "expressivity.network.lengths",
    "InputDomain": "expressivity.network.domain",
    # the tutorial's circuits
    "CIRCUITS": "expressivity.constructions.circuits",
    "build_attention": "expressivity.constructions.circuits",
    "build_max": "expressivity.constructions.circuits",
    "build_mean": "expressivity.constructions.circuits",
    "build_reverse": "expressivity.constructions.circuits",
    "build_reverse_dot": "expressivity.constructions.circuits",
    "build_shift": "expressivity.constructions.circuits",
    "build_sum": "expressivity.constructions.circuits",
    "embed": "expressivity.constructions.circuits",
    # Yun et al. 2020
    "build_yun": "expressivity.constructions.yun.build",
    "build_and_check": "expressivity.constructions.yun.build",
    "BuildConfig": "expressivity.constructions.yun.build",
    "YunParams": "expressivity.constructions.yun.constants",
    "get_target": "expressivity.targets",
    # Wang & E 2024
    "build_adaptive_memory": "expressivity.constructions.wang_e.adaptive",
    "build_fixed_memory": "expressivity.constructions.wang_e.fixed",
    "build_kernel_memory": "expressivity.constructions.wang_e.essential",
    "check_adaptive_memory": "expressivity.constructions.wang_e.adaptive",
    "check_fixed_memory": "expressivity.constructions.wang_e.fixed",
    "check_kernel_memory": "expressivity.constructions.wang_e.essential",
    # saving, loading, converting
    "save_network": "expressivity.export",
    "load_network": "expressivity.export",
    "from_network": "expressivity.nn",
    "to_network": "expressivity.nn",
    # training and sweeps
    "RunConfig": "expressivity.training",
    "run": "expressivity.training",
    "load_trained": "expressivity.training",
    "Sweep": "expressivity.experiments",
    "load_sweep": "expressivity.experiments",
    "run_sweep": "expressivity.experiments",
}

# subpackages reached as attributes (``expressivity.rasp.compile(...)`` after ``import expressivity``)
SUBPACKAGES = ("rasp",)

__all__ = ["__version__", *PUBLIC]


def __getattr__(name: str):
    import importlib

    if name in SUBPACKAGES:
        return importlib.import_module(f"expressivity.{name}")
    module = PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'expressivity' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value          # later look-ups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(PUBLIC))
