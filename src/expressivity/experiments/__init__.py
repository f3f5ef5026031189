"""Experiments: sweeps of run configurations, backends that run them (a local process pool or
Ray), a results store that survives being killed, selection on validation data, tables, rate
fits and figures over stored results."""

from expressivity.experiments.launch import Progress, SweepReport, run_sweep
from expressivity.experiments.packing import Pack, plan_packs
from expressivity.experiments.store import RecordWarning, read_records
from expressivity.experiments.sweep import Sweep, load_sweep, sweep_from_spec

__all__ = ["Pack", "Progress", "RecordWarning", "Sweep", "SweepReport", "load_sweep", "plan_packs", "read_records",
           "run_sweep", "sweep_from_spec"]
