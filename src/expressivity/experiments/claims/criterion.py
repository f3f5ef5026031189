"""``criterion.md``: a claim's criterion, written once per output folder and never replaced.

The file states, before anything runs, what the run will test (:func:`statement`: the paper's
claim with its tag, the criterion, the scale) with the time it was stated. Running again into the
folder -- resuming -- leaves it as it is. A claim whose criterion changed since the folder was
started is refused, unless the change is given a reason (``reproduce --amend "REASON"``): then a
dated amendment is **appended**, holding the reason, the new statement and a line diff against
the one it replaces. The statement in force is the last one in the file. The file's SHA-256
(``criterion_sha256``: this folder's file, with its dates) and the SHA-256 of the statement in force
(``statement_sha256``: its words alone, equal in every folder stated under the same criterion) go
into ``run.json`` and ``verdict.json``, and ``reproduce --summary`` lists the amendments, so a
verdict says which criterion it was reached under and whether that criterion was changed after the
folder's first run.

The statement sits between two HTML comments (invisible in rendered Markdown) so it can be read
back exactly; files written before this format (one statement, no markers) are read too.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from expressivity.errors import ExpressivityError
from expressivity.records import write_text

FILE = "criterion.md"
MAX_REASON = 2000   # characters of an amendment's reason
_OPEN, _CLOSE = "<!-- criterion -->", "<!-- /criterion -->"
_BLOCK = re.compile(re.escape(_OPEN) + r"\n(.*?)\n" + re.escape(_CLOSE), re.S)
_AMENDMENT = re.compile(r"^## Amendment (\d+), (.+)$\n\nReason: (.*)$", re.M)
# The format before amendments existed: one statement, the time in the "stated before" line.
_LEGACY = re.compile(r"The paper's claim (\[\w\]): (.*?)\n\nCriterion \(stated before the run, (.*?)\):\n\n(.*)"
                     r"\n\nScale: (\w+)\n?$", re.S)


@dataclass(frozen=True)
class Amendment:
    """One appended change: its number, when, and why."""

    number: int
    time: str
    reason: str


def statement(claim, scale: str) -> str:
    """What a run of ``claim`` at ``scale`` tests, wrapped at 100 columns (so a change shows as
    the lines it touches): the paper's claim with its tag, the criterion and the scale."""
    paras = [f"The paper's claim {claim.tag}: {claim.paper_claim or claim.title}", f"Criterion: {claim.criterion}",
             f"Scale: {scale}"]
    if claim.proxy:
        paras.insert(1, f"Measured by a proxy: {claim.proxy}")
    if claim.trains:
        from expressivity.experiments.claims.grids import RULE

        paras.insert(-1, RULE)
    return "\n\n".join(textwrap.fill(p, 100, break_long_words=False, break_on_hyphens=False) for p in paras)


def _normal(text: str) -> str:
    """Whitespace-insensitive form: two statements are the same criterion if their words are."""
    return " ".join(text.split())


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime())


def in_force(text: str) -> str | None:
    """The statement in force in a ``criterion.md`` text (the last one stated), or ``None`` if the
    text is not a criterion file this package wrote."""
    blocks = _BLOCK.findall(text)
    if blocks:
        return blocks[-1]
    old = _LEGACY.search(text)
    if old:
        tag, claim_text, _, criterion, scale = old.groups()
        return f"The paper's claim {tag}: {claim_text}\n\nCriterion: {criterion}\n\nScale: {scale}"
    return None


def amendments(text: str) -> list[Amendment]:
    """The amendments appended to a ``criterion.md`` text, oldest first."""
    return [Amendment(int(n), when, reason) for n, when, reason in _AMENDMENT.findall(text)]


def sha256(folder) -> str | None:
    """SHA-256 of ``folder/criterion.md`` (``None`` if it has none)."""
    try:
        return hashlib.sha256((Path(folder) / FILE).read_bytes()).hexdigest()
    except OSError:
        return None


def statement_sha256(folder) -> str | None:
    """SHA-256 of the statement in force in ``folder/criterion.md``, whitespace-normalised (the
    words of the criterion, not the file's dates): two folders stated under the same criterion, in
    any session, have the same one. ``None`` if the folder has no criterion this package wrote."""
    text = read(folder)
    stated = None if text is None else in_force(text)
    return None if stated is None else hashlib.sha256(_normal(stated).encode()).hexdigest()


def read(folder) -> str | None:
    try:
        return (Path(folder) / FILE).read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpressivityError(f"{Path(folder) / FILE} cannot be read ({type(exc).__name__}); give another --out") \
            from None


def check(folder, claim, scale: str, amend: str | None = None) -> str:
    """What :func:`settle` will do for ``folder``: ``"write"`` (no criterion yet), ``"keep"`` (the
    same criterion: a resumed run) or ``"amend"``. Refuses, before anything is written, a changed
    criterion without ``amend``, an ``amend`` with nothing to amend, an empty reason, and a
    ``criterion.md`` this package did not write."""
    if amend is not None and not str(amend).strip():
        raise ExpressivityError("--amend needs a reason, e.g. --amend \"widened the grid after the medium run\"")
    if amend is not None and len(str(amend)) > MAX_REASON:
        raise ExpressivityError(f"--amend's reason has {len(str(amend)):,} characters; say it in at most {MAX_REASON:,}")
    text = read(folder)
    path = Path(folder) / FILE
    if text is None:
        if amend is not None:
            raise ExpressivityError(f"--amend applies to a folder whose criterion changed; {path} does not exist yet "
                                    "(a new folder states its criterion without one)")
        return "write"
    old = in_force(text)
    if old is None:
        raise ExpressivityError(f"{path} is not a criterion file written by 'expressivity reproduce'; give another "
                                "--out")
    new = statement(claim, scale)
    if _normal(old) == _normal(new):
        if amend is not None:
            raise ExpressivityError(f"--amend: the criterion in {path} is the one this version states; there is "
                                    "nothing to amend (leave out --amend to resume)")
        return "keep"
    if amend is None:
        raise ExpressivityError(
            f"{path} states another criterion than this version of {claim.name} ({first_difference(old, new)}); a "
            "criterion is never rewritten: give --amend \"REASON\" to append the change as a dated amendment, or "
            "another --out for a fresh run")
    return "amend"


def first_difference(old: str, new: str) -> str:
    """The first word where two statements differ, with a few words of context (for a refusal)."""
    a, b = old.split(), new.split()
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"was '{' '.join(a[k:k + 6]) or '(end)'}', now '{' '.join(b[k:k + 6]) or '(end)'}'"


def settle(folder, claim, scale: str, amend: str | None = None) -> list[Amendment]:
    """Write, keep or amend ``folder/criterion.md`` as :func:`check` says; returns the amendments."""
    action = check(folder, claim, scale, amend)
    path = Path(folder) / FILE
    new = statement(claim, scale)
    if action == "write":
        write_text(path, f"# {claim.title}\n\nSource: {claim.source}\n\nStated before the run, {_now()}:\n\n"
                     f"{_OPEN}\n{new}\n{_CLOSE}\n")
    elif action == "amend":
        text = read(folder)
        old = in_force(text)
        number = len(amendments(text)) + 1
        diff = "\n".join(difflib.unified_diff(old.splitlines(), new.splitlines(), "stated", f"amendment {number}",
                                              lineterm=""))
        reason = " ".join(str(amend).split())
        write_text(path, text.rstrip("\n") + f"\n\n## Amendment {number}, {_now()}\n\nReason: {reason}\n\n"
                                         f"{_OPEN}\n{new}\n{_CLOSE}\n\nChanges:\n\n```diff\n{diff}\n```\n")
    return amendments(read(folder))


# the engine's modules that decide which runs a verdict counts (selection on validation, crashed runs)
SELECTION_MODULES = ("table.py", "select.py")


def rules_sha256() -> str:
    """SHA-256 of the code that turns a claim's numbers into its verdict: every module of
    :mod:`expressivity.experiments.claims`, :mod:`expressivity.statistics` and the selection's modules of
    :mod:`expressivity.experiments` (:data:`SELECTION_MODULES`), by relative name and bytes.
    ``statement_sha256`` identifies the criterion's words, which a change of the rules leaves alone (an audit,
    2026-11-28: the equivalence rule changed and every committed folder still read "same criterion"); a
    verdict records this beside it, and ``reproduce --summary`` says which folders were judged under other
    rules than the installed ones."""
    from pathlib import Path

    import expressivity.statistics as statistics

    claims = Path(__file__).parent
    # the selection (which learning rate, which seeds count) decides too: table.py and select.py were left out,
    # and a change to which runs count as crashed kept the hash (an audit, 2026-11-29)
    files = sorted(claims.glob("*.py")) + [Path(statistics.__file__)] + [claims.parent / name for name in SELECTION_MODULES]
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}:{len(path.read_bytes())}:".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
