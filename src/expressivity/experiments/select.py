"""Selection rules of a sweep (``{"train.lr": "min val_loss"}``) and dotted paths into a run
configuration (``"model.heads"``): what reading stored results needs, apart from
:mod:`expressivity.experiments.sweep`, which builds configurations and imports the training
stack (torch). ``results``, ``fit`` and ``reproduce --summary`` read sweeps through this module
only."""

from __future__ import annotations

from expressivity.errors import ExpressivityError

SELECT_COLUMNS = ("val_loss", "val_metric")  # selection looks at validation only; test is for reporting
# the two directions that mean "best on validation": a loss is lower-is-better and every task's metric
# higher-is-better, so "max val_loss" or "min val_metric" would pick the worst learning rate
SELECT_RULES = (("min", "val_loss"), ("max", "val_metric"))


def parse_select(select, example: dict) -> dict[str, tuple[str, str]]:
    """``{"train.lr": "min val_loss"}`` -> ``{"train.lr": ("min", "val_loss")}``, checked."""
    if not isinstance(select, dict):
        raise ExpressivityError('"select" must be an object like {"train.lr": "min val_loss"}')
    out = {}
    for axis, rule in select.items():
        if isinstance(rule, (tuple, list)) and len(rule) == 2:
            rule = " ".join(map(str, rule))
        words = rule.split() if isinstance(rule, str) else []
        if tuple(words) not in SELECT_RULES:
            raise ExpressivityError(f'select rule for {axis!r} must be "min val_loss" or "max val_metric" '
                                    f"(validation split only), got {rule!r}")
        if axis in ("seed", "task.name") or not isinstance(axis, str):
            raise ExpressivityError(f"cannot select over {axis!r}: selection is per configuration and seed; "
                                    "select over a setting such as train.lr")
        get_path(example, axis)  # the path must exist
        out[axis] = (words[0], words[1])
    if len(set(out.values())) > 1:
        raise ExpressivityError("select axes are chosen jointly, so they need one rule (all \"min val_loss\", say); "
                                f"got {', '.join(sorted(set(' '.join(v) for v in out.values())))}")
    return out


def select_text(rules: dict) -> dict[str, str]:
    """:func:`parse_select`'s rules as the text they were written in, sorted: ``{"train.lr": "min val_loss"}``."""
    return {k: f"{d} {c}" for k, (d, c) in sorted(rules.items())}


# ---- dotted paths ------------------------------------------------------------------------------
def get_path(d: dict, path: str):
    """``d["model"]["heads"]`` for ``"model.heads"``, or a one-line error naming the path."""
    cur = d
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise ExpressivityError(f"{path!r} is not a setting of a run configuration; use seed, eval_lengths, "
                                    "task.args.<arg>, model.<field> or train.<field>")
        cur = cur[part]
    return cur

