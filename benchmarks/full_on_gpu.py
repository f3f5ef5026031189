"""The deciding scale on one GPU within a fixed number of minutes (issue 29, item 5), in one go:

1. the GPU check (``gpu_check.py``) with ``--check-seconds`` of the budget (0 skips it);
2. each claim's full profile in turn (default: wang-e-7, wang-e-dp, wang-e-3, wang-e-6, the
   issue's order), ``python -m expressivity reproduce NAME --scale full --device cuda --yes`` into
   ``RUNS/NAME``; when the budget runs out the running claim gets Ctrl-C's signal, which leaves
   its folder resumable (the same command, here or on another machine with the folder copied);
   a claim is not started with less than a minute left, and each stops early enough for its
   grace (90 s to record the runs in flight) and the bundles (30 s) to fit in ``--minutes``;
3. what a README cell quotes, bundled: ``full_results.tar.gz`` holds ``full/NAME/`` (``SCALE/NAME/``) with each
   finished folder's criterion.md, verdict.json, results.csv, results.json, figure.png, run.json
   and grid_extensions.json (unpack it into ``docs/results/``), ``resume_NAME.tar`` the folder
   of a claim stopped at the budget (its records, and the checkpoints that resuming and judging it
   need: :func:`resume_files`), and ``summary.json`` /
   ``summary.md`` each claim's word, minutes and device (rewritten after every claim), with
   ``log.txt`` everything printed.

At most seven files land in ``--out`` (gpu_check.json and .md, summary.json and .md, log.txt and
the two bundles); the run folders stay in ``--runs`` (default ``OUT/runs``). Run from a checkout
with any Python that has PyTorch, click, rich, safetensors, numpy, scipy, mpmath and matplotlib (the
package need not be installed: ``src`` is put on the path). Without a GPU it refuses in one line
(exit 2) unless ``--device cpu``, which with ``--scale quick`` checks this script on a CPU.

    python benchmarks/full_on_gpu.py --minutes 9 --out full_on_gpu [--check-seconds 150] [NAMES...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("wang-e-7", "wang-e-dp", "wang-e-3", "wang-e-6")
QUOTED = ("criterion.md", "verdict.json", "results.csv", "results.json", "figure.png", "run.json",
          "grid_extensions.json")
START_AT_LEAST_S = 60.0   # a claim's plan alone times its packs for up to a minute
STOP_GRACE_S = 90.0       # after Ctrl-C's signal, time for a claim to record the runs in flight before a kill
CHECK_GRACE_S = 30.0      # the same for the GPU check (it writes what it measured)
BUNDLE_S = 30.0           # kept at the end for the bundles and the summary
# reproduce's execution options, passed through (e.g. --capture eager where the GPU check found a
# compile failing on this machine)
EXECUTION_OPTIONS = {"precision": ("fp32", "tf32", "bf16"), "attention-kernel": ("explicit", "sdpa"),
                     "capture": ("eager", "compiled"), "sampler": ("host", "device")}
CHECK_S = 150.0           # the GPU check's share by default (its parts run most telling first)
RETURN_LIMIT = 15 * 2**20  # a resume bundle's size that comes back from the device tool (16 MiB a file)


def fail(message: str) -> None:
    """One line naming the problem and the fix, exit code 2, nothing written."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line and the fix, not argparse's usage block
        fail(f"{message}; see --help")


def positive(text: str) -> float:
    value = float(text)
    if not (0 < value <= 1e6):
        raise argparse.ArgumentTypeError(f"must be a number of minutes in (0, 1e6], got {text}")
    return value


def non_negative(text: str) -> float:
    value = float(text)
    if not (0 <= value <= 6e7):
        raise argparse.ArgumentTypeError(f"must be a number of seconds in [0, 6e7], got {text}")
    return value


def environment() -> dict:
    """The child processes' environment: this checkout's ``src`` first on the path, output unbuffered."""
    path = os.environ.get("PYTHONPATH")
    return os.environ | {"PYTHONPATH": str(ROOT / "src") + (os.pathsep + path if path else ""), "PYTHONUNBUFFERED": "1"}


def run_until(command: list[str], seconds: float, log, stdout=None, grace: float = STOP_GRACE_S) -> tuple[int, bool]:
    """Run ``command`` for at most ``seconds``; then send its process group SIGINT (Ctrl-C), wait
    ``grace`` seconds, and kill it if it is still there. Returns ``(exit code, stopped by us)``."""
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    # SIGINT as at a terminal in the child, whatever this process inherited (a job started in the
    # background inherits it ignored, and the child would then keep it ignored and lose its grace)
    child = subprocess.Popen(command, stdout=stdout or log, stderr=log, env=environment(), start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        return child.wait(timeout=max(seconds, 1.0)), False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGINT)
        try:
            return child.wait(timeout=grace), True
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            return child.wait(), True
    except KeyboardInterrupt:   # our own Ctrl-C: passed on (the child has its own session), and time to record
        try:
            os.killpg(child.pid, signal.SIGINT)
            child.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
        raise


def progress(folder: Path) -> tuple[int, int]:
    """``(runs recorded done, runs configured)`` over every sweep in a claim's folder (a grid the
    rule extended adds configurations as it goes)."""
    import warnings

    from expressivity.errors import ExpressivityError
    from expressivity.experiments.store import read_records

    done = total = 0
    for sweep in folder.rglob("sweep.json"):
        try:
            total += len(json.loads(sweep.read_text()).get("configs") or [])
            with warnings.catch_warnings():   # a torn last line of a killed writer is skipped, as resuming does
                warnings.simplefilter("ignore")
                done += sum(r.get("status") == "done" for r in read_records(sweep.parent))
        except (OSError, json.JSONDecodeError, ExpressivityError):   # no records yet, or a file cut short
            continue
    return done, total


def claim_row(name: str, folder: Path, seconds: float, code: int, stopped: bool, resume: str, log_path: Path) -> dict:
    done, total = progress(folder)
    row = {"claim": name, "minutes": round(seconds / 60, 2), "runs_done": done, "runs_configured": total,
           "folder": str(folder)}
    verdict = folder / "verdict.json"
    if code == 0 and verdict.exists():
        v = json.loads(verdict.read_text())
        return row | {"status": "finished", "verdict": v["verdict"], "reason": v["reason"],
                      "hardware": v.get("hardware")}
    if stopped or code == 130:
        return row | {"status": "stopped at the budget", "resume": resume}
    tail = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()][-1:]
    return row | {"status": f"failed (exit code {code})", "last_line": tail[0] if tail else "", "resume": resume}


def resume_files(folder: Path, needs_weights, limit: int = RETURN_LIMIT) -> tuple[list[Path], dict]:
    """The files of a stopped claim's ``folder`` that its resume bundle holds, and what it left out.

    Every record, sweep file, metric log and manifest is kept. The checkpoint of a run recorded as
    finished (``done`` or ``target-reached``: never trained again) is left out unless the claim's
    verdict reads its weights (``needs_weights(record)``, the claim's own: claim 3's learned kernels;
    wang-e-dp's copy-byte loss only for records written before the trainer recorded it); a failed
    run's is kept (``--retry-failed`` resumes from it). The folders of the runs in flight (``runs/ID``
    not yet recorded, and ``packs/``, an ensemble's shared checkpoint) are kept where the bundle then
    stays within ``limit`` bytes (the device tool returns files of at most 16 MiB), else all left
    out, so that the folder reads as if they had not started: they start again from their first step."""
    import warnings

    from expressivity.experiments.store import read_records

    finished, in_flight, kept, flying = [], [], [], set()
    recorded: dict[Path, dict[str, dict]] = {}
    for records in folder.rglob("records.jsonl"):
        with warnings.catch_warnings():   # a torn last line of a killed writer is skipped, as resuming does
            warnings.simplefilter("ignore")
            recorded[records.parent] = {r["id"]: r for r in read_records(records)}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sweep = next((s for s in recorded if s in path.parents), None)
        inside = path.relative_to(sweep).parts if sweep is not None else ()
        if len(inside) > 2 and (inside[0] == "packs" or (inside[0] == "runs" and inside[1] not in recorded[sweep])):
            in_flight.append(path)
            flying.add((sweep / inside[0] / inside[1]).relative_to(folder).as_posix())
        elif (len(inside) > 3 and inside[0] == "runs" and inside[2] == "checkpoint"
              and recorded[sweep][inside[1]].get("status") in ("done", "target-reached")
              and not needs_weights(recorded[sweep][inside[1]])):
            finished.append(path)
        else:
            kept.append(path)
    size = lambda paths: sum(p.stat().st_size for p in paths)  # noqa: E731
    fits = size(kept) + size(in_flight) <= limit
    facts = {"finished_checkpoints_left_out_mib": round(size(finished) / 2**20, 1),
             "runs_in_flight_left_out": [] if fits else sorted(flying)}
    return kept + (in_flight if fits else []), facts


def bundle(rows: list[dict], out: Path, scale: str) -> list[str]:
    """``full_results.tar.gz`` (the quoted files of every finished claim under ``SCALE/NAME/``) and
    one ``resume_NAME.tar`` per stopped claim (its folder as :func:`resume_files` chooses, not
    compressed: checkpoints do not compress, and the time is the budget's). Returns the files written."""
    from expressivity.experiments.claims import all_claims

    written = []
    finished = [r for r in rows if r.get("status") == "finished"]
    if finished:
        with tarfile.open(out / "full_results.tar.gz", "w:gz") as tar:
            for r in finished:
                for name in QUOTED:
                    path = Path(r["folder"]) / name
                    if path.exists():
                        tar.add(path, arcname=f"{scale}/{r['claim']}/{name}")
        written.append("full_results.tar.gz")
    for r in rows:
        if r.get("status", "").startswith(("stopped", "failed")) and Path(r["folder"]).exists():
            folder = Path(r["folder"])
            files, facts = resume_files(folder, all_claims()[r["claim"]].needs_weights)
            with tarfile.open(out / f"resume_{r['claim']}.tar", "w") as tar:
                for path in files:
                    tar.add(path, arcname=f"{r['claim']}/{path.relative_to(folder).as_posix()}")
            written.append(f"resume_{r['claim']}.tar")
            r["resume_bundle_mib"] = round((out / written[-1]).stat().st_size / 2**20, 1)
            r.update(facts)
    return written


def summary_lines(summary: dict) -> list[str]:
    lines = [f"device {summary['device']}, budget {summary['minutes']:g} min, used {summary['used_minutes']:.1f} min"]
    for r in summary["claims"]:
        head = f"{r['claim']} ({summary['scale']}): {r['status']}"
        if "minutes" in r:
            head += f" after {r['minutes']:.1f} min"
        if r.get("runs_configured"):   # numerics claims train nothing
            head += f", runs {r['runs_done']} of {r['runs_configured']}"
        if r.get("verdict"):
            head += f"; verdict {r['verdict']}: {r['reason']}"
        if r.get("last_line"):
            head += f"; last line: {r['last_line']}"
        if r.get("resume"):
            head += f"; resume: {r['resume']}"
        if r.get("resume_bundle_mib") is not None:
            head += f" (folder in resume_{r['claim']}.tar, {r['resume_bundle_mib']:g} MiB"
            if r.get("finished_checkpoints_left_out_mib"):
                head += f", without the finished runs' checkpoints ({r['finished_checkpoints_left_out_mib']:g} MiB)"
            if r.get("runs_in_flight_left_out"):
                head += f"; {len(r['runs_in_flight_left_out'])} folders of runs in flight left out to fit, they restart"
            if r["resume_bundle_mib"] > RETURN_LIMIT / 2**20:
                head += f"; over the device tool's {RETURN_LIMIT / 2**20:g} MiB a file: it will not come back"
            head += ")"
        lines.append(head)
    return lines


def write_summary(summary: dict, out: Path, started: float) -> list[str]:
    """``summary.json`` and ``summary.md`` as they stand (after every claim, and at the end)."""
    summary["used_minutes"] = (time.monotonic() - started) / 60
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    text = summary_lines(summary)
    (out / "summary.md").write_text("\n".join(f"- {line}" for line in text) + "\n")
    return text


NEEDED = ("torch", "numpy", "scipy", "mpmath", "click", "rich", "safetensors", "matplotlib")


def main(argv=None) -> int:
    p = Parser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"claims, in order (default: {' '.join(ORDER)})")
    p.add_argument("--minutes", type=positive, default=9.0, help="wall minutes for everything (default 9)")
    p.add_argument("--check-seconds", type=non_negative, default=None,
                   help=f"of those, seconds for the GPU check (0: skip it; default {CHECK_S:g}; not with --device cpu)")
    p.add_argument("--out", type=Path, default=Path("full_on_gpu"), help="where the bundles and summary go")
    p.add_argument("--runs", type=Path, default=None, help="where the claims' folders go (default OUT/runs)")
    p.add_argument("--scale", choices=("quick", "medium", "full"), default="full")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    for option, choices in EXECUTION_OPTIONS.items():
        p.add_argument(f"--{option}", choices=choices, default=None,
                       help="passed to reproduce for the claims that train (default: the device's choice)")
    p.add_argument("--stop-grace", type=non_negative, default=STOP_GRACE_S, metavar="SECONDS",
                   help=f"after the signal, time a claim has to record its runs in flight (default {STOP_GRACE_S:g})")
    p.add_argument("--start-at-least", type=non_negative, default=START_AT_LEAST_S, metavar="SECONDS",
                   help=f"start no claim with less left (default {START_AT_LEAST_S:g}: a plan times packs for up to a minute)")
    a = p.parse_args(argv)
    started = time.monotonic()
    deadline = started + 60 * a.minutes
    sys.path.insert(0, str(ROOT / "src"))
    from expressivity.experiments.claims import all_claims

    names = a.names or list(ORDER)
    unknown = [n for n in names if n not in all_claims()]
    if unknown:
        fail(f"unknown claim {unknown[0]!r}; use names from `python -m expressivity reproduce --list`")
    if len(set(names)) < len(names):
        fail("a claim is named twice; name each once")
    if a.device == "cpu" and a.check_seconds is not None:
        fail("--check-seconds does not apply with --device cpu (the GPU check is the GPU's); leave it out")
    a.check_seconds = CHECK_S if a.check_seconds is None and a.device == "cuda" else (a.check_seconds or 0.0)
    if a.check_seconds >= 60 * a.minutes:
        fail(f"--check-seconds {a.check_seconds:g} leaves nothing of --minutes {a.minutes:g}; give fewer seconds")
    for_claims = 60 * a.minutes - a.check_seconds - a.stop_grace - BUNDLE_S
    if for_claims < max(a.start_at_least, 1.0):
        fail(f"--minutes {a.minutes:g} leaves {max(for_claims, 0):.0f} s for the claims after the check "
             f"({a.check_seconds:g} s), the stop grace ({a.stop_grace:g} s) and the bundles ({BUNDLE_S:g} s); "
             "give more minutes")
    import importlib.util

    # what `reproduce` imports, checked before anything is written: a bare GPU machine without one of
    # them would otherwise train a claim and fail at its figure (matplotlib) or not start at all
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        fail(f"this Python lacks {', '.join(missing)}: install them (pip install {' '.join(missing)}), or carry "
             "their wheels to the GPU machine")
    for option, folder in (("--out", a.out), ("--runs", a.runs)):
        if folder is not None and folder.exists() and not folder.is_dir():
            fail(f"{option} {folder} is a file; name a folder")
    import torch

    if a.device == "cuda" and not torch.cuda.is_available():
        fail("no CUDA GPU here (PyTorch sees none); run this on a GPU machine, or pass --device cpu "
             "--scale quick to check the script on the CPU")
    device_name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    a.out = a.out.resolve()
    runs = (a.runs or a.out / "runs").resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    runs.mkdir(parents=True, exist_ok=True)
    log_path = a.out / "log.txt"
    summary = {"device": device_name, "scale": a.scale, "minutes": a.minutes, "claims": [],
               "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}
    def interrupted(signum, frame):
        raise KeyboardInterrupt

    # a timeout's or a session's SIGTERM (SIGHUP) stops the claim as Ctrl-C does: passed on to its own
    # session (it kept training as an orphan before, a fresh audit), its runs recorded, the bundles written
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    with log_path.open("a") as log:
        try:
            if a.check_seconds > 0 and a.device == "cuda":
                # its own budget leaves room for a part past it; SIGINT then makes it write what it has
                print(f"GPU check on {device_name} ({a.check_seconds:g} s)", flush=True)
                code, _ = run_until([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--budget-s",
                                     str(max(a.check_seconds - CHECK_GRACE_S, 1.0)), "--out", str(a.out)],
                                    a.check_seconds, log, grace=CHECK_GRACE_S)
                summary["gpu_check"] = {"exit_code": code, "files": ["gpu_check.json", "gpu_check.md"]}
                write_summary(summary, a.out, started)
            for name in names:
                # the claim's share ends early enough for its grace to record and for the bundles
                left = deadline - a.stop_grace - BUNDLE_S - time.monotonic()
                if left < a.start_at_least:
                    summary["claims"].append({"claim": name, "status": f"not started: {max(left, 0):.0f} s left, "
                                                                      f"a claim starts with {a.start_at_least:g}"})
                    continue
                folder = runs / name
                given = [f"--{o}={getattr(a, o.replace('-', '_'))}" for o in EXECUTION_OPTIONS
                         if getattr(a, o.replace("-", "_")) is not None]
                # numerics run on the CPU: the device and execution options, and --yes (which confirms a long
                # plan), are the trained claims'; reproduce refuses them for numerics
                trains = all_claims()[name].trains
                device = ["--device", a.device, *given] if trains else []
                command = [sys.executable, "-m", "expressivity", "reproduce", name, "--scale", a.scale, *device,
                           "--out", str(folder), *(["--yes"] if trains else []), "--json"]
                print(f"{name} ({a.scale}, {a.device}): up to {left / 60:.1f} min", flush=True)
                t0 = time.monotonic()
                resume = " ".join(["python -m expressivity", *command[3:-1]])
                try:
                    with (runs / f"{name}.json").open("w") as stdout:
                        code, stopped = run_until(command, left, log, stdout, grace=a.stop_grace)
                except KeyboardInterrupt:   # the claim was passed the signal and recorded its runs
                    summary["claims"].append(claim_row(name, folder, time.monotonic() - t0, 130, True, resume,
                                                       log_path) | {"status": "stopped (interrupted)"})
                    raise
                row = claim_row(name, folder, time.monotonic() - t0, code, stopped, resume, log_path)
                summary["claims"].append(row)
                write_summary(summary, a.out, started)   # a caller's kill past the minutes keeps what finished
                print("  " + summary_lines(summary | {"used_minutes": 0, "claims": [row]})[1], flush=True)
        except KeyboardInterrupt:
            summary["interrupted"] = True
        summary["files"] = bundle(summary["claims"], a.out, a.scale)
    text = write_summary(summary, a.out, started)
    print("\n".join(text))
    print(f"written to {a.out}: {', '.join(['summary.json', 'summary.md', 'log.txt', *summary['files']])}")
    return 130 if summary.get("interrupted") else 0


if __name__ == "__main__":
    sys.exit(main())
