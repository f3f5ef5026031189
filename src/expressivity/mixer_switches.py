"""Which configuration settings each token mixer reads: a table without torch, so that commands that
only read results (``results``, ``fit``) can tell two configurations that train the same model.

The mixer classes (:mod:`expressivity.nn.mixers`) take their ``switches`` from here: one table
(outside :mod:`expressivity.nn`, whose package imports torch).
"""

from __future__ import annotations

import json

# the settings every head-based mixer reads beyond the sizes all layers share
HEAD_SWITCHES = frozenset({"heads", "d_head", "rpe", "learnable_slopes"})
MIXER_SWITCHES: dict[str, frozenset[str]] = {
    "attention": HEAD_SWITCHES | {"rotary", "normalization", "q_bias", "qk_scale"},
    "dpfree": HEAD_SWITCHES | {"dpfree_normaliser"},
    "bilinear": frozenset(),
    "sepconv": frozenset({"conv_kernel"}),
    "none": frozenset(),   # a block with a feed-forward layer only
}
# settings with a default that only some mixers read: a configuration cannot say "off" for them
DEFAULTED = ("heads", "d_head", "conv_kernel")


def unread_settings(layer_mixers) -> tuple[str, ...]:
    """The defaulted settings no layer of a stack of ``layer_mixers`` (one name per layer) reads
    (``heads`` and ``d_head`` without a head-based mixer, ``conv_kernel`` without sepconv), and
    ``causal`` in a stack of feed-forward blocks only."""
    read = frozenset().union(*(MIXER_SWITCHES.get(m, frozenset()) for m in layer_mixers))
    return tuple(name for name in DEFAULTED if name not in read) + (
        ("causal",) if set(layer_mixers) == {"none"} else ())


def unread_variation(dicts: list[dict]) -> str | None:
    """``"differ only in model.heads, which no layer of mixer sepconv reads (seed 0: heads 1 and 2)"``
    for the first two run configurations (as ``RunConfig.to_dict`` gives them) that differ only in
    settings their model does not read, or only in how a number is written (``grad_clip`` 1 and 1.0:
    two ids, one run, and ``results`` counted its seed twice), else ``None``: they train the same model."""
    seen: dict[str, dict] = {}
    for full in dicts:
        model = full["model"]
        mixer = model.get("mixer", "attention")
        mixers = (mixer,) * int(model.get("layers", 1)) if isinstance(mixer, str) else tuple(mixer)
        unread = unread_settings(mixers)
        key = json.dumps(_as_floats({**full, "model": {k: v for k, v in model.items() if k not in unread}}),
                         sort_keys=True)
        other = seen.setdefault(key, full)
        if other is not full:
            a, b = other["model"], model
            differ = [k for k in unread if a.get(k) != b.get(k)]
            if not differ:
                path, x, y = _first_difference(other, full)
                return (f"differ only in how {path} is written ({x!r} and {y!r}; seed {full.get('seed')}): they are "
                        "one run twice; write the value once")
            values = ", ".join(f"{k} {a.get(k)} and {b.get(k)}" for k in differ)
            return (f"differ only in {', '.join('model.' + k for k in differ)}, which no layer of mixer "
                    f"{', '.join(dict.fromkeys(mixers))} reads (seed {full.get('seed')}: {values}): they train the same "
                    "model; vary it only where a layer reads it")
    return None


def _as_floats(value):
    """``value`` with every number a float (``True`` stays a bool): 1 and 1.0 are one setting."""
    if isinstance(value, dict):
        return {k: _as_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_floats(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


def _first_difference(a, b, path: str = ""):
    """``(dotted path, value in a, value in b)`` of the first place two configurations differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True):   # 1 == 1.0, not as text
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    return path, a, b
