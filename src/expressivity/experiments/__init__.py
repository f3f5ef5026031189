"""Experiments: sweeps of run configurations, backends that run them (a local process pool or
Ray), a results store that survives being killed, selection on validation data, tables, rate
fits and figures over stored results.

The names below are loaded on first use (PEP 562): the modules that read stored results
(``query``, ``store``, ``claims``' listing) never import torch, and importing this package must
not either (``tests/test_light_commands.py``)."""

# name -> the module that defines it (imported on first access)
PUBLIC = {
    "Progress": "expressivity.experiments.launch",
    "SweepReport": "expressivity.experiments.launch",
    "run_sweep": "expressivity.experiments.launch",
    "Pack": "expressivity.experiments.packing",
    "plan_packs": "expressivity.experiments.packing",
    "RecordWarning": "expressivity.experiments.store",
    "read_records": "expressivity.experiments.store",
    "Sweep": "expressivity.experiments.sweep",
    "load_sweep": "expressivity.experiments.sweep",
    "sweep_from_spec": "expressivity.experiments.sweep",
}

__all__ = sorted(PUBLIC)


def __getattr__(name: str):
    module = PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'expressivity.experiments' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(PUBLIC))
