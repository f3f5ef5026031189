"""Constructions: functions that return an explicitly weighted Network plus a report."""
