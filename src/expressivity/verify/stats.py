"""Moved to :mod:`expressivity.statistics` (statistics are not verification); re-exported here for
existing imports."""

from expressivity.statistics import log10_t_interval, t_interval, t_quantile_975

__all__ = ["log10_t_interval", "t_interval", "t_quantile_975"]
