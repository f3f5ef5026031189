"""Claims from the papers, each reproduced by one command: ``expressivity reproduce NAME``.

**The verdict contract**, the same for every claim. A :class:`Claim` carries the claim in the
paper's words with the spec's confidence tag (``[V]`` confirmed in a public source: the abstract, the
introduction, the tables' captions; ``[R]`` recollected; ``[D]`` derived here -- a verdict resting on a ``[D]`` part
says so), and its
**criterion**, written to ``criterion.md`` with the time before anything runs, once per output
folder: never rewritten, only amended with a reason (:mod:`.criterion`). Its run returns a
:class:`ClaimResult` with a :class:`Regime` record (parameters, steps, tokens or bytes seen,
fraction of an epoch, whether validation loss was still falling over the last 20% of training,
seeds, and the named checks that say whether the run was in the regime the paper's claim is
about) and a :class:`Verdict`: one word of :data:`VERDICTS`. *reproduced*, *not reproduced* and
*refuted* need a decided comparison **and** a passed regime check; everything else is
*undecided* with its reason (:data:`UNDECIDED_REASONS`: out of regime, underpowered, lr on grid
edge). Every word comes from an interval, never a point (:mod:`.rules`). :func:`reproduce` enforces
two rules for every claim, keeping what the comparison alone said beside the verdict: a run that
fails its regime check (:mod:`.regime`: every compared cell settled to the precision of its
comparison) gets *undecided: out of regime*; a configuration the verdict rests on whose learning
rate was chosen at the edge of its grid for most seeds has its grid extended by the bracketing rule
(:mod:`.grids`), and a verdict resting on an edge that remains is *undecided: lr on grid edge*.

**The scale ladder**: ``quick`` (CI and a first look: seconds to about an hour of 2 cores),
``medium`` (minutes to a few hours of 2 cores, as close to the honest regime as that allows) and
``full`` (the honest regime, sized for one GPU). The regime check, not the scale's name, says
whether a run got there.

Output folder: ``criterion.md``, ``results.csv`` and ``results.json`` (the table), ``figure.png``,
``verdict.json``, ``run.json``, and ``sweep/`` (or another folder) for claims that train (the
engine's folder, so a killed reproduction resumes where it stopped when run again).
``reproduce --summary DIR...`` reads the ``verdict.json`` files of several runs into one table.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from expressivity.errors import ExpressivityError
from expressivity.records import (check_output_dir, folder_in_use, hardware, jsonable, run_record, write_json,
                                  write_text)

VERDICTS = ("reproduced", "not reproduced", "refuted", "undecided")
UNDECIDED_REASONS = ("out of regime", "underpowered", "lr on grid edge")
SCALES = ("quick", "medium", "full")
TAGS = ("[V]", "[R]", "[D]")
# The test sample of the deciding scales (medium, full): drawn from a generator no development run
# used. The criteria were developed on quick runs and earlier medium runs, scored on the default
# test sample (training.schedule.TEST_SEED); this one was fixed on 2026-11-27 (commit abeea71), before any
# run used it.
FRESH_TEST_SEED = 20_261_128


@dataclass(frozen=True)
class Verdict:
    """One verdict word and why. ``undecided`` must name its reason first (one of
    :data:`UNDECIDED_REASONS`, then ``: detail``). ``p``: for a decided word from sampled data, the
    one-sided p-value behind it (at most 0.025 for a single 95% interval), what
    :func:`~expressivity.experiments.claims.rules.combine` corrects across a claim's parts; ``None``
    for a deterministic decision (numerics) or an undecided word. ``tests``: how many tests the
    word stands for -- 1 for one interval; a word made of ``k`` parts (:func:`combine`, a scan of
    ``k`` cells) has ``tests = k``. A negative such word's ``p`` is Bonferroni-corrected for its
    ``k`` tests, so a claim that combines it with other parts corrects over every test once
    (:func:`rules.stands`), not once per level; a *reproduced* one's ``p`` is the largest of its
    parts' (an intersection needs no correction)."""

    word: str
    reason: str
    p: float | None = None
    tests: int = 1

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.word!r}")
        if self.word == "undecided" and not self.reason.startswith(UNDECIDED_REASONS):
            raise ValueError(f"an undecided verdict must start with one of {UNDECIDED_REASONS}: {self.reason!r}")
        if not (isinstance(self.tests, int) and self.tests >= 1):
            raise ValueError(f"tests must be a whole number of tests >= 1, got {self.tests!r}")

    @property
    def decided(self) -> bool:
        return self.word != "undecided"


def led_by_reason(reason: str, source: str) -> str:
    """``reason`` as an *undecided* verdict must read: led by ``source``'s reason word (its text before
    the first colon, one of :data:`UNDECIDED_REASONS`) unless it already starts with one."""
    return reason if reason.startswith(UNDECIDED_REASONS) else f"{source.split(':')[0]}: {reason}"


@dataclass
class Regime:
    """The regime a run was in, and the named checks that decide whether it is the claim's.

    ``checks`` maps a condition (e.g. ``"validation loss flat over the last 20%"``) to whether it
    held; the regime passes when every check does (no checks: it passes -- exact numerics).
    Counts are over the runs the verdict rests on: ``parameters`` the largest model, ``steps`` and
    ``tokens_seen`` the reference model's, ``epoch_fraction`` tokens seen over the training set
    (``None`` for tasks that draw fresh samples: no epoch), ``still_falling`` how many of the
    selected runs still improved on validation by more than the tolerance over their last 20%."""

    scale: str
    checks: dict = field(default_factory=dict)
    parameters: int | None = None
    steps: int | None = None
    tokens_seen: int | None = None
    epoch_fraction: float | None = None
    still_falling: str | None = None
    seeds: int | None = None
    notes: str = ""

    @property
    def ok(self) -> bool:
        return all(self.checks.values())

    def failed(self) -> list[str]:
        return [name for name, ok in self.checks.items() if not ok]

    def line(self) -> str:
        """A short description for tables: the numbers, then pass or the failed checks."""
        shown = ((self.parameters, lambda v: f"{v / 1e3:.3g}k params"), (self.steps, lambda v: f"{v} steps"),
                 (self.tokens_seen, lambda v: f"{v / 1e6:.3g}M tokens"), (self.epoch_fraction, lambda v: f"{v:.2g} epochs"),
                 (self.still_falling, lambda v: f"still moving: {v}"), (self.seeds, lambda v: f"{v} seeds"))
        parts = [fmt(value) for value, fmt in shown if value is not None]
        status = "in regime" if self.ok else "OUT of regime (" + "; ".join(self.failed()) + ")"
        return ", ".join(parts + [status])

    def as_dict(self) -> dict:
        return asdict(self) | {"ok": self.ok, "failed": self.failed()}


@dataclass
class ClaimContext:
    """What a claim's run gets: where to write, which scale, how to run sweeps."""

    out: Path
    scale: str = "quick"
    workers: int | None = None
    threads: int | None = None
    backend: str = "local"
    device: str = "cpu"
    ray_address: str | None = None
    on_progress: Callable | None = None
    overrides: dict = field(default_factory=dict)
    retry_failed: bool = False   # run again the runs recorded as failed by an error (a worker that died), not NaN
    execution: dict = field(default_factory=dict)   # Execution choices for every run (default: the device's)
    memory_budget: object = None   # bytes or a size per pack (default: the device's memory shared by the workers)
    extensions: list = field(default_factory=list)   # grid extensions the bracketing rule made (claims.grids)

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")

    @property
    def quick(self) -> bool:
        return self.scale == "quick"

    @property
    def test_seed(self) -> int | None:
        """The test sample's generator seed: ``None`` (the development sample, ``TEST_SEED``) at
        quick, :data:`FRESH_TEST_SEED` at medium and full (``overrides["test_seed"]`` wins)."""
        return self.overrides.get("test_seed", None if self.quick else FRESH_TEST_SEED)

    def size(self, name: str, quick, medium, full):
        """A size setting of the claim at the context's scale, unless ``overrides`` names it (tests
        run claims end to end at toy sizes this way; the overrides are recorded in run.json)."""
        return self.overrides.get(name, {"quick": quick, "medium": medium, "full": full}[self.scale])

    def run_sweep(self, sweep, name: str = "sweep"):
        """Run ``sweep`` -- with the learning rates the bracketing rule added to its grids -- into
        ``out/name`` (resuming what a previous, interrupted call left)."""
        from dataclasses import replace

        from expressivity.experiments.claims.grids import extended
        from expressivity.experiments.launch import run_sweep

        sweep = replace(sweep, configs=extended(sweep.configs, name, self.extensions))
        report = run_sweep(sweep, self.out / name, backend=self.backend, workers=self.workers, threads=self.threads,
                           device=self.device, ray_address=self.ray_address, on_progress=self.on_progress,
                           retry_failed=self.retry_failed, execution=self.execution, memory_budget=self.memory_budget)
        return self.out / name, report


@dataclass
class ClaimResult:
    """A claim's outcome: ``rows`` (the table), ``figure`` (a PNG), ``numbers`` (what the verdict
    rests on), the :class:`Verdict` (or its word and ``reason``) and the :class:`Regime`."""

    verdict: str | Verdict
    reason: str
    rows: list[dict]
    figure: Path | None
    numbers: dict = field(default_factory=dict)
    notes: str = ""
    regime: Regime | None = None
    # Which swept configurations the verdict rests on (a config without seed and selected axes ->
    # bool); None: all of them. A learning rate on its grid's edge outside these is only a warning.
    decides: Callable[[dict], bool] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.verdict, Verdict):
            # The claim's own reason (the measured numbers) wins over the verdict's (often just the parts'
            # words); an undecided one keeps the verdict's reason word first.
            word, short = self.verdict.word, self.verdict.reason
            reason = self.reason or short
            if word == "undecided":
                reason = led_by_reason(reason, short)
            self.verdict, self.reason = word, reason
        Verdict(self.verdict, self.reason)  # validates the word (and an undecided reason)


@dataclass(frozen=True)
class Claim:
    """One checkable claim: the paper's words and the spec's tag, the criterion, and how to test it."""

    name: str
    title: str
    source: str
    criterion: str
    run: Callable[[ClaimContext], ClaimResult]
    quick_budget: str = "10 CPU-minutes on 2 cores"
    full: str = ""
    trains: bool = True  # False: pure numerics, so the sweep options (backend, workers, device) do not apply
    paper_claim: str = ""
    tag: str = "[R]"
    medium: str = ""
    # What stands in for the paper's measurement, when the claim is measured by a proxy (Yun et al.'s
    # fine-tuned scores by masked-LM loss): the tag says where the claim comes from, this what was measured.
    proxy: str = ""
    # Whether the verdict reads this finished run's weights, not only its record (claim 3's learned
    # kernels; wang-e-dp's copy-byte loss where an older record lacks it): a resume bundle keeps those.
    needs_weights: Callable[[dict], bool] = field(default=lambda record: False, repr=False)

    def __post_init__(self) -> None:
        if self.tag not in TAGS:
            raise ValueError(f"tag must be one of {TAGS}, got {self.tag!r}")


CLAIMS: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    if claim.name in CLAIMS:
        raise ValueError(f"claim {claim.name!r} registered twice")
    CLAIMS[claim.name] = claim
    return claim


def get_claim(name: str) -> Claim:
    _load_all()
    if name not in CLAIMS:
        raise ExpressivityError(f"unknown claim {name!r}; use one of {', '.join(sorted(CLAIMS))}")
    return CLAIMS[name]


def all_claims() -> dict[str, Claim]:
    _load_all()
    return dict(CLAIMS)


def _load_all() -> None:
    """Import the modules that register claims (each registers at import)."""
    import importlib

    for module in CLAIM_MODULES:
        importlib.import_module(module)


CLAIM_MODULES = ("expressivity.experiments.claims.wang_e", "expressivity.experiments.claims.wang_e_trained",
                 "expressivity.experiments.claims.lm")


def apply_regime(result: ClaimResult, scale: str) -> ClaimResult:
    """No verdict word but *undecided* from a run that fails its regime check: such a verdict
    becomes ``undecided: out of regime`` and the word the comparison alone gave is kept in
    ``numbers["verdict_if_in_regime"]``. A result without a regime record gets one that says so
    (a claim that states none is out of regime by construction)."""
    if result.regime is None:
        result.regime = Regime(scale, {"the claim recorded its regime": False})
    if not result.regime.ok and result.verdict != "undecided":
        result.numbers["verdict_if_in_regime"] = {"verdict": result.verdict, "reason": result.reason}
        result.reason = (f"out of regime: {'; '.join(result.regime.failed())}. The comparison alone said "
                         f"'{result.verdict}': {result.reason}")
        result.verdict = "undecided"
    elif not result.regime.ok and not result.reason.startswith("out of regime"):
        result.reason = f"out of regime: {'; '.join(result.regime.failed())}; and {result.reason}"
    return result


def _in_folder(path, folder) -> str | None:
    """``path`` as the verdict records it: relative to the run's folder where it lies inside (the folder
    may move: absolute paths of the machine that ran it pointed nowhere), else as given."""
    if path is None:
        return None
    try:
        return str(Path(path).resolve().relative_to(Path(folder).resolve()))
    except ValueError:
        return str(path)


def reproduce(name: str, out: Path, scale: str = "quick", quick: bool | None = None, amend: str | None = None,
              **context) -> ClaimResult:
    """State the criterion, run the claim, write the table, figure and verdict under ``out``.

    ``criterion.md`` is written once per folder and never replaced (:mod:`.criterion`): a resumed
    run keeps it, and a changed criterion is refused unless ``amend`` gives the reason, which
    appends a dated amendment. ``quick=True`` is the old spelling of ``scale="quick"``
    (``quick=False``: ``"full"``)."""
    from expressivity.experiments.claims import criterion

    if quick is not None:
        scale = "quick" if quick else "full"
    if scale not in SCALES:
        raise ExpressivityError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)}")
    claim = get_claim(name)
    from expressivity.figures import require_plots

    require_plots()   # every claim ends in a figure: a machine without matplotlib learns it before training
    out = check_output_dir(Path(out), f"reproduce {name}")
    check_same_run(out, name, scale)
    criterion.check(out, claim, scale, amend)   # refused before anything is written
    out.mkdir(parents=True, exist_ok=True)
    # one reproduce at a time in a folder: two wrote one verdict, results and figure at once, both exit 0 (a
    # fresh audit, 2026-11-28); the checks run again under the lock, past what the other one settled
    with folder_in_use(out, f"reproduce {name}"):
        check_same_run(out, name, scale)
        criterion.check(out, claim, scale, amend)
        return _reproduce_in(out, name, claim, scale, amend, context)


def _reproduce_in(out: Path, name: str, claim: Claim, scale: str, amend: str | None, context: dict) -> ClaimResult:
    """:func:`reproduce` in its folder ``out``, held by this process."""
    from expressivity.experiments.claims import criterion, grids

    # a verdict stands for the files written with it: running again (to resume, or judge again) removes the
    # old one first, so a run that fails midway leaves no verdict over its half-written tables (a fresh
    # audit, 2026-11-28: --summary still said "reproduced" over a figure cut to 1 kB)
    (out / "verdict.json").unlink(missing_ok=True)
    started = time.time()
    amended = criterion.settle(out, claim, scale, amend)
    stated = {"criterion_sha256": criterion.sha256(out), "statement_sha256": criterion.statement_sha256(out),
              "rules_sha256": criterion.rules_sha256(), "amendments": [asdict(a) for a in amended]}
    config = {"claim": name, "scale": scale, **{k: v for k, v in context.items() if k != "on_progress"}}
    # the machine of this invocation (a folder resumed elsewhere names the last one; numerics run on the CPU)
    stated |= {"hardware": hardware(context.get("device", "cpu") if claim.trains else "cpu")}
    earlier, recorded_before = invocations(out), _records_in(out)
    began = time.time()
    record = run_record(f"reproduce {name}", config) | stated
    this = {key: record.get(key) for key in INVOCATION_KEYS} | {"runs_recorded_before": recorded_before,
                                                                 "finished": False}
    write_json(out / "run.json", record | {"invocations": [*earlier, this]})   # an interrupted call stays listed
    ctx = ClaimContext(out, scale, extensions=grids.read_extensions(out), **context)
    result, edges = run_bracketed(claim, ctx)
    result = grids.apply_grid_edges(apply_regime(result, scale), edges, ctx.extensions)
    warnings = [e.line() for e in edges if "grid edge" not in result.notes]
    outside = set(result.numbers.get("grid_edges_outside_the_verdict", ()))
    if warnings:  # claims that report their own grid edges (the LM claims) are not warned twice
        result.notes = "\n".join([result.notes, *(f"warning: {w}" + (" (outside the verdict)" if w in outside else "")
                                                   for w in warnings)]).strip()
    mixed = _precision_warning(out) if claim.trains else None
    if mixed:
        result.notes = "\n".join([result.notes, mixed]).strip()
    write_table(result.rows, out / "results.csv")
    write_json(out / "results.json", {"rows": result.rows})
    verdict = {"claim": name, "title": claim.title, "source": claim.source, "paper_claim": claim.paper_claim,
               "tag": claim.tag, "proxy": claim.proxy, "criterion": claim.criterion, "scale": scale,
               "test_sample": test_sample(ctx) if claim.trains else None, "verdict": result.verdict,
               "reason": result.reason, "regime": result.regime.as_dict(), "numbers": result.numbers,
               "notes": result.notes, "figure": _in_folder(result.figure, out),
               "seconds": round(time.time() - started, 1), **stated}
    write_json(out / "verdict.json", verdict)
    record = run_record(f"reproduce {name}", config) | stated | {"verdict": result.verdict}
    this |= {"verdict": result.verdict, "runs_trained": _records_in(out, since=began), "finished": True}
    write_json(out / "run.json", record | {"invocations": [*earlier, this]})
    return result


# What run.json keeps of every invocation on a folder: the top level is the last one's (a folder judged
# again without training names the judging call), "invocations" says which calls trained how many runs,
# where and with which code (a fresh audit, 2026-11-28: the committed folders named the last re-judging
# call's workers and machine, and nothing committed named the machine that trained the models)
INVOCATION_KEYS = ("command", "config", "expressivity_version", "source", "torch", "created_unix", "hardware")


def invocations(out: Path) -> list[dict]:
    """The invocations ``out/run.json`` records (a run.json written before the list existed is its one
    invocation, with ``runs_trained`` unknown); ``[]`` for a new folder or an unreadable file."""
    try:
        previous = json.loads((Path(out) / "run.json").read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(previous, dict):
        return []
    listed = previous.get("invocations")
    if isinstance(listed, list):
        return [i for i in listed if isinstance(i, dict)]
    if "verdict" not in previous:   # an invocation stopped before its verdict: what it trained is in the records
        return []
    return [{key: previous.get(key) for key in INVOCATION_KEYS}
            | {"verdict": previous["verdict"], "runs_trained": None, "finished": True}]


def _records_in(out: Path, since: float | None = None) -> int:
    """How many runs the folder's sweeps have recorded (:func:`~expressivity.experiments.store.read_records`
    under ``out``); with ``since``, only those finished at or after it (a run trained again over a torn
    line replaces a line: counting lines would say it was not trained, a fuzz pass)."""
    return sum(since is None or (isinstance(r.get("finished_unix"), (int, float)) and r["finished_unix"] >= since)
               for r in _all_records(out))


def _all_records(out: Path) -> list[dict]:
    """Every run recorded by the folder's sweeps (their own reading warns of torn or edited lines)."""
    import warnings

    from expressivity.experiments.store import read_records

    found = []
    for path in Path(out).rglob("records.jsonl"):
        with warnings.catch_warnings():   # the claim's own reading warns of a torn or edited line
            warnings.simplefilter("ignore")
            try:
                found += read_records(path)
            except ExpressivityError:   # not a records file (the claim's reading says so)
                continue
    return found


def _precision_warning(out: Path) -> str | None:
    """A ``warning:`` line where the folder's runs were trained in several precisions (a folder resumed
    with another ``--precision`` judged fp32 and bf16 runs together without a word: an audit, 2026-11-28), and one
    where they drew their data from several streams (a folder resumed on a GPU: an audit, 2026-11-29)."""
    from expressivity.experiments.store import precision_counts, stream_counts

    records = _all_records(out)
    counts, streams = precision_counts(records), stream_counts(records)
    lines = []
    if len(counts) > 1:
        lines.append(f"warning: the verdict rests on runs trained in {len(counts)} precisions "
                     f"({', '.join(f'{k}: {v}' for k, v in counts.items())}); a lower precision moves held-out losses "
                     "about as much as another seed: train the claim in one precision (a new --out) before quoting it")
    if len(streams) > 1:   # a folder started on the CPU (host sampler) and resumed on a GPU (device sampler)
        lines.append(f"warning: the verdict rests on runs that drew their training data from {len(streams)} streams "
                     f"({', '.join(f'stream {k}: {v}' for k, v in streams.items())}; 1 the host sampler, 2 the device "
                     "sampler); each is a valid draw, but a run's data is its id and its stream: say so when quoting "
                     "it, or train the claim on one (a new --out)")
    return "\n".join(lines) or None


def run_bracketed(claim: Claim, ctx: ClaimContext):
    """Run ``claim``; while a configuration its verdict rests on selects a grid edge for most seeds
    (and the rule allows), extend that grid one step, record it and run again (:mod:`.grids`).
    Returns the last result and the grid edges it left."""
    from expressivity.experiments.claims import grids

    while True:
        result = claim.run(ctx)
        edges = grids.grid_edges(ctx.out)
        more = grids.extension_steps(edges, result, ctx.extensions)
        if not more:
            return result, edges
        ctx.extensions += more
        write_json(ctx.out / grids.FILE, ctx.extensions)


def test_sample(ctx: ClaimContext) -> dict:
    """Which test sample a run's numbers come from: the development one (quick) or a fresh one."""
    from expressivity.training.schedule import TEST_SEED

    return {"seed": TEST_SEED if ctx.test_seed is None else ctx.test_seed,
            "kind": "development (the sample the criteria were developed on)" if ctx.test_seed is None
            else "fresh (no development run scored on it)"}


def check_same_run(out: Path, name: str, scale: str) -> None:
    """A folder holding a run of ``name`` at another scale is refused (resuming it would mix scales)."""
    try:
        previous = json.loads((Path(out) / "run.json").read_text()).get("config") or {}
    except (OSError, ValueError, AttributeError):
        return
    was = previous.get("scale") or ("quick" if previous.get("quick") else "full" if "quick" in previous else None)
    if previous.get("claim") == name and was is not None and was != scale:
        raise ExpressivityError(f"{out} holds a {was} run of {name}; resume it with --scale {was}, or give another "
                                f"--out for --scale {scale}")


def verdict_files(folder) -> list[Path]:
    """The ``verdict.json`` of a reproduce output folder, else those one level down (a folder of them)."""
    folder = Path(folder)
    return [folder / "verdict.json"] if (folder / "verdict.json").is_file() else sorted(folder.glob("*/verdict.json"))


def summary(folders) -> list[dict]:
    """One row per ``verdict.json`` found in ``folders`` (each a reproduce output folder, or a
    folder of them): claim, scale, verdict, regime line, reason. Rows sorted by claim, then scale
    along the ladder. A folder with no ``verdict.json`` (in it or one level down) is an error."""
    rows = []
    for folder in folders:
        found = verdict_files(folder)
        if not found:
            raise ExpressivityError(f"{folder}: no verdict.json in it or one level down; give folders written by "
                                    "'expressivity reproduce'")
        for path in found:
            try:
                v = json.loads(path.read_text())
                regime = v.get("regime") or {}
                rows.append({"claim": v["claim"], "scale": v.get("scale") or ("quick" if v.get("quick") else "full"),
                             "verdict": v["verdict"], "tag": v.get("tag", "") + (" proxy" if v.get("proxy") else ""),
                             "regime": _regime_line(regime) if regime else "not recorded (older run)",
                             "reason": v.get("reason", ""), "folder": str(path.parent),
                             "amendments": _amendments(path.parent), "seconds": v.get("seconds"),
                             "test_sample": ((v.get("test_sample") or {}).get("kind") or "").split(" (")[0],
                             "rules_sha256": v.get("rules_sha256")})
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ExpressivityError(f"{path}: not a readable verdict ({type(exc).__name__}: {exc}); rerun "
                                        "'expressivity reproduce' into that folder") from None
    order = {s: k for k, s in enumerate(SCALES)}
    return sorted(rows, key=lambda r: (r["claim"], order.get(r["scale"], 9), r["folder"]))


def _amendments(folder: Path) -> list[dict]:
    """The amendments of ``folder/criterion.md`` (none if it has no such file)."""
    from expressivity.experiments.claims import criterion

    try:
        text = (folder / criterion.FILE).read_text()
    except (OSError, UnicodeDecodeError):
        return []
    return [asdict(a) for a in criterion.amendments(text)]


def _regime_line(regime: dict) -> str:
    known = {k: regime.get(k) for k in ("scale", "checks", "parameters", "steps", "tokens_seen", "epoch_fraction",
                                        "still_falling", "seeds", "notes")}
    return Regime(**{k: v for k, v in known.items() if v is not None or k in ("scale",)}).line()


def write_table(rows: list[dict], path: Path) -> None:
    """``rows`` as CSV (columns in first-seen order)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for row in rows:
        writer.writerow({k: jsonable(row.get(k)) for k in columns})
    write_text(path, buf.getvalue())   # atomic: never half a table


