"""Residual, input and output labels as people read them: long indexed runs as one range."""

from __future__ import annotations

import re

_INDEXED = re.compile(r"^(.*?)(\d+)(\D*)$")   # prefix, index, suffix: h[12], token 7, x12
RUN_MIN = 4          # runs of at least this many indexed labels are printed as one range


def summarise_labels(labels, numbered: bool = False) -> str:
    """Labels for printing, with runs like ``h[0], h[1], ..., h[127]`` as ``h[0..127]``.

    With ``numbered``, each entry is prefixed by its position (``0:x``, ``1-128:h[0..127]``), so a
    trained model's thousands of ``h[i]`` read as one line. ``labels`` themselves are unchanged."""
    labels, parts, k = list(labels), [], 0
    while k < len(labels):
        match, end = _INDEXED.match(labels[k]), k + 1
        if match:
            prefix, first, suffix = match.group(1), int(match.group(2)), match.group(3)
            while end < len(labels) and labels[end] == f"{prefix}{first + end - k}{suffix}":
                end += 1
        if end - k >= RUN_MIN:
            where = f"{k}-{end - 1}:" if numbered else ""
            parts.append(f"{where}{prefix}{first}..{first + end - k - 1}{suffix}")
        else:
            end = k + 1
            parts.append(f"{k}:{labels[k]}" if numbered else labels[k])
        k = end
    return ", ".join(parts)
