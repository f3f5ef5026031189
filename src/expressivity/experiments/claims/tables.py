"""Markdown tables of finished ``reproduce`` runs, read from their output folders only (``verdict.json``,
``results.json``, ``criterion.md``): ``expressivity reproduce --summary DIR... --markdown``. The
folders the README's verdict table quotes are kept in ``docs/results/SCALE/NAME/``; this command
prints their verdicts, reasons and tables, and ``tests/test_verdict_tables.py`` checks every word
of the README's table against them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from expressivity.errors import ExpressivityError


def _cell(value) -> str:
    """One table cell: numbers to 4 significant digits, lists joined, pipes escaped."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """``rows`` as a GitHub-flavoured Markdown table (columns in first-seen order unless given)."""
    if not rows:
        return "(no rows)"
    columns = columns or list(dict.fromkeys(k for row in rows for k in row))
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def verdict_table(rows: list[dict]) -> str:
    """The summary rows (:func:`expressivity.experiments.claims.summary`) as one Markdown table (the
    seconds are those of the last call into each folder: a resumed run counts only its own)."""
    shown = [{"claim": r["claim"], "tag": r["tag"], "scale": r["scale"], "verdict": f"**{r['verdict']}**",
              "regime": r["regime"], "test sample": r.get("test_sample", ""),
              "criterion amended": "; ".join(f"{a['time']}: {a['reason']}" for a in r["amendments"]) or "no",
              "last call (s)": r.get("seconds"), "folder": r["folder"]} for r in rows]
    return markdown_table(shown)


def results_section(row: dict) -> str:
    """One run's heading, verdict with its full reason, notes and results table."""
    folder = Path(row["folder"])
    try:
        results = json.loads((folder / "results.json").read_text())["rows"]
        verdict = json.loads((folder / "verdict.json").read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ExpressivityError(f"{folder}: results.json or verdict.json unreadable ({type(exc).__name__}); rerun "
                                "'expressivity reproduce' into that folder") from None
    extensions = (verdict.get("numbers") or {}).get("grid_extensions") or []
    parts = [f"### {row['claim']} {row['tag']} ({row['scale']}): {row['verdict']}", "",
             f"Reason: {verdict.get('reason', '')}", ""]
    if verdict.get("notes"):
        parts += [f"Notes: {verdict['notes']}".replace("\n", "; "), ""]
    if extensions:
        parts += ["Grid extensions: " + "; ".join(f"{e['label']}: {e['direction']} to {e['value']:g}"
                                                 for e in extensions), ""]
    parts += [markdown_table(results), ""]
    return "\n".join(parts)


def markdown(rows: list[dict]) -> str:
    """The verdict table of ``rows`` and, for each run, its results table."""
    return "\n".join(["## Verdicts", "", verdict_table(rows), "", "## Tables", "",
                      *(results_section(r) for r in rows)])
