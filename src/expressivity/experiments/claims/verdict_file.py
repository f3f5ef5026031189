"""What ``expressivity reproduce --summary`` checks of a finished run folder before it reports it:
every field of ``verdict.json`` it reads has its type and value, the criterion beside it is the one
the verdict was reached under, and no folder is given twice. Each refusal is one
:class:`~expressivity.errors.ExpressivityError` line naming the file and the fix."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from expressivity.errors import ExpressivityError


def _shown(value) -> str:
    """A value of a malformed field as an error message shows it: its JSON type and a short repr."""
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")
    text = repr(value)
    return f"{kind} {text[:40] + '…' if len(text) > 40 else text}"


def check_folders(folders: list[Path], markdown: bool) -> None:
    """Refuse, before anything is printed, what ``--summary`` would misreport: the same run folder
    given twice (by several spellings, or inside a folder of folders also given), and any run whose
    ``verdict.json`` is malformed or whose criterion cannot be shown to be the one its verdict was
    reached under (:func:`check_verdict`). Each refusal is one :class:`ExpressivityError` line."""
    from expressivity.experiments.claims import verdict_files

    seen: dict[Path, Path] = {}
    for folder in folders:
        for path in verdict_files(folder):
            where = path.resolve()
            if where in seen:
                raise ExpressivityError(f"--summary got the run folder {where.parent} twice; give each folder once")
            seen[where] = path
    for path in seen.values():
        check_verdict(path, markdown)


def check_verdict(path: Path, markdown: bool) -> None:
    """Refuse ``path`` (a ``verdict.json``) unless every field ``--summary`` reads has its type and
    value: ``claim`` a name, ``scale`` one of :data:`SCALES`, ``verdict`` one of :data:`VERDICTS`
    (an ``undecided`` one's ``reason`` led by one of :data:`UNDECIDED_REASONS`), ``tag`` one of
    :data:`TAGS`, ``regime``, ``seconds``, ``test_sample`` and (``markdown``) ``notes``,
    ``numbers.grid_extensions`` and ``results.json``'s rows; and unless ``criterion.md`` is there and
    has the SHA-256 ``criterion_sha256`` records (a run from before the hash was recorded needs
    only the file), so the amendments listed are those of the criterion the verdict was reached
    under. The fix named is to run the claim again (a resumed run re-judges its recorded runs)."""
    from expressivity.experiments.claims import SCALES, TAGS, UNDECIDED_REASONS, VERDICTS, criterion

    folder = path.parent
    again = "run the claim again with 'expressivity reproduce NAME --scale SCALE --out " + f"{folder}'"

    def refuse(what: str, fix: str | None = None) -> ExpressivityError:
        return ExpressivityError(f"{path}: {what}; {fix or again}")

    def number(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    try:
        v = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise refuse(f"not a readable verdict ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    if not isinstance(v, dict):
        raise refuse(f"not a readable verdict: holds {_shown(v)}, not a JSON object")
    claim = v.get("claim")
    if not isinstance(claim, str) or not claim.strip() or len(claim.split()) != 1:
        raise refuse(f"'claim' is {_shown(claim)}, not a claim name")
    if "scale" in v:
        scale = v["scale"]
        if not isinstance(scale, str) or scale not in SCALES:
            raise refuse(f"'scale' is {_shown(scale)}, not one of {', '.join(SCALES)}",
                         again.replace("NAME", claim))
    elif isinstance(v.get("quick"), bool):   # a verdict from before the scale ladder
        scale = "quick" if v["quick"] else "full"
    else:
        raise refuse("it records no 'scale'", again.replace("NAME", claim))
    again = again.replace("NAME", claim).replace("SCALE", scale)
    word, reason = v.get("verdict"), v.get("reason", "")
    if not isinstance(word, str) or word not in VERDICTS:
        raise refuse(f"'verdict' is {_shown(word)}, not one of {', '.join(VERDICTS)}")
    if not isinstance(reason, str):
        raise refuse(f"'reason' is {_shown(reason)}, not a string")
    if word == "undecided" and not reason.startswith(UNDECIDED_REASONS):
        raise refuse(f"an undecided verdict's reason must start with one of {', '.join(UNDECIDED_REASONS)}, and "
                     f"this one starts {reason[:30]!r}")
    if "tag" in v and v["tag"] not in TAGS:
        raise refuse(f"'tag' is {_shown(v['tag'])}, not one of {', '.join(TAGS)}")
    if v.get("proxy") is not None and not isinstance(v["proxy"], (str, bool)):
        raise refuse(f"'proxy' is {_shown(v['proxy'])}, not a string")
    if v.get("seconds") is not None and not (number(v["seconds"]) and math.isfinite(v["seconds"])
                                             and v["seconds"] >= 0):
        raise refuse(f"'seconds' is {_shown(v['seconds'])}, not a number of seconds")
    sample = v.get("test_sample")
    if sample is not None and not (isinstance(sample, dict) and isinstance(sample.get("kind", ""), (str, type(None)))):
        raise refuse(f"'test_sample' is {_shown(sample)}, not an object with a 'kind' string")
    regime = v.get("regime")
    if regime:   # none recorded: an older run, shown as such
        if not isinstance(regime, dict):
            raise refuse(f"'regime' is {_shown(regime)}, not an object")
        fields = {"parameters": number, "steps": number, "tokens_seen": number, "epoch_fraction": number,
                  "seeds": number, "still_falling": lambda x: isinstance(x, str), "notes": lambda x: isinstance(x, str)}
        for key, ok in fields.items():
            if regime.get(key) is not None and not ok(regime[key]):
                raise refuse(f"'regime.{key}' is {_shown(regime[key])}, not a "
                             f"{'string' if key in ('still_falling', 'notes') else 'number'}")
        if regime.get("scale") is not None and regime["scale"] != scale:
            raise refuse(f"'regime.scale' is {_shown(regime['scale'])}, but the verdict's scale is {scale}")
        checks = regime.get("checks", {})
        if not isinstance(checks, dict) or not all(isinstance(ok, bool) for ok in checks.values()):
            raise refuse(f"'regime.checks' is {_shown(checks)}, not an object of named checks true or false")
        failed = [name for name, ok in checks.items() if not ok]
        if word != "undecided" and (failed or regime.get("ok") is False):
            # the contract: a decided word needs a passed regime check; --summary showed a hand-edited
            # "reproduced" beside "OUT of regime" (an audit, 2026-11-29)
            raise refuse(f"'verdict' is {word!r}, but the regime check failed ({(failed or ['ok: false'])[0][:80]}); "
                         "a decided word needs a passed regime check")
    if markdown:
        if v.get("notes") is not None and not isinstance(v["notes"], str):
            raise refuse(f"'notes' is {_shown(v['notes'])}, not a string")
        numbers = v.get("numbers")
        if numbers is not None and not isinstance(numbers, dict):
            raise refuse(f"'numbers' is {_shown(numbers)}, not an object")
        extensions = (numbers or {}).get("grid_extensions") or []
        if not isinstance(extensions, list) or not all(
                isinstance(e, dict) and isinstance(e.get("label"), str) and isinstance(e.get("direction"), str)
                and number(e.get("value")) for e in extensions):
            raise refuse("'numbers.grid_extensions' is not a list of objects with a label, a direction and a value")
        results = folder / "results.json"
        try:
            rows = json.loads(results.read_text())["rows"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise ExpressivityError(f"{results}: not a readable results table ({type(exc).__name__}); {again}") \
                from None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise ExpressivityError(f"{results}: 'rows' is {_shown(rows)}, not a list of objects; {again}")
    # The amendments --summary lists are read from criterion.md: only the file the verdict was
    # reached under may be read (a missing or changed file would show as "criterion amended: no").
    fresh = ("restore the criterion.md the run wrote, or run the claim again into a new folder with "
             f"'expressivity reproduce {claim} --scale {scale} --out NEW_FOLDER'")
    for key in ("criterion_sha256", "rules_sha256"):   # absent or null: a run from before it was recorded
        value = v.get(key)
        if value is not None and not (isinstance(value, str) and len(value) == 64
                                      and all(c in "0123456789abcdef" for c in value)):
            raise refuse(f"'{key}' is {_shown(value)}, not a SHA-256 in hex")
    recorded = v.get("criterion_sha256")
    try:
        text = (folder / criterion.FILE).read_bytes()
    except FileNotFoundError:
        raise ExpressivityError(f"{folder / criterion.FILE} is missing, so the criterion this verdict was reached "
                                f"under and its amendments cannot be shown; {fresh}") from None
    except OSError as exc:
        raise ExpressivityError(f"{folder / criterion.FILE} cannot be read ({exc.strerror or exc}); {fresh}") from None
    if recorded is not None and hashlib.sha256(text).hexdigest() != recorded:
        raise ExpressivityError(f"{folder / criterion.FILE} does not match the SHA-256 its verdict.json records: it "
                                f"was changed after the verdict was reached; {fresh}")
